// The operator API (docs/operations.md): the operator's tasks on the running API, under /operator/v1,
// authenticated by the operator secret (API_OPERATOR_TOKEN_FILE), separate from both customer
// credentials. The process never holds the operator's Ed25519 key: an organization's bootstrap arrives
// signed by the operator command and is checked here against API_NODE_OPERATOR_KEYS. Every change is
// written with its audit entries (api/tenancy/audit-log.ts) in one batch: one in the operator's own log
// (workspace `operator`) and, for a customer's records, one in the customer's linked workspace.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { hexToBytes } from '@noble/hashes/utils.js';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { ConfigError } from '../../common/config.ts';
import { decodeTrustEntry, verifyBootstrap } from '../../core/trust/trust-entry.ts';
import { ErrorBody } from '../errors.ts';
import type { Op } from '../store/record-store.ts';
import type { VaultService } from '../vaults/vault-service.ts';
import type { Platform } from '../platform.ts';
import type { Actor } from '../tenancy/audit-log.ts';
import { CustomerLinks } from '../customers/customer-links.ts';
import { createCustomer, type CreateCustomerReturnType } from '../customers/create-customer.ts';
import { strictValidatorCompiler } from '../validation.ts';
import { ORGS, VAULTS } from '../vaults/collections.ts';
import type { ReconcileReturnType } from '../ledger/reconciliation.ts';
import type { CoordinatorShards } from '../coordinator/coordinator-shards.ts';
import { moveVault, rebuildShard } from '../coordinator/move-vault.ts';

export interface OperatorRoutesOptions {
  vaults: VaultService;
  platform: Platform;
  environment: 'sandbox' | 'production';
  /** The file holding the operator secret. */
  tokenFile: string;
  /** Operator public keys (hex) a bootstrap must verify under; none configured: the nodes' check is the only one. */
  operatorKeys: readonly string[];
  /** A workspace's stablecoin reconciliation (FundingService.reconcile), when funding runs on this server. */
  reconcile?: (() => ((scope: { tenant: string; workspace: string }) => Promise<ReconcileReturnType>) | undefined) | undefined;
  /** The coordinator shards: for a vault's move and a shard's rebuild (api/coordinator/move-vault.ts). */
  coordinators?: CoordinatorShards | undefined;
}

const OPERATOR: Actor = { type: 'operator', id: 'operator-api' };
/** The operator's own audit log: AuditLog.list('operator'). */
const OPERATOR_SCOPE = { tenant: 'operator', workspace: 'operator' };
const sha256 = (s: string) => createHash('sha256').update(s).digest();
const Hex64 = Type.String({ pattern: '^[0-9a-fA-F]{64}$' });
const Line = Type.Object({
  account_holder_id: Type.String(), asset: Type.String(), addresses: Type.Array(Type.String()), block_number: Type.String(),
  ledger_balance: Type.String(), chain_balance: Type.String(), difference: Type.String(),
});
const errors = { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody };

/** Reads the operator secret once, at boot. */
export function readOperatorToken(file: string): string {
  let token: string;
  try {
    token = readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new ConfigError([`API_OPERATOR_TOKEN_FILE (operatorTokenFile): cannot read ${file} (${(err as Error).message})`]);
  }
  if (token.length < 32 || /\s/.test(token)) throw new ConfigError([`API_OPERATOR_TOKEN_FILE (operatorTokenFile): ${file} must hold one secret of at least 32 characters, no spaces`]);
  return token;
}

export function customerView(made: CreateCustomerReturnType) {
  return {
    organization: made.organization.id, api_key_id: made.apiKeyId, customer: made.customer.id, tenant: made.tenant.id,
    sandbox_workspace: made.sandbox.id, production_workspace: made.production.id, events_workspace: made.customer.workspace, created: made.created,
  };
}

