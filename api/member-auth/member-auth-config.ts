// A workspace's member-auth configuration (docs/platform/member-auth.md; platform-api.md "tenant" area,
// "Member authentication model", "Confidential exchange rules" 11-12): allowed origins, redirect URLs,
// the one BYO OIDC application and Hosted Auth applications. Every change is written in one batch with
// its audit entry; writes of one workspace run one after another, so uniqueness and the references
// between records (a redirect URL's origin, a Hosted application's origin and callback) hold.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { pageOf, type CursorCodec, type PageResult } from '../store/pagination.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Environment } from '../tenancy/tenancy-service.ts';
import type { OutboundHttp } from '../webhooks/outbound-http.ts';
import { normalizeOrigin, normalizeRedirectUrl, checkIssuer } from './exact-urls.ts';
import { discoverIssuer } from './oidc-discovery.ts';
import { newPublishableKey } from './publishable-keys.ts';
import {
  COLLECTIONS as C, applicationView, originView, redirectUrlView,
  type AllowedOriginRecord, type AllowedOriginView, type ApplicationRecord, type ApplicationView, type ByoOidcSettings,
  type Enrollment, type HostedSettings, type PublishableKeyRecord, type RedirectUrlRecord, type RedirectUrlView,
} from './member-auth-records.ts';
import { BEARER_KEYS } from '../tenancy/collections.ts';
import type { CollectionName } from '../store/collection.ts';

/** The caller's workspace, with its environment (the URL rules and key prefixes depend on it). */
export interface WorkspaceScope { tenant: string; workspace: string; environment: Environment }

/**
 * The lock every configuration change of a workspace holds; proof exchange commits under it too, so a
 * session is never created against an application version that changed meanwhile (rule 6).
 */
export const configLock = (workspace: string): string => `member-auth-config:${workspace}`;

export const LIMITS = { origins: 50, redirectUrls: 100, applications: 20, acrAmrValues: 10 } as const;
export const MAX_PROOF_AGE = { min: 30, max: 86_400, default: 300 } as const;

export interface ByoOidcInput {
  issuer: string;
  audience: string;
  provider_namespace: string;
  max_proof_age_sec?: number;
  required_acr?: string[];
  required_amr?: string[];
}

export interface HostedInput { enrollment: Enrollment; origin: string; result_callback_url: string; bff_key_id: string; require_totp?: boolean; account_center_passkeys?: boolean }

export type ApplicationPatch = Partial<Omit<ByoOidcInput, 'issuer'> & Omit<HostedInput, 'require_totp' | 'account_center_passkeys'> & { require_totp: boolean; account_center_passkeys: boolean }>;

const BYO_FIELDS = new Set(['audience', 'provider_namespace', 'max_proof_age_sec', 'required_acr', 'required_amr']);
const HOSTED_FIELDS = new Set(['enrollment', 'origin', 'result_callback_url', 'bff_key_id', 'require_totp', 'account_center_passkeys']);

const invalid = (m: string) => new CustodyError('validation_failed', m);
const ix = (r: { workspace: string; id: string }) => [`${r.workspace}\x00${r.id}`];
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function checkByoFields(b: Partial<ByoOidcInput>): void {
  if (b.audience !== undefined && !/^[\x21-\x7e]{1,255}$/.test(b.audience)) throw invalid('audience: must be 1 to 255 visible ASCII characters (the OIDC client id)');
  if (b.provider_namespace !== undefined && !/^[a-z0-9][a-z0-9._-]{0,62}$/.test(b.provider_namespace)) throw invalid('provider_namespace: must be 1 to 63 of a-z, 0-9, ".", "_", "-", starting with a letter or digit');
  if (b.max_proof_age_sec !== undefined && (!Number.isInteger(b.max_proof_age_sec) || b.max_proof_age_sec < MAX_PROOF_AGE.min || b.max_proof_age_sec > MAX_PROOF_AGE.max)) {
    throw invalid(`max_proof_age_sec: must be an integer from ${MAX_PROOF_AGE.min} to ${MAX_PROOF_AGE.max}`);
  }
  for (const f of ['required_acr', 'required_amr'] as const) {
    const v = b[f];
    if (v === undefined) continue;
    if (v.length > LIMITS.acrAmrValues) throw invalid(`${f}: at most ${LIMITS.acrAmrValues} values`);
    if (v.some((x) => !/^[\x21-\x7e]{1,200}$/.test(x))) throw invalid(`${f}: each value must be 1 to 200 visible ASCII characters`);
    if (new Set(v).size !== v.length) throw invalid(`${f}: values must not repeat`);
  }
}

