// The coordinator's durable record of every key: who holds it, at which epoch, and where a reshare
// stands. It holds no secret: public key, chain code, committee and counters only.
import type { Level } from 'level';
import type { KeyPackage } from '../../core/session/key-package.ts';

export type KeyState = 'generating' | 'active' | 'resharing' | 'needs_attention' | 'failed';

export interface CommitteeMember {
  nodeId: string;
  index: number;
}

export interface KeyRecord {
  v: 1;
  keyId: string;
  owner: string;
  tier: string;
  threshold: number;
  committee: CommitteeMember[];
  epoch: number;
  /** Increments at each committed reshare; the vault API's rotation counter. */
  rotation: number;
  /** Compressed secp256k1 group key, hex; empty until generated. */
  publicKey: string;
  chainCode: string;
  state: KeyState;
  /** Public package of the current epoch: verification shares and group commitment (no secret). */
  pkg?: KeyPackage | undefined;
  /** Epoch whose ECDSA OT setup completed on the whole committee. */
  otEpoch?: number | undefined;
  /** Why the key needs attention, when it does. */
  problem?: string | undefined;
  /** A failed generation the nodes refused (final), as opposed to one that lacked a party (retried). */
  refused?: boolean | undefined;
  createdAtMs: number;
  updatedAtMs: number;
}

export class KeyStore {
  constructor(private readonly db: Level<string, string>) {}

  async get(keyId: string): Promise<KeyRecord | undefined> {
    const raw = await this.db.get(`key/${keyId}`);
    return raw === undefined ? undefined : (JSON.parse(raw) as KeyRecord);
  }

  /** On disk (fsync) before this resolves: a committed epoch must not be forgotten after nodes dropped the old one. */
  async put(record: KeyRecord): Promise<void> {
    await this.db.put(`key/${record.keyId}`, JSON.stringify(record), { sync: true });
  }

  /** Creates the record; false when the key id is taken. */
  async create(record: KeyRecord): Promise<boolean> {
    if (await this.get(record.keyId)) return false;
    await this.put(record);
    return true;
  }

  async *all(): AsyncGenerator<KeyRecord> {
    for await (const v of this.db.values({ gte: 'key/', lt: 'key/\xff' })) yield JSON.parse(v) as KeyRecord;
  }
}
