// Tokenization (docs/platform/tokenization.md): authorities (6 operations), token deployments (6), the
// operations of a token's admin Safe, the calls a vault wallet makes on a token itself (policy-mint, NFT
// transfers), gasless transfers and the reads from the chain, with a workspace bearer key
// (tokenization.read, .manage, .operate). Every creating POST needs an Idempotency-Key: the same key and
// body answer the same record, another body is 409 idempotency_key_reused.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { DEFAULT_LIMIT, Page, PageQuery } from '../../store/pagination.ts';
import { IdempotentRequests, idempotencyKeyOf, requiredIdempotencyKey } from '../../idempotency.ts';
import { authorityView } from '../../tokenization/authority-service.ts';
import { tokenView, type TokenFilters } from '../../tokenization/token-service.ts';
import { TOKEN_STATUSES } from '../../tokenization/token-states.ts';
import type { Tokenization } from '../../tokenization/tokenization-setup.ts';
import { operationView, type OperationFilters, type SignatureInput } from '../../tokenization/operation-service.ts';
import type { VaultCallInput } from '../../tokenization/vault-call-service.ts';
import { ROLES_MODULE_ACTIONS } from '../../tokenization/roles-module-calls.ts';
import { OPERATION_STATES } from '../../tokenization/operation-states.ts';
import { OPERATION_KINDS, ROLE_NAMES, type OperationKind } from '../../tokenization/token-calls.ts';
import { readToken, tokenContracts, treasuryStatus } from '../../tokenization/token-reads.ts';
import { relayView, type RelayInput } from '../../tokenization/gasless-service.ts';
import { RELAY_STATES } from '../../tokenization/relay-states.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { Nullable, literals } from './schema-helpers.ts';

const TAGS = ['tokenization'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 502: ErrorBody, 503: ErrorBody };

const Address = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$', description: 'an EVM address' });
const Chain = Type.String({ pattern: '^[a-z0-9-]{1,40}$', description: 'a chain name of GET /v1/chains/available, e.g. evm-local' });
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const KINDS = ['erc20', 'erc721', 'erc1155'] as const;

const Authority = Type.Object({
  id: Type.String(), name: Type.String(),
  addresses: Type.Array(Type.Object({ address: Type.String(), chain: Type.String(), kind: literals(['eoa', 'contract'] as const), proven_at: Type.String() })),
  control_safes: Type.Array(Type.Object({ address: Type.String(), chain: Type.String(), owners: Type.Array(Type.String()), threshold: Type.Integer(), origin: literals(['deployed', 'registered'] as const), added_at: Type.String() })),
  created_at: Type.String(), updated_at: Type.String(),
});
const Challenge = Type.Object({
  challenge_id: Type.String(), authority_id: Type.String(), address: Type.String(), chain: Type.String(),
  message: Type.String({ description: 'the exact text to sign with EIP-191 personal_sign (an EOA), or for the contract account\'s ERC-1271 isValidSignature over its EIP-191 hash' }),
  expires_at: Type.String(),
});
const Owner = Type.Object({ address: Type.String(), kind: literals(['vault', 'outside'] as const), wallet_id: Nullable(Type.String()) });
const Token = Type.Object({
  id: Type.String(), kind: literals(KINDS), chain: Type.String(), chain_id: Type.Integer(), name: Nullable(Type.String()), symbol: Nullable(Type.String()), decimals: Nullable(Type.Integer()),
  base_uri: Nullable(Type.String()), uri: Nullable(Type.String()), authority_id: Nullable(Type.String()),
  admin: Type.Object({ owners: Type.Array(Owner), threshold: Type.Integer() }, { description: 'the admin Safe\'s owners and threshold' }),
  address: Type.String({ description: 'the token, CREATE2: known before it is deployed' }), safe: Type.String({ description: 'the admin Safe, CREATE2 through the proxy factory' }), forwarder: Type.String({ description: 'the chain\'s ERC2771Forwarder the token trusts' }),
  status: literals(TOKEN_STATUSES),
  steps: Type.Array(Type.Object({ name: Type.String(), address: Type.String(), status: literals(['pending', 'sent', 'done'] as const) })),
  failure: Nullable(Type.Object({ reason: literals(['revert', 'engine'] as const), step: Type.String(), message: Type.String(), error_name: Nullable(Type.String()), at: Type.String() })),
  deploy_attempts: Type.Integer(), created_at: Type.String(), updated_at: Type.String(), deployed_at: Nullable(Type.String()),
});
const OwnerInput = Type.Union([
  Type.Object({ wallet_id: Type.String({ minLength: 1, maxLength: 64, description: 'an EVM wallet of one of the customer\'s vaults on the token\'s chain' }) }, { additionalProperties: false }),
  Type.Object({ address: Address }, { additionalProperties: false, description: 'an outside signer' }),
]);
const Admin = Type.Object({ owners: Type.Array(OwnerInput, { minItems: 1, maxItems: 20 }), threshold: Type.Integer({ minimum: 1, maximum: 20 }) }, { additionalProperties: false });
const Common = { chain: Chain, authority_id: Type.Optional(Type.String({ maxLength: 64 })), admin: Admin };
const Name = Type.String({ minLength: 1, maxLength: 100 });
const Symbol = Type.String({ minLength: 1, maxLength: 16, pattern: '^[A-Za-z0-9._-]+$' });
const Uri = Type.String({ minLength: 1, maxLength: 512 });
const DeployErc20 = Type.Object({ ...Common, name: Name, symbol: Symbol, decimals: Type.Optional(Type.Integer({ minimum: 0, maximum: 36 })) }, { additionalProperties: false });
const DeployErc721 = Type.Object({ ...Common, name: Name, symbol: Symbol, base_uri: Type.Optional(Type.String({ maxLength: 512 })) }, { additionalProperties: false });
const DeployErc1155 = Type.Object({ ...Common, uri: Uri }, { additionalProperties: false });
const TokenQuery = Type.Object({
  ...PageQuery, status: Type.Optional(literals(TOKEN_STATUSES)), kind: Type.Optional(literals(KINDS)), chain: Type.Optional(Chain), authority_id: Type.Optional(Type.String({ maxLength: 64 })),
}, { additionalProperties: false });