export interface MemberAuthConfigOptions {
  store: RecordRepository;
  audit: AuditLog;
  cursors: CursorCodec;
  /** The SSRF-safe client discovery goes out through; it reads bodies up to MAX_DISCOVERY_BYTES + 1. */
  http: OutboundHttp;
  clock?: () => number;
  /**
   * Whether the workspace's organization has opted in to Account Center passkeys as the nodes see it:
   * its customer-signed end-user-auth registration names this service's Account Center key. Absent (a
   * service without the vault API): never, so the setting cannot be turned on.
   */
  accountCenterRegistered?: (scope: WorkspaceScope) => Promise<boolean>;
}

export class MemberAuthConfig {
  private readonly clock: () => number;
  /** Writes of one workspace, one at a time on every instance (the store's lock). */
  private readonly locks: { run<T>(workspace: string, fn: () => Promise<T>): Promise<T> };
  constructor(private readonly o: MemberAuthConfigOptions) {
    this.clock = o.clock ?? Date.now;
    this.locks = { run: (workspace, fn) => o.store.exclusive(configLock(workspace), fn) };
  }

  private iso(): string {
    return new Date(this.clock()).toISOString();
  }

  /** Cursors are bound to the collection's name (as the list they page). */
  private async page<R extends { id: string }, V>(collection: CollectionName<R>, scope: WorkspaceScope, cursor: string | undefined, limit: number, view: (r: R) => V): Promise<PageResult<V>> {
    const after = this.o.cursors.decode(cursor, collection.name, scope.workspace, {});
    const items = await collection.in(this.o.store).byIndexAfter(`${scope.workspace}\x00`, after, limit + 1);
    const p = pageOf(this.o.cursors, items, limit, collection.name, scope.workspace, {});
    return { ...p, data: p.data.map(view) };
  }

  private all<R>(collection: CollectionName<R>, scope: WorkspaceScope, limit: number): Promise<R[]> {
    return collection.in(this.o.store).byIndex(`${scope.workspace}\x00`, limit);
  }

  /** A record of this workspace by id; anything else (malformed, missing, another tenant's) is 404. */
  private async own<R extends { workspace: string }>(collection: CollectionName<R>, prefix: string, scope: WorkspaceScope, id: string, what: string): Promise<R> {
    const r = new RegExp(`^${prefix}_[0-9a-f]{26}$`).test(id) ? await collection.in(this.o.store).get(id) : undefined;
    if (!r || r.workspace !== scope.workspace) throw new CustodyError('not_found', `no ${what} ${id}`);
    return r;
  }

  // ── Allowed origins ─────────────────────────────────────────────────────────────────────────────

  listOrigins(scope: WorkspaceScope, cursor: string | undefined, limit: number): Promise<PageResult<AllowedOriginView>> {
    return this.page(C.origins, scope, cursor, limit, originView);
  }

  /** A duplicate (after normalization) is 409 conflict: a replay is what Idempotency-Key is for. */
  addOrigin(scope: WorkspaceScope, actor: Actor, text: string): Promise<AllowedOriginRecord> {
    const origin = normalizeOrigin(text, scope.environment);
    return this.locks.run(scope.workspace, async () => {
      const name = `${scope.workspace}\x00${origin}`;
      if (await C.originNames.in(this.o.store).get(name)) throw new CustodyError('conflict', `${origin} is already an allowed origin of this workspace`);
      if ((await this.all(C.origins, scope, LIMITS.origins)).length >= LIMITS.origins) throw invalid(`origin: a workspace has at most ${LIMITS.origins} allowed origins`);
      const r: AllowedOriginRecord = { id: newId('mao', this.clock()), tenant: scope.tenant, workspace: scope.workspace, origin, created_at: this.iso() };
      await this.o.store.batch([
        C.origins.putOp(r.id, r, { index: ix(r) }),
        C.originNames.putOp(name, { id: r.id }),
        this.o.audit.op(scope, actor, 'member_auth.allowed_origin.create', r.id, null, originView(r)),
      ]);
      return r;
    });
  }

