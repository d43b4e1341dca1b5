// The holders of a token at a block from the chain's Transfer history (docs/platform/rwa.md "Holders,
// eligibility, lockups and the cap table"): ERC-20 and ERC-721 Transfer, ERC-1155 TransferSingle and
// TransferBatch, read with eth_getLogs from the token's address and stored one movement per record, keyed by
// block and log position, so the balances at any indexed block are a fold of the movements up to it.
// Incremental: the last indexed block is remembered per token. Reorgs: only blocks at least the chain's
// finality depth (core/chains/evm/evm-networks.ts) below its head are indexed, so a reorganisation shallower than that never reaches what is stored;
// a block above that is not answered (409) until it is deep enough.
import { getAddress, parseEventLogs, type Abi, type Address, type Hex, type PublicClient } from 'viem';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { collection } from '../../store/collection.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import type { TokenService } from '../../tokenization/token-service.ts';
import type { TokenChain } from '../../tokenization/token-chain.ts';
import type { TokenRecord } from '../../tokenization/records.ts';
import { tokenAbi } from '../../tokenization/token-calls.ts';
import type { CapTableSource, RwaScope } from '../seams.ts';

/** One movement of `amount` of token id `id` (0 for an ERC-20; for an ERC-721 the NFT, amount 1). */
export interface Movement { block: string; log_index: number; sub: number; from: string; to: string; id: string; amount: string }
/** What was indexed of a token: every block up to `last_block` (-1: nothing yet); `from_block` where indexing began. */
export interface IndexState { v: 1; token_id: string; from_block: string; last_block: string; updated_at: string }

/** `<token id> NUL <block, 20 digits> NUL <log index, 8> NUL <sub, 4>` → one movement. */
export const TRANSFERS = collection<Movement>('rwa_token_transfers');
/** Token id → how far its history is indexed. */
export const TRANSFER_INDEX = collection<IndexState>('rwa_token_transfer_index');

const ZERO = '0x0000000000000000000000000000000000000000';
const pad = (n: bigint | number, w: number) => n.toString().padStart(w, '0');
export const movementKey = (tokenId: string, m: Pick<Movement, 'block' | 'log_index' | 'sub'>) => `${tokenId}\x00${pad(BigInt(m.block), 20)}\x00${pad(m.log_index, 8)}\x00${pad(m.sub, 4)}`;

/**
 * Balances after `movements` (in chain order), keyed by lower-case address, zero balances left out; only
 * token id `id` when given. A movement from the zero address is a mint, to it a burn. Throws when a balance
 * would go negative (the history is incomplete).
 */
export function foldBalances(movements: Iterable<Pick<Movement, 'from' | 'to' | 'id' | 'amount'>>, id?: bigint): Map<Hex, bigint> {
  const out = new Map<Hex, bigint>();
  for (const m of movements) {
    if (id !== undefined && BigInt(m.id) !== id) continue;
    const amount = BigInt(m.amount);
    if (amount === 0n) continue;
    const from = m.from.toLowerCase() as Hex;
    const to = m.to.toLowerCase() as Hex;
    if (from !== ZERO) {
      const left = (out.get(from) ?? 0n) - amount;
      if (left < 0n) throw new Error(`the history makes ${from}'s balance negative`);
      if (left === 0n) out.delete(from); else out.set(from, left);
    }
    if (to !== ZERO) out.set(to, (out.get(to) ?? 0n) + amount);
  }
  return out;
}

/** The movements in a token's logs, one per ERC-1155 batch entry. */
export function movementsOf(kind: TokenRecord['kind'], abi: Abi, logs: Parameters<typeof parseEventLogs>[0]['logs']): Movement[] {
  const out: Movement[] = [];
  const names = kind === 'erc1155' ? ['TransferSingle', 'TransferBatch'] : ['Transfer'];
  for (const e of parseEventLogs({ abi, logs, eventName: names as never, strict: true }) as unknown as { eventName: string; args: Record<string, unknown>; blockNumber: bigint; logIndex: number }[]) {
    const base = { block: e.blockNumber.toString(), log_index: e.logIndex, from: String(e.args.from).toLowerCase(), to: String(e.args.to).toLowerCase() };
    if (e.eventName === 'Transfer') {
      out.push(kind === 'erc721' ? { ...base, sub: 0, id: String(e.args.tokenId), amount: '1' } : { ...base, sub: 0, id: '0', amount: String(e.args.value) });
    } else if (e.eventName === 'TransferSingle') {
      out.push({ ...base, sub: 0, id: String(e.args.id), amount: String(e.args.value) });
    } else {
      const ids = e.args.ids as bigint[];
      const values = e.args.values as bigint[];
      ids.forEach((id, i) => out.push({ ...base, sub: i, id: id.toString(), amount: values[i]!.toString() }));
    }
  }
  return out;
}

