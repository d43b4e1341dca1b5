// Transactions on the vault API (docs/transactions.md, docs/vault-api.md): the body of
// POST /v1/transactions, the transaction the API answers with, and a Bitcoin wallet's unspent outputs.
// The routes (api/routes/v1/transactions.ts) validate and document with them; the SDK sends and reads them.
import { Type } from '@sinclair/typebox';
import { Page, PageQuery } from './page.ts';

const AMOUNT = '^(0|[1-9][0-9]{0,77})$';

/** An approver's approval of an intent, or its rejection (docs/policies.md "Approvals"). */
const Hex = (min: number, max: number) => Type.String({ pattern: `^(?:[0-9a-f]{2}){${min},${max}}$` });
export const ApprovalBody = Type.Object({
  approver_id: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$', description: 'the approver\'s id in the vault\'s policy' }),
  signature: Type.String({ pattern: '^(?:[0-9a-f]{128})?$', description: 'a key approver: Ed25519 over the approval (or rejection) message of this vault, policy version and intent hash, lower-case hex; empty with `passkey`' }),
  passkey: Type.Optional(Type.Object({
    credential: Type.String({ minLength: 1, maxLength: 16_384, description: 'the member credential (JWT) naming the member and the passkey' }),
    credential_id: Hex(1, 1023), authenticator_data: Hex(37, 4096), client_data_json: Hex(1, 4096), signature: Hex(1, 512),
  }, { additionalProperties: false, description: 'a member approver: the WebAuthn assertion whose challenge is the approval message, base64url (docs/policies.md "Members\' passkeys"); bytes in lower-case hex' })),
}, { additionalProperties: false });
const EVM_ADDRESS = '^0x[0-9a-fA-F]{40}$';

export const TransactionStateSchema = Type.Union([
  Type.Literal('awaiting_approval'), Type.Literal('created'), Type.Literal('checks'), Type.Literal('signed'), Type.Literal('broadcast'), Type.Literal('confirmed'), Type.Literal('final'),
  Type.Literal('failed'), Type.Literal('rejected'),
]);

