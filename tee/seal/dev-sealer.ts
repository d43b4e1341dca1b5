// INSECURE, for development only: a sealer with the shape of the KMS one for local runs and tests, where
// there is no enclave and no KMS (docs/tee.md "The development sealer"). It wraps the storage key with
// XChaCha20-Poly1305 under a key derived from a secret in a file on the same machine, so whoever can
// read that file (the host, in an enclave deployment) can unseal it: it seals to nothing. It exists so
// the sealed path of a node (blob format, first start, refusal of a blob that does not open) runs
// locally. It says so in the log at every use and refuses to be made for a production environment.
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { SealError } from './seal-error.ts';
import { checkUnsealedKey, decodeSealedKey, encodeSealedKey, sealedKeyHeader } from './sealed-key-blob.ts';
import { SEALED_KEY_BYTES, type GeneratedStorageKey, type StorageKeySealer } from './sealer.ts';

const NONCE_BYTES = 24;
const WRAP_INFO = new TextEncoder().encode('custody/dev-sealer/wrap/v1');

export interface InsecureDevSealerOptions {
  /** The file of the wrapping secret (64 hex characters), created at first seal. */
  keyFile: string;
  /** The node's environment; `production` is refused. */
  environment: 'sandbox' | 'production';
  /** Receives the warning this sealer gives at every use; the node logs it. */
  warn: (message: string) => void;
}

export class InsecureDevSealer implements StorageKeySealer {
  readonly kind = 'dev-insecure' as const;

  constructor(private readonly o: InsecureDevSealerOptions) {
    if (o.environment === 'production') throw new SealError('bad_config', 'the dev-insecure sealer is refused in production: it seals the storage key to a file the host can read');
  }

  private warn(what: string): void {
    this.o.warn(`INSECURE dev sealer: ${what} under ${this.o.keyFile}, which anyone who reads that file can open; development only, never in production`);
  }

  private wrapKey(create: boolean): Uint8Array {
    const path = this.o.keyFile;
    if (!existsSync(path)) {
      if (!create) throw new SealError('bad_storage_key', `the dev sealer's key file ${path} does not exist, so the sealed storage key cannot be opened`);
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      writeFileSync(path, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
      chmodSync(path, 0o600);
    }
    const text = readFileSync(path, 'utf8').trim();
    if (!/^[0-9a-f]{64}$/i.test(text)) throw new SealError('bad_storage_key', `the dev sealer's key file ${path} must hold 64 hex characters`);
    return hkdf(sha256, Buffer.from(text, 'hex'), undefined, WRAP_INFO, 32);
  }

  async generate(): Promise<GeneratedStorageKey> {
    this.warn('sealing a new storage key');
    const wrap = this.wrapKey(true);
    const key = new Uint8Array(randomBytes(SEALED_KEY_BYTES));
    const nonce = new Uint8Array(randomBytes(NONCE_BYTES));
    const ciphertext = xchacha20poly1305(wrap, nonce, sealedKeyHeader(this.kind)).encrypt(key);
    wrap.fill(0);
    const payload = new Uint8Array(NONCE_BYTES + ciphertext.length);
    payload.set(nonce);
    payload.set(ciphertext, NONCE_BYTES);
    return { key, sealed: encodeSealedKey(this.kind, key, payload) };
  }

  async unseal(sealed: Uint8Array): Promise<Uint8Array> {
    this.warn('unsealing the storage key');
    const blob = decodeSealedKey(sealed, this.kind);
    if (blob.payload.length <= NONCE_BYTES) throw new SealError('bad_storage_key', 'the dev-sealed storage key is too short');
    const wrap = this.wrapKey(false);
    let key: Uint8Array;
    try {
      key = xchacha20poly1305(wrap, blob.payload.subarray(0, NONCE_BYTES), blob.header).decrypt(blob.payload.subarray(NONCE_BYTES));
    } catch (err) {
      throw new SealError('unseal_failed', `the dev-sealed storage key does not open under ${this.o.keyFile}`, { cause: err });
    } finally {
      wrap.fill(0);
    }
    return checkUnsealedKey(blob, key);
  }
}