  /** Refused (409) while a redirect URL or a Hosted application uses the origin. */
  removeOrigin(scope: WorkspaceScope, actor: Actor, id: string): Promise<void> {
    return this.locks.run(scope.workspace, async () => {
      const r = await this.own<AllowedOriginRecord>(C.origins, 'mao', scope, id, 'allowed origin');
      const urls = (await this.all(C.redirectUrls, scope, LIMITS.redirectUrls)).filter((u) => u.origin === r.origin);
      if (urls.length) throw new CustodyError('conflict', `${r.origin} is the origin of ${urls.length} redirect URL(s) (${urls[0]!.id}); delete them first`);
      const apps = (await this.all(C.applications, scope, LIMITS.applications)).filter((a) => a.hosted?.origin === r.origin);
      if (apps.length) throw new CustodyError('conflict', `${r.origin} is the origin of Hosted application ${apps[0]!.id}; change or delete it first`);
      await this.o.store.batch([
        C.origins.delOp(r.id, ix(r)),
        C.originNames.delOp(`${scope.workspace}\x00${r.origin}`),
        this.o.audit.op(scope, actor, 'member_auth.allowed_origin.delete', r.id, originView(r), null),
      ]);
    });
  }

  private async isAllowedOrigin(scope: WorkspaceScope, origin: string): Promise<boolean> {
    return (await C.originNames.in(this.o.store).get(`${scope.workspace}\x00${origin}`)) !== undefined;
  }

  // ── Redirect URLs ───────────────────────────────────────────────────────────────────────────────

  listRedirectUrls(scope: WorkspaceScope, cursor: string | undefined, limit: number): Promise<PageResult<RedirectUrlView>> {
    return this.page(C.redirectUrls, scope, cursor, limit, redirectUrlView);
  }

  /** The URL's origin must be an allowed origin: a callback only goes where the application runs. */
  addRedirectUrl(scope: WorkspaceScope, actor: Actor, text: string): Promise<RedirectUrlRecord> {
    const { url, origin } = normalizeRedirectUrl(text, scope.environment);
    return this.locks.run(scope.workspace, async () => {
      if (!(await this.isAllowedOrigin(scope, origin))) throw invalid(`url: its origin ${origin} is not an allowed origin of this workspace; add it first (POST /v1/tenant/member-auth/allowed-origins)`);
      const name = `${scope.workspace}\x00${url}`;
      if (await C.redirectNames.in(this.o.store).get(name)) throw new CustodyError('conflict', `${url} is already a redirect URL of this workspace`);
      if ((await this.all(C.redirectUrls, scope, LIMITS.redirectUrls)).length >= LIMITS.redirectUrls) throw invalid(`url: a workspace has at most ${LIMITS.redirectUrls} redirect URLs`);
      const r: RedirectUrlRecord = { id: newId('mar', this.clock()), tenant: scope.tenant, workspace: scope.workspace, url, origin, created_at: this.iso() };
      await this.o.store.batch([
        C.redirectUrls.putOp(r.id, r, { index: ix(r) }),
        C.redirectNames.putOp(name, { id: r.id }),
        this.o.audit.op(scope, actor, 'member_auth.redirect_url.create', r.id, null, redirectUrlView(r)),
      ]);
      return r;
    });
  }

  /** Refused (409) while a Hosted application sends its results there. */
  removeRedirectUrl(scope: WorkspaceScope, actor: Actor, id: string): Promise<void> {
    return this.locks.run(scope.workspace, async () => {
      const r = await this.own<RedirectUrlRecord>(C.redirectUrls, 'mar', scope, id, 'redirect URL');
      const apps = (await this.all(C.applications, scope, LIMITS.applications)).filter((a) => a.hosted?.result_callback_url === r.url);
      if (apps.length) throw new CustodyError('conflict', `${r.url} is the result callback of Hosted application ${apps[0]!.id}; change or delete it first`);
      await this.o.store.batch([
        C.redirectUrls.delOp(r.id, ix(r)),
        C.redirectNames.delOp(`${scope.workspace}\x00${r.url}`),
        this.o.audit.op(scope, actor, 'member_auth.redirect_url.delete', r.id, redirectUrlView(r), null),
      ]);
    });
  }

