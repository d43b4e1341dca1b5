// EVM nonces of a wallet (docs/transactions.md "Nonces"). A version 3 intent names its nonce, so the
// customer must know it before signing: POST /v1/transactions/prepare reserves the lowest nonce of the
// wallet that is at or above the chain's next one and that no live reservation or transaction holds.
// A reservation lasts RESERVATION_SECONDS (or until the intent's not_after, if sooner): long enough for
// the SDK to sign and submit, short enough that a client that prepared and then died holds up the
// wallet's later transactions only briefly. Giving a lapsed nonce out again is safe: two intents signed
// at one nonce are two transactions of which only one can be mined, and the second to be submitted is
// refused (`nonce_taken`). A reservation becomes the transaction's hold when a transaction names it, and
// the hold goes when the transaction ends. A transaction that ends before the network accepted it releases its nonce: the wallet's next
// prepare gives it out again, and later transactions wait for it (transaction-worker.ts).
//
// Every change runs under the address's lock (`evm-nonce:<chain>/<address>`), on every instance.
import { CustodyError } from '../../core/errors/custody-error.ts';
import { collection } from '../store/collection.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';

/** A nonce held for a wallet: reserved by a prepare, or named by a transaction (`tx_id`). */
export interface NonceHold {
  nonce: number;
  chain: string;
  /** The sending address, lower case. */
  address: string;
  org: string;
  wallet_id: string;
  idempotency_key: string;
  /** Unix seconds: the intent's not_after the reservation was made for. */
  not_after: number;
  /** Unix seconds: until when the reservation keeps the nonce for its key, while no transaction names it. */
  reserved_until: number;
  /** The transaction that names the nonce, once one does. */
  tx_id?: string;
}

/** Under `<chain>/<address>/<nonce, 20 digits>`, so an address's holds list in nonce order. */
export const EVM_NONCE_HOLDS = collection<NonceHold>('evm_nonce_holds');

const pad = (n: number) => String(n).padStart(20, '0');
const holdId = (chain: string, address: string, nonce: number) => `${chain}/${address.toLowerCase()}/${pad(nonce)}`;
const addressEntry = (chain: string, address: string) => `addr/${chain}/${address.toLowerCase()}/`;
const idemEntry = (org: string, key: string) => `idem/${org}/${key}\x00`;
const indexOf = (h: NonceHold) => [`${addressEntry(h.chain, h.address)}${pad(h.nonce)}`, idemEntry(h.org, h.idempotency_key)];

/** At most this many live holds per address: a wallet cannot reserve without bound. */
export const MAX_NONCE_HOLDS = 256;

/** How long a prepare keeps its nonce for its key before a transaction names it. */
export const RESERVATION_SECONDS = 300;

/** Whether a hold still keeps its nonce at `now` (Unix seconds): a transaction's always, a reservation until it lapses. */
export const holdsAt = (h: NonceHold, now: number) => h.tx_id !== undefined || h.reserved_until >= now;

export class EvmNonces {
  constructor(private readonly store: RecordRepository, private readonly nowSeconds: () => number) {}

  /** Runs `fn` under the address's lock. */
  locked<T>(chain: string, address: string, fn: () => Promise<T>): Promise<T> {
    return this.store.exclusive(`evm-nonce:${chain}/${address.toLowerCase()}`, fn);
  }

  /** The reservation or hold an organization's idempotency key made, if any. */
  async byIdempotencyKey(org: string, key: string): Promise<NonceHold | undefined> {
    return (await EVM_NONCE_HOLDS.in(this.store).byIndex(idemEntry(org, key), 1))[0];
  }

  async at(chain: string, address: string, nonce: number): Promise<NonceHold | undefined> {
    return EVM_NONCE_HOLDS.in(this.store).get(holdId(chain, address, nonce));
  }

