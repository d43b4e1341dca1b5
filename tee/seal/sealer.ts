// What seals a signer node's storage key (docs/tee.md "Sealing the storage key"). The storage key
// encrypts the node's whole store (node/storage/sealed-store.ts); where the disk under the node is not
// trusted, as under an enclave, only a sealed form of it is kept there, one that opens only where the
// sealer allows: for KmsSealer, inside an enclave whose measurements the KMS key policy names.
//
// A sealer generates the key rather than being handed one: KMS makes the data key itself
// (GenerateDataKey) and answers it encrypted to the enclave's attested key, so the plain key never
// exists outside KMS and the enclave, and no operation that the host could call without an attestation
// (kms:Encrypt) is needed: a key policy can refuse them all, so the host can never plant a sealed blob
// whose key it knows.

/** The size of a storage key, as node/storage/storage-key.ts makes it. */
export const SEALED_KEY_BYTES = 32;

/** The sealers a node can be configured with (NODE_STORAGE_KEY_SEALER besides `file`). */
export type SealerKind = 'kms' | 'dev-insecure';

export interface GeneratedStorageKey {
  /** The plain storage key: kept in memory only. */
  readonly key: Uint8Array;
  /** Its sealed form (sealed-key-blob.ts): the only form written to disk. */
  readonly sealed: Uint8Array;
}

export interface StorageKeySealer {
  readonly kind: SealerKind;
  /** A fresh storage key and its sealed form. */
  generate(): Promise<GeneratedStorageKey>;
  /** The storage key a sealed blob holds; throws SealError when it does not open here. */
  unseal(sealed: Uint8Array): Promise<Uint8Array>;
}
