// What this node signed for each intent (DESIGN.md "Trust", point 3): one customer signature authorizes
// one transfer, so the first signing of an intent fixes its EVM (chain id, sender, nonce) or its exact
// Bitcoin input set with amounts, and any later request for a different one is refused. Signing the
// same again is allowed (only one of those transactions can be mined, and the API retries after a crash
// need it). The record is sealed and on disk before `claim` resolves, so before any signature share or
// presigning message derived from the request leaves the node.
import { KeyedMutex } from '../../../common/keyed-mutex.ts';
import type { BatchOp, SealedStore } from '../../storage/sealed-store.ts';
import { SessionRefused } from '../session-host.ts';
import type { BtcUse, EvmUse, SignGrant } from './sign-authorizer.ts';

const RECORD_VERSION = 1;
const PREFIX = 'intent/used/';
const enc = new TextEncoder();
const dec = new TextDecoder();

interface StoredGrant {
  v: number;
  notAfter: string;
  use: { chain: 'evm'; chainId: string; from: string; nonce: number } | { chain: 'bitcoin'; inputs: { txid: string; vout: number; amount: string }[] };
}

/** A canonical, comparable form of what a grant signs (bigints as decimal strings). */
function stored(grant: SignGrant): StoredGrant {
  const u = grant.use;
  const use: StoredGrant['use'] = u.chain === 'evm'
    ? { chain: 'evm', chainId: u.chainId.toString(), from: u.from.toLowerCase(), nonce: u.nonce }
    : { chain: 'bitcoin', inputs: u.inputs.map((i) => ({ txid: i.txid, vout: i.vout, amount: i.amount.toString() })) };
  return { v: RECORD_VERSION, notAfter: grant.notAfter.toString(), use };
}

function describe(use: StoredGrant['use']): string {
  return use.chain === 'evm'
    ? `EVM nonce ${use.nonce} of ${use.from} on chain ${use.chainId}`
    : `Bitcoin inputs ${use.inputs.map((i) => `${i.txid}:${i.vout} (${i.amount} sat)`).join(', ')}`;
}

export class IntentLedger {
  // One claim per intent at a time: two concurrent sessions cannot both find the intent unused.
  private readonly lock = new KeyedMutex();

  constructor(private readonly store: SealedStore) {}

  /**
   * Records what `grant` signs for its intent, or refuses with `intent_already_used` when the intent was
   * signed for something else before. Resolves once the record is on disk. `alsoWrite` (the session's
   * own claim) goes into the same synced batch, written even when the intent's record is already there,
   * and not at all when the claim is refused.
   */
  async claim(grant: SignGrant, alsoWrite: BatchOp[] = []): Promise<void> {
    if (!/^[0-9a-f]{64}$/.test(grant.intentHash)) throw new Error('intent hash must be 32 bytes of lower-case hex');
    const key = PREFIX + grant.intentHash;
    const want = stored(grant);
    await this.lock.run(grant.intentHash, async () => {
      const prior = await this.read(key);
      if (prior) {
        if (JSON.stringify(prior.use) !== JSON.stringify(want.use)) {
          throw new SessionRefused('intent_already_used', `this intent was signed for ${describe(prior.use)}; it authorizes no other transaction`);
        }
        if (alsoWrite.length) await this.store.batch(alsoWrite);
        return;
      }
      await this.store.batch([{ type: 'put', key, value: enc.encode(JSON.stringify(want)), secret: true }, ...alsoWrite]);
    });
  }

  /** What was signed for an intent, if anything. */
  async recorded(intentHash: string): Promise<EvmUse | BtcUse | undefined> {
    const r = await this.read(PREFIX + intentHash);
    if (!r) return undefined;
    const u = r.use;
    return u.chain === 'evm'
      ? { chain: 'evm', chainId: BigInt(u.chainId), from: u.from, nonce: u.nonce }
      : { chain: 'bitcoin', inputs: u.inputs.map((i) => ({ txid: i.txid, vout: i.vout, amount: BigInt(i.amount) })) };
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
