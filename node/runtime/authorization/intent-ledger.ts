// What this node signed for each intent (DESIGN.md "Trust", point 3): one customer signature authorizes
// one transfer, so the first signing of an intent fixes its EVM (chain id, sender, nonce) or its exact
// Bitcoin input set with amounts, or a Safe transaction's SafeTx digest, and any later request for a
// different one is refused. Signing the
// same again is allowed (only one of those transactions can be mined, and the API retries after a crash
// need it). The record is sealed and on disk before `claim` resolves, so before any signature share or
// presigning message derived from the request leaves the node. Once the intent's not_after is long
// past (every node refuses the intent then) the record is pruned (`prune`, docs/storage.md "Pruning").
import { KeyedMutex } from '../../../common/keyed-mutex.ts';
import type { BatchOp, SealedStore } from '../../storage/sealed-store.ts';
import { SessionRefused } from '../session-host.ts';
import { PRUNE_CHUNK_OPS, PRUNE_MARGIN_MS, pruneRange, prunedBelow, raisePrunedBelow } from '../../storage/range-pruning.ts';
import type { BtcUse, ChainAdvance, EvmUse, SafeTxUse, SignGrant } from './sign-authorizer.ts';
import type { ChainHead } from '../../../core/policy/chain-check.ts';

const RECORD_VERSION = 1;
const PREFIX = 'intent/used/';
/**
 * `intent/exp/<not_after, 20 digits>/<hash>`: public and empty, written in the record's batch, so that
 * records past their not_after are found by one key range without unsealing any (docs/storage.md
 * "Pruning").
 */
const EXP_PREFIX = 'intent/exp/';
/** Present once every record has its expiry entry (records written before entries existed get theirs once). */
const INDEXED_MARK = 'intent/exp-indexed';
const expKey = (notAfter: bigint, hash: string) => `${EXP_PREFIX}${notAfter.toString().padStart(20, '0')}/${hash}`;
/**
 * `chain/head/<vault>`: the last link of the vault's intent chain this node signed (docs/policies.md),
 * sealed, written in the claim's batch: a node never signs two links at one position.
 */
const CHAIN_PREFIX = 'chain/head/';
const enc = new TextEncoder();
const dec = new TextDecoder();

interface StoredGrant {
  v: number;
  notAfter: string;
  use: { chain: 'evm'; chainId: string; from: string; nonce: number } | { chain: 'bitcoin'; inputs: { txid: string; vout: number; amount: string }[] }
    | { chain: 'evm-safe-tx'; chainId: string; safe: string; owner: string; safeNonce: string; digest: string };
}

/** A canonical, comparable form of what a grant signs (bigints as decimal strings). */
function stored(grant: SignGrant): StoredGrant {
  const u = grant.use;
  const use: StoredGrant['use'] = u.chain === 'evm'
    ? { chain: 'evm', chainId: u.chainId.toString(), from: u.from.toLowerCase(), nonce: u.nonce }
    : u.chain === 'evm-safe-tx'
      ? { chain: 'evm-safe-tx', chainId: u.chainId.toString(), safe: u.safe.toLowerCase(), owner: u.owner.toLowerCase(), safeNonce: u.safeNonce.toString(), digest: u.digest.toLowerCase() }
      : { chain: 'bitcoin', inputs: u.inputs.map((i) => ({ txid: i.txid, vout: i.vout, amount: i.amount.toString() })) };
  return { v: RECORD_VERSION, notAfter: grant.notAfter.toString(), use };
}

function describe(use: StoredGrant['use']): string {
  if (use.chain === 'evm-safe-tx') return `SafeTx ${use.digest} of Safe ${use.safe} at Safe nonce ${use.safeNonce} on chain ${use.chainId}, by owner ${use.owner}`;
  return use.chain === 'evm'
    ? `EVM nonce ${use.nonce} of ${use.from} on chain ${use.chainId}`
    : `Bitcoin inputs ${use.inputs.map((i) => `${i.txid}:${i.vout} (${i.amount} sat)`).join(', ')}`;
}

