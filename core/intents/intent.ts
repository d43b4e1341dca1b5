// Transaction intents, versions 1 to 3 (docs/intents.md). A customer signs the canonical bytes with an
// Ed25519 API key; the API and every signer node parse the same bytes with this module, and each node
// recomputes the digest it signs from them. Version 2 is a Bitcoin transfer whose named inputs carry
// their amounts (BIP-143 commits a P2WPKH signature to its own input's amount only); version 3 is an EVM
// transfer that names its nonce, so the intent fixes the one transaction that can be mined for it.
// Kind 3 (version 1) is a vault owner's signature on one Safe transaction: every field of the SafeTx,
// the Safe's nonce included, so each node recomputes the EIP-712 digest it signs.
import { IntentFormatError, Reader, Writer } from './canonical.ts';
import { signEd25519, verifyEd25519 } from '../../common/ed25519.ts';

/** Every intent starts with these 15 bytes: the domain, then a NUL. */
export const INTENT_DOMAIN = new TextEncoder().encode('custody-intent\0');
export const INTENT_VERSION = 1;
/** Bitcoin transfers whose named inputs carry their amounts. */
export const INTENT_VERSION_INPUT_AMOUNTS = 2;
/** EVM transfers that name their nonce: what nodes sign from (docs/intents.md, "One intent, one transfer"). */
export const INTENT_VERSION_EVM_NONCE = 3;

/**
 * The longest an intent may stay signable: nodes and the API refuse a `not_after` further than this
 * from their clock. It bounds how long a node must remember what it signed for an intent, and how long a
 * leaked signed intent stays usable.
 */
export const MAX_INTENT_LIFETIME_SECONDS = 24n * 60n * 60n;

export const KIND_EVM_TRANSFER = 1;
export const KIND_BTC_TRANSFER = 2;
/** A Safe 1.4.1 owner signature on one SafeTx (core/chains/evm/safe-tx.ts). */
export const KIND_EVM_SAFE_TX = 3;

const ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const IDEMPOTENCY = /^[\x21-\x7e]{1,128}$/;
const BTC_ADDRESS = /^[a-zA-Z0-9]{14,90}$/;
const MAX_CALLDATA = 64 * 1024;
const MAX_OUTPUTS = 100;
const MAX_INPUTS = 500;

export type EvmAsset = { kind: 'native' } | { kind: 'erc20'; contract: Uint8Array };

export interface EvmTransferIntent {
  kind: 'evm.transfer';
  organization: string;
  walletId: string;
  chainId: bigint;
  /**
   * The transaction's nonce (version 3). With it the intent fixes the one transaction of the sender that
   * can be mined for it, whichever nodes sign; nodes refuse an EVM intent without one.
   */
  nonce?: bigint;
  /** The sending address (20 bytes): nodes check it is the key's derived address. */
  from: Uint8Array;
  /** Recipient (20 bytes): for an ERC-20 transfer the token recipient, not the contract. */
  to: Uint8Array;
  asset: EvmAsset;
  /** Base units (wei, or token units). */
  amount: bigint;
  /** Calldata for a native-asset contract call; empty for plain and ERC-20 transfers. */
  data: Uint8Array;
  /** Ceiling on the whole fee in wei: gas limit x max fee per gas. */
  maxFee: bigint;
  idempotencyKey: string;
  /** Unix seconds after which nodes refuse to sign; required (not 0), at most a day ahead. */
  notAfter: bigint;
}

export type BtcNetwork = 'mainnet' | 'testnet' | 'signet' | 'regtest';
const NETWORKS: BtcNetwork[] = ['mainnet', 'testnet', 'signet', 'regtest'];

export interface BtcOutput {
  address: string;
  /** Satoshis. */
  amount: bigint;
}

export interface BtcOutpoint {
  /** Transaction id as displayed (big-endian hex order), 32 bytes. */
  txid: Uint8Array;
  vout: number;
  /**
   * Satoshis of the spent output (version 2). Either every named input carries one or none does; a
   * P2WPKH spend needs them, since its signature commits to its own input's amount only.
   */
  amount?: bigint;
}

export interface BtcTransferIntent {
  kind: 'btc.transfer';
  organization: string;
  walletId: string;
  network: BtcNetwork;
  /** The wallet's own address: inputs come from it and change returns to it. */
  from: string;
  outputs: BtcOutput[];
  /** Ceiling on the fee rate, sat/vB. */
  maxFeeRate: bigint;
  /** Ceiling on the absolute fee, satoshis. */
  maxFee: bigint;
  /** Inputs to spend; empty lets the service select UTXOs of `from` (P2TR only). */
  inputs: BtcOutpoint[];
  idempotencyKey: string;
  notAfter: bigint;
}

