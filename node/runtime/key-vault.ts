// The node's key shares and the marks that keep nonces single-use, in its sealed store. A key has a
// current epoch and, during a reshare, a pending one; the committee each share belongs to is pinned
// with it (node ids and identity keys), so a coordinator cannot swap in other nodes later.
import type { SealedStore } from '../storage/sealed-store.ts';
import type { EndUserBinding } from './authorization/sign-authorizer.ts';
import { decodeKeyShare, encodeKeyShare, type KeyShare } from '../protocols/keys/key-package.ts';

export interface PinnedMember {
  index: number;
  nodeId: string;
  signingKey: string;
  encryptionKey: string;
}

export interface StoredKey {
  key: KeyShare;
  /** Organization that owns the key; intents must name it. */
  owner: string;
  committee: PinnedMember[];
  /** Tier the key was generated for (absent on keys from before nodes were told). */
  tier?: string | undefined;
  /** Hosted keys: whether signatures need an end-user token, and the bound end user (docs/trust.md). */
  endUser?: EndUserBinding | undefined;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export class KeyVaultError extends Error {
  constructor(readonly code: 'unknown_key' | 'session_reused' | 'no_pending' | 'epoch_mismatch', message: string) {
    super(message);
    this.name = 'KeyVaultError';
  }
}

export class KeyVault {
  /** Session ids claimed in this process but maybe not yet on disk: closes the check-then-write gap. */
  private readonly claiming = new Set<string>();

  constructor(private readonly store: SealedStore) {}

  private async read(keyId: string, slot: 'current' | 'pending'): Promise<StoredKey | undefined> {
    const [share, committee] = await Promise.all([this.store.getSecret(`key/${keyId}/${slot}/share`), this.store.get(`key/${keyId}/${slot}/committee`)]);
    if (!share || !committee) return undefined;
    const meta = JSON.parse(dec.decode(committee)) as { owner: string; committee: PinnedMember[]; tier?: string; endUser?: EndUserBinding };
    return { key: decodeKeyShare(share), owner: meta.owner, committee: meta.committee, ...(meta.tier ? { tier: meta.tier } : {}), ...(meta.endUser ? { endUser: meta.endUser } : {}) };
  }

  current(keyId: string): Promise<StoredKey | undefined> {
    return this.read(keyId, 'current');
  }

  pending(keyId: string): Promise<StoredKey | undefined> {
    return this.read(keyId, 'pending');
  }

  private ops(keyId: string, slot: 'current' | 'pending', k: StoredKey) {
    return [
      { type: 'put' as const, key: `key/${keyId}/${slot}/share`, value: encodeKeyShare(k.key), secret: true },
      { type: 'put' as const, key: `key/${keyId}/${slot}/committee`, value: enc.encode(JSON.stringify({ owner: k.owner, committee: k.committee, tier: k.tier, endUser: k.endUser })) },
    ];
  }

  /**
   * A fresh key from DKG: becomes current at once (there is no older epoch to protect). The creation
   * request that asked for it, if any, is bound to it in the same batch.
   */
  async putNew(keyId: string, k: StoredKey, creationHash?: string): Promise<void> {
    if (await this.current(keyId)) throw new KeyVaultError('epoch_mismatch', `key ${keyId} already exists here`);
    const bind = creationHash ? [{ type: 'put' as const, key: `creation/${creationHash}`, value: enc.encode(keyId) }] : [];
    await this.store.batch([...this.ops(keyId, 'current', k), ...bind]);
  }

  /** The key a creation request was used for, if any. */
  async creationBinding(creationHash: string): Promise<string | undefined> {
    const v = await this.store.get(`creation/${creationHash}`);
    return v ? dec.decode(v) : undefined;
  }

  async putPending(keyId: string, k: StoredKey): Promise<void> {
    await this.store.batch(this.ops(keyId, 'pending', k));
  }

  /** Second phase of a reshare, in one batch: pending becomes current; a node that left drops its share. */
  async commit(keyId: string, epoch: number): Promise<'promoted' | 'removed' | 'already'> {
    const pending = await this.pending(keyId);
    const current = await this.current(keyId);
    if (pending) {
      if (pending.key.pkg.epoch !== epoch) throw new KeyVaultError('epoch_mismatch', `pending epoch is ${pending.key.pkg.epoch}, not ${epoch}`);
      await this.store.batch([
        ...this.ops(keyId, 'current', pending),
        { type: 'del', key: `key/${keyId}/pending/share` },
        { type: 'del', key: `key/${keyId}/pending/committee` },
        // The old epoch's OT material belongs to the old committee: a fresh setup follows.
        { type: 'del', key: `key/${keyId}/current/ot` },
      ]);
      return 'promoted';
    }
    if (current && current.key.pkg.epoch < epoch) {
      await this.store.batch([
        { type: 'del', key: `key/${keyId}/current/share` },
        { type: 'del', key: `key/${keyId}/current/committee` },
        { type: 'del', key: `key/${keyId}/current/ot` },
      ]);
      return 'removed';
    }
    if (current && current.key.pkg.epoch === epoch) return 'already';
    throw new KeyVaultError('no_pending', `no pending epoch ${epoch} for ${keyId}`);
  }

  /** The ECDSA OT setup stored with the current epoch (secret), if any. */
  async ot(keyId: string): Promise<Uint8Array | undefined> {
    return this.store.getSecret(`key/${keyId}/current/ot`);
  }

  async putOt(keyId: string, setup: Uint8Array): Promise<void> {
    await this.store.putSecret(`key/${keyId}/current/ot`, setup);
  }

  async abandon(keyId: string, epoch: number): Promise<void> {
    const pending = await this.pending(keyId);
    if (pending && pending.key.pkg.epoch === epoch) {
      await this.store.batch([{ type: 'del', key: `key/${keyId}/pending/share` }, { type: 'del', key: `key/${keyId}/pending/committee` }]);
    }
  }

  /**
   * Marks a signing session's nonces used, durably, before anything computed with them leaves the
   * node (a FROST signature share, any ECDSA presigning message; FROST's public nonce commitments may
   * precede it). A session id is accepted once, ever.
   */
  async claimSession(sessionId: string): Promise<void> {
    const k = `used/${sessionId}`;
    if (this.claiming.has(sessionId) || (await this.store.get(k))) throw new KeyVaultError('session_reused', 'this session id was used before');
    this.claiming.add(sessionId);
    await this.store.put(k, new Uint8Array([1]));
  }
}
