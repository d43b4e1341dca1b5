// RWA holders (docs/platform/rwa.md "Holders, eligibility, lockups and the cap table"): a holder's global
// eligibility and per-token lockups, pushed to each token's access registry through Safe operations of its
// admin Safe; the state read back from the chain; the holders and cap table of a token at a block from the
// indexed Transfer history. Workspace bearer key: tokenization.read for reads, tokenization.manage for changes.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { RwaHolders } from '../../rwa/holders/holders-setup.ts';
import { eligibilityOf } from '../../rwa/holders/holders-service.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { Nullable } from './schema-helpers.ts';

// Under the tokenization tag: the real-world-asset layer is a part of tokenization.
const TAGS = ['tokenization'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 502: ErrorBody, 503: ErrorBody };

const HolderRef = Type.String({ minLength: 1, maxLength: 64, description: 'an account holder id (ah_…), standing for its EVM wallets, or an EVM address' });
const HolderParams = Type.Object({ holderRef: HolderRef });
const TokenHolderParams = Type.Object({ id: Type.String({ maxLength: 64 }), holderRef: HolderRef });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const Eligibility = {
  verified: Type.Boolean({ description: 'whether the holder passed verification: only a verified, unexpired holder may receive the token' }),
  jurisdiction: Type.Integer({ minimum: 0, maximum: 65_535, description: 'ISO 3166-1 numeric country code (0: none)' }),
  category: Type.Integer({ minimum: 0, maximum: 255, description: 'the issuer\'s investor category code (0: none)' }),
  expires_at: Nullable(Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1, description: 'unix seconds after which the eligibility no longer counts; null: no expiry' })),
};
const EligibilityBody = Type.Object({ ...Eligibility, expires_at: Type.Optional(Eligibility.expires_at) }, { additionalProperties: false });
const OpRef = Type.Object({ token_id: Type.String(), operation_id: Type.String() });
const EligibilityResult = Type.Object({
  holder_ref: Type.String(), addresses: Type.Array(Type.String()), ...Eligibility, revision: Type.Integer(), changed: Type.Boolean({ description: 'false: the same state was already desired; nothing was proposed' }),
  operations: Type.Array(OpRef, { description: 'the Safe operation proposed on each of the workspace\'s deployed tokens, to sign at /v1/tokenization/tokens/{token_id}/operations/{operation_id}/signatures' }),
  updated_at: Type.String(),
});
const LockupBody = Type.Object({ until: Type.Integer({ minimum: 0, maximum: 2 ** 53 - 1, description: 'unix seconds until which the holder\'s tokens may not leave its addresses; 0 lifts the lockup' }) }, { additionalProperties: false });
const LockupResult = Type.Object({
  token_id: Type.String(), holder_ref: Type.String(), addresses: Type.Array(Type.String()), until: Type.Integer(), revision: Type.Integer(), changed: Type.Boolean(),
  operation_id: Type.String({ description: 'the Safe operation setting it on the token\'s access registry' }), updated_at: Type.String(),
});
const Status = Type.Union([Type.Literal('none'), Type.Literal('pending'), Type.Literal('applied')], { description: '`none`: nothing desired; `pending`: the chain does not show the desired state yet (its operation is not executed); `applied`: it does' });
const HolderEligibility = Type.Object({
  token_id: Type.String(), holder_ref: Type.String(),
  registry: Type.Object({
    address: Type.String({ description: 'the token\'s access registry (CREATE2, known before it exists); attach it with POST /v1/tokenization/tokens/{id}/access-registry' }),
    deployed: Type.Boolean(), attached: Type.Boolean({ description: 'whether the token consults it (accessRegistry() on chain)' }),
  }),
  desired: Type.Object({
    eligibility: Nullable(Type.Object({ ...Eligibility, revision: Type.Integer(), operation_id: Nullable(Type.String()), updated_at: Type.String() })),
    lockup: Nullable(Type.Object({ until: Type.Integer(), revision: Type.Integer(), operation_id: Type.String(), updated_at: Type.String() })),
  }),
  addresses: Type.Array(Type.Object({
    address: Type.String(),
    on_chain: Nullable(Type.Object({ eligibility: Type.Object({ ...Eligibility, eligible_now: Type.Boolean() }), locked_until: Type.Integer() }, { description: 'what the registry holds for this token (null: no registry yet)' })),
    eligibility_status: Status, lockup_status: Status,
  })),
});
const BlockQuery = Type.Object({
  block: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$', description: 'a block number; default the latest block the chain\'s finality depth below its head' })),
  token_id: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]{0,77})$', description: 'ERC-1155: only this token id' })),
}, { additionalProperties: false });
const Holding = Type.Object({ address: Type.String(), balance: Type.String({ description: 'ERC-20: base units; ERC-721: how many NFTs; ERC-1155: units (of token_id when given)' }) });
const Holders = Type.Object({ token_id: Type.String(), block: Type.String(), data: Type.Array(Holding, { description: 'every holder with a balance above 0, by address' }) });
const CapTable = Type.Object({
  token_id: Type.String(), block: Type.String(), total: Type.String({ description: 'the sum of the balances: the supply held' }), holders: Type.Integer(),
  entries: Type.Array(Type.Object({ address: Type.String(), balance: Type.String(), share_ppm: Type.Integer({ description: 'the holder\'s share of the total in parts per million, rounded down' }) }), { description: 'largest holding first' }),
});