const Uint = Type.String({ pattern: '^(0|[1-9][0-9]{0,77})$', description: 'a non-negative integer as a decimal string' });
const HexData = Type.String({ pattern: '^0x([0-9a-fA-F]{2})*$', maxLength: 2 + 2 * 65_536, description: '0x hex bytes' });
const OpParams = Type.Object({ id: Type.String({ maxLength: 64 }), opId: Type.String({ maxLength: 64 }) });
const SafeTx = Type.Object({
  to: Type.String(), value: Type.String(), data: Type.String(), operation: Type.Integer(), safe_tx_gas: Type.String(), base_gas: Type.String(), gas_price: Type.String(),
  gas_token: Type.String(), refund_receiver: Type.String(), nonce: Type.String(),
}, { description: 'the Safe 1.4.1 SafeTx struct, integers as decimal strings' });
const VaultCall = Type.Object({
  organization: Type.String(), wallet_id: Type.String(), from: Type.String({ description: 'the wallet\'s address: the sender' }), to: Type.String({ description: 'the token' }),
  data: Type.String({ description: 'the calldata the customer\'s intent signs' }), transaction_id: Type.String({ description: 'the vault transaction (GET /v1/transactions/{txId}) that carries it' }),
  intent_sha256: Type.String({ description: 'SHA-256 of the intent bytes the customer signed' }),
}, { description: 'a call by a vault wallet (policy_mint, nft_transfer): one customer-signed kind-1 intent, no Safe transaction' });
const Operation = Type.Object({
  id: Type.String(), token_id: Type.String(), kind: Type.String(), params: Type.Record(Type.String(), Type.Unknown()), state: literals(OPERATION_STATES),
  via: Type.Union([Type.Literal('safe'), Type.Literal('vault_transaction')], { description: '`safe`: a Safe transaction of the admin Safe; `vault_transaction`: a call by a vault wallet (its Safe fields are null)' }),
  safe: Nullable(Type.String()), chain: Type.String(), chain_id: Type.Integer(),
  safe_tx: Nullable(SafeTx), safe_tx_hash: Nullable(Type.String({ description: 'the EIP-712 SafeTx hash owners sign (Safe getTransactionHash)' })), safe_nonce: Nullable(Type.String()), threshold: Nullable(Type.Integer()),
  signatures: Type.Array(Type.Object({ owner: Type.String(), how: literals(['vault_intent', 'vault_transaction', 'eip712'] as const), wallet_id: Nullable(Type.String()), transaction_id: Nullable(Type.String()), signature: Type.String(), at: Type.String() })),
  pending_intents: Type.Array(Type.Object({
    kind: Type.Literal('evm.safe_tx'), organization: Type.String(), wallet_id: Type.String(), chain_id: Type.Integer(), owner: Type.String(), safe: Type.String(), to: Type.String(), value: Type.String(), data: Type.String(),
    operation: Type.Integer(), safe_tx_gas: Type.String(), base_gas: Type.String(), gas_price: Type.String(), gas_token: Type.String(), refund_receiver: Type.String(), safe_nonce: Type.String(),
  }), { description: 'for each owner vault that has not signed: the kind-3 intent fields (docs/intents.md "Kind 3") the customer signs, with its own idempotency_key and not_after' }),
  module_execution: Nullable(Type.Object({
    module: Type.String({ description: 'the token\'s Zodiac Roles modifier' }), role_key: Type.Integer(), member: Type.String({ description: 'the member vault wallet\'s address, the sender' }),
    wallet_id: Type.String(), transaction_id: Type.String({ description: 'the vault transaction carrying the member\'s call' }), at: Type.String(),
  }, { description: 'set when a Safe operation runs through the roles module (module-signature) instead of the Safe\'s signatures; null otherwise and for a call by a vault wallet' })),
  reproposals: Type.Integer({ description: 'how many times an earlier failure or module execution moved it to a freed Safe nonce' }), vault_call: Nullable(VaultCall), tx_hash: Nullable(Type.String()),
  failure: Nullable(Type.Object({ reason: literals(['revert', 'engine'] as const), message: Type.String(), error_name: Nullable(Type.String()), at: Type.String() })),
  created_at: Type.String(), updated_at: Type.String(), executed_at: Nullable(Type.String()), confirmed_at: Nullable(Type.String()),
});
const OperationQuery = Type.Object({ ...PageQuery, state: Type.Optional(literals(OPERATION_STATES)), kind: Type.Optional(Type.String({ maxLength: 40 })) }, { additionalProperties: false });
const SignatureBody = Type.Union([
  Type.Object({ wallet_id: Type.String({ maxLength: 64 }), intent: Type.String({ pattern: '^(0x)?[0-9a-fA-F]+$', maxLength: 140_000 }), intent_signature: Type.String({ pattern: '^(0x)?[0-9a-fA-F]{128}$' }), end_user_token: Type.Optional(Type.String({ maxLength: 8192, description: 'a hosted vault with end-user authentication: the end user\'s token naming this intent' })) }, { additionalProperties: false, description: 'an owner vault: the customer-signed kind-3 intent, submitted through the vault transaction path' }),
  Type.Object({ transaction_id: Type.String({ maxLength: 80 }) }, { additionalProperties: false, description: 'an owner vault: a vault transaction of kind 3 already signed over this operation\'s SafeTx' }),
  Type.Object({ owner: Address, signature: Type.String({ pattern: '^0x[0-9a-fA-F]{130}$' }) }, { additionalProperties: false, description: 'an outside owner: its EIP-712 signature over safe_tx_hash' }),
]);
const SignedIntent = {
  wallet_id: Type.String({ minLength: 1, maxLength: 64, description: 'the vault wallet that sends the call: an EVM wallet of the customer on the token\'s chain' }),
  intent: Type.String({ pattern: '^(0x)?[0-9a-fA-F]+$', maxLength: 140_000, description: 'hex of the customer-signed kind-1 intent (docs/intents.md "Kind 1") from the wallet to the token, value 0, data exactly this call' }),
  intent_signature: Type.String({ pattern: '^(0x)?[0-9a-fA-F]{128}$', description: 'the Ed25519 signature over the intent bytes, by an API key of the organization' }),
  end_user_token: Type.Optional(Type.String({ maxLength: 8192, description: 'a hosted vault with end-user authentication: the end user\'s token naming this intent' })),
};
const PolicyMintBody = Type.Object({ ...SignedIntent, to: Address, amount: Type.Optional(Uint), token_id: Type.Optional(Uint), data: Type.Optional(HexData) }, { additionalProperties: false });
const NftTransferFields = {
  wallet_id: SignedIntent.wallet_id, to: Address, token_id: Uint,
  amount: Type.Optional(Type.String({ ...Uint, description: 'ERC-1155: how many of the id (required); ERC-721: absent' })),
};
const NftBuildBody = Type.Object(NftTransferFields, { additionalProperties: false });
const NftTransferBody = Type.Object({ ...NftTransferFields, intent: SignedIntent.intent, intent_signature: SignedIntent.intent_signature, end_user_token: SignedIntent.end_user_token }, { additionalProperties: false });
const CallIntent = Type.Object({
  kind: Type.Literal('evm.transfer'), organization: Type.String(), wallet_id: Type.String(), chain_id: Type.Integer(), from: Type.String(), to: Type.String({ description: 'the token' }),
  asset: Type.Literal('native'), amount: Type.Literal('0'), data: Type.String({ description: 'the calldata: safeTransferFrom(from = the wallet, to, id[, amount, ""])' }),
}, { description: 'the kind-1 intent fields (docs/intents.md "Kind 1") the customer signs, adding its own nonce (POST /v1/transactions/prepare), max_fee, idempotency_key and not_after' });
const BuiltNftTransfer = Type.Object({ wallet_id: Type.String(), to: Type.String(), token_id: Type.String(), amount: Nullable(Type.String()), intent: CallIntent });
const ModuleSignatureBody = Type.Object({
  wallet_id: Type.String({ maxLength: 64, description: 'the member: a vault wallet of the customer holding the role on the token\'s roles module' }),
  role_key: Type.Integer({ minimum: 0, maximum: 65_535, description: 'the Roles v1 role (uint16) the member calls with' }),
  intent: Type.String({ pattern: '^(0x)?[0-9a-fA-F]+$', maxLength: 140_000, description: 'the customer-signed kind-1 intent: from the member wallet to the roles module, value 0, data execTransactionWithRole(to, value, data, operation, role_key, true) of the operation\'s SafeTx' }),
  intent_signature: Type.String({ pattern: '^(0x)?[0-9a-fA-F]{128}$' }),
  end_user_token: Type.Optional(Type.String({ maxLength: 8192, description: 'a hosted vault with end-user authentication: the end user\'s token naming this intent' })),
}, { additionalProperties: false });
const RolesModuleAction = Type.Object({
  action: literals(ROLES_MODULE_ACTIONS),
  role_key: Type.Optional(Type.Integer({ minimum: 0, maximum: 65_535, description: 'a Roles v1 role (uint16)' })),
  member: Type.Optional(Address),
  functions: Type.Optional(Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$' }), { minItems: 1, maxItems: 20, description: 'state-changing functions of the token, by name' })),
}, { additionalProperties: false, description: 'configure the token\'s Zodiac Roles modifier: enable it on the Safe; assign_role / unassign_role {role_key, member}; allow_functions / revoke_functions {role_key, functions} on this token' });
const Accounts = Type.Array(Address, { minItems: 1, maxItems: 100 });
const OPERATION_BODIES: Record<OperationKind, { summary: string; body: ReturnType<typeof Type.Object> | ReturnType<typeof Type.Union> }> = {
  mint: { summary: 'Mint: ERC-20 {to, amount}; ERC-721 {to, token_id}; ERC-1155 {to, token_id, amount, data?}. The Safe mints as a MINTER_ROLE holder under its mint policy', body: Type.Object({ to: Address, amount: Type.Optional(Uint), token_id: Type.Optional(Uint), data: Type.Optional(HexData) }, { additionalProperties: false }) },
  burn: { summary: 'Burn what the Safe holds: ERC-20 {amount}; ERC-721 {token_id}; ERC-1155 {token_id, amount, account?}', body: Type.Object({ amount: Type.Optional(Uint), token_id: Type.Optional(Uint), account: Type.Optional(Address) }, { additionalProperties: false }) },
  pause: { summary: 'Pause every transfer, mint and burn', body: Type.Object({}, { additionalProperties: false }) },
  unpause: { summary: 'Lift the pause', body: Type.Object({}, { additionalProperties: false }) },
  grant_role: { summary: 'Grant a role to an account', body: Type.Object({ role: literals(ROLE_NAMES), account: Address }, { additionalProperties: false }) },
  revoke_role: { summary: 'Revoke a role from an account', body: Type.Object({ role: literals(ROLE_NAMES), account: Address }, { additionalProperties: false }) },
  access_list_add: { summary: 'Put accounts on the allow list or the deny list', body: Type.Object({ accounts: Accounts, list: literals(['allow', 'deny'] as const) }, { additionalProperties: false }) },
  access_list_remove: { summary: 'Take accounts off the access list', body: Type.Object({ accounts: Accounts }, { additionalProperties: false }) },
  set_access_registry: { summary: 'Set the access-registry hook every transfer consults', body: Type.Object({ registry: Address }, { additionalProperties: false }) },
  disable_access_registry: { summary: 'Remove the access-registry hook', body: Type.Object({}, { additionalProperties: false }) },
  enable_treasury: { summary: 'Treasury mode: one side of every movement must be the treasury', body: Type.Object({ treasury: Address }, { additionalProperties: false }) },
  disable_treasury: { summary: 'Leave treasury mode', body: Type.Object({}, { additionalProperties: false }) },
  recover: { summary: 'Move everything of a lost address to a new one (RECOVERY_ROLE): ERC-20 {lost, to}; ERC-721/1155 also token_ids', body: Type.Object({ lost: Address, to: Address, token_ids: Type.Optional(Type.Array(Uint, { minItems: 1, maxItems: 100 })) }, { additionalProperties: false }) },
  deprecate: { summary: 'Deprecate the token in favour of a successor; movements then stop', body: Type.Object({ successor: Address }, { additionalProperties: false }) },
  set_mint_policy: { summary: 'Set a minter\'s mint policy: at most cap per period of period_seconds, enforced on chain', body: Type.Object({ minter: Address, cap: Uint, period_seconds: Type.Integer({ minimum: 1, maximum: 10 * 365 * 86_400 }) }, { additionalProperties: false }) },
  revoke_mint_policy: { summary: 'Remove a minter\'s mint policy (it can no longer mint)', body: Type.Object({ minter: Address }, { additionalProperties: false }) },
  raw_safe_tx: {
    summary: 'Propose any Safe transaction of the admin Safe (a delegatecall only to MultiSendCallOnly), or with {roles_module} one that enables or configures the token\'s roles module',
    body: Type.Union([
      Type.Object({ to: Address, value: Type.Optional(Uint), data: Type.Optional(HexData), operation: Type.Optional(Type.Union([Type.Literal(0), Type.Literal(1)])) }, { additionalProperties: false }),
      Type.Object({ roles_module: RolesModuleAction }, { additionalProperties: false }),
    ]),
  },
};

const ForwardRequestJson = Type.Object({
  from: Address, to: Address, value: Uint, gas: Uint, nonce: Uint, deadline: Type.Integer({ minimum: 0, maximum: 2 ** 48 - 1, description: 'unix seconds (uint48)' }), data: HexData,
}, { additionalProperties: false, description: 'an ERC-2771 ForwardRequest as signed: the typed data\'s message, integers of uint256 as decimal strings' });
const GaslessTransfer = Type.Object({
  function: Type.String({ description: 'the token function the request calls' }), from: Type.String({ description: 'the holder' }), to: Type.String(), amount: Nullable(Type.String()), token_id: Nullable(Type.String()),
});
const TransferRequestBody = Type.Object({
  from: Address, to: Address,
  amount: Type.Optional(Uint), token_id: Type.Optional(Uint),
  deadline: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 48 - 1, description: 'unix seconds; default an hour from now, at most 24 hours from now' })),
  gas: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 53 - 1, description: 'gas forwarded to the token\'s call, 21000 to 1000000; default the estimate plus 20%' })),
}, { additionalProperties: false, description: 'the holder (from) and the transfer: ERC-20 {to, amount}; ERC-721 {to, token_id}; ERC-1155 {to, token_id, amount}' });
const TransferRequest = Type.Object({
  token_id: Type.String(), chain: Type.String(), chain_id: Type.Integer(), forwarder: Type.String(), relayer: Type.String({ description: 'the account that will send and pay for the relay' }), transfer: GaslessTransfer,
  typed_data: Type.Object({
    domain: Type.Object({ name: Type.String(), version: Type.String(), chainId: Type.Integer(), verifyingContract: Type.String() }),
    types: Type.Record(Type.String(), Type.Array(Type.Object({ name: Type.String(), type: Type.String() }))),
    primaryType: Type.Literal('ForwardRequest'),
    message: ForwardRequestJson,
  }, { description: 'the EIP-712 typed data the holder signs with eth_signTypedData_v4; post its message as `request` with the signature to gasless/relay' }),
  hash: Type.String({ description: 'the EIP-712 hash of the typed data' }), deadline_at: Type.String(),
});
const Relay = Type.Object({
  id: Type.String(), token_id: Type.String(), chain: Type.String(), chain_id: Type.Integer(), forwarder: Type.String(), relayer: Type.String(), request: ForwardRequestJson, signature: Type.String(),
  request_hash: Type.String(), transfer: GaslessTransfer, state: literals(RELAY_STATES), tx_hash: Type.String({ description: 'the relayer\'s execute transaction, recorded before it was broadcast' }),
  gas_limit: Type.String(), max_fee_per_gas: Type.String(), max_priority_fee_per_gas: Type.String(),
  reserved_wei: Type.String({ description: 'the worst case reserved against the tenant\'s relay cap: gas_limit × max_fee_per_gas' }),
  gas_used: Nullable(Type.String()), effective_gas_price: Nullable(Type.String()), cost_wei: Nullable(Type.String({ description: 'what the relayer paid: gas_used × effective_gas_price (0 when the transaction never went out)' })),
  block_number: Nullable(Type.String()),
  failure: Nullable(Type.Object({ reason: literals(['revert', 'engine'] as const), message: Type.String(), error_name: Nullable(Type.String()), at: Type.String() })),
  created_at: Type.String(), updated_at: Type.String(), confirmed_at: Nullable(Type.String()),
});

