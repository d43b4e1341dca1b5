// The node storage key: 32 random bytes that encrypt every secret value at rest. Kept in a key file
// (mode 0600) outside or beside the data directory; a KMS or an enclave seal can provide it instead.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { CustodyError } from '../../core/errors/custody-error.ts';

export const STORAGE_KEY_BYTES = 32;

export class StorageKeyError extends CustodyError {
  declare readonly code: 'bad_storage_key';
  constructor(message: string) {
    super('bad_storage_key', message);
    this.name = 'StorageKeyError';
  }
}

/** Reads the key file, creating it with a fresh random key when `create` is set and it is absent. */
export function loadStorageKey(path: string, create: boolean): Uint8Array {
  if (!existsSync(path)) {
    if (!create) throw new StorageKeyError(`storage key file ${path} does not exist`);
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const key = randomBytes(STORAGE_KEY_BYTES);
    writeFileSync(path, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    chmodSync(path, 0o600);
    return new Uint8Array(key);
  }
  const text = readFileSync(path, 'utf8').trim();
  if (!/^[0-9a-f]{64}$/i.test(text)) throw new StorageKeyError(`storage key file ${path} must hold 64 hex characters`);
  return new Uint8Array(Buffer.from(text, 'hex'));
}
