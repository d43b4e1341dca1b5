// A sealed storage key kept by a remote store (docs/tee.md "Sealing the storage key"): an enclave has no
// disk, so with NODE_STORE_REMOTE the sealed blob lives beside the store on the parent, under a
// reserved key the store never reads as a record (SealedStore's SEALED_KEY_RECORD). The rules are
// tee/seal/sealed-key-place.ts's, shared with the key file: a blob that is there is unsealed or the node
// does not start; a key is made only when there is no blob and no store, checked by unsealing it once,
// and written (synced) before anything is encrypted under it. The blob authenticates itself (KMS, the key check), so the
// host can withhold or replace it, which stops the node, but cannot make it accept a key it knows.
import { openSealedKey } from '../../tee/seal/sealed-key-place.ts';
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

export function loadRemoteSealedStorageKey(p: LoadRemoteSealedStorageKeyParameters): Promise<{ key: Uint8Array; created: boolean }> {
  return openSealedKey({
    what: `the sealed storage key kept by ${p.where}`,
    read: () => p.backend.get(SEALED_KEY_RECORD),
    async holdsData() {
      for await (const [k] of p.backend.entries()) if (k !== SEALED_KEY_RECORD) return true;
      return false;
    },
    write: (sealed) => p.backend.batch([{ type: 'put', key: SEALED_KEY_RECORD, value: sealed }], { sync: true }),
    noBlobOverData: `${p.where} holds a store but no sealed storage key: a new key would lose it; restore the store's sealed key`,
    noBlob: `${p.where} holds no sealed storage key`,
  }, p.sealer, p.create);
}
