// The rules for a node's sealed storage key, wherever its blob is kept (a file: sealed-key-file.ts; the
// remote store on an enclave's parent: node/storage/remote-sealed-key.ts). A blob that is there is
// unsealed or the node does not start: a key is never made anew over a store that exists, since that
// store would then be lost to the node (and a host that deleted the blob would have it start over). Only
// a first start, with no blob and no store, makes a key; it is unsealed once before it is used, so a
// sealer that can seal but not unseal here (a KMS key policy that allows GenerateDataKey but not Decrypt)
// fails now rather than at the next start, and the blob is written durably before anything is
// encrypted under the key.
import { equalBytes } from '@noble/curves/utils.js';
import { SealError } from './seal-error.ts';
import { MAX_SEALED_KEY_BYTES } from './sealed-key-blob.ts';
import type { StorageKeySealer } from './sealer.ts';

/** Where a sealed blob is kept, and the words that name it in errors. */
export interface SealedKeyPlace {
  /** "the sealed storage key <where>", e.g. a path or "kept by <host>". */
  readonly what: string;
  read(): Promise<Uint8Array | undefined>;
  /** Whether the store the key encrypts holds anything (then no key is made). */
  holdsData(): Promise<boolean>;
  /** Written durably (synced) before this resolves. */
  write(sealed: Uint8Array): Promise<void>;
  /** Why a store without a blob is refused, and why a missing blob is not made. */
  readonly noBlobOverData: string;
  readonly noBlob: string;
}

export async function openSealedKey(place: SealedKeyPlace, sealer: StorageKeySealer, create: boolean): Promise<{ key: Uint8Array; created: boolean }> {
  const blob = await place.read();
  if (blob !== undefined) {
    if (blob.length > MAX_SEALED_KEY_BYTES) throw new SealError('bad_storage_key', `${place.what} has ${blob.length} bytes: not a sealed storage key`);
    try {
      return { key: await sealer.unseal(blob), created: false };
    } catch (err) {
      if (err instanceof SealError) throw new SealError(err.code, `${place.what} does not unseal: ${err.message}`, { cause: err });
      throw err;
    }
  }
  if (await place.holdsData()) throw new SealError('bad_storage_key', place.noBlobOverData);
  if (!create) throw new SealError('bad_storage_key', place.noBlob);
  const { key, sealed } = await sealer.generate();
  let again: Uint8Array;
  try {
    again = await sealer.unseal(sealed);
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
  await place.write(sealed);
  return { key, created: true };
}