export const rwaHoldersRoutes: FastifyPluginAsyncTypebox<{ holders: RwaHolders }> = async (app, { holders: { holders, capTable } }) => {
  app.put('/rwa/holders/:holderRef/eligibility', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Set a holder\'s global eligibility: verified, jurisdiction, investor category, expiry',
      description: 'Recorded, then pushed to the access registry of each of the workspace\'s deployed tokens (deployed first when absent) by one Safe operation of the token\'s admin Safe, and appended to each token\'s log. The same state again changes nothing. docs/platform/rwa.md#holders-eligibility-lockups-and-the-cap-table.',
      tags: TAGS, security: change, params: HolderParams, body: EligibilityBody, response: { 200: EligibilityResult, ...errors },
    },
  }, async (req) => {
    const { record, changed } = await holders.setEligibility(scopeOf(req), actorOf(req), req.params.holderRef, { ...req.body, expires_at: req.body.expires_at ?? null });
    return { holder_ref: record.holder_ref, addresses: record.addresses, ...eligibilityOf(record), revision: record.revision, changed, operations: record.operations, updated_at: record.updated_at };
  });

  app.get('/rwa/tokens/:id/eligibility/:holderRef', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'A holder\'s eligibility and lockup on a token: desired, and what the token\'s access registry holds on chain',
      tags: TAGS, security: read, params: TokenHolderParams, response: { 200: HolderEligibility, ...errors },
    },
  }, async (req) => holders.view(scopeOf(req), req.params.id, req.params.holderRef));

  app.put('/rwa/tokens/:id/lockups/:holderRef', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Lock a holder\'s tokens until a time (0 lifts it): its addresses may not send the token before then',
      description: 'Recorded, then pushed to the token\'s access registry by a Safe operation of its admin Safe, and appended to the token\'s log. The same value again changes nothing. docs/platform/rwa.md#holders-eligibility-lockups-and-the-cap-table.',
      tags: TAGS, security: change, params: TokenHolderParams, body: LockupBody, response: { 200: LockupResult, ...errors },
    },
  }, async (req) => {
    const { record, changed } = await holders.setLockup(scopeOf(req), actorOf(req), req.params.id, req.params.holderRef, req.body.until);
    return { token_id: record.token_id, holder_ref: record.holder_ref, addresses: record.addresses, until: record.until, revision: record.revision, changed, operation_id: record.operation_id, updated_at: record.updated_at };
  });

  const balances = async (req: { params: { id: string }; query: { block?: string | undefined; token_id?: string | undefined } } & Parameters<typeof scopeOf>[0]) => {
    const scope = scopeOf(req);
    // The token first: another workspace's id is 404 before anything else is looked at.
    const token = await holders.token(scope, req.params.id);
    if (req.query.token_id !== undefined && token.kind !== 'erc1155') throw new CustodyError('validation_failed', `token_id: only for an ERC-1155 token; this one is ${token.kind}`);
    const block = await capTable.resolveBlock(token, req.query.block === undefined ? undefined : BigInt(req.query.block));
    return { token, block, map: await capTable.balancesOf(token, block, req.query.token_id === undefined ? undefined : BigInt(req.query.token_id)) };
  };

  app.get('/rwa/tokens/:id/holders', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'A token\'s holders and their balances at a block, from the indexed Transfer history',
      description: 'Indexed incrementally from the token\'s Transfer (TransferSingle, TransferBatch) events; a block less than the chain\'s finality depth below its head is 409 until it is deep enough. docs/platform/rwa.md#holders-eligibility-lockups-and-the-cap-table.',
      tags: TAGS, security: read, params: IdParam, querystring: BlockQuery, response: { 200: Holders, ...errors },
    },
  }, async (req) => {
    const { token, block, map } = await balances(req);
    return { token_id: token.id, block: block.toString(), data: [...map].sort(([a], [b]) => (a < b ? -1 : 1)).map(([address, balance]) => ({ address, balance: balance.toString() })) };
  });

  app.get('/rwa/tokens/:id/cap-table', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'A token\'s cap table at a block: each holder\'s balance and share, largest first',
      description: 'From the same indexed Transfer history as holders. docs/platform/rwa.md#holders-eligibility-lockups-and-the-cap-table.',
      tags: TAGS, security: read, params: IdParam, querystring: BlockQuery, response: { 200: CapTable, ...errors },
    },
  }, async (req) => {
    const { token, block, map } = await balances(req);
    return { token_id: token.id, block: block.toString(), ...capTableOf(map) };
  });
};

/** The cap table of `balances`: total, holders, entries largest first (ties by address), shares in ppm rounded down. */
export function capTableOf(balances: Map<string, bigint>) {
  const total = [...balances.values()].reduce((a, b) => a + b, 0n);
  const entries = [...balances].sort(([a, x], [b, y]) => (x === y ? (a < b ? -1 : 1) : x > y ? -1 : 1))
    .map(([address, balance]) => ({ address, balance: balance.toString(), share_ppm: total === 0n ? 0 : Number((balance * 1_000_000n) / total) }));
  return { total: total.toString(), holders: entries.length, entries };
}
