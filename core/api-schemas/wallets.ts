// The platform API's wallet operations (docs/platform/wallets.md): a wallet's balance, its history and
// ledger pages, and a payment request. The wallet itself is the vault API's (vaults.ts `Wallet`); the
// routes (api/routes/v1/wallets.ts) validate and document with these.
import { Type } from '@sinclair/typebox';
import { Page, PageQuery } from './page.ts';
import { TransactionStateSchema } from './transactions.ts';

/** Base units, a positive decimal integer without leading zeros (at most 78 digits: 2^256 has 78). */
const POSITIVE_AMOUNT = '^[1-9][0-9]{0,77}$';
const ASSET = '^[a-z0-9-]{1,40}:(native|0x[0-9a-fA-F]{40})$';
/** Free text that goes into a URI: printable, no control characters. */
const TEXT = '^[^\\x00-\\x1f\\x7f]*$';

export const AssetBalance = Type.Object({
  asset: Type.String({ description: '`<chain>:native` or `<chain>:<token contract>`, as in a transaction\'s transfers' }),
  amount: Type.Union([Type.String({ description: 'base units, decimal' }), Type.Null()], { description: 'null for a token contract that does not answer balanceOf' }),
  unconfirmed_amount: Type.Optional(Type.String({ description: 'Bitcoin: unspent outputs not yet in a block, not counted in amount' })),
});

export const WalletBalance = Type.Object({
  wallet_id: Type.String(),
  chain: Type.String(),
  address: Type.String(),
  block_height: Type.Integer({ description: 'EVM: the block the balances were read at; Bitcoin: the backend\'s tip when read' }),
  as_of: Type.String({ format: 'date-time', description: 'EVM: that block\'s time; Bitcoin: the time of the read' }),
  balances: Type.Array(AssetBalance, { description: 'the native asset first' }),
});

/** GET /v1/wallets/{walletId}/history: the wallet's transactions, newest first. */
export const WalletHistoryQuery = Type.Object({ ...PageQuery, state: Type.Optional(TransactionStateSchema) }, { additionalProperties: false });

export const LedgerEntry = Type.Object({
  id: Type.String(),
  wallet_id: Type.String(),
  transaction_id: Type.String(),
  sequence: Type.Integer({ minimum: 1, description: 'the wallet\'s entries are numbered 1, 2, 3, ... in the order they were written' }),
  kind: Type.Union([Type.Literal('hold'), Type.Literal('hold_release'), Type.Literal('transfer'), Type.Literal('fee')]),
  direction: Type.Union([Type.Literal('debit'), Type.Literal('credit')]),
  asset: Type.String(),
  amount: Type.String({ description: 'base units, a positive decimal integer' }),
  counterparty: Type.Union([Type.String(), Type.Null()], { description: 'the recipient of a transfer or its hold' }),
  tx_hash: Type.Union([Type.String(), Type.Null()]),
  block_number: Type.Union([Type.Integer(), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
});
export const LedgerQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });
export const LedgerPage = Page(LedgerEntry);

export const PaymentRequestBody = Type.Object({
  amount: Type.Optional(Type.String({ pattern: POSITIVE_AMOUNT, description: 'base units (wei, token units, satoshis); any amount when absent' })),
  asset: Type.Optional(Type.String({ pattern: ASSET, description: '`<chain>:native` (default) or, on EVM chains, `<chain>:<token contract>`' })),
  label: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: TEXT, description: 'Bitcoin (BIP-21) only' })),
  message: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: TEXT, description: 'Bitcoin (BIP-21) only' })),
}, { additionalProperties: false });

export const PaymentRequest = Type.Object({
  uri: Type.String({ description: 'EIP-681 (EVM) or BIP-21 (Bitcoin)' }),
  asset: Type.String(),
  amount: Type.Union([Type.String(), Type.Null()]),
  png: Type.String({ description: 'the QR code of `uri`, `data:image/png;base64,...`' }),
  svg: Type.String({ description: 'the same QR code as SVG' }),
});
