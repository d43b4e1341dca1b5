// The tenant and its workspaces as a workspace key sees them (docs/platform/tenancy.md "The tenant, its
// workspaces, its chains"): the `tenant` area's GET /tenant, GET /workspaces, GET /workspaces/{id} and
// GET /chains/available. Read-only: tenants and workspaces are made by the operator (docs/operations.md).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { ErrorBody } from '../../errors.ts';
import { principalOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import type { WorkspaceRecord } from '../../tenancy/tenancy-service.ts';
import { EVM_NETWORKS } from '../../../core/chains/evm/evm-networks.ts';
import { BITCOIN_NETWORKS } from '../../../core/chains/bitcoin/bitcoin-networks.ts';
import { Nullable } from './schema-helpers.ts';

const TAGS = ['tenant'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };
const Workspace = Type.Object({ id: Type.String(), environment: Type.Union([Type.Literal('sandbox'), Type.Literal('production')]), name: Type.String(), current: Type.Boolean(), created_at: Type.String() });
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
  const view = (w: WorkspaceRecord, current: string) => ({ id: w.id, environment: w.environment, name: w.name, current: w.id === current, created_at: w.created_at });

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
