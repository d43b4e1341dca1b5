// What the escrow service reads of the escrow contract on one chain (docs/platform/escrows.md "How the
// chain drives the states"): an escrow's state in the contract at the chain's finality depth, with the
// final transactions that made it, and at the latest block (what cancel checks).
import { createPublicClient, http, pad, parseEventLogs, type Hex, type PublicClient } from 'viem';
import type { EvmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { ONCHAIN_STATES, TOKEN_ESCROW_ABI, type OnchainState } from './token-escrow.ts';

export interface OnchainEscrow {
  state: OnchainState;
  token: string;
  payer: string;
  payee: string;
  amount: bigint;
  refundableAfter: bigint;
}

export interface EscrowLog { name: 'Deposited' | 'Released' | 'Refunded'; tx_hash: string; block_number: number; by?: string }

/** The contract's view of an escrow at a final block, and its final logs in block order. */
export interface FinalEscrow { block: bigint; escrow: OnchainEscrow; logs: EscrowLog[] }

export class EscrowChain {
  private readonly client: PublicClient;

  constructor(readonly network: EvmNetwork, rpcUrl: string, readonly contract: Hex) {
    this.client = createPublicClient({ transport: http(rpcUrl, { timeout: 10_000, retryCount: 1 }) }) as PublicClient;
  }

  get chain(): string {
    return this.network.chain;
  }

  /** The newest block at the chain's finality depth (tip − depth + 1), or undefined before there is one. */
  async finalBlock(): Promise<bigint | undefined> {
    const tip = await this.client.getBlockNumber({ cacheTime: 0 });
    const b = tip - BigInt(this.network.finalityDepth) + 1n;
    return b >= 0n ? b : undefined;
  }

  /** `payer`'s escrow `id` as the contract holds it at `block` ('latest' when absent). */
  async escrowAt(payer: Hex, id: Hex, block?: bigint): Promise<OnchainEscrow> {
    const e = await this.client.readContract({ address: this.contract, abi: TOKEN_ESCROW_ABI, functionName: 'escrowOf', args: [payer, id], ...(block === undefined ? { blockTag: 'latest' as const } : { blockNumber: block }) });
    return { state: ONCHAIN_STATES[e.state] ?? 'none', token: e.token.toLowerCase(), payer: e.payer.toLowerCase(), payee: e.payee.toLowerCase(), amount: e.amount, refundableAfter: e.refundableAfter };
  }

  /** `payer`'s escrow `id`: its state and logs as of the final block; undefined while the chain has no final block. */
  async final(payer: Hex, id: Hex, fromBlock: bigint): Promise<FinalEscrow | undefined> {
    const block = await this.finalBlock();
    if (block === undefined) return undefined;
    const escrow = await this.escrowAt(payer, id, block);
    if (escrow.state === 'none') return { block, escrow, logs: [] };
    // Every event's topics are (signature, id, payer): another payer's escrow under the same id is not this one.
    const raw = await this.client.getLogs({ address: this.contract, fromBlock: fromBlock <= block ? fromBlock : block, toBlock: block, topics: [null, id, pad(payer)] } as Parameters<PublicClient['getLogs']>[0]);
    const logs = parseEventLogs({ abi: TOKEN_ESCROW_ABI, logs: raw })
      .filter((l) => l.args.id.toLowerCase() === id.toLowerCase() && l.args.payer.toLowerCase() === payer.toLowerCase())
      .map((l): EscrowLog => ({ name: l.eventName, tx_hash: l.transactionHash.toLowerCase(), block_number: Number(l.blockNumber), ...(l.eventName === 'Refunded' ? { by: l.args.by.toLowerCase() } : {}) }));
    return { block, escrow, logs };
  }

  /** The latest block's number (where a new escrow's logs can start). */
  tip(): Promise<bigint> {
    return this.client.getBlockNumber({ cacheTime: 0 });
  }
}
