// One EVM chain the service talks to over JSON-RPC (viem): the pending nonce of an address, fees and gas
// for a transaction under the intent's ceiling, the funds a transaction needs, broadcast, receipts and the
// tip, for the transaction worker; and the balances the funds check reads, for a wallet's balance.
import { BaseError, createPublicClient, erc20Abi, http, type Hex, type PublicClient, type TransactionSerializableEIP1559 } from 'viem';
import type { EvmNetwork } from '../../../core/chains/evm/evm-networks.ts';
import type { EvmTemplate } from '../../../core/chains/evm/evm-transaction.ts';
import { ChainError } from '../chain-error.ts';

export interface EvmReceipt {
  status: 'success' | 'reverted';
  blockNumber: bigint;
  /** What the inclusion cost the sender, reverted or not: gas used x effective gas price, wei. */
  fee: bigint;
}

/** An included transaction, as findByNonce reports it. */
export interface EvmIncluded {
  hash: Hex;
  to: Hex | null;
  value: bigint;
  input: Hex;
  blockNumber: bigint;
}

/** How far back findByNonce looks: the state a full (non-archive) node keeps. */
const RECENT_BLOCKS = 127n;

/** Where a balance is read: `pending` (the funds check) or one block's number (a reading that names it). */
export type BalanceAt = 'pending' | bigint;

const blockOf = (at: BalanceAt) => (at === 'pending' ? { blockTag: 'pending' as const } : { blockNumber: at });
const shortMessage = (err: unknown) => (err instanceof BaseError ? err.shortMessage : (err as Error).message);

export class EvmChain {
  private readonly client: PublicClient;

  constructor(readonly network: EvmNetwork, rpcUrl: string, timeoutMs = 10_000) {
    this.client = createPublicClient({ transport: http(rpcUrl, { timeout: timeoutMs, retryCount: 1 }) }) as PublicClient;
  }

  pendingNonce(address: Hex): Promise<number> {
    return this.client.getTransactionCount({ address, blockTag: 'pending' });
  }

  /** How many transactions of `address` were included up to block `block`: the next nonce there. */
  nonceAt(address: Hex, block: bigint): Promise<number> {
    return this.client.getTransactionCount({ address, blockNumber: block });
  }

  /**
   * The transaction of `address` with `nonce`, when one was included in the last RECENT_BLOCKS blocks (a
   * full node keeps state that far back): found by a binary search on the address's count, then in its
   * block. `pending` when the chain counts the nonce as used but no block holds it yet; undefined when it
   * was included earlier than that, or not found.
   */
  async findByNonce(address: Hex, nonce: number): Promise<EvmIncluded | 'pending' | undefined> {
    const tip = await this.tip();
    if ((await this.nonceAt(address, tip)) <= nonce) return 'pending';
    let lo = tip > RECENT_BLOCKS ? tip - RECENT_BLOCKS : 0n;
    if ((await this.nonceAt(address, lo)) > nonce) return undefined;
    let hi = tip;
    // The first block after which the count is past `nonce` holds the transaction.
    while (lo < hi) {
      const mid = (lo + hi) / 2n;
      if ((await this.nonceAt(address, mid)) > nonce) hi = mid;
      else lo = mid + 1n;
    }
    const block = await this.client.getBlock({ blockNumber: lo, includeTransactions: true });
    const tx = block.transactions.find((x) => typeof x !== 'string' && x.from.toLowerCase() === address.toLowerCase() && x.nonce === nonce);
    if (!tx || typeof tx === 'string') return undefined;
    return { hash: tx.hash, to: tx.to ?? null, value: tx.value, input: tx.input, blockNumber: lo };
  }

  /**
   * Gas and fees for `tx` (from `from`) whose whole fee stays within `maxFee`: the network's estimate,
   * lowered to the ceiling when it is above it but still at or over the base fee; otherwise refused.
   */
  async template(from: Hex, tx: Pick<TransactionSerializableEIP1559, 'to' | 'value' | 'data'>, nonce: number, maxFee: bigint): Promise<EvmTemplate> {
    let gas: bigint;
    try {
      gas = await this.client.estimateGas({ account: from, to: tx.to!, value: tx.value ?? 0n, ...(tx.data ? { data: tx.data } : {}) });
    } catch (err) {
      const msg = (err as Error).message;
      if (/insufficient funds|exceeds balance|transfer amount exceeds/i.test(msg)) throw new ChainError('insufficient_funds', 'the wallet cannot pay this transaction', true);
      if (/revert/i.test(msg)) throw new ChainError('would_revert', `the transaction would revert: ${msg.split('\n')[0]}`, true);
      throw new ChainError('rpc_error', msg.split('\n')[0]!, false);
    }
    // Plain transfers use exactly what they need; calls get a margin for state that moves under them.
    const gasLimit = gas === 21_000n ? gas : (gas * 12n) / 10n;
    const block = await this.client.getBlock({ blockTag: 'latest' });
    const base = block.baseFeePerGas ?? 0n;
    const fees = await this.client.estimateFeesPerGas();
    let maxFeePerGas = fees.maxFeePerGas;
    let priority = fees.maxPriorityFeePerGas;
    if (gasLimit * maxFeePerGas > maxFee) maxFeePerGas = maxFee / gasLimit;
    if (maxFeePerGas < base) {
      throw new ChainError('fee_ceiling', `the fee ceiling of ${maxFee} wei is below what ${gasLimit} gas costs at the current base fee of ${base} wei`, true);
    }
    if (priority > maxFeePerGas - base) priority = maxFeePerGas - base;
    return { nonce, gasLimit, maxFeePerGas, maxPriorityFeePerGas: priority };
  }