export const operatorRoutes: FastifyPluginAsyncTypebox<OperatorRoutesOptions> = async (app, o) => {
  const want = sha256(readOperatorToken(o.tokenFile));
  const { store, tenancy, audit } = o.platform;
  const links = new CustomerLinks(store, o.platform.clock);
  const services = { store, vaults: o.vaults, tenancy, links, environment: o.environment };

  app.setValidatorCompiler(strictValidatorCompiler);
  // Not part of either customer API's OpenAPI document.
  app.addHook('onRoute', (route) => {
    route.schema = { ...(route.schema ?? {}), hide: true };
  });
  app.addHook('onRequest', async (req) => {
    const auth = req.headers.authorization;
    const given = typeof auth === 'string' ? /^bearer +(\S+) *$/i.exec(auth)?.[1] : undefined;
    if (!given || !timingSafeEqual(sha256(given), want)) throw new CustodyError('unauthorized', 'the operator secret is required (Authorization: Bearer <API_OPERATOR_TOKEN_FILE contents>)');
  });

  /** The audit entries of one operator action: the operator's log, and the customer's workspace when there is one. */
  const audited = (scope: { tenant: string; workspace: string } | undefined, action: string, resourceId: string, before: unknown, after: unknown): Op[] => [
    audit.op(OPERATOR_SCOPE, OPERATOR, action, resourceId, before, after),
    ...(scope ? [audit.op(scope, OPERATOR, action, resourceId, before, after)] : []),
  ];
  const customerScope = async (org: string) => {
    const c = await links.byOrg(org);
    return c ? { tenant: c.tenant, workspace: c.workspace } : undefined;
  };

  /** A bootstrap signed by the operator command for exactly this organization and key. */
  const checkBootstrap = (hex: string, org: string, publicKey: string): Uint8Array => {
    const entry = hexToBytes(hex);
    let decoded;
    try {
      decoded = decodeTrustEntry(entry);
    } catch (err) {
      throw new CustodyError('invalid_request', `bootstrap is not a trust entry (${(err as Error).message})`);
    }
    if (decoded.kind !== 'bootstrap' || decoded.org !== org || decoded.publicKey !== publicKey.toLowerCase()) throw new CustodyError('invalid_request', 'bootstrap must be the operator\'s bootstrap of this organization and public key');
    if (o.operatorKeys.length && !verifyBootstrap(decoded, o.operatorKeys)) throw new CustodyError('invalid_request', 'bootstrap is not signed by an operator key the nodes trust (API_NODE_OPERATOR_KEYS)');
    return entry;
  };

  app.post('/customers', {
    schema: {
      body: Type.Object({
        name: Type.String({ minLength: 1, maxLength: 120 }), public_key: Hex64, label: Type.Optional(Type.String({ maxLength: 120 })),
        external_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })), organization: Type.String({ pattern: '^org_[0-9a-f]{24}$' }), bootstrap: Type.String({ pattern: '^([0-9a-fA-F]{2}){1,2048}$' }),
      }, { additionalProperties: false }),
      response: { 200: Type.Record(Type.String(), Type.Unknown()), 201: Type.Record(Type.String(), Type.Unknown()), ...errors },
    },
  }, async (req, reply) => {
    const b = req.body;
    const entry = checkBootstrap(b.bootstrap, b.organization, b.public_key);
    const made = await createCustomer(services, {
      name: b.name, publicKey: b.public_key, label: b.label, externalId: b.external_id, bootstrap: { orgId: b.organization, entry },
      extra: (c) => audited({ tenant: c.tenant, workspace: c.workspace }, 'customer.create', c.id, null, c),
    });
    return reply.code(made.created ? 201 : 200).send(customerView(made));
  });

  app.post('/customers/link', {
    schema: {
      body: Type.Object({ organization: Type.String({ maxLength: 64 }), tenant: Type.String({ maxLength: 64 }), external_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })) }, { additionalProperties: false }),
      response: { 201: Type.Record(Type.String(), Type.Unknown()), ...errors },
    },
  }, async (req, reply) => {
    const c = await links.linkExisting(req.body.organization, req.body.tenant, o.environment, req.body.external_id !== undefined ? { externalId: req.body.external_id } : {});
    await store.batch(audited({ tenant: c.tenant, workspace: c.workspace }, 'customer.link', c.id, null, c));
    return reply.code(201).send({ customer: c.id, organization: c.org, tenant: c.tenant, events_workspace: c.workspace });
  });

  // The platform ledger against the chain for one workspace (docs/platform/funding.md "Reconciliation"):
  // an operator's read, reporting and correcting nothing.
  app.get('/workspaces/:workspaceId/reconciliation', {
    schema: {
      params: Type.Object({ workspaceId: Type.String({ minLength: 1, maxLength: 64 }) }),
      response: { 200: Type.Object({ lines: Type.Array(Line), differences: Type.Array(Line) }), ...errors },
    },
  }, async (req) => {
    const ws = await tenancy.workspace(req.params.workspaceId);
    if (!ws) throw new CustodyError('not_found', `no workspace ${req.params.workspaceId}`);
    const reconcile = o.reconcile?.();
    if (!reconcile) throw new CustodyError('conflict', 'no stablecoin is configured on this server (API_FUNDING_STABLECOINS): nothing to reconcile');
    return reconcile({ tenant: ws.tenant, workspace: ws.id });
  });

  app.get('/organizations', {
    schema: {
      querystring: Type.Object({ after: Type.Optional(Type.String({ maxLength: 64 })), limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,2}$' })) }, { additionalProperties: false }),
      response: { 200: Type.Object({ data: Type.Array(Type.Record(Type.String(), Type.Unknown())), next_after: Type.Union([Type.String(), Type.Null()]) }), ...errors },
    },
  }, async (req) => {
    const limit = Math.min(Number(req.query.limit ?? 100), 500);
    const orgs = await o.vaults.listOrgs(req.query.after, limit);
    const data = await Promise.all(orgs.map(async (org) => {
      const c = await links.byOrg(org.id);
      const keys = await o.vaults.listKeys(org.id);
      return { id: org.id, name: org.name, created_at: org.created_at, active_api_keys: keys.filter((k) => !k.revoked).length, customer: c?.id ?? null, tenant: c?.tenant ?? null, events_workspace: c?.workspace ?? null };
    }));
    return { data, next_after: orgs.length === limit ? orgs[orgs.length - 1]!.id : null };
  });

  // The signer nodes learn a key only from the organization's trust log: its operator bootstrap (the
  // first key) or a request signed by a key they know. So the operator adds a key only to an
  // organization that has none the nodes know (its log is empty), with the bootstrap that roots it;
  // an organization adds further keys itself (POST /v1/api-keys).
  app.post('/organizations/:org/api-keys', {
    schema: {
      params: Type.Object({ org: Type.String({ maxLength: 64 }) }),
      body: Type.Object({ public_key: Hex64, label: Type.Optional(Type.String({ maxLength: 120 })), bootstrap: Type.String({ pattern: '^([0-9a-fA-F]{2}){1,2048}$' }) }, { additionalProperties: false }),
      response: { 201: Type.Record(Type.String(), Type.Unknown()), ...errors },
    },
  }, async (req, reply) => {
    const org = req.params.org;
    if (!(await ORGS.in(store).get(org))) throw new CustodyError('not_found', `no organization ${org}`);
    if ((await o.vaults.trustLog(org)).length) {
      throw new CustodyError('conflict', 'the signer nodes already know keys of this organization: it registers further keys itself (POST /v1/api-keys, signed by an active key); a log without a bootstrap is rooted with `org repair`');
    }
    const entry = checkBootstrap(req.body.bootstrap, org, req.body.public_key);
    const scope = await customerScope(org);
    const key = await o.vaults.registerKey(org, req.body.public_key, req.body.label ?? 'operator', entry, (k) => audited(scope, 'api_key.create', k.id, null, k));
    return reply.code(201).send({ organization: org, api_key_id: key.id, public_key: key.public_key, label: key.label });
  });

  app.post('/tenants', {
    schema: { body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 120 }) }, { additionalProperties: false }), response: { 201: Type.Record(Type.String(), Type.Unknown()), ...errors } },
  }, async (req, reply) => {
    const { tenant, sandbox, production, ops } = tenancy.tenantOps(req.body.name);
    await store.batch([...ops, ...audited(undefined, 'tenant.create', tenant.id, null, tenant)]);
    return reply.code(201).send({ tenant: tenant.id, sandbox_workspace: sandbox.id, production_workspace: production.id });
  });

  app.post('/workspaces/:id/keys', {
    schema: {
      params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
      body: Type.Object({ role: Type.String({ maxLength: 32 }), label: Type.Optional(Type.String({ maxLength: 120 })), public_key: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })), mfa: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
      response: { 201: Type.Record(Type.String(), Type.Unknown()), ...errors },
    },
  }, async (req, reply) => {
    const b = req.body;
    const { key, token, totpSecret } = await tenancy.createKey(req.params.id, b.role, {
      ...(b.label !== undefined ? { label: b.label } : {}), ...(b.public_key !== undefined ? { signingPublicKey: b.public_key } : {}), ...(b.mfa ? { mfa: true } : {}),
      extra: (k) => audited({ tenant: k.tenant, workspace: k.workspace }, 'platform_key.create', k.id, null, { ...k, token_sha256: undefined, totp_secret: undefined }),
    });
    return reply.code(201).send({ key_id: key.id, role: key.role, environment: key.environment, bearer_token: token, ...(totpSecret ? { totp_secret_hex: totpSecret } : {}), note: 'shown once; only a hash is stored' });
  });

  app.post('/platform-keys/:id/revoke', {
    schema: { params: Type.Object({ id: Type.String({ maxLength: 64 }) }), response: { 200: Type.Record(Type.String(), Type.Unknown()), ...errors } },
  }, async (req) => {
    const k = await tenancy.revokeKey(req.params.id, (before, after) => audited({ tenant: after.tenant, workspace: after.workspace }, 'platform_key.revoke', after.id, { revoked: before.revoked }, { revoked: after.revoked }));
    return { key_id: k.id, revoked: k.revoked };
  });

  for (const verb of ['freeze', 'unfreeze'] as const) {
    app.post(`/vaults/:id/${verb}`, {
      schema: { params: Type.Object({ id: Type.String({ maxLength: 64 }) }), response: { 200: Type.Object({ vault: Type.String(), state: Type.String() }), ...errors } },
    }, async (req) => {
      const v = await VAULTS.in(store).get(req.params.id);
      const scope = v ? await customerScope(v.org) : undefined;
      const next = await o.vaults.freeze(req.params.id, verb === 'freeze', (before, after) => audited(scope, `vault.${verb}`, after.id, { state: before.state }, { state: after.state }));
      return { vault: next.id, state: next.state };
    });
  }

  const shards = (): CoordinatorShards => {
    if (!o.coordinators) throw new CustodyError('unavailable', 'this API has no coordinator configured (API_COORDINATORS)');
    return o.coordinators;
  };
  const ShardName = Type.String({ pattern: '^[a-z0-9-]{1,32}$' });
  const MoveResponse = Type.Object({
    vault: Type.String(), from: Type.String(), to: Type.String(), epoch: Type.Integer(), released: Type.Boolean(), problem: Type.Optional(Type.String()),
  });
  const RebuildResponse = Type.Object({
    shard: Type.String(), vaults: Type.Integer(), outcomes: Type.Record(Type.String(), Type.Integer()),
    skipped: Type.Array(Type.Object({ vault: Type.String(), reason: Type.String() })),
    nodes: Type.Array(Type.Object({ node_id: Type.String(), status: Type.String(), reason: Type.String() })),
  });

  // A vault moves to another coordinator shard (docs/operations.md "Moving a vault").
  app.post('/vaults/:id/move', {
    schema: {
      params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
      body: Type.Object({ shard: ShardName }, { additionalProperties: false }),
      response: { 200: MoveResponse, ...errors, 503: ErrorBody },
    },
  }, async (req) => {
    const v = await VAULTS.in(store).get(req.params.id);
    const scope = v ? await customerScope(v.org) : undefined;
    return moveVault({
      store, vaultOp: (x) => o.vaults.vaultOp(x), shards: shards(), vaultId: req.params.id, to: req.body.shard,
      extra: (before, after) => audited(scope, 'vault.move', after.id, { coordinator_shard: before.coordinator_shard ?? null }, { coordinator_shard: after.coordinator_shard }),
    });
  });

  // A shard rebuilds, or brings forward, the records of the vaults placed on it (docs/operations.md
  // "Rebuilding a coordinator's records").
  app.post('/coordinators/:shard/rebuild', {
    schema: { params: Type.Object({ shard: ShardName }), response: { 200: RebuildResponse, ...errors, 503: ErrorBody } },
  }, async (req) => rebuildShard(store, shards(), req.params.shard));

  app.get('/audit', {
    schema: { querystring: Type.Object({ workspace: Type.Optional(Type.String({ maxLength: 64 })) }, { additionalProperties: false }), response: { 200: Type.Object({ data: Type.Array(Type.Unknown()) }), ...errors } },
  }, async (req) => ({ data: await audit.list(req.query.workspace ?? 'operator') }));
};
