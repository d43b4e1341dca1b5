// The node's LevelDB store. Public values are stored as they are; secret values are sealed with
// XChaCha20-Poly1305 under the node storage key, with the record's key as associated data so a
// ciphertext cannot be moved to another record. Every multi-record change is one atomic batch.
import { Level } from 'level';
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { randomBytes } from 'node:crypto';

const SEALED_VERSION = 1;
const NONCE_BYTES = 24;
const enc = new TextEncoder();

export class SealedStoreError extends Error {
  constructor(readonly code: 'not_found' | 'unseal_failed' | 'bad_version', message: string) {
    super(message);
    this.name = 'SealedStoreError';
  }
}

export type BatchOp =
  | { type: 'put'; key: string; value: Uint8Array; secret?: boolean }
  | { type: 'del'; key: string };

export class SealedStore {
  private constructor(
    private readonly db: Level<string, Uint8Array>,
    private readonly storageKey: Uint8Array,
  ) {}

  static async open(dir: string, storageKey: Uint8Array): Promise<SealedStore> {
    if (storageKey.length !== 32) throw new Error('storage key must be 32 bytes');
    const db = new Level<string, Uint8Array>(dir, { valueEncoding: 'view' });
    await db.open();
    return new SealedStore(db, storageKey);
  }

  private seal(key: string, plaintext: Uint8Array): Uint8Array {
    const nonce = new Uint8Array(randomBytes(NONCE_BYTES));
    const ct = xchacha20poly1305(this.storageKey, nonce, enc.encode(key)).encrypt(plaintext);
    const out = new Uint8Array(1 + NONCE_BYTES + ct.length);
    out[0] = SEALED_VERSION;
    out.set(nonce, 1);
    out.set(ct, 1 + NONCE_BYTES);
    return out;
  }

  private unseal(key: string, blob: Uint8Array): Uint8Array {
    if (blob[0] !== SEALED_VERSION) throw new SealedStoreError('bad_version', `sealed record ${key} has unknown version ${blob[0]}`);
    try {
      return xchacha20poly1305(this.storageKey, blob.subarray(1, 1 + NONCE_BYTES), enc.encode(key)).decrypt(blob.subarray(1 + NONCE_BYTES));
    } catch {
      throw new SealedStoreError('unseal_failed', `sealed record ${key} does not open under this storage key`);
    }
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    return (await this.db.get(key)) ?? undefined;
  }

  async getSecret(key: string): Promise<Uint8Array | undefined> {
    const blob = await this.db.get(key);
    return blob === undefined ? undefined : this.unseal(key, blob);
  }

  /**
   * A plain record, written to the log without waiting for the disk: it survives the process dying,
   * not the machine losing power. For marks whose loss cannot do harm (a claimed session id guards
   * nonces that live only in memory and die with the machine too).
   */
  async put(key: string, value: Uint8Array): Promise<void> {
    await this.db.put(key, value);
  }

  /** A sealed record, on disk (fsync) before this resolves. */
  async putSecret(key: string, value: Uint8Array): Promise<void> {
    await this.db.put(key, this.seal(key, value), { sync: true });
  }

  /** Applies every operation or none, on disk (fsync) before this resolves: key material goes this way. */
  async batch(ops: BatchOp[]): Promise<void> {
    await this.db.batch(
      ops.map((op) => (op.type === 'del' ? op : { type: 'put' as const, key: op.key, value: op.secret ? this.seal(op.key, op.value) : op.value })),
      { sync: true },
    );
  }

  async *keys(prefix: string): AsyncGenerator<string> {
    for await (const k of this.db.keys({ gte: prefix, lt: prefix + '\xff' })) yield k;
  }

  /** Raw bytes as stored (for tests that prove secrets are not stored in the clear). */
  async raw(key: string): Promise<Uint8Array | undefined> {
    return (await this.db.get(key)) ?? undefined;
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