export interface CapTableIndexerOptions {
  store: RecordRepository;
  tokens: TokenService;
  chain: (name: string) => TokenChain | undefined;
  /** Blocks below the head a block must be on `chain` to be indexed: the chain's finality depth. */
  confirmations: (chain: string) => number;
  /** Most blocks one eth_getLogs asks for. */
  blockSpan?: number;
  clock: () => number;
}

/** The indexed Transfer history; also the `CapTableSource` other parts read. */
export class CapTableIndexer implements CapTableSource {
  constructor(private readonly o: CapTableIndexerOptions) {}

  private client(token: TokenRecord): PublicClient {
    const c = this.o.chain(token.chain);
    if (!c) throw new CustodyError('tokenization_unavailable', `tokenization does not run on ${token.chain} here`);
    return c.client;
  }

  /** The first block at which the token's address holds code (a binary search of eth_getCode). */
  private async deployBlock(client: PublicClient, address: Address, head: bigint): Promise<bigint> {
    let lo = 0n;
    let hi = head;
    while (lo < hi) {
      const mid = (lo + hi) / 2n;
      const code = await client.getCode({ address, blockNumber: mid });
      if (code && code !== '0x') hi = mid; else lo = mid + 1n;
    }
    return lo;
  }

  /**
   * Indexes the token's history up to the deepest confirmed block; answers that block and the chain's head.
   * Runs under the token's lock, so two syncs never store the same span twice.
   */
  async sync(token: TokenRecord): Promise<{ indexed: bigint; head: bigint }> {
    if (token.status !== 'deployed') throw new CustodyError('conflict', `token ${token.id} is ${token.status}; its holders exist once it is deployed`);
    const client = this.client(token);
    return this.o.store.exclusive(`rwa:transfers:${token.id}`, async () => {
      let head: bigint;
      try {
        head = await client.getBlockNumber({ cacheTime: 0 });
      } catch (err) {
        throw new CustodyError('chain_backend_error', `reading the chain's head: ${(err as Error).message}`);
      }
      const target = head - BigInt(this.o.confirmations(token.chain));
      let state = await TRANSFER_INDEX.in(this.o.store).get(token.id);
      if (!state) {
        const from = target < 0n ? 0n : await this.deployBlock(client, getAddress(token.address), head);
        state = { v: 1, token_id: token.id, from_block: from.toString(), last_block: (from - 1n).toString(), updated_at: new Date(this.o.clock()).toISOString() };
      }
      const abi = tokenAbi(token.kind);
      const span = BigInt(this.o.blockSpan ?? 2000);
      for (let start = BigInt(state.last_block) + 1n; start <= target; start += span) {
        const end = start + span - 1n < target ? start + span - 1n : target;
        let logs;
        try {
          logs = await client.getLogs({ address: getAddress(token.address), fromBlock: start, toBlock: end });
        } catch (err) {
          throw new CustodyError('chain_backend_error', `reading the token's logs of blocks ${start} to ${end}: ${(err as Error).message}`);
        }
        const moves = movementsOf(token.kind, abi, logs);
        state = { ...state, last_block: end.toString(), updated_at: new Date(this.o.clock()).toISOString() };
        await this.o.store.batch([...moves.map((m) => TRANSFERS.putOp(movementKey(token.id, m), m)), TRANSFER_INDEX.putOp(token.id, state)]);
      }
      if (BigInt(state.last_block) < BigInt(state.from_block)) await TRANSFER_INDEX.in(this.o.store).put(token.id, state);
      return { indexed: BigInt(state.last_block), head };
    });
  }

  /** The confirmed block to answer for: `block` when given and indexed, else the last indexed block. */
  async resolveBlock(token: TokenRecord, block?: bigint): Promise<bigint> {
    const { indexed, head } = await this.sync(token);
    if (block === undefined) return indexed < 0n ? 0n : indexed;
    if (block > head) throw new CustodyError('validation_failed', `block: the chain is at block ${head}, not yet ${block}`);
    if (block > indexed) throw new CustodyError('conflict', `block ${block} has fewer than ${this.o.confirmations(token.chain)} confirmations (the chain is at ${head}); ask again later or for block ${indexed} or lower`);
    return block;
  }

  /** Balances of the token at `block` (inclusive), after syncing; for an ERC-1155, of token id `id` when given. */
  async balancesOf(token: TokenRecord, block: bigint, id?: bigint): Promise<Map<Hex, bigint>> {
    const moves = TRANSFERS.in(this.o.store).range({ after: `${token.id}\x00`, lt: `${token.id}\x00${pad(block + 1n, 20)}` });
    const list: Movement[] = [];
    for await (const m of moves) list.push(m);
    return foldBalances(list, id);
  }

  async balancesAt(scope: RwaScope, tokenId: string, block: bigint, id?: bigint): Promise<Map<Hex, bigint>> {
    const token = await this.o.tokens.get(scope, tokenId);
    return this.balancesOf(token, await this.resolveBlock(token, block), id);
  }
}
