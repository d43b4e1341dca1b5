// The tenant and its workspaces as a workspace key sees them (docs/platform/tenancy.md "The tenant, its
// workspaces, its chains", "Workspace tokens", "Suspending a workspace", "Onboarding"): the `tenant`
// area's GET /tenant, GET /workspaces, GET and PATCH /workspaces/{id}, GET /workspace-tokens,
// GET /chains/available, GET /onboarding/status and POST /onboarding/setup. Tenants, workspaces and keys
// are made by the operator (docs/operations.md); a key names and suspends only its own workspace.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { ErrorBody } from '../../errors.ts';
import { actorOf, principalOf, scopeOf } from '../../auth/bearer-auth.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import { Onboarding, ONBOARDING_ITEMS } from '../../tenancy/onboarding.ts';
import { DEFAULT_LIMIT, Page, PageQuery, pageOf } from '../../store/pagination.ts';
import type { Platform } from '../../platform.ts';
import type { WorkspaceRecord } from '../../tenancy/tenancy-service.ts';
import { EVM_NETWORKS } from '../../../core/chains/evm/evm-networks.ts';
import { BITCOIN_NETWORKS } from '../../../core/chains/bitcoin/bitcoin-networks.ts';
import { literals, Nullable } from './schema-helpers.ts';

const TAGS = ['tenant'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const write: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };
const Environment = literals(['sandbox', 'production'] as const);
const Status = Type.Union([Type.Literal('active'), Type.Literal('suspended')]);
const Workspace = Type.Object({ id: Type.String(), environment: Environment, name: Type.String(), status: Status, current: Type.Boolean(), created_at: Type.String() });
const WorkspaceToken = Type.Object({
  id: Type.String(), label: Nullable(Type.String()), role: Type.String(), environment: Environment, status: literals(['active', 'revoked'] as const),
  request_signing: Type.Boolean({ description: 'the key has an Ed25519 request-signing key (every production key does)' }), mfa: Type.Boolean({ description: 'the key has a TOTP factor' }),
  created_at: Type.String(), last_used_at: Nullable(Type.String({ description: 'when the key last authenticated a request, to the minute; null: never since this was recorded' })),
});
const OnboardingItem = Type.Object({ item: literals(ONBOARDING_ITEMS), configured: Type.Boolean(), required: Type.Boolean(), detail: Type.String(), next: Nullable(Type.String()) });
const OnboardingStatus = Type.Object({
  tenant_id: Type.String(), current_workspace_id: Type.String(),
  environments: Type.Array(Type.Object({ environment: Environment, workspace_id: Type.String(), status: Status, ready: Type.Boolean(), items: Type.Array(OnboardingItem) })),
});
const Chain = Type.Object({
  chain: Type.String(), family: Type.Union([Type.Literal('evm'), Type.Literal('bitcoin')]), chain_id: Nullable(Type.String()), network: Nullable(Type.String()),
  native_symbol: Type.String(), finality_depth: Type.Integer(), stablecoin: Nullable(Type.Object({ asset: Type.String(), decimals: Type.Integer() })),
});

export interface TenantRouteOptions {
  platform: Platform;
  /** The chains this service has a backend for (API_CHAIN_BACKENDS). */
  chainsWithBackend: string[];
  /** The stablecoin a chain's funding issues, if any (docs/platform/funding.md). */
  stablecoin: (chain: string) => string | undefined;
  /** Decimals of that stablecoin. */
  stablecoinDecimals: number;
}

/** Bitcoin mainnet serves production workspaces; the test networks and every EVM testnet, sandbox ones. */
const bitcoinEnvironment = (network: string) => (network === 'mainnet' ? 'production' : 'sandbox');