const sameHead = (a: ChainHead | undefined, b: ChainHead | undefined) => (a === undefined ? b === undefined : b !== undefined && a.seq === b.seq && a.hash === b.hash);

function chainHeadOp(c: ChainAdvance): BatchOp {
  const h = c.head;
  return { type: 'put', key: CHAIN_PREFIX + c.vaultId, value: enc.encode(JSON.stringify({ v: RECORD_VERSION, seq: h.seq.toString(), hash: h.hash, until: h.until.toString() })), secret: true };
}

export class IntentLedger {
  // One claim per intent at a time: two concurrent sessions cannot both find the intent unused.
  private readonly lock = new KeyedMutex();

  private readonly now: () => number;

  constructor(private readonly store: SealedStore, opts: { now?: () => number } = {}) {
    this.now = opts.now ?? Date.now;
  }

  /**
   * The not_after (seconds) below which records may have been pruned: an intent that expired before it
   * is refused by the authorizer, and by `claim` too, so that its lost record can never be re-made.
   */
  private horizon(nowMs: number): bigint {
    return BigInt(Math.floor((nowMs - PRUNE_MARGIN_MS) / 1000));
  }

  /**
   * Records what `grant` signs for its intent, or refuses with `intent_already_used` when the intent was
   * signed for something else before. Resolves once the record is on disk. `alsoWrite` (the session's
   * own claim) goes into the same synced batch, written even when the intent's record is already there,
   * and not at all when the claim is refused.
   */
  async claim(grant: SignGrant, alsoWrite: BatchOp[] = []): Promise<void> {
    const c = grant.chain;
    if (!c || c.retry) return this.claimIntent(grant, alsoWrite);
    // One signing per vault at a time moves its chain: the head checked is still the head, and the new
    // head lands in the same batch as the intent's record.
    return this.lock.run(`${CHAIN_PREFIX}${c.vaultId}`, async () => {
      const now = await this.chainHead(c.vaultId);
      let head = c.head;
      if (!sameHead(now, c.expected)) {
        // Another link was signed meanwhile: fine when it is on the chain this signing verified (the head
        // then stays the higher of the two); otherwise the coordinator relays the chain again.
        if (!now || c.known.get(now.seq) !== now.hash) {
          throw new SessionRefused('chain_incomplete', `vault ${c.vaultId}'s intent chain moved on this node, past the relayed links, while this intent was checked: relay them again`);
        }
        if (now.seq > head.seq) head = now;
      }
      await this.claimIntent(grant, [...alsoWrite, chainHeadOp({ ...c, head })]);
    });
  }

  /** The last link of the vault's intent chain this node signed, if any. */
  async chainHead(vaultId: string): Promise<ChainHead | undefined> {
    const raw = await this.store.getSecret(CHAIN_PREFIX + vaultId);
    if (!raw) return undefined;
    const r = JSON.parse(dec.decode(raw)) as { v: number; seq: string; hash: string; until: string };
    // An unknown record version fails closed: the vault's chain cannot move on this node.
    if (r.v !== RECORD_VERSION) throw new SessionRefused('chain_fork', `the chain head of ${vaultId} has unknown version ${r.v}`);
    return { seq: BigInt(r.seq), hash: r.hash, until: BigInt(r.until) };
  }

