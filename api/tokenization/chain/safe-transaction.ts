// Safe transactions (Safe 1.4.1, `Safe.sol` execTransaction / getTransactionHash): the EIP-712 `SafeTx` struct
// owners sign, its hash, owner signatures packed as the Safe checks them (sorted by owner address, 65 bytes
// each, v 27/28 for an ECDSA signature over the hash itself), and execution, with a failure explained by
// replaying the inner call from the Safe, since with safeTxGas and gasPrice 0 the Safe reverts with a bare
// GS013 and the inner reason is lost.
import {
  encodeFunctionData, hashTypedData, parseEventLogs, parseSignature, recoverAddress, serializeSignature, zeroAddress,
  type Address, type Hex, type PublicClient, type TransactionReceipt,
} from 'viem';
import { ChainStepError, failureOf, type ChainFailure } from './chain-failure.ts';
import { decodeMultiSend } from './multisend.ts';
import { SAFE_ABI } from './safe-abi.ts';
import { SAFE_TX_TYPES } from '../../../core/chains/evm/safe-tx.ts';
import { sendAndWait, type TransactionSender } from './transaction-sender.ts';

export const OPERATION = { call: 0, delegateCall: 1 } as const;

export interface SafeTransaction {
  to: Address;
  value: bigint;
  data: Hex;
  operation: 0 | 1;
  safeTxGas: bigint;
  baseGas: bigint;
  gasPrice: bigint;
  gasToken: Address;
  refundReceiver: Address;
  nonce: bigint;
}

/** A Safe transaction with no gas refund (the relayer pays), the usual case. */
export function safeTransaction(t: { to: Address; data: Hex; nonce: bigint; value?: bigint; operation?: 0 | 1 }): SafeTransaction {
  return { to: t.to, value: t.value ?? 0n, data: t.data, operation: t.operation ?? OPERATION.call, safeTxGas: 0n, baseGas: 0n, gasPrice: 0n, gasToken: zeroAddress, refundReceiver: zeroAddress, nonce: t.nonce };
}


/** What an owner signs: the EIP-712 typed data (domain: chain id and the Safe's address). */
export function safeTxTypedData(safe: Address, chainId: number, tx: SafeTransaction) {
  return { domain: { chainId, verifyingContract: safe }, types: SAFE_TX_TYPES, primaryType: 'SafeTx' as const, message: tx };
}

/** The SafeTx hash (what the Safe's getTransactionHash returns and owners sign). */
export function safeTxHash(safe: Address, chainId: number, tx: SafeTransaction): Hex {
  return hashTypedData(safeTxTypedData(safe, chainId, tx));
}

export interface OwnerSignature { owner: Address; signature: Hex }

/**
 * Packs owner signatures as execTransaction takes them: each recovered and checked against its owner first
 * (a wrong one is refused here, not by a GS026 on chain), v normalised to 27/28, sorted by owner address.
 */
export async function packSafeSignatures(hash: Hex, signatures: readonly OwnerSignature[]): Promise<Hex> {
  const normalised = await Promise.all(signatures.map(async ({ owner, signature }) => {
    const s = parseSignature(signature);
    const sig = serializeSignature({ r: s.r, s: s.s, yParity: s.yParity ?? Number(s.v! - 27n) });
    const signer = await recoverAddress({ hash, signature: sig });
    if (signer.toLowerCase() !== owner.toLowerCase()) throw new Error(`the signature given for ${owner} is by ${signer}`);
    return { owner: owner.toLowerCase(), sig };
  }));
  normalised.sort((a, b) => (BigInt(a.owner) < BigInt(b.owner) ? -1 : BigInt(a.owner) > BigInt(b.owner) ? 1 : 0));
  if (new Set(normalised.map((n) => n.owner)).size !== normalised.length) throw new Error('two signatures by the same owner');
  return `0x${normalised.map((n) => n.sig.slice(2)).join('')}`;
}