export const tenantRoutes: FastifyPluginAsyncTypebox<TenantRouteOptions> = async (app, { platform, chainsWithBackend, stablecoin, stablecoinDecimals }) => {
  const view = (w: WorkspaceRecord, current: string) => ({ id: w.id, environment: w.environment, name: w.name, status: w.status ?? 'active', current: w.id === current, created_at: w.created_at });
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  const onboarding = new Onboarding({ store: platform.store, tenancy: platform.tenancy, branding: platform.branding, gateways: platform.gatewayReadiness });

  app.get('/tenant', {
    config: { permission: 'tenant.read' },
    schema: {
      summary: 'The key\'s tenant: its name and its two workspaces (sandbox and production)', tags: TAGS, security: read,
      response: { 200: Type.Object({ id: Type.String(), name: Type.String(), created_at: Type.String(), workspaces: Type.Array(Workspace) }), ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const tenant = await platform.tenancy.tenant(scope.tenant);
    if (!tenant) throw new CustodyError('bug', 'the key names a tenant that does not exist');
    const workspaces = (await platform.tenancy.workspaces(tenant.id)).map((w) => view(w, scope.workspace));
    return { id: tenant.id, name: tenant.name, created_at: tenant.created_at, workspaces };
  });

  app.get('/workspaces', {
    config: { permission: 'tenant.read' },
    schema: {
      summary: 'The tenant\'s workspaces (two, sandbox first); `current` marks the key\'s own', tags: TAGS, security: read,
      response: { 200: Type.Object({ data: Type.Array(Workspace), next_cursor: Type.Null(), has_more: Type.Literal(false) }), ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const all = await platform.tenancy.workspaces(scope.tenant);
    const data = all.sort((a, b) => (a.environment === b.environment ? 0 : a.environment === 'sandbox' ? -1 : 1)).map((w) => view(w, scope.workspace));
    return { data, next_cursor: null, has_more: false as const };
  });

  app.get('/workspaces/:id', {
    config: { permission: 'tenant.read' },
    schema: {
      summary: 'One workspace of the tenant', tags: TAGS, security: read,
      params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }), response: { 200: Workspace, ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const w = await platform.tenancy.workspace(req.params.id);
    // Another tenant's workspace is answered as one that does not exist.
    if (!w || w.tenant !== scope.tenant) throw new CustodyError('not_found', `no workspace ${req.params.id}`);
    return view(w, scope.workspace);
  });

  app.patch('/workspaces/:id', {
    // The one change a suspended workspace's key may make: its reactivation.
    config: { permission: 'tenant.manage', whileSuspended: true },
    schema: {
      summary: 'Rename the key\'s own workspace, or suspend or reactivate it', tags: TAGS, security: write,
      description: 'Owners and admins (`tenant.manage`), on their own workspace only: the tenant\'s other workspace is 403 forbidden, another tenant\'s 404. While `suspended`, the workspace\'s keys read, and this call reactivates it; every other change is 403 workspace_suspended (docs/platform/tenancy.md "Suspending a workspace"). `{}` or the current values change nothing. Audited as `workspace.update`.',
      params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }),
      body: Type.Optional(Type.Object({ name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })), status: Type.Optional(Status) }, { additionalProperties: false })),
      response: { 200: Workspace, ...errors, 422: ErrorBody },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    return view(await platform.tenancy.updateWorkspace(scope, actorOf(req), platform.audit, req.params.id, req.body ?? {}), scope.workspace);
  });

  app.get('/workspace-tokens', {
    config: { permission: 'tenant.read' },
    schema: {
      summary: 'The workspace\'s bearer keys, active and revoked, oldest first: never a secret', tags: TAGS, security: read,
      description: 'The key\'s own workspace\'s keys, a page at a time. A key\'s token is shown once when the operator makes it and is stored only as a hash; nothing here is secret. Keys are made and revoked by the operator (docs/platform/tenancy.md "Workspace tokens").',
      querystring: Type.Object(PageQuery, { additionalProperties: false }), response: { 200: Page(WorkspaceToken), ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const limit = req.query.limit ?? DEFAULT_LIMIT;
    const after = platform.cursors.decode(req.query.cursor, 'workspace_tokens', scope.workspace, {});
    const keys = await platform.tenancy.keysOf(scope.workspace, after, limit + 1);
    const page = pageOf(platform.cursors, keys, limit, 'workspace_tokens', scope.workspace, {});
    return {
      ...page, data: page.data.map((k) => ({
        id: k.id, label: k.label, role: k.role, environment: k.environment, status: k.revoked ? 'revoked' as const : 'active' as const,
        request_signing: k.signing_public_key !== null, mfa: k.totp_secret !== null, created_at: k.created_at, last_used_at: k.last_used_at,
      })),
    };
  });

  app.get('/onboarding/status', {
    config: { permission: 'tenant.read' },
    schema: {
      summary: 'The tenant\'s guided setup: what each workspace has configured and what it still needs', tags: TAGS, security: read,
      description: 'For sandbox and production: keys, member-auth application, branding, sending domain, webhook endpoint and integration gateway, each with whether the environment requires it and the call that makes it; `ready` when the workspace is active and every required item is configured. Of the other workspace only whether each item is configured is said (docs/platform/tenancy.md "Onboarding").',
      response: { 200: OnboardingStatus, ...errors },
    },
  }, async (req) => onboarding.status(scopeOf(req)));

  app.post('/onboarding/setup', {
    config: { permission: 'tenant.manage' },
    schema: {
      summary: 'Make the key\'s workspace\'s missing defaults; safe to rerun', tags: TAGS, security: write,
      description: 'Makes, only where missing, what needs no choice or secret of the customer: today the branding theme\'s brand_name, app_title and from_name, set to the tenant\'s name. A rerun makes nothing. Answers what it made and the onboarding status. `Idempotency-Key` replays the first answer (docs/platform/tenancy.md "Onboarding").',
      body: Type.Optional(Type.Object({}, { additionalProperties: false })),
      response: { 200: Type.Object({ made: Type.Array(literals(ONBOARDING_ITEMS)), status: OnboardingStatus }), ...errors, 409: ErrorBody },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    return idempotent.run(scope.workspace, 'onboarding_setup', idempotencyKeyOf(req), req.body ?? {}, () => onboarding.setup(scope, actorOf(req)));
  });

  app.get('/chains/available', {
    config: { permission: 'tenant.read' },
    schema: {
      summary: 'The chains the key\'s workspace can use here: of its environment, with a backend configured, and their stablecoin', tags: TAGS, security: read,
      description: 'A sandbox workspace uses the test networks, a production one the main networks (docs/vault-api.md). A chain without a backend on this service is not listed.',
      response: { 200: Type.Object({ data: Type.Array(Chain) }), ...errors },
    },
  }, async (req) => {
    const env = principalOf(req).environment;
    const served = new Set(chainsWithBackend);
    const coin = (chain: string) => {
      const token = stablecoin(chain);
      return token ? { asset: `${chain}:${token.toLowerCase()}`, decimals: stablecoinDecimals } : null;
    };
    const evm = EVM_NETWORKS.filter((n) => n.environment === env && served.has(n.chain)).map((n) => ({
      chain: n.chain, family: 'evm' as const, chain_id: n.chainId.toString(), network: null, native_symbol: n.nativeSymbol, finality_depth: n.finalityDepth, stablecoin: coin(n.chain),
    }));
    const btc = BITCOIN_NETWORKS.filter((n) => bitcoinEnvironment(n.network) === env && served.has(n.chain)).map((n) => ({
      chain: n.chain, family: 'bitcoin' as const, chain_id: null, network: n.network, native_symbol: 'BTC', finality_depth: n.finalityDepth, stablecoin: null,
    }));
    return { data: [...evm, ...btc] };
  });
};
