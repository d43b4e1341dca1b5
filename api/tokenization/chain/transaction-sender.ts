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

// The tail of each account's sends on each chain, within this process. A send takes the account's next
// nonce from the chain's pending count when it is prepared, so two sends prepared at once would take the
// same nonce and all but one would fail ("nonce too low"). Sends of one account therefore run one after
// another (preparation, signature, broadcast; not the wait for a receipt), whichever token or Safe they
// serve. Two processes sending from one account still race: each API replica needs its own account.
const sendQueues = new Map<string, Promise<unknown>>();

/** Runs `send` after every earlier send of `key` has been broadcast or refused. */
export function inSendOrder<T>(key: string, send: () => Promise<T>): Promise<T> {
  const run = (sendQueues.get(key) ?? Promise.resolve()).then(send, send);
  const tail = run.catch(() => undefined);
  sendQueues.set(key, tail);
  void tail.then(() => { if (sendQueues.get(key) === tail) sendQueues.delete(key); });
  return run;
}

/** A sender backed by a viem wallet client with a local account and a chain; its sends go out in order. */
export function walletSender(wallet: WalletClient): TransactionSender {
  const account = wallet.account;
  if (!account) throw new Error('the wallet client has no account');
  const key = `${wallet.chain?.id ?? 'unknown'}:${account.address.toLowerCase()}`;
  return {
    address: account.address,
    send: (tx) => inSendOrder(key, () => wallet.sendTransaction({ account, chain: wallet.chain, to: tx.to, data: tx.data, value: tx.value ?? 0n, ...(tx.gas ? { gas: tx.gas } : {}) })),
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
