// Who pays for and sends the transactions of the chain layer (deployments, Safe executions): any account that
// signs and broadcasts a plain transaction. A viem wallet client in tests and on the local chain; the API can
// put a vault behind the same interface.
import type { Address, Hex, PublicClient, TransactionReceipt, WalletClient } from 'viem';
import { ChainStepError } from './chain-failure.ts';

export interface TransactionRequest { to: Address; data: Hex; value?: bigint; gas?: bigint }

export interface TransactionSender {
  readonly address: Address;
  /** Signs and broadcasts; the transaction hash. */
  send(tx: TransactionRequest): Promise<Hex>;
}

/** A sender backed by a viem wallet client with a local account and a chain. */
export function walletSender(wallet: WalletClient): TransactionSender {
  const account = wallet.account;
  if (!account) throw new Error('the wallet client has no account');
  return {
    address: account.address,
    send: (tx) => wallet.sendTransaction({ account, chain: wallet.chain, to: tx.to, data: tx.data, value: tx.value ?? 0n, ...(tx.gas ? { gas: tx.gas } : {}) }),
  };
}

/**
 * Sends `tx` and waits for its receipt. A transaction the chain would revert is refused before sending (the
 * estimate fails) and one that reverts anyway throws, both as a ChainStepError saying why.
 */
export async function sendAndWait(client: PublicClient, sender: TransactionSender, tx: TransactionRequest): Promise<TransactionReceipt> {
  let hash: Hex;
  try {
    hash = await sender.send(tx);
  } catch (err) {
    throw ChainStepError.from(err, `sending to ${tx.to}`);
  }
  const receipt = await client.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success') throw ChainStepError.reverted(`transaction ${hash} to ${tx.to} reverted`, { errorName: 'Reverted', args: [] });
  return receipt;
}