export const tokenizationRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; tokenization: Tokenization }> = async (app, { platform, tokenization }) => {
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  const { authorities, tokens } = tokenization;

  // ── Authorities ────────────────────────────────────────────────────────────────────────────────────
  app.get('/tokenization/authorities', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'List the workspace\'s token authorities, oldest first', tags: TAGS, security: read, querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }), response: { 200: Page(Authority), ...errors } },
  }, async (req) => authorities.list(scopeOf(req), req.query.cursor, req.query.limit ?? DEFAULT_LIMIT));

  app.post('/tokenization/authorities', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Create a token authority (an issuer) that then proves control of its addresses',
      description: 'Idempotency-Key required. docs/platform/tokenization.md#authorities.',
      tags: TAGS, security: change, body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 120 }) }, { additionalProperties: false }), response: { 201: Authority, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const r = await authorities.create(scope, actorOf(req), req.body, requiredIdempotencyKey(req, 'authority'));
    return reply.code(201).send(authorityView(r));
  });

  app.get('/tokenization/authorities/:id', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'Read a token authority with its proven addresses and control Safes', tags: TAGS, security: read, params: IdParam, response: { 200: Authority, ...errors } },
  }, async (req) => authorityView(await authorities.get(scopeOf(req), req.params.id)));

  app.post('/tokenization/authorities/:id/proof-challenge', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'A one-use, expiring challenge an address signs to prove the authority controls it',
      description: 'Bound to the authority, the address and the chain; expires after API_TOKENIZATION_CHALLENGE_TTL_SEC. Idempotency-Key required. docs/platform/tokenization.md#authorities.',
      tags: TAGS, security: change, params: IdParam, body: Type.Object({ address: Address, chain: Chain }, { additionalProperties: false }), response: { 201: Challenge, ...errors },
    },
  }, async (req, reply) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'challenge');
    const c = await idempotent.run(scope.workspace, `authority_challenge:${req.params.id}`, key, req.body, async () => {
      const made = await authorities.challenge(scope, req.params.id, req.body);
      return { challenge_id: made.id, authority_id: made.authority_id, address: made.address, chain: made.chain, message: made.message, expires_at: made.expires_at };
    });
    return reply.code(201).send(c);
  });

  app.post('/tokenization/authorities/:id/proof', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Prove control of the challenged address: EIP-191 for an EOA, ERC-1271 for a contract account',
      description: 'Verified against the chain with viem\'s verifyMessage; a proof that does not verify is 422 address_proof_invalid and leaves the challenge unused; a used challenge is 409 challenge_used, an expired one 409 challenge_expired. docs/platform/tokenization.md#authorities.',
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ challenge_id: Type.String({ maxLength: 64 }), signature: Type.String({ pattern: '^0x[0-9a-fA-F]{2,}$', maxLength: 20_000 }) }, { additionalProperties: false }),
      response: { 200: Authority, ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    idempotencyKeyOf(req);
    return authorityView(await authorities.prove(scope, actorOf(req), req.params.id, req.body));
  });

  app.post('/tokenization/authorities/control-safes', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Add a control Safe owned by an authority\'s proven addresses: deploy a new one, or register an existing one',
      description: '`address`: an existing Safe, registered after getOwners/getThreshold are read on chain. `owners` and `threshold`: a new Safe deployed through the chain layer (the service deployer pays). Every owner must be an address the authority proved on the chain. Idempotency-Key required. docs/platform/tokenization.md#authorities.',
      tags: TAGS, security: change,
      body: Type.Object({
        authority_id: Type.String({ maxLength: 64 }), chain: Chain, address: Type.Optional(Address),
        owners: Type.Optional(Type.Array(Address, { minItems: 1, maxItems: 20 })), threshold: Type.Optional(Type.Integer({ minimum: 1, maximum: 20 })),
      }, { additionalProperties: false }),
      response: { 201: Authority, ...errors },
    },
  }, async (req, reply) => {
    const { authority_id, ...input } = req.body;
    const r = await authorities.controlSafe(scopeOf(req), actorOf(req), authority_id, input, requiredIdempotencyKey(req, 'control Safe'));
    return reply.code(201).send(authorityView(r));
  });

  // ── Deploy ─────────────────────────────────────────────────────────────────────────────────────────
  const deployRoute = (kind: (typeof KINDS)[number], body: typeof DeployErc20 | typeof DeployErc721 | typeof DeployErc1155, what: string) => {
    app.post(`/tokenization/${kind}`, {
      config: { permission: 'tokenization.manage' },
      schema: {
        summary: `Deploy ${what} governed by an m-of-n admin Safe of the customer's vault wallets (and outside signers)`,
        description: 'Every address (token, Safe) is computed before anything is sent and answered at once with status `deploying`; the deployment then runs step by step, each step recorded before it is sent, to `deployed` or `failed_resumable`. The service deployer account pays. Idempotency-Key required. docs/platform/tokenization.md#deploying.',
        tags: TAGS, security: change, body, response: { 201: Token, ...errors },
      },
    }, async (req, reply) => {
      const r = await tokens.deploy(scopeOf(req), actorOf(req), kind, req.body as Parameters<typeof tokens.deploy>[3], requiredIdempotencyKey(req, 'token'));
      return reply.code(201).send(tokenView(r));
    });
  };
  deployRoute('erc20', DeployErc20, 'an ERC-20 token');
  deployRoute('erc721', DeployErc721, 'an ERC-721 token');
  deployRoute('erc1155', DeployErc1155, 'an ERC-1155 token');

  app.get('/tokenization/tokens', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'List the workspace\'s tokens, oldest first, by status, kind, chain or authority', tags: TAGS, security: read, querystring: TokenQuery, response: { 200: Page(Token), ...errors } },
  }, async (req) => {
    const { cursor, limit, ...filters } = req.query;
    return tokens.list(scopeOf(req), filters as TokenFilters, cursor, limit ?? DEFAULT_LIMIT);
  });

  app.get('/tokenization/tokens/:id', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'Read a token: its addresses, admin Safe and deployment', tags: TAGS, security: read, params: IdParam, response: { 200: Token, ...errors } },
  }, async (req) => tokenView(await tokens.get(scopeOf(req), req.params.id)));

  app.post('/tokenization/tokens/:id/deploy/resume', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Continue a failed_resumable deployment where it stopped; nothing already on chain is sent again',
      description: 'Answers the token in `deploying`; a deployed token is 409 conflict. Idempotency-Key required. docs/platform/tokenization.md#deploying.',
      tags: TAGS, security: change, params: IdParam, response: { 200: Token, ...errors },
    },
  }, async (req) => {
    const scope = scopeOf(req);
    const key = requiredIdempotencyKey(req, 'resume');
    const done = await idempotent.run(scope.workspace, `token_resume:${req.params.id}`, key, {}, async () => ({ id: (await tokens.resume(scope, actorOf(req), req.params.id)).id }));
    return tokenView(await tokens.get(scope, done.id));
  });

  // ── Operations ─────────────────────────────────────────────────────────────────────────────────────
  const { operations } = tokenization;
  for (const [kind, { path, permission }] of Object.entries(OPERATION_KINDS) as [OperationKind, (typeof OPERATION_KINDS)[OperationKind]][]) {
    const { summary, body } = OPERATION_BODIES[kind];
    app.post(`/tokenization/tokens/:id/${path}`, {
      config: { permission },
      schema: {
        summary: `${summary} (an operation of the admin Safe)`,
        description: `Proposes operation kind \`${kind}\` at the Safe's next free nonce, in state \`proposed\`; owners then sign it at operations/{opId}/signatures. Arguments are checked against the token's ABI (422 validation_failed, nothing stored). Idempotency-Key required. docs/platform/tokenization.md#operations.`,
        tags: TAGS, security: change, params: IdParam, body, response: { 201: Operation, ...errors },
      },
    }, async (req, reply) => {
      const { op, token } = await operations.propose(scopeOf(req), actorOf(req), req.params.id, kind, (req.body ?? {}) as Record<string, unknown>, requiredIdempotencyKey(req, 'operation'));
      return reply.code(201).send(operationView(op, token));
    });
  }

  app.get('/tokenization/tokens/:id/operations', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'List a token\'s operations, oldest first, by state or kind', tags: TAGS, security: read, params: IdParam, querystring: OperationQuery, response: { 200: Page(Operation), ...errors } },
  }, async (req) => {
    const { cursor, limit, ...filters } = req.query;
    return operations.list(scopeOf(req), req.params.id, filters as OperationFilters, cursor, limit ?? DEFAULT_LIMIT);
  });

  app.get('/tokenization/tokens/:id/operations/:opId', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'Read an operation: its SafeTx, hash and nonce, the signatures collected and the intents still to sign', tags: TAGS, security: read, params: OpParams, response: { 200: Operation, ...errors } },
  }, async (req) => {
    const { op, token } = await operations.get(scopeOf(req), req.params.id, req.params.opId);
    return operationView(op, token);
  });

  app.post('/tokenization/tokens/:id/operations/:opId/signatures', {
    config: { permission: 'tokenization.operate' },
    schema: {
      summary: 'Add an owner\'s signature: a vault\'s customer-signed kind-3 intent (or its signed vault transaction), or an outside owner\'s EIP-712 signature',
      description: 'An intent or vault transaction over another SafeTx than the operation\'s is 422 safe_tx_mismatch; a signature not by a current Safe owner is 422 safe_signature_invalid; a vault that has not signed within the wait is 503 signature_pending (post its transaction_id later). At the threshold the operation is `ready` and the service executes it. An owner that already signed changes nothing. docs/platform/tokenization.md#operations.',
      tags: TAGS, security: change, params: OpParams, body: SignatureBody, response: { 200: Operation, ...errors },
    },
  }, async (req) => {
    idempotencyKeyOf(req);
    const { op, token } = await operations.addSignature(scopeOf(req), actorOf(req), req.params.id, req.params.opId, req.body as SignatureInput);
    return operationView(op, token);
  });

  app.post('/tokenization/tokens/:id/operations/:opId/module-signature', {
    config: { permission: 'tokenization.operate' },
    schema: {
      summary: 'Execute the operation through the token\'s roles module: a role member vault\'s customer-signed call instead of the Safe\'s signatures',
      description: 'The member wallet\'s kind-1 intent must call the token\'s Zodiac Roles modifier with execTransactionWithRole(to, value, data, operation, role_key, true) of exactly the operation\'s SafeTx (else 422 module_call_mismatch); the call is simulated from the member first, and one the role does not allow is 422 module_call_refused with the module\'s decoded error. Then the intent goes through the vault transaction path, the operation is `submitted` (its Safe nonce is freed: later operations move one nonce down) and then `confirmed` on chain. A module that is not enabled, a `ready` or closed operation, a call by a vault wallet (no Safe transaction): 409 conflict. docs/platform/tokenization.md#module-signature.',
      tags: TAGS, security: change, params: OpParams, body: ModuleSignatureBody, response: { 200: Operation, ...errors },
    },
  }, async (req) => {
    idempotencyKeyOf(req);
    const { op, token } = await operations.moduleSignature(scopeOf(req), actorOf(req), req.params.id, req.params.opId, req.body);
    return operationView(op, token);
  });

  // ── Calls by a vault wallet ────────────────────────────────────────────────────────────────────────
  const { vaultCalls } = tokenization;
  app.post('/tokenization/tokens/:id/policy-mint', {
    config: { permission: 'tokenization.operate' },
    schema: {
      summary: 'Mint as a minter vault wallet under its own on-chain mint policy, without the admin Safe\'s signatures',
      description: 'The wallet needs MINTER_ROLE and a mint policy (roles/grant, policies). Body: the wallet, the mint fields of the token kind (ERC-20 {to, amount}; ERC-721 {to, token_id}; ERC-1155 {to, token_id, amount, data?}) and the customer-signed kind-1 intent of exactly that mint (to the token, value 0, data the mint calldata). An intent that differs is 422 call_intent_mismatch; no role or policy 422 mint_not_allowed; over what the policy leaves 422 mint_cap_exceeded (the on-chain figures); a simulated revert 422 token_call_reverted; nothing is stored or submitted on a refusal. Then submitted through the vault transaction path and answered as an operation of kind policy_mint (no Safe transaction) that follows its vault transaction to confirmed or failed. Idempotency-Key required. docs/platform/tokenization.md#calls-by-a-vault-wallet-policy-mint-and-nft-transfers.',
      tags: TAGS, security: change, params: IdParam, body: PolicyMintBody, response: { 201: Operation, ...errors },
    },
  }, async (req, reply) => {
    const { op, token } = await vaultCalls.submit(scopeOf(req), actorOf(req), req.params.id, 'policy_mint', req.body as VaultCallInput, requiredIdempotencyKey(req, 'operation'));
    return reply.code(201).send(operationView(op, token));
  });

  app.post('/tokenization/tokens/:id/nft-transfers/build', {
    config: { permission: 'tokenization.operate' },
    schema: {
      summary: 'Build an NFT transfer by a holder vault wallet: the exact kind-1 intent fields to sign',
      description: 'ERC-721 {wallet_id, to, token_id}; ERC-1155 also amount. Checks on chain that the wallet owns the id (or holds the amount) and simulates the transfer (422 not_token_holder, 422 token_call_reverted); an ERC-20 token is 422. Creates nothing, so it needs no Idempotency-Key. docs/platform/tokenization.md#calls-by-a-vault-wallet-policy-mint-and-nft-transfers.',
      tags: TAGS, security: change, params: IdParam, body: NftBuildBody, response: { 200: BuiltNftTransfer, ...errors },
    },
  }, async (req) => {
    idempotencyKeyOf(req);
    const built = await vaultCalls.build(scopeOf(req), req.params.id, req.body);
    return { wallet_id: built.wallet.id, to: req.body.to.toLowerCase(), token_id: req.body.token_id, amount: req.body.amount ?? null, intent: built.intent };
  });

  app.post('/tokenization/tokens/:id/nft-transfers', {
    config: { permission: 'tokenization.operate' },
    schema: {
      summary: 'Transfer an ERC-721 or ERC-1155 id from a holder vault wallet with its customer-signed intent',
      description: 'The intent must be exactly the transfer nft-transfers/build answers (422 call_intent_mismatch otherwise); ownership is read and the transfer simulated first (422 not_token_holder, 422 token_call_reverted with the token\'s decoded error, for example EnforcedPause), nothing stored or submitted on a refusal. Then submitted through the vault transaction path and answered as an operation of kind nft_transfer (no Safe transaction) that follows its vault transaction to confirmed or failed. Idempotency-Key required. docs/platform/tokenization.md#calls-by-a-vault-wallet-policy-mint-and-nft-transfers.',
      tags: TAGS, security: change, params: IdParam, body: NftTransferBody, response: { 201: Operation, ...errors },
    },
  }, async (req, reply) => {
    const { op, token } = await vaultCalls.submit(scopeOf(req), actorOf(req), req.params.id, 'nft_transfer', req.body as VaultCallInput, requiredIdempotencyKey(req, 'operation'));
    return reply.code(201).send(operationView(op, token));
  });

  // ── Gasless transfers ──────────────────────────────────────────────────────────────────────────────
  const { gasless } = tokenization;
  app.post('/tokenization/tokens/:id/gasless/transfer-request', {
    config: { permission: 'tokenization.operate' },
    schema: {
      summary: 'Build the ERC-2771 forward request a holder signs for a gasless transfer of its own tokens',
      description: 'Answers the EIP-712 typed data (the chain\'s ERC2771Forwarder domain, ForwardRequest at the holder\'s forwarder nonce read now) and its hash; only the token\'s transfer function is built (ERC-20 transfer, ERC-721 and ERC-1155 safeTransferFrom from the holder). Stores nothing. Gasless off (no relayer key) is 422 gasless_unavailable; a transfer the token would refuse now is 422 gasless_would_revert. docs/platform/tokenization.md#gasless-transfers.',
      tags: TAGS, security: change, params: IdParam, body: TransferRequestBody, response: { 200: TransferRequest, ...errors },
    },
  }, async (req) => {
    idempotencyKeyOf(req);
    return gasless.transferRequest(scopeOf(req), req.params.id, req.body);
  });

  app.post('/tokenization/tokens/:id/gasless/relay', {
    config: { permission: 'tokenization.operate' },
    schema: {
      summary: 'Relay a holder\'s signed forward request: the relayer sends it to the forwarder and pays the gas, metered and capped per tenant',
      description: 'The request must be this token\'s transfer of the holder\'s own tokens, unexpired, signed by the holder over exactly these fields (422 forward_signature_invalid), at the forwarder\'s current nonce (a used one is 409 forward_request_used), verified by the forwarder and accepted by the token in simulation (422 gasless_would_revert, decoded). Its worst-case cost is reserved against the tenant\'s cap for the chain (429 relay_budget_exceeded, nothing sent); answers the relay, confirmed or failed with its cost once the receipt is in (or sent, followed by the tokenization.operation.* webhook). A refusal records and sends nothing. Idempotency-Key required: the same key and body answer the relay as it is now. docs/platform/tokenization.md#gasless-transfers.',
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ request: ForwardRequestJson, signature: Type.String({ pattern: '^0x[0-9a-fA-F]{130}$', description: 'the holder\'s 65-byte EIP-712 signature' }) }, { additionalProperties: false }),
      response: { 201: Relay, ...errors, 429: ErrorBody },
    },
  }, async (req, reply) => {
    const r = await gasless.relay(scopeOf(req), actorOf(req), req.params.id, req.body as RelayInput, requiredIdempotencyKey(req, 'relay'));
    return reply.code(201).send(relayView(r));
  });

  // ── Reads from the chain ───────────────────────────────────────────────────────────────────────────
  const chainOf = (token: { chain: string; status: string; id: string }) => {
    const c = tokenization.chain(token.chain);
    if (!c) throw new CustodyError('tokenization_unavailable', `tokenization does not run on ${token.chain} here`);
    return c;
  };
  app.get('/tokenization/tokens/:id/read', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'Call a view function of the token\'s ABI by name with typed arguments',
      description: '`args`: a JSON array (integers as decimal strings, addresses, booleans, 0x hex for bytes). A name that is not a view function of the ABI, or an argument that does not fit, is 422 validation_failed.',
      tags: TAGS, security: read, params: IdParam,
      querystring: Type.Object({ function: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$' }), args: Type.Optional(Type.String({ maxLength: 8192 })) }, { additionalProperties: false }),
      response: { 200: Type.Object({ function: Type.String(), result: Type.Unknown() }), ...errors },
    },
  }, async (req) => {
    const token = await tokens.get(scopeOf(req), req.params.id);
    let args: unknown = [];
    if (req.query.args !== undefined) {
      try {
        args = JSON.parse(req.query.args);
      } catch {
        throw new CustodyError('validation_failed', 'args: not JSON');
      }
    }
    if (!Array.isArray(args)) throw new CustodyError('validation_failed', 'args: a JSON array');
    return readToken(chainOf(token), token, req.query.function, args);
  });

  app.get('/tokenization/tokens/:id/treasury-status', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'Whether treasury mode is on, and the treasury, read on chain', tags: TAGS, security: read, params: IdParam, response: { 200: Type.Object({ token_id: Type.String(), enabled: Type.Boolean(), treasury: Nullable(Type.String()) }), ...errors } },
  }, async (req) => {
    const token = await tokens.get(scopeOf(req), req.params.id);
    return treasuryStatus(chainOf(token), token);
  });

  app.get('/tokenization/tokens/:id/contracts', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'The token\'s contracts (token, admin Safe with its owners, threshold and nonce, forwarder, access registry) as the chain shows them',
      tags: TAGS, security: read, params: IdParam,
      response: {
        200: Type.Object({
          token_id: Type.String(), chain: Type.String(), chain_id: Type.Integer(),
          token: Type.Object({ address: Type.String(), deployed: Type.Boolean() }),
          safe: Type.Object({ address: Type.String(), deployed: Type.Boolean(), owners: Nullable(Type.Array(Type.String())), threshold: Nullable(Type.Integer()), nonce: Nullable(Type.String()) }),
          forwarder: Type.Object({ address: Type.String(), deployed: Type.Boolean() }),
          access_registry: Nullable(Type.String()),
          roles_module: Type.Object({ address: Type.String({ description: 'the token\'s Zodiac Roles modifier (CREATE2 through the ModuleProxyFactory)' }), deployed: Type.Boolean(), enabled: Type.Boolean({ description: 'enabled as a module of the Safe' }) }),
        }),
        ...errors,
      },
    },
  }, async (req) => {
    const token = await tokens.get(scopeOf(req), req.params.id);
    return tokenContracts(chainOf(token), token);
  });
};
