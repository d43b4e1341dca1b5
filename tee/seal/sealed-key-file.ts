// Loading a node's storage key through a sealer (docs/tee.md "Sealing the storage key"): the sealed blob
// lives in a file on the untrusted disk. A blob that is there is unsealed or the node does not start: a
// key is never made anew over a store that exists, since that store would then be lost to the node (and
// a host that deleted the blob would have it start over). Only a first start, with no blob and no store,
// makes a key; it is unsealed once before it is used, so a sealer that can seal but not unseal here (a
// KMS key policy that allows GenerateDataKey but not Decrypt) fails now rather than at the next start,
// and the blob is written durably before anything is encrypted under the key.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { equalBytes } from '@noble/curves/utils.js';
import { SealError } from './seal-error.ts';
import { MAX_SEALED_KEY_BYTES } from './sealed-key-blob.ts';
import type { StorageKeySealer } from './sealer.ts';

export interface LoadSealedStorageKeyParameters {
  sealer: StorageKeySealer;
  /** The file of the sealed blob. */
  path: string;
  /** The store the key encrypts: a key is made only while this directory is absent or empty. */
  storeDir: string;
  /** Make and seal a key at first start (NODE_CREATE_STORAGE_KEY). */
  create: boolean;
}

export interface LoadSealedStorageKeyReturnType {
  key: Uint8Array;
  /** Whether this call made the key (first start). */
  created: boolean;
}

const holdsData = (dir: string) => existsSync(dir) && readdirSync(dir).length > 0;

function writeDurably(path: string, bytes: Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

/** The node's storage key: unsealed from `path`, or at first start made, checked and sealed there. */
export async function loadSealedStorageKey(p: LoadSealedStorageKeyParameters): Promise<LoadSealedStorageKeyReturnType> {
  if (existsSync(p.path)) {
    const blob = new Uint8Array(readFileSync(p.path));
    if (blob.length > MAX_SEALED_KEY_BYTES) throw new SealError('bad_storage_key', `${p.path} has ${blob.length} bytes: not a sealed storage key`);
    try {
      return { key: await p.sealer.unseal(blob), created: false };
    } catch (err) {
      if (err instanceof SealError) throw new SealError(err.code, `the sealed storage key ${p.path} does not unseal: ${err.message}`, { cause: err });
      throw err;
    }
  }
  if (holdsData(p.storeDir)) {
    throw new SealError('bad_storage_key', `${p.storeDir} holds a store but there is no sealed storage key at ${p.path}: a new key would lose it; restore the sealed key file`);
  }
  if (!p.create) throw new SealError('bad_storage_key', `sealed storage key file ${p.path} does not exist`);
  const { key, sealed } = await p.sealer.generate();
  let again: Uint8Array;
  try {
    again = await p.sealer.unseal(sealed);
  } catch (err) {
    key.fill(0);
    if (err instanceof SealError) throw new SealError(err.code, `a new storage key was sealed but does not unseal here, so none is kept: ${err.message}`, { cause: err });
    throw err;
  }
  const same = equalBytes(again, key);
  again.fill(0);
  if (!same) {
    key.fill(0);
    throw new SealError('unseal_failed', 'a new storage key was sealed but unsealed to another key, so none is kept');
  }
  writeDurably(p.path, sealed);
  return { key, created: true };
}
