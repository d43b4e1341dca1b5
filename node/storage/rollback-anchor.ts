// Where a node keeps the version of its store's authenticated head apart from the store itself, so
// that restoring the whole data directory from an older copy (head included) is noticed at the next
// open (docs/storage.md). An anchor is only as good as the place it lives: on the same disk as the
// store it stops nothing; on storage the host cannot roll back (another volume under separate control,
// or a monotonic counter of an enclave's key service) it makes the store's version monotonic.
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { CustodyError } from '../../core/errors/custody-error.ts';

export interface RollbackAnchor {
  /** The highest version written, or undefined when the anchor is new. */
  read(): Promise<bigint | undefined>;
  /** Records `version`, durably; a lower version than the one held is ignored. */
  write(version: bigint): Promise<void>;
}

export class RollbackAnchorError extends CustodyError {
  declare readonly code: 'bad_anchor';
  constructor(message: string) {
    super('bad_anchor', message);
    this.name = 'RollbackAnchorError';
  }
}

const AAD = new TextEncoder().encode('custody/rollback-anchor/v1');

/**
 * A file holding the version sealed under a key derived from the storage key, so nobody without the
 * key can write a version it accepts. Written to a temporary file, synced and renamed over the old one.
 */
export class FileRollbackAnchor implements RollbackAnchor {
  private readonly key: Uint8Array;
  private held: bigint | undefined;

  constructor(private readonly path: string, storageKey: Uint8Array) {
    this.key = hkdf(sha256, storageKey, undefined, new TextEncoder().encode('custody/store/rollback-anchor/v1'), 32);
  }

  async read(): Promise<bigint | undefined> {
    if (!existsSync(this.path)) return (this.held = undefined);
    const blob = new Uint8Array(readFileSync(this.path));
    if (blob.length !== 24 + 8 + 16) throw new RollbackAnchorError(`${this.path} is not a rollback anchor`);
    let plain: Uint8Array;
    try {
      plain = xchacha20poly1305(this.key, blob.subarray(0, 24), AAD).decrypt(blob.subarray(24));
    } catch {
      throw new RollbackAnchorError(`${this.path} does not open under this node's storage key`);
    }
    this.held = new DataView(plain.buffer, plain.byteOffset, 8).getBigUint64(0);
    return this.held;
  }

  async write(version: bigint): Promise<void> {
    if (this.held !== undefined && version <= this.held) return;
    const plain = new Uint8Array(8);
    new DataView(plain.buffer).setBigUint64(0, version);
    const nonce = new Uint8Array(randomBytes(24));
    const blob = new Uint8Array([...nonce, ...xchacha20poly1305(this.key, nonce, AAD).encrypt(plain)]);
    // Asynchronous file calls: two fsyncs must not hold the node's event loop (rounds, heartbeats).
    // The store writes its anchor from one write at a time, so no two of these overlap.
    const tmp = `${this.path}.tmp`;
    const file = await open(tmp, 'w', 0o600);
    try {
      await file.writeFile(blob);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tmp, this.path);
    const dir = await open(dirname(this.path), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    this.held = version;
  }
}
