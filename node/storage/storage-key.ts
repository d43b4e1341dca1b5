// The node storage key: 32 random bytes that encrypt every secret value at rest. Kept in a key file
// (mode 0600) outside or beside the data directory, or, with NODE_STORAGE_KEY_SEALER, only in sealed
// form: sealed to the enclave build with AWS KMS, or by the insecure development stand-in (tee/seal/,
// docs/tee.md "Sealing the storage key").
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from '../../common/logger.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { NodeConfig } from '../config.ts';
import { InsecureDevSealer } from '../../tee/seal/dev-sealer.ts';
import { KmsSealer } from '../../tee/seal/kms-sealer.ts';
import { nsmCommandAttester } from '../../tee/seal/nsm-command-attester.ts';
import { loadSealedStorageKey } from '../../tee/seal/sealed-key-file.ts';
import type { StorageKeySealer } from '../../tee/seal/sealer.ts';
import type { KvBackend } from './kv-backend.ts';
import { loadRemoteSealedStorageKey } from './remote-sealed-key.ts';

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

type StorageKeySettings = Pick<NodeConfig,
  | 'dataDir' | 'storeRemote' | 'storageKeyFile' | 'createStorageKey' | 'storageKeySealer' | 'sealedStorageKeyFile' | 'environment' | 'devSealerKeyFile'
  | 'kmsRegion' | 'kmsEndpoint' | 'kmsKeyId' | 'kmsAccessKeyId' | 'kmsSecretAccessKey' | 'kmsSessionToken' | 'teeAttestCommand'>;

function sealerFor(c: StorageKeySettings, log: Logger): StorageKeySealer {
  if (c.storageKeySealer === 'dev-insecure') return new InsecureDevSealer({ keyFile: c.devSealerKeyFile, environment: c.environment, warn: (m) => log.warn(m) });
  // loadNodeConfig has checked that kms comes with all of these.
  return new KmsSealer({
    kms: {
      region: c.kmsRegion!, ...(c.kmsEndpoint ? { endpoint: c.kmsEndpoint } : {}),
      credentials: { accessKeyId: c.kmsAccessKeyId!, secretAccessKey: c.kmsSecretAccessKey!, ...(c.kmsSessionToken ? { sessionToken: c.kmsSessionToken } : {}) },
    },
    keyId: c.kmsKeyId!, attest: nsmCommandAttester(c.teeAttestCommand!),
  });
}

/**
 * The storage key as configured: the key file (`file`, as loadStorageKey), or unsealed through a sealer
 * from NODE_SEALED_STORAGE_KEY_FILE, made and sealed at a first start whose store does not exist yet.
 * A sealed key that does not unseal throws (SealError); no key is ever made over an existing store.
 * With NODE_STORE_REMOTE the sealed key is kept by the remote store itself (remote-sealed-key.ts):
 * `backend` is that store's backend, which this opens.
 */
export async function loadNodeStorageKey(c: StorageKeySettings, log: Logger, backend?: KvBackend): Promise<Uint8Array> {
  if (c.storageKeySealer === 'file') return loadStorageKey(c.storageKeyFile, c.createStorageKey);
  const sealer = sealerFor(c, log);
  if (c.storeRemote) {
    if (!backend) throw new StorageKeyError('a remote store keeps its sealed storage key: its backend is needed to load it');
    await backend.open();
    const { key, created } = await loadRemoteSealedStorageKey({ sealer, backend, create: c.createStorageKey, where: `the host store ${c.storeRemote}` });
    log.info({ sealer: sealer.kind, sealedKeyIn: c.storeRemote, created }, created ? 'storage key made and sealed' : 'storage key unsealed');
    return key;
  }
  const { key, created } = await loadSealedStorageKey({ sealer, path: c.sealedStorageKeyFile, storeDir: join(c.dataDir, 'db'), create: c.createStorageKey });
  log.info({ sealer: sealer.kind, sealedKeyFile: c.sealedStorageKeyFile, created }, created ? 'storage key made and sealed' : 'storage key unsealed');
  return key;
}
