// What a customer is about to authorize, shown before anything is sent (the CLI's `--dry-run`,
// docs/sdk.md "Dry runs"): the canonical intent bytes (docs/intents.md), their SHA-256 (what an
// end-user token's `intent_sha256` names, docs/end-user-auth.md), the intent decoded, and what the
// API key and then the nodes sign for it.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { decodeIntent, type Intent } from '../../core/intents/intent.ts';
import { safeTxHash } from '../../core/chains/evm/safe-tx.ts';

export interface IntentPreview {
  /** The canonical intent bytes, hex. */
  hex: string;
  /** Lowercase hex SHA-256 of the bytes: an end-user token's `intent_sha256`. */
  sha256: string;
  /** The intent as the nodes read it; amounts and times as base-10 strings, bytes as hex. */
  decoded: Record<string, unknown>;
  /** What is signed, by whom. */
  signing: { api_key: string; nodes: string };
}

const hex0x = (b: Uint8Array) => `0x${bytesToHex(b)}`;

function decoded(intent: Intent): Record<string, unknown> {
  if (intent.kind === 'evm.transfer') {
    return {
      kind: intent.kind, version: intent.nonce === undefined ? 1 : 3, organization: intent.organization, wallet_id: intent.walletId, chain_id: intent.chainId.toString(),
      ...(intent.nonce === undefined ? {} : { nonce: intent.nonce.toString() }), from: hex0x(intent.from), to: hex0x(intent.to), asset: intent.asset.kind === 'native' ? 'native' : hex0x(intent.asset.contract),
      amount: intent.amount.toString(), data: hex0x(intent.data), max_fee: intent.maxFee.toString(),
      idempotency_key: intent.idempotencyKey, not_after: intent.notAfter.toString(),
    };
  }
  if (intent.kind === 'evm.safe_tx') {
    return {
      kind: intent.kind, version: 1, organization: intent.organization, wallet_id: intent.walletId, chain_id: intent.chainId.toString(), owner: hex0x(intent.owner), safe: hex0x(intent.safe),
      to: hex0x(intent.to), value: intent.value.toString(), data: hex0x(intent.data), operation: intent.operation, safe_tx_gas: intent.safeTxGas.toString(), base_gas: intent.baseGas.toString(),
      gas_price: intent.gasPrice.toString(), gas_token: hex0x(intent.gasToken), refund_receiver: hex0x(intent.refundReceiver), safe_nonce: intent.safeNonce.toString(),
      safe_tx_hash: hex0x(safeTxHash(intent)), idempotency_key: intent.idempotencyKey, not_after: intent.notAfter.toString(),
    };
  }
  return {
    kind: intent.kind, version: intent.inputs.some((i) => i.amount !== undefined) ? 2 : 1, organization: intent.organization, wallet_id: intent.walletId,
    network: intent.network, from: intent.from, outputs: intent.outputs.map((o) => ({ address: o.address, amount: o.amount.toString() })),
    max_fee_rate: intent.maxFeeRate.toString(), max_fee: intent.maxFee.toString(),
    inputs: intent.inputs.map((i) => ({ txid: bytesToHex(i.txid), vout: i.vout, ...(i.amount !== undefined ? { amount: i.amount.toString() } : {}) })),
    idempotency_key: intent.idempotencyKey, not_after: intent.notAfter.toString(),
  };
}

function nodesSign(intent: Intent): string {
  if (intent.kind === 'evm.transfer') {
    return `one EIP-1559 transaction on chain ${intent.chainId} from ${hex0x(intent.from)} paying ${intent.amount} ${intent.asset.kind === 'native' ? 'wei' : `units of ${hex0x(intent.asset.contract)}`} to ${hex0x(intent.to)}, ` +
      `${intent.nonce === undefined ? 'with no nonce named, which no node signs' : `at nonce ${intent.nonce}`}, with a fee of at most ${intent.maxFee} wei; the service picks the fees within that ceiling, and every node derives the signing digest again from this intent before it signs`;
  }
  if (intent.kind === 'evm.safe_tx') {
    return `one ECDSA signature by ${hex0x(intent.owner)}, as an owner of the Safe ${hex0x(intent.safe)} on chain ${intent.chainId}, on the SafeTx ${hex0x(safeTxHash(intent))} ` +
      `(a ${intent.operation === 1 ? 'delegatecall' : 'call'} to ${hex0x(intent.to)} with ${intent.value} wei and ${intent.data.length} bytes of data, at Safe nonce ${intent.safeNonce}); ` +
      'every node computes that EIP-712 digest again from this intent before it signs, and nothing is broadcast';
  }
  const paid = intent.outputs.map((o) => `${o.amount} sat to ${o.address}`).join(', ');
  const inputs = intent.inputs.length
    ? `the ${intent.inputs.length} named input${intent.inputs.length === 1 ? '' : 's'}${intent.inputs.every((i) => i.amount !== undefined) ? ' with their amounts' : ''}`
    : 'no named inputs, which no node signs';
  const scheme = /^(bc|tb|bcrt)1p/i.test(intent.from) ? 'one BIP-341 key-path (Schnorr) digest per input' : 'one BIP-143 (ECDSA) digest per input';
  return `a ${intent.network} transaction spending ${inputs}, paying ${paid}, change back to ${intent.from}, at most ${intent.maxFeeRate} sat/vB and ${intent.maxFee} sat in fees: ` +
    `${scheme}, which every node computes again from this intent and the template before it signs`;
}

/** The preview of canonical intent bytes (throws the intent codec's IntentFormatError on anything else). */
export function previewIntent(bytes: Uint8Array): IntentPreview {
  const intent = decodeIntent(bytes);
  return {
    hex: bytesToHex(bytes),
    sha256: bytesToHex(sha256(bytes)),
    decoded: decoded(intent),
    signing: { api_key: 'Ed25519 over exactly these bytes (the intent_signature field); the request itself is signed apart (RFC 9421)', nodes: nodesSign(intent) },
  };
}