export const Transaction = Type.Object({
  id: Type.String(),
  wallet_id: Type.String(),
  vault_id: Type.String(),
  chain: Type.String(),
  state: TransactionStateSchema,
  idempotency_key: Type.String(),
  intent_sha256: Type.String({ description: 'SHA-256 of the canonical intent bytes, hex' }),
  transfers: Type.Array(Type.Object({ recipient: Type.String(), asset: Type.String(), amount: Type.String() })),
  tx_hash: Type.Union([Type.String({ description: 'EVM 0x hash or Bitcoin txid, once signed' }), Type.Null()]),
  reason: Type.Union([Type.String({ description: 'set when failed or rejected: `<code>: <message>`' }), Type.Null()]),
  fee: Type.Union([Type.String({ description: 'base units: EVM the ceiling gas x max fee per gas, Bitcoin the exact fee' }), Type.Null()]),
  nonce: Type.Optional(Type.Integer({ description: 'EVM: the nonce the intent names' })),
  waiting: Type.Optional(Type.String({ description: 'before signing: why the transaction waits (EVM: a lower nonce of the wallet not yet used) or signs again (`bad_signature: ...`: a signature from the cluster did not verify, nothing was broadcast)' })),
  adopted: Type.Optional(Type.String({ description: 'Bitcoin: set when tx_hash is another signing of the same intent found on chain (same inputs and outputs), which the transaction follows: why' })),
  kind: Type.Optional(Type.Literal('safe_tx', { description: 'a Safe owner signature (intent kind 3, docs/intents.md): its last state is `signed`, with `signature`; nothing is broadcast. Absent for a transfer' })),
  safe_tx: Type.Optional(Type.Object({
    safe: Type.String({ description: 'the Safe, 0x lower case' }),
    chain_id: Type.String({ description: 'EIP-155 chain id of the EIP-712 domain, base 10' }),
    nonce: Type.String({ description: 'the Safe nonce the intent names, base 10' }),
    to: Type.String(),
    operation: Type.Integer({ description: '0 call, 1 delegatecall (to MultiSendCallOnly only)' }),
    safe_tx_hash: Type.String({ description: 'the SafeTx EIP-712 digest (Safe.getTransactionHash), 0x hex: what the wallet signs' }),
  })),
  signature: Type.Optional(Type.String({ description: 'a Safe owner signature, once signed: 65 bytes r || s || v (v 27 or 28), 0x hex, as Safe\'s checkSignatures takes it from an owner account' })),
  block_number: Type.Optional(Type.Integer()),
  confirmations: Type.Optional(Type.Integer()),
  policy: Type.Optional(Type.Object({
    version: Type.Integer({ description: 'the vault policy version the intent was admitted under: approvals sign it' }),
    chain_seq: Type.Integer({ description: 'the intent\'s position in the vault\'s intent chain' }),
    intent: Type.String({ description: 'hex of the intent bytes: an approver decodes them and signs the hash it computes itself' }),
    approvals: Type.Array(Type.Object({ approver_id: Type.String(), signature: Type.String() })),
    quorums: Type.Array(Type.Object({ k: Type.Integer(), approvers: Type.Array(Type.String()), approved_by: Type.Array(Type.String()) }), { description: 'each quorum that applies, and who approved' }),
  }, { description: 'a vault under a policy (docs/policies.md)' })),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const Utxo = Type.Object({
  txid: Type.String({ description: 'display order, hex' }),
  vout: Type.Integer(),
  amount: Type.String({ description: 'satoshis, base-10 integer' }),
  confirmed: Type.Boolean(),
});

export const SubmitBody = Type.Object({
  wallet_id: Type.String({ minLength: 1, maxLength: 64 }),
  intent: Type.Optional(Type.String({ pattern: '^([0-9a-fA-F]{2}){16,70000}$', description: 'hex of the exact canonical intent bytes that were signed (docs/intents.md)' })),
  to: Type.Optional(Type.String({ pattern: EVM_ADDRESS, description: 'EVM convenience: recipient' })),
  amount: Type.Optional(Type.String({ pattern: AMOUNT, description: 'EVM convenience: base units, base-10 integer' })),
  asset: Type.Optional(Type.String({ pattern: `^(native|0x[0-9a-fA-F]{40})$`, description: 'EVM convenience: native (default) or a token contract' })),
  max_fee: Type.Optional(Type.String({ pattern: AMOUNT, description: 'EVM convenience: fee ceiling in wei (default 10^16)' })),
  not_after: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'EVM convenience: the intent\'s not_after, Unix seconds, at most 24 hours ahead; required with the convenience fields' })),
  nonce: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'EVM convenience: the intent\'s nonce (POST /v1/transactions/prepare reserves one); required with the convenience fields' })),
  idempotency_key: Type.String({ pattern: '^[\\x21-\\x7e]{1,128}$' }),
  intent_signature: Type.String({ pattern: '^[0-9a-fA-F]{128}$', description: 'Ed25519 signature over the canonical intent, hex' }),
  end_user_token: Type.Optional(Type.String({ minLength: 1, maxLength: 16384, description: 'hosted tier: JWT naming this intent (docs/end-user-auth.md)' })),
  member_signing_session: Type.Optional(Type.String({ pattern: '^mas_[A-Za-z0-9_-]{43}$', description: 'hosted tier, instead of end_user_token: the signing session of a completed member action for this wallet and these exact intent bytes; single use (docs/platform/member-actions.md)' })),
  chain_link: Type.Optional(Type.String({ pattern: '^([0-9a-fA-F]{2}){100,600}$', description: 'a vault under a policy: hex of the intent\'s link of the vault\'s intent chain, signed by the key that signed the intent (docs/policies.md)' })),
  approvals: Type.Optional(Type.Array(ApprovalBody, { maxItems: 64, description: 'a vault under a policy: approvals of the intent already collected; more can be added while it waits (POST /v1/transactions/{txId}/approvals)' })),
}, { additionalProperties: false });

const IdT = Type.String({ minLength: 1, maxLength: 64 });

/** POST /v1/transactions/prepare: reserve the nonce an EVM intent names (docs/transactions.md "Nonces"). */
export const PrepareBody = Type.Object({
  wallet_id: Type.String({ minLength: 1, maxLength: 64 }),
  idempotency_key: Type.String({ pattern: '^[\\x21-\\x7e]{1,128}$', description: 'the idempotency key the intent will carry; the same key answers the same reservation' }),
  not_after: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'the intent\'s not_after, Unix seconds, at most 24 hours ahead; default an hour ahead. The nonce stays reserved until then' })),
}, { additionalProperties: false });

export const Prepared = Type.Object({
  wallet_id: Type.String(),
  chain: Type.String(),
  chain_id: Type.Integer({ description: 'EIP-155 chain id the intent names' }),
  address: Type.String({ description: 'the wallet\'s address, the intent\'s from' }),
  nonce: Type.Integer({ description: 'the nonce the intent names, reserved for this idempotency key' }),
  not_after: Type.Integer({ description: 'the not_after the intent names, Unix seconds; the reservation lapses then' }),
});

/** GET /v1/transactions: the organization's transactions, oldest first (docs/vault-api.md "Lists"). */
export const ListTransactionsQuery = Type.Object({
  ...PageQuery,
  vault_id: Type.Optional(IdT), wallet_id: Type.Optional(IdT), state: Type.Optional(TransactionStateSchema),
}, { additionalProperties: false });
export const TransactionPage = Page(Transaction);