/**
 * A vault wallet's signature, as a Safe owner, on one Safe transaction (Safe 1.4.1 `SafeTx`). Every
 * field of the EIP-712 struct and its domain is here, the Safe's nonce included: another nonce, Safe,
 * chain or call is another intent, which needs another customer signature.
 */
export interface SafeTxIntent {
  kind: 'evm.safe_tx';
  organization: string;
  /** The vault wallet that signs, as an owner of the Safe. */
  walletId: string;
  /** EIP-155 chain id of the EIP-712 domain, not 0. */
  chainId: bigint;
  /** The wallet's address (20 bytes): nodes check it is the key's derived address at the path they sign with. */
  owner: Uint8Array;
  /** The Safe (the domain's verifyingContract), 20 bytes. */
  safe: Uint8Array;
  to: Uint8Array;
  /** Wei the Safe sends with the call. */
  value: bigint;
  /** Calldata, at most 64 KiB. */
  data: Uint8Array;
  /** 0 call, 1 delegatecall (nodes sign a delegatecall only to Safe's MultiSendCallOnly). */
  operation: number;
  safeTxGas: bigint;
  baseGas: bigint;
  gasPrice: bigint;
  gasToken: Uint8Array;
  refundReceiver: Uint8Array;
  /** The Safe's nonce: a Safe executes one transaction per nonce. */
  safeNonce: bigint;
  idempotencyKey: string;
  notAfter: bigint;
}

export type Intent = EvmTransferIntent | BtcTransferIntent | SafeTxIntent;

const MAX_MONEY = 21_000_000n * 100_000_000n;

function header(w: Writer, kind: number, version = INTENT_VERSION): Writer {
  return w.raw(INTENT_DOMAIN).u8(version).u8(kind);
}

/** Version 2 exactly when the named inputs carry amounts: one encoding per intent. */
function btcVersion(inputs: BtcOutpoint[]): number {
  const withAmount = inputs.filter((i) => i.amount !== undefined).length;
  if (withAmount && withAmount !== inputs.length) throw new IntentFormatError('either every input carries its amount or none does');
  return withAmount ? INTENT_VERSION_INPUT_AMOUNTS : INTENT_VERSION;
}

/**
 * Why an intent's `not_after` does not allow signing at `nowSeconds`, or undefined when it does. The
 * API and every node apply this same rule.
 */
export function intentExpiryProblem(notAfter: bigint, nowSeconds: bigint): 'intent_expiry_required' | 'intent_expiry_too_far' | 'intent_expired' | undefined {
  if (notAfter === 0n) return 'intent_expiry_required';
  if (notAfter > nowSeconds + MAX_INTENT_LIFETIME_SECONDS) return 'intent_expiry_too_far';
  if (nowSeconds > notAfter) return 'intent_expired';
  return undefined;
}

