// Where a node keeps the version of its store's authenticated head apart from the store itself, so
// that restoring the whole data directory from an older copy (head included) is noticed at the next
// open (docs/storage.md). An anchor is only as good as the place it lives: on the same disk as the
// store it stops nothing; on storage the host cannot roll back (another volume under separate control)
// or with parties other than the host (anchor keepers: keeper-rollback-anchor.ts, what an enclave node
// uses) it makes the store's version monotonic.
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
  /** bad_anchor: the anchor holds something unreadable; anchor_unavailable: too few keepers answered. */
  declare readonly code: 'bad_anchor' | 'anchor_unavailable';
  constructor(message: string, code: RollbackAnchorError['code'] = 'bad_anchor') {
    super(code, message);
    this.name = 'RollbackAnchorError';
  }
}

const AAD = new TextEncoder().encode('custody/rollback-anchor/v1');

/** One sealed version: 24-byte nonce, then the 8-byte version and its 16-byte tag. */
const SLOT = 24 + 8 + 16;

/**
 * A file holding the version sealed under a key derived from the storage key, so nobody without the
 * key can write a version it accepts. Two slots: version v is written over slot v mod 2 in place and
 * synced (one `fdatasync`, no rename, no directory sync), so the other slot keeps v - 1 whole; a write
 * torn by a crash leaves a slot that does not open, and the anchor reads as the other one. That is at
 * most one version behind, and only for a write that never completed, so nothing that waited for it
 * (a taken entry's share) had left the node. A file of one slot (the earlier form) is read as it is
 * and rewritten in two slots (temporary file, synced, renamed) at its next write.
 */
export class FileRollbackAnchor implements RollbackAnchor {
  private readonly key: Uint8Array;
  private held: bigint | undefined;
  /** Whether the file on disk has the two-slot form (known after a read or a write). */
  private slotted = false;

  constructor(private readonly path: string, storageKey: Uint8Array) {
    this.key = hkdf(sha256, storageKey, undefined, new TextEncoder().encode('custody/store/rollback-anchor/v1'), 32);
  }

  private open(blob: Uint8Array): bigint | undefined {
    try {
      const plain = xchacha20poly1305(this.key, blob.subarray(0, 24), AAD).decrypt(blob.subarray(24));
      return new DataView(plain.buffer, plain.byteOffset, 8).getBigUint64(0);
    } catch {
      return undefined;
    }
  }

  private seal(version: bigint): Uint8Array {
    const plain = new Uint8Array(8);
    new DataView(plain.buffer).setBigUint64(0, version);
    const nonce = new Uint8Array(randomBytes(24));
    return new Uint8Array([...nonce, ...xchacha20poly1305(this.key, nonce, AAD).encrypt(plain)]);
  }

  async read(): Promise<bigint | undefined> {
    this.slotted = false;
    if (!existsSync(this.path)) return (this.held = undefined);
    const blob = new Uint8Array(readFileSync(this.path));
    if (blob.length !== SLOT && blob.length !== 2 * SLOT) throw new RollbackAnchorError(`${this.path} is not a rollback anchor`);
    const versions = [blob.subarray(0, SLOT), blob.subarray(SLOT)].filter((b) => b.length === SLOT).map((b) => this.open(b)).filter((v) => v !== undefined);
    if (versions.length === 0) throw new RollbackAnchorError(`${this.path} does not open under this node's storage key`);
    this.slotted = blob.length === 2 * SLOT;
    this.held = versions.reduce((a, b) => (a > b ? a : b));
    return this.held;
  }

  async write(version: bigint): Promise<void> {
    if (this.held !== undefined && version <= this.held) return;
    // Asynchronous file calls: syncs must not hold the node's event loop (rounds, heartbeats). The
    // store writes its anchor from one write at a time, so no two of these overlap.
    if (this.slotted && existsSync(this.path)) {
      const file = await open(this.path, 'r+');
      try {
        await file.write(this.seal(version), 0, SLOT, Number(version % 2n) * SLOT);
        await file.datasync();
      } finally {
        await file.close();
      }
    } else {
      // A new anchor, or one of one slot: both slots hold this version, written whole and renamed in.
      const tmp = `${this.path}.tmp`;
      const file = await open(tmp, 'w', 0o600);
      try {
        await file.writeFile(new Uint8Array([...this.seal(version), ...this.seal(version)]));
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
      this.slotted = true;
    }
    this.held = version;
  }
}