/** The execTransaction calldata. */
export function encodeExecTransaction(tx: SafeTransaction, signatures: Hex): Hex {
  return encodeFunctionData({ abi: SAFE_ABI, functionName: 'execTransaction', args: [tx.to, tx.value, tx.data, tx.operation, tx.safeTxGas, tx.baseGas, tx.gasPrice, tx.gasToken, tx.refundReceiver, signatures] });
}

/** The Safe's next nonce. */
export async function readSafeNonce(client: PublicClient, safe: Address): Promise<bigint> {
  return client.readContract({ address: safe, abi: SAFE_ABI, functionName: 'nonce' });
}

/** Whether the Safe transaction of `nonce` is executed: the Safe's nonce moved past it (it moves only by executing). */
export async function safeNonceUsed(client: PublicClient, safe: Address, nonce: bigint): Promise<boolean> {
  return (await readSafeNonce(client, safe)) > nonce;
}

/**
 * Why the inner call(s) of `tx` fail, replayed from the Safe's address against the current state: a call
 * directly, a MultiSend batch call by call (eth_simulateV1 when the backend has it, so each call sees the
 * previous ones' effects; else one eth_call each). Undefined when the replay does not fail.
 */
export async function explainInnerFailure(client: PublicClient, safe: Address, tx: SafeTransaction): Promise<ChainFailure | undefined> {
  const calls = tx.operation === OPERATION.call ? [{ to: tx.to, data: tx.data, value: tx.value }] : decodeMultiSend(tx.data);
  if (calls.length > 1) {
    try {
      const { results } = await client.simulateCalls({ account: safe, calls: calls.map((c) => ({ to: c.to, data: c.data, value: c.value })) });
      const bad = results.find((r) => r.status === 'failure');
      if (bad) return failureOf(bad.error);
      return undefined;
    } catch {
      // No eth_simulateV1 here: one call at a time below.
    }
  }
  for (const c of calls) {
    try {
      await client.call({ account: safe, to: c.to, data: c.data, value: c.value });
    } catch (err) {
      return failureOf(err);
    }
  }
  return undefined;
}

export interface ExecutedSafeTransaction { receipt: TransactionReceipt; safeTxHash: Hex }

/**
 * Executes `tx` on `safe` with the packed `signatures`, sent by `sender`. Refuses a nonce other than the
 * Safe's next. A Safe transaction whose inner call reverts throws a ChainStepError naming the inner reason
 * (e.g. MintCapExceeded), not GS013.
 */
export async function executeSafeTransaction(client: PublicClient, sender: TransactionSender, safe: Address, tx: SafeTransaction, signatures: Hex): Promise<ExecutedSafeTransaction> {
  const next = await readSafeNonce(client, safe);
  if (next !== tx.nonce) throw new ChainStepError(`Safe ${safe}`, { kind: 'reverted', errorName: 'NonceMismatch', args: [tx.nonce, next], reason: `the transaction has nonce ${tx.nonce}, the Safe expects ${next}` });
  const hash = safeTxHash(safe, await client.getChainId(), tx);
  let receipt: TransactionReceipt;
  try {
    receipt = await sendAndWait(client, sender, { to: safe, data: encodeExecTransaction(tx, signatures) });
  } catch (err) {
    const failure = failureOf(err);
    if (failure.kind === 'reverted' && failure.errorName === 'GS013') {
      const inner = await explainInnerFailure(client, safe, tx);
      if (inner) throw new ChainStepError(`Safe transaction ${hash}`, inner.kind === 'reverted' ? { ...inner, reason: `${inner.reason} (the Safe reverted with GS013)` } : inner, err);
    }
    throw ChainStepError.from(err, `Safe transaction ${hash}`);
  }
  const events = parseEventLogs({ abi: SAFE_ABI, logs: receipt.logs.filter((l) => l.address.toLowerCase() === safe.toLowerCase()) });
  if (!events.some((e) => e.eventName === 'ExecutionSuccess' && e.args.txHash === hash)) {
    throw new ChainStepError(`Safe transaction ${hash}`, (await explainInnerFailure(client, safe, tx)) ?? { kind: 'reverted', errorName: 'ExecutionFailure', args: [], reason: 'the Safe reported ExecutionFailure' });
  }
  return { receipt, safeTxHash: hash };
}
