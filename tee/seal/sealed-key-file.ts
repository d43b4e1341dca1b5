// Loading a node's storage key through a sealer (docs/tee.md "Sealing the storage key"), the sealed blob
// in a file on the untrusted disk, by the rules of sealed-key-place.ts.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { openSealedKey } from './sealed-key-place.ts';
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
export function loadSealedStorageKey(p: LoadSealedStorageKeyParameters): Promise<LoadSealedStorageKeyReturnType> {
  return openSealedKey({
    what: `the sealed storage key ${p.path}`,
    read: async () => (existsSync(p.path) ? new Uint8Array(readFileSync(p.path)) : undefined),
    holdsData: async () => holdsData(p.storeDir),
    write: async (sealed) => writeDurably(p.path, sealed),
    noBlobOverData: `${p.storeDir} holds a store but there is no sealed storage key at ${p.path}: a new key would lose it; restore the sealed key file`,
    noBlob: `sealed storage key file ${p.path} does not exist`,
  }, p.sealer, p.create);
}