  private async claimIntent(grant: SignGrant, alsoWrite: BatchOp[]): Promise<void> {
    if (!/^[0-9a-f]{64}$/.test(grant.intentHash)) throw new Error('intent hash must be 32 bytes of lower-case hex');
    const key = PREFIX + grant.intentHash;
    const want = stored(grant);
    // The authorizer refused this already (its not_after is long past); checked again here, where it
    // matters: a pruned record must not come back as a fresh claim.
    if (grant.notAfter < this.horizon(this.now())) throw new SessionRefused('intent_expired', 'the intent expired long ago; its record may be pruned');
    await this.lock.run(grant.intentHash, async () => {
      const prior = await this.read(key);
      if (prior) {
        if (JSON.stringify(prior.use) !== JSON.stringify(want.use)) {
          throw new SessionRefused('intent_already_used', `this intent was signed for ${describe(prior.use)}; it authorizes no other transaction`);
        }
        if (alsoWrite.length) await this.store.batch(alsoWrite);
        return;
      }
      // Read after the record: a pass raises this bound on disk before it deletes, so a record found
      // missing because a pass deleted it is caught here, whatever this node's clock says now.
      if (grant.notAfter < (await prunedBelow(this.store, 'intent-records'))) throw new SessionRefused('intent_expired', 'the intent expired before what this node has pruned');
      await this.store.batch([
        { type: 'put', key, value: enc.encode(JSON.stringify(want)), secret: true },
        { type: 'put', key: expKey(grant.notAfter, grant.intentHash), value: new Uint8Array() },
        ...alsoWrite,
      ]);
    });
  }

  /** What was signed for an intent, if anything. */
  async recorded(intentHash: string): Promise<EvmUse | BtcUse | SafeTxUse | undefined> {
    const r = await this.read(PREFIX + intentHash);
    if (!r) return undefined;
    const u = r.use;
    if (u.chain === 'evm-safe-tx') return { chain: 'evm-safe-tx', chainId: BigInt(u.chainId), safe: u.safe, owner: u.owner, safeNonce: BigInt(u.safeNonce), digest: u.digest };
    return u.chain === 'evm'
      ? { chain: 'evm', chainId: BigInt(u.chainId), from: u.from, nonce: u.nonce }
      : { chain: 'bitcoin', inputs: u.inputs.map((i) => ({ txid: i.txid, vout: i.vout, amount: BigInt(i.amount) })) };
  }

  /**
   * Deletes the records of intents whose not_after is more than PRUNE_MARGIN_MS before `nowMs`, with
   * their expiry entries: every node refuses those intents by their not_after, and `claim` refuses them
   * too, so a record protects nothing once its intent is past. Returns how many records went.
   */
  async prune(nowMs: number): Promise<number> {
    await this.indexUnindexed();
    const below = await raisePrunedBelow(this.store, 'intent-records', this.horizon(nowMs));
    const bound = `${EXP_PREFIX}${below.toString().padStart(20, '0')}`;
    return pruneRange(this.store, { gte: EXP_PREFIX, lt: bound }, (k) => [PREFIX + k.slice(k.lastIndexOf('/') + 1)]);
  }

  /**
   * Records written before expiry entries existed get theirs, once: the only pass that unseals every
   * record, after which the mark says none is left without one.
   */
  private async indexUnindexed(): Promise<void> {
    if (await this.store.get(INDEXED_MARK)) return;
    const indexed = new Set<string>();
    for await (const k of this.store.keys(EXP_PREFIX)) indexed.add(k.slice(k.lastIndexOf('/') + 1));
    let ops: BatchOp[] = [];
    for await (const key of this.store.keys(PREFIX)) {
      const hash = key.slice(PREFIX.length);
      if (indexed.has(hash)) continue;
      const r = await this.read(key).catch(() => undefined);
      // A record this node cannot read stays, and stays unpruned: it fails closed at claim.
      if (!r) continue;
      ops.push({ type: 'put', key: expKey(BigInt(r.notAfter), hash), value: new Uint8Array() });
      if (ops.length >= PRUNE_CHUNK_OPS) {
        await this.store.batch(ops);
        ops = [];
      }
    }
    await this.store.batch([...ops, { type: 'put', key: INDEXED_MARK, value: new Uint8Array([1]) }]);
  }

  private async read(key: string): Promise<StoredGrant | undefined> {
    const raw = await this.store.getSecret(key);
    if (!raw) return undefined;
    const r = JSON.parse(dec.decode(raw)) as StoredGrant;
    // An unknown record version fails closed: the intent counts as used for something else.
    if (r.v !== RECORD_VERSION) throw new SessionRefused('intent_already_used', `the record of this intent has unknown version ${r.v}`);
    return r;
  }
}
