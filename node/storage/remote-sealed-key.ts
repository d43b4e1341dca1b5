// A sealed storage key kept by a remote store (docs/tee.md "Sealing the storage key"): an enclave has no
// disk, so with NODE_STORE_REMOTE the sealed blob lives beside the store on the parent, under a
// reserved key the store never reads as a record (SealedStore's SEALED_KEY_RECORD). The rules are
// tee/seal/sealed-key-file.ts's: a blob that is there is unsealed or the node does not start; a key is
// made only when there is no blob and no store, checked by unsealing it once, and written (synced)
// before anything is encrypted under it. The blob authenticates itself (KMS, the key check), so the
// host can withhold or replace it, which stops the node, but cannot make it accept a key it knows.
import { equalBytes } from '@noble/curves/utils.js';
import { SealError } from '../../tee/seal/seal-error.ts';
import { MAX_SEALED_KEY_BYTES } from '../../tee/seal/sealed-key-blob.ts';
import type { StorageKeySealer } from '../../tee/seal/sealer.ts';
import type { KvBackend } from './kv-backend.ts';
import { SEALED_KEY_RECORD } from './sealed-store.ts';

export interface LoadRemoteSealedStorageKeyParameters {
  sealer: StorageKeySealer;
  /** The store's backend, opened. */
  backend: KvBackend;
  /** Make and seal a key at first start (NODE_CREATE_STORAGE_KEY). */
  create: boolean;
  /** The store's place, for messages. */
  where: string;
}

export async function loadRemoteSealedStorageKey(p: LoadRemoteSealedStorageKeyParameters): Promise<{ key: Uint8Array; created: boolean }> {
  const blob = await p.backend.get(SEALED_KEY_RECORD);
  if (blob !== undefined) {
    if (blob.length > MAX_SEALED_KEY_BYTES) throw new SealError('bad_storage_key', `the sealed storage key kept by ${p.where} has ${blob.length} bytes: not a sealed storage key`);
    try {
      return { key: await p.sealer.unseal(blob), created: false };
    } catch (err) {
      if (err instanceof SealError) throw new SealError(err.code, `the sealed storage key kept by ${p.where} does not unseal: ${err.message}`, { cause: err });
      throw err;
    }
  }
  for await (const [k] of p.backend.entries()) {
    if (k !== SEALED_KEY_RECORD) throw new SealError('bad_storage_key', `${p.where} holds a store but no sealed storage key: a new key would lose it; restore the store's sealed key`);
  }
  if (!p.create) throw new SealError('bad_storage_key', `${p.where} holds no sealed storage key`);
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
  await p.backend.batch([{ type: 'put', key: SEALED_KEY_RECORD, value: sealed }], { sync: true });
  return { key, created: true };
}