  /**
   * Reserves the lowest free nonce at or above `pending` (the chain's next nonce of the address) for the
   * idempotency key; call under `locked`. Expired reservations that no transaction named are dropped.
   */
  async reserve(h: Omit<NonceHold, 'nonce' | 'tx_id' | 'reserved_until'>, pending: number): Promise<NonceHold> {
    const now = this.nowSeconds();
    const holds = await EVM_NONCE_HOLDS.in(this.store).byIndex(addressEntry(h.chain, h.address), MAX_NONCE_HOLDS * 4);
    const stale = holds.filter((x) => !holdsAt(x, now));
    const live = holds.filter((x) => !stale.includes(x));
    if (live.length >= MAX_NONCE_HOLDS) throw new CustodyError('rate_limited', `the wallet holds ${live.length} nonces in reservations and transactions not yet ended; submit or let some expire first`);
    const taken = new Set(live.map((x) => x.nonce));
    let nonce = pending;
    while (taken.has(nonce)) nonce++;
    const hold: NonceHold = { ...h, address: h.address.toLowerCase(), nonce, reserved_until: Math.min(h.not_after, now + RESERVATION_SECONDS) };
    await this.store.batch([...stale.map((x) => this.dropOp(x)), this.putOp(hold)]);
    return hold;
  }

  /**
   * The ops that make transaction `txId` the holder of `nonce`; call under `locked`. Refused when another
   * transaction holds it, or a live reservation of another idempotency key.
   */
  async claimOps(h: Omit<NonceHold, 'tx_id' | 'reserved_until'>, txId: string): Promise<Op[]> {
    const held = await this.at(h.chain, h.address, h.nonce);
    if (held && held.tx_id !== undefined && held.tx_id !== txId) {
      throw new CustodyError('nonce_taken', `nonce ${h.nonce} of ${h.address} is held by transaction ${held.tx_id}; POST /v1/transactions/prepare reserves a free one`);
    }
    if (held && held.tx_id === undefined && (held.org !== h.org || held.idempotency_key !== h.idempotency_key) && holdsAt(held, this.nowSeconds())) {
      throw new CustodyError('nonce_taken', `nonce ${h.nonce} of ${h.address} is reserved for another idempotency key until ${new Date(held.reserved_until * 1000).toISOString()}; POST /v1/transactions/prepare reserves a free one`);
    }
    const ops: Op[] = [];
    // The key's reservation of another nonce goes: the transaction names this one.
    const own = await this.byIdempotencyKey(h.org, h.idempotency_key);
    if (own && own.tx_id === undefined && own.nonce !== h.nonce) ops.push(this.dropOp(own));
    if (held && (held.org !== h.org || held.idempotency_key !== h.idempotency_key)) ops.push(this.dropOp(held));
    ops.push(this.putOp({ ...h, address: h.address.toLowerCase(), reserved_until: h.not_after, tx_id: txId }));
    return ops;
  }

  /** Drops the reservation the key made for the wallet, if no transaction has taken it over. */
  async release(org: string, walletId: string, key: string): Promise<void> {
    const own = await this.byIdempotencyKey(org, key);
    if (!own || own.wallet_id !== walletId || own.tx_id !== undefined) return;
    await this.locked(own.chain, own.address, async () => {
      const again = await this.at(own.chain, own.address, own.nonce);
      if (again && again.tx_id === undefined && again.org === org && again.idempotency_key === key) await this.store.batch([this.dropOp(again)]);
    });
  }

  /** The op that drops transaction `txId`'s hold, if it still holds `nonce`. */
  async releaseOps(chain: string, address: string, nonce: number, txId: string): Promise<Op[]> {
    const held = await this.at(chain, address, nonce);
    return held && held.tx_id === txId ? [this.dropOp(held)] : [];
  }

  private putOp(h: NonceHold): Op {
    return EVM_NONCE_HOLDS.putOp(holdId(h.chain, h.address, h.nonce), h, { index: indexOf(h) });
  }

  private dropOp(h: NonceHold): Op {
    return EVM_NONCE_HOLDS.delOp(holdId(h.chain, h.address, h.nonce), indexOf(h));
  }
}