  // ── Applications ────────────────────────────────────────────────────────────────────────────────

  listApplications(scope: WorkspaceScope, cursor: string | undefined, limit: number): Promise<PageResult<ApplicationView>> {
    return this.page(C.applications, scope, cursor, limit, applicationView);
  }

  getApplication(scope: WorkspaceScope, id: string): Promise<ApplicationRecord> {
    return this.own<ApplicationRecord>(C.applications, 'maa', scope, id, 'member-auth application');
  }

  private newApplication(scope: WorkspaceScope, kind: ApplicationRecord['kind']): ApplicationRecord {
    const now = this.iso();
    return { id: newId('maa', this.clock()), tenant: scope.tenant, workspace: scope.workspace, environment: scope.environment, kind, version: 1, publishable_key: newPublishableKey(scope.environment), byo_oidc: null, hosted: null, created_at: now, updated_at: now };
  }

  private async create(scope: WorkspaceScope, actor: Actor, a: ApplicationRecord, extra: Op[] = []): Promise<void> {
    if ((await this.all(C.applications, scope, LIMITS.applications)).length >= LIMITS.applications) throw invalid(`a workspace has at most ${LIMITS.applications} member-auth applications`);
    const key: PublishableKeyRecord = { application: a.id, tenant: a.tenant, workspace: a.workspace, environment: a.environment };
    await this.o.store.batch([
      C.applications.putOp(a.id, a, { index: ix(a) }),
      C.publishableKeys.putOp(a.publishable_key, key),
      ...extra,
      this.o.audit.op(scope, actor, 'member_auth.application.create', a.id, null, applicationView(a)),
    ]);
  }

  private async update(scope: WorkspaceScope, actor: Actor, before: ApplicationRecord, after: ApplicationRecord): Promise<ApplicationRecord> {
    if (same({ ...before, updated_at: '' }, { ...after, updated_at: '' })) return before;
    const next: ApplicationRecord = { ...after, version: before.version + 1, updated_at: this.iso() };
    await this.o.store.batch([
      C.applications.putOp(next.id, next, { index: ix(next) }),
      this.o.audit.op(scope, actor, 'member_auth.application.update', next.id, applicationView(before), applicationView(next)),
    ]);
    return next;
  }

  /**
   * PUT /tenant/member-auth/application: registers the workspace's one BYO OIDC application, or updates
   * it. Discovery runs on every call (a changed JWKS location or key set is a change); a call that
   * changes nothing answers the application as it is, its version unchanged.
   */
  async putByoApplication(scope: WorkspaceScope, actor: Actor, input: ByoOidcInput): Promise<{ application: ApplicationRecord; created: boolean }> {
    checkIssuer(input.issuer, scope.environment);
    checkByoFields(input);
    const discovered = await discoverIssuer(this.o.http, input.issuer, scope.environment);
    return this.locks.run(scope.workspace, async () => {
      const ref = await C.byo.in(this.o.store).get(scope.workspace);
      const existing = ref ? await C.applications.in(this.o.store).get(ref.id) : undefined;
      const prior = existing?.byo_oidc;
      const settings: ByoOidcSettings = {
        issuer: input.issuer, audience: input.audience, provider_namespace: input.provider_namespace, ...discovered,
        discovered_at: prior && prior.jwks_uri === discovered.jwks_uri && same(prior.jwks_thumbprints, discovered.jwks_thumbprints) ? prior.discovered_at : this.iso(),
        max_proof_age_sec: input.max_proof_age_sec ?? MAX_PROOF_AGE.default, required_acr: input.required_acr ?? [], required_amr: input.required_amr ?? [],
      };
      if (existing) return { application: await this.update(scope, actor, existing, { ...existing, byo_oidc: settings }), created: false };
      const a = { ...this.newApplication(scope, 'byo_oidc'), byo_oidc: settings };
      await this.create(scope, actor, a, [C.byo.putOp(scope.workspace, { id: a.id })]);
      return { application: a, created: true };
    });
  }

