// The member's copy of its data (docs/platform/account-holders.md "Data exports"): two member self calls
// of the account_holders area, with the credentials of every self call (api/routes/v1/member-self.ts).
// The export is built by a job (api/account-holders/holder-export-jobs.ts); a ready export answers a
// presigned GET of 5 minutes, a bearer credential: the request log never carries it (api/app.ts logs
// paths without query strings, and this answer is not logged).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import { MemberSessions } from '../../member-auth/member-sessions.ts';
import { AccountHolderService } from '../../account-holders/account-holder-service.ts';
import { DataExportLimitError } from '../../account-holders/holder-data-exports.ts';
import { holderExportJobs } from '../../account-holders/holder-export-jobs.ts';
import type { VaultService } from '../../vaults/vault-service.ts';
import { memberSelfCalls } from './member-self.ts';
import { Nullable } from './schema-helpers.ts';

const TAGS = ['account holders'];
const selfSecurity: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody, 502: ErrorBody };

const DataExport = Type.Object({
  id: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('ready'), Type.Literal('failed'), Type.Literal('expired')]),
  format: Type.Literal('json'),
  created_at: Type.String(), updated_at: Type.String(), completed_at: Nullable(Type.String()), expires_at: Nullable(Type.String()),
  size_bytes: Nullable(Type.Integer()), sha256: Nullable(Type.String()),
  failure_reason: Nullable(Type.Union([Type.Literal('storage_unavailable'), Type.Literal('build_failed')])),
  download: Nullable(Type.Object({ url: Type.String(), expires_at: Type.String() })),
});
const CreateBody = Type.Object({ format: Type.Optional(Type.Literal('json')) }, { additionalProperties: false });

export interface AccountHolderExportOptions {
  platform: Platform;
  vaults?: VaultService | undefined;
  publicOrigin?: string | undefined;
}

export const accountHolderExportRoutes: FastifyPluginAsyncTypebox<AccountHolderExportOptions> = async (app, { platform, publicOrigin }) => {
  const holders = new AccountHolderService({ store: platform.store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, clock: platform.clock });
  const sessions = new MemberSessions(platform.store, platform.audit, platform.clock);
  const { refuseCallerIdentity, memberOfSession, authenticateMember } = memberSelfCalls(platform.store, holders, sessions);
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  // Read when the app is ready, so a test can take the runtime over (manual, its own queue) before that.
  const jobs = () => holderExportJobs(platform);
  app.addHook('onReady', async () => jobs().start());
  app.addHook('onClose', async () => jobs().stop());
  const originOf = (req: { headers: { host?: string | undefined } }) => publicOrigin ?? `http://${req.headers.host ?? 'localhost'}`;
  const self = { config: { permission: 'member_auth.session' as const }, onRequest: authenticateMember, preValidation: refuseCallerIdentity };
  const needs = 'Needs X-SVC-Publishable-Key and X-Member-Session-Id; the holder is the session member\'s.';

  app.post('/account-holders/self/data-exports', {
    ...self,
    schema: {
      summary: 'Ask for a copy of the session member\'s data (JSON), prepared in the background',
      description: `${needs} Body {} or { format: "json" }. Idempotency-Key required. 202 with the pending export; one pending export per holder (409 data_export_pending), `
        + 'at most 3 in any 24 hours (429 rate_limited with Retry-After). Poll GET …/self/data-exports/{id}. docs/platform/account-holders.md "Data exports".',
      tags: TAGS, security: change, body: CreateBody, response: { 202: DataExport, ...errors },
    },
  }, async (req, reply) => {
    const key = idempotencyKeyOf(req);
    if (key === undefined) throw new CustodyError('invalid_request', 'Idempotency-Key is required: a retry under the same key answers the same export');
    const { holder } = await memberOfSession(req);
    const scope = scopeOf(req);
    try {
      // Keys are the holder's own: one member's key never answers another's export.
      const out = await idempotent.run(scope.workspace, `create_data_export:${holder.id}`, key, req.body, () => jobs().exports.create(scope, actorOf(req), holder));
      jobs().poke();
      return await reply.code(202).send(out);
    } catch (err) {
      if (err instanceof DataExportLimitError) reply.header('retry-after', String(err.retryAfter));
      throw err;
    }
  });

  app.get('/account-holders/self/data-exports/:id', {
    ...self,
    schema: {
      summary: 'The session member\'s data export; when ready, a download URL valid 5 minutes',
      description: `${needs} Another holder's or workspace's export, or a malformed id, is 404 not_found. download is a presigned GET (a bearer credential: do not log it), null unless ready; `
        + 'an export expires 7 days after it is ready, its file deleted.',
      tags: TAGS, security: selfSecurity, params: Type.Object({ id: Type.String({ maxLength: 64 }) }), response: { 200: DataExport, ...errors },
    },
  }, async (req, reply) => {
    const { holder } = await memberOfSession(req);
    const out = await jobs().exports.read(scopeOf(req), holder, req.params.id, originOf(req));
    return reply.header('cache-control', 'no-store').send(out);
  });
};