  /**
   * Refuses (`insufficient_funds`, permanent) what the wallet cannot pay, before anything is signed:
   * `native` wei (the value plus the whole fee ceiling, gas limit x max fee per gas, which is what a node
   * demands of the balance before it accepts the transaction) and, for an ERC-20 transfer, the token
   * amount. Balances are read at the pending block, so the wallet's own transactions in the mempool count.
   */
  async requireFunds(from: Hex, need: { native?: bigint; token?: { contract: Hex; amount: bigint } }): Promise<void> {
    if (need.token) {
      const held = await this.tokenBalance(need.token.contract, from, 'pending');
      if (held < need.token.amount) {
        throw new ChainError('insufficient_funds', `the wallet holds ${held} of token ${need.token.contract}; the transfer needs ${need.token.amount}`, true);
      }
    }
    if (need.native !== undefined) {
      const balance = await this.nativeBalance(from, 'pending');
      if (balance < need.native) throw new ChainError('insufficient_funds', `the wallet holds ${balance} wei; the value and the fee ceiling need ${need.native}`, true);
    }
  }

  /** Wei `address` holds at `at`; a backend failure is `rpc_error` (retried). */
  async nativeBalance(address: Hex, at: BalanceAt): Promise<bigint> {
    try {
      return await this.client.getBalance({ address, ...blockOf(at) });
    } catch (err) {
      throw new ChainError('rpc_error', shortMessage(err).split('\n')[0]!, false);
    }
  }

  /**
   * Units of ERC-20 `contract` `address` holds at `at`. A contract that does not answer balanceOf is not
   * one this wallet can send (`would_revert`, permanent); anything else is the backend (`rpc_error`).
   */
  async tokenBalance(contract: Hex, address: Hex, at: BalanceAt): Promise<bigint> {
    try {
      return await this.client.readContract({ address: contract, abi: erc20Abi, functionName: 'balanceOf', args: [address], ...blockOf(at) });
    } catch (err) {
      const msg = shortMessage(err);
      if (/revert|returned no data|decode/i.test(msg)) throw new ChainError('would_revert', `token ${contract} does not answer balanceOf: ${msg.split('\n')[0]}`, true);
      throw new ChainError('rpc_error', msg.split('\n')[0]!, false);
    }
  }

  /** The latest block's number and time (Unix seconds), which a balance reading names as its freshness. */
  async latestBlock(): Promise<{ number: bigint; timestamp: bigint }> {
    try {
      const b = await this.client.getBlock({ blockTag: 'latest' });
      return { number: b.number, timestamp: b.timestamp };
    } catch (err) {
      throw new ChainError('rpc_error', shortMessage(err).split('\n')[0]!, false);
    }
  }

  /** Sends a signed transaction; one the node already knows counts as sent. */
  async broadcast(raw: Hex, hash: Hex): Promise<void> {
    try {
      await this.client.sendRawTransaction({ serializedTransaction: raw });
    } catch (err) {
      // viem's first line is generic; the node's own words are in `details`.
      const msg = err instanceof BaseError ? `${err.shortMessage} ${err.details ?? ''}`.trim() : (err as Error).message;
      if (/already known|known transaction|already imported/i.test(msg)) return;
      if (/nonce too low/i.test(msg) && (await this.receipt(hash))) return;
      const permanent = /nonce too low|insufficient funds|intrinsic gas|invalid|underpriced|exceeds block gas limit/i.test(msg);
      throw new ChainError(permanent ? 'broadcast_rejected' : 'rpc_error', msg.split('\n')[0]!, permanent);
    }
  }

  async receipt(hash: Hex): Promise<EvmReceipt | undefined> {
    try {
      const r = await this.client.getTransactionReceipt({ hash });
      return { status: r.status, blockNumber: r.blockNumber, fee: r.gasUsed * r.effectiveGasPrice };
    } catch (err) {
      if ((err as Error).name === 'TransactionReceiptNotFoundError') return undefined;
      throw err;
    }
  }

  tip(): Promise<bigint> {
    return this.client.getBlockNumber({ cacheTime: 0 });
  }
}