  /** `wasOn`: the application already had Account Center passkeys on (turning them on is what is checked). */
  private async checkHosted(scope: WorkspaceScope, h: HostedSettings, wasOn: boolean): Promise<HostedSettings> {
    // An opt-in the nodes would not enforce is never switched on: the organization's customer-signed
    // registration must name the service's Account Center key first (in production this request is
    // also signed with the key's request-signing key, as every production change).
    if (h.account_center_passkeys === true && !wasOn && !(await this.o.accountCenterRegistered?.(scope))) {
      throw new CustodyError('account_center_opt_in_unregistered', 'account_center_passkeys: first register the opt-in for the nodes: PUT /v1/config/end-user-auth, signed with the organization\'s API key, with `account_center` as GET /v1/tenant/member-auth/account-center-key answers it');
    }
    const origin = normalizeOrigin(h.origin, scope.environment);
    const callback = normalizeRedirectUrl(h.result_callback_url, scope.environment, 'result_callback_url').url;
    if (!(await this.isAllowedOrigin(scope, origin))) throw invalid(`origin: ${origin} is not an allowed origin of this workspace`);
    if (!(await C.redirectNames.in(this.o.store).get(`${scope.workspace}\x00${callback}`))) throw invalid(`result_callback_url: ${callback} is not a registered redirect URL of this workspace`);
    const key = /^key_[0-9a-f]{26}$/.test(h.bff_key_id) ? await BEARER_KEYS.in(this.o.store).get(h.bff_key_id) : undefined;
    if (!key || key.workspace !== scope.workspace || key.revoked) throw invalid(`bff_key_id: ${h.bff_key_id} is not an active bearer key of this workspace`);
    return { ...h, origin, result_callback_url: callback };
  }

  /** POST /tenant/member-auth/applications/hosted: a new Hosted Auth application. */
  createHostedApplication(scope: WorkspaceScope, actor: Actor, input: HostedInput): Promise<ApplicationRecord> {
    return this.locks.run(scope.workspace, async () => {
      const hosted = await this.checkHosted(scope, { ...input, require_totp: input.require_totp ?? false }, false);
      const a = { ...this.newApplication(scope, 'hosted'), hosted };
      await this.create(scope, actor, a);
      return a;
    });
  }

  /**
   * PATCH: the fields of the application's kind only (another kind's field is 422); the BYO issuer
   * changes through PUT, which discovers again. `{}` changes nothing; any change is version + 1.
   */
  patchApplication(scope: WorkspaceScope, actor: Actor, id: string, patch: ApplicationPatch): Promise<ApplicationRecord> {
    return this.locks.run(scope.workspace, async () => {
      const before = await this.getApplication(scope, id);
      const fields = Object.keys(patch);
      const allowed = before.kind === 'byo_oidc' ? BYO_FIELDS : HOSTED_FIELDS;
      const foreign = fields.filter((f) => !allowed.has(f));
      if (foreign.length) throw invalid(`${foreign.join(', ')}: not a field of a ${before.kind} application`);
      if (fields.length === 0) return before;
      if (before.kind === 'byo_oidc') {
        checkByoFields(patch);
        return this.update(scope, actor, before, { ...before, byo_oidc: { ...before.byo_oidc!, ...patch } as ByoOidcSettings });
      }
      const hosted = await this.checkHosted(scope, { ...before.hosted!, ...patch } as HostedSettings, before.hosted!.account_center_passkeys === true);
      return this.update(scope, actor, before, { ...before, hosted });
    });
  }

  /** Deleted, not disabled: its publishable key stops resolving at once (no sessions exist yet to end). */
  removeApplication(scope: WorkspaceScope, actor: Actor, id: string): Promise<void> {
    return this.locks.run(scope.workspace, async () => {
      const a = await this.getApplication(scope, id);
      await this.o.store.batch([
        C.applications.delOp(a.id, ix(a)),
        C.publishableKeys.delOp(a.publishable_key),
        ...(a.kind === 'byo_oidc' ? [C.byo.delOp(scope.workspace)] : []),
        this.o.audit.op(scope, actor, 'member_auth.application.delete', a.id, applicationView(a), null),
      ]);
    });
  }
}