export function encodeIntent(intent: Intent): Uint8Array {
  const w = new Writer();
  if (intent.kind === 'evm.transfer') {
    // Version 3 exactly when the nonce is named: one encoding per intent.
    header(w, KIND_EVM_TRANSFER, intent.nonce === undefined ? INTENT_VERSION : INTENT_VERSION_EVM_NONCE)
      .str(intent.organization, 'organization', ID, 128)
      .str(intent.walletId, 'wallet_id', ID, 128)
      .u64(intent.chainId);
    // EIP-2681: a nonce is below 2^64 - 1.
    if (intent.nonce !== undefined) {
      if (intent.nonce >= (1n << 64n) - 1n) throw new IntentFormatError('nonce must be below 2^64 - 1 (EIP-2681)');
      w.u64(intent.nonce);
    }
    w.fixed(intent.from, 20, 'from')
      .fixed(intent.to, 20, 'to');
    if (intent.asset.kind === 'native') w.u8(0);
    else w.u8(1).fixed(intent.asset.contract, 20, 'asset contract');
    if (intent.asset.kind === 'erc20' && intent.data.length) throw new IntentFormatError('an ERC-20 transfer carries no calldata');
    if (intent.chainId === 0n) throw new IntentFormatError('chain id must not be 0');
    w.u256(intent.amount).bytes(intent.data, MAX_CALLDATA, 'data').u256(intent.maxFee);
  } else if (intent.kind === 'evm.safe_tx') {
    if (intent.chainId === 0n) throw new IntentFormatError('chain id must not be 0');
    if (intent.operation !== 0 && intent.operation !== 1) throw new IntentFormatError('operation is 0 (call) or 1 (delegatecall)');
    header(w, KIND_EVM_SAFE_TX)
      .str(intent.organization, 'organization', ID, 128)
      .str(intent.walletId, 'wallet_id', ID, 128)
      .u64(intent.chainId)
      .fixed(intent.owner, 20, 'owner')
      .fixed(intent.safe, 20, 'safe')
      .fixed(intent.to, 20, 'to')
      .u256(intent.value)
      .bytes(intent.data, MAX_CALLDATA, 'data')
      .u8(intent.operation)
      .u256(intent.safeTxGas)
      .u256(intent.baseGas)
      .u256(intent.gasPrice)
      .fixed(intent.gasToken, 20, 'gas_token')
      .fixed(intent.refundReceiver, 20, 'refund_receiver')
      .u256(intent.safeNonce);
  } else {
    header(w, KIND_BTC_TRANSFER, btcVersion(intent.inputs))
      .str(intent.organization, 'organization', ID, 128)
      .str(intent.walletId, 'wallet_id', ID, 128)
      .u8(NETWORKS.indexOf(intent.network) + 1)
      .str(intent.from, 'from', BTC_ADDRESS, 90);
    if (NETWORKS.indexOf(intent.network) < 0) throw new IntentFormatError('unknown network');
    if (intent.outputs.length < 1 || intent.outputs.length > MAX_OUTPUTS) throw new IntentFormatError(`1 to ${MAX_OUTPUTS} outputs`);
    w.u16(intent.outputs.length);
    for (const o of intent.outputs) {
      if (o.amount <= 0n) throw new IntentFormatError('output amounts are positive');
      w.str(o.address, 'output address', BTC_ADDRESS, 90).u64(o.amount);
    }
    w.u64(intent.maxFeeRate).u64(intent.maxFee);
    if (intent.inputs.length > MAX_INPUTS) throw new IntentFormatError(`at most ${MAX_INPUTS} inputs`);
    w.u16(intent.inputs.length);
    const seen = new Set<string>();
    for (const i of intent.inputs) {
      w.fixed(i.txid, 32, 'input txid').u32(i.vout);
      if (i.amount !== undefined) {
        if (i.amount <= 0n || i.amount > MAX_MONEY) throw new IntentFormatError('input amounts are positive and at most 21 million BTC');
        w.u64(i.amount);
        // A duplicate outpoint could state two amounts for one output; version 1 keeps its old rules.
        const id = `${Array.from(i.txid).join()}:${i.vout}`;
        if (seen.has(id)) throw new IntentFormatError('an input is named twice');
        seen.add(id);
      }
    }
  }
  return w.str(intent.idempotencyKey, 'idempotency_key', IDEMPOTENCY, 128).u64(intent.notAfter).finish();
}

/** Parses canonical intent bytes; throws IntentFormatError on anything else. */
export function decodeIntent(bytes: Uint8Array): Intent {
  const r = new Reader(bytes);
  const domain = r.fixed(INTENT_DOMAIN.length, 'domain');
  if (!domain.every((b, i) => b === INTENT_DOMAIN[i])) throw new IntentFormatError('not an intent (domain)');
  const version = r.u8('version');
  if (version !== INTENT_VERSION && version !== INTENT_VERSION_INPUT_AMOUNTS && version !== INTENT_VERSION_EVM_NONCE) throw new IntentFormatError(`intent version ${version} is not supported`);
  const kind = r.u8('kind');
  if (version === INTENT_VERSION_INPUT_AMOUNTS && kind !== KIND_BTC_TRANSFER) throw new IntentFormatError(`intent version ${version} is for Bitcoin transfers`);
  if (version === INTENT_VERSION_EVM_NONCE && kind !== KIND_EVM_TRANSFER) throw new IntentFormatError(`intent version ${version} is for EVM transfers`);
  if (version !== INTENT_VERSION && kind === KIND_EVM_SAFE_TX) throw new IntentFormatError('a Safe transaction intent is version 1');
  let intent: Intent;
  if (kind === KIND_EVM_TRANSFER) {
    const organization = r.str('organization', ID, 128);
    const walletId = r.str('wallet_id', ID, 128);
    const chainId = r.u64('chain_id');
    const nonce = version === INTENT_VERSION_EVM_NONCE ? r.u64('nonce') : undefined;
    const from = r.fixed(20, 'from');
    const to = r.fixed(20, 'to');
    const tag = r.u8('asset');
    if (tag > 1) throw new IntentFormatError('unknown asset kind');
    const asset: EvmAsset = tag === 0 ? { kind: 'native' } : { kind: 'erc20', contract: r.fixed(20, 'asset contract') };
    const amount = r.u256('amount');
    const data = r.bytes(MAX_CALLDATA, 'data');
    const maxFee = r.u256('max_fee');
    intent = { kind: 'evm.transfer', organization, walletId, chainId, ...(nonce === undefined ? {} : { nonce }), from, to, asset, amount, data, maxFee, idempotencyKey: '', notAfter: 0n };
  } else if (kind === KIND_BTC_TRANSFER) {
    const organization = r.str('organization', ID, 128);
    const walletId = r.str('wallet_id', ID, 128);
    const net = r.u8('network');
    const network = NETWORKS[net - 1];
    if (!network) throw new IntentFormatError('unknown network');
    const from = r.str('from', BTC_ADDRESS, 90);
    const outputs: BtcOutput[] = [];
    const nOut = r.u16('outputs');
    for (let i = 0; i < nOut; i++) outputs.push({ address: r.str('output address', BTC_ADDRESS, 90), amount: r.u64('output amount') });
    const maxFeeRate = r.u64('max_fee_rate');
    const maxFee = r.u64('max_fee');
    const inputs: BtcOutpoint[] = [];
    const nIn = r.u16('inputs');
    if (version === INTENT_VERSION_INPUT_AMOUNTS && nIn === 0) throw new IntentFormatError(`intent version ${version} names its inputs`);
    for (let i = 0; i < nIn; i++) {
      const input: BtcOutpoint = { txid: r.fixed(32, 'input txid'), vout: r.u32('input vout') };
      if (version === INTENT_VERSION_INPUT_AMOUNTS) input.amount = r.u64('input amount');
      inputs.push(input);
    }
    intent = { kind: 'btc.transfer', organization, walletId, network, from, outputs, maxFeeRate, maxFee, inputs, idempotencyKey: '', notAfter: 0n };
  } else if (kind === KIND_EVM_SAFE_TX) {
    intent = {
      kind: 'evm.safe_tx',
      organization: r.str('organization', ID, 128),
      walletId: r.str('wallet_id', ID, 128),
      chainId: r.u64('chain_id'),
      owner: r.fixed(20, 'owner'),
      safe: r.fixed(20, 'safe'),
      to: r.fixed(20, 'to'),
      value: r.u256('value'),
      data: r.bytes(MAX_CALLDATA, 'data'),
      operation: r.u8('operation'),
      safeTxGas: r.u256('safe_tx_gas'),
      baseGas: r.u256('base_gas'),
      gasPrice: r.u256('gas_price'),
      gasToken: r.fixed(20, 'gas_token'),
      refundReceiver: r.fixed(20, 'refund_receiver'),
      safeNonce: r.u256('safe_nonce'),
      idempotencyKey: '',
      notAfter: 0n,
    };
  } else {
    throw new IntentFormatError(`unknown intent kind ${kind}`);
  }
  intent.idempotencyKey = r.str('idempotency_key', IDEMPOTENCY, 128);
  intent.notAfter = r.u64('not_after');
  r.end();
  // Re-encoding enforces every rule the writer checks (limits, ERC-20 without calldata, ...).
  const again = encodeIntent(intent);
  if (again.length !== bytes.length || !again.every((b, i) => b === bytes[i])) throw new IntentFormatError('intent is not in canonical form');
  return intent;
}

/** Signs canonical intent bytes with an Ed25519 API key (the SDK's job). */
export function signIntent(bytes: Uint8Array, apiSecretKey: Uint8Array): Uint8Array {
  decodeIntent(bytes);
  return signEd25519(bytes, apiSecretKey);
}

export function verifyIntentSignature(bytes: Uint8Array, signature: Uint8Array, apiPublicKey: Uint8Array): boolean {
  // Strict RFC 8032 verification: no malleable or non-canonical encodings.
  return verifyEd25519(signature, bytes, apiPublicKey);
}
