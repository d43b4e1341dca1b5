// A storage key that could not be sealed or unsealed (docs/tee.md "Sealing the storage key"): a
// CustodyError whose code says why, kept as a class so the node can tell a sealing failure from its own
// errors with `instanceof`. Messages name files and services, never a key or a credential.
import { CustodyError } from '../../core/errors/custody-error.ts';

export type SealErrorCode =
  /** The sealed blob does not open: tampered, made for another key or enclave, or not one of ours. */
  | 'unseal_failed'
  /** The blob is missing or malformed, or there is data but no blob to unseal its key. */
  | 'bad_storage_key'
  /** A sealer option is missing or malformed. */
  | 'bad_config'
  /** The key service refused the request's credentials or signature. */
  | 'unauthorized'
  /** The key service refused by policy (the enclave's measurements, a debug enclave, a disabled key). */
  | 'forbidden'
  /** The key service or the attestation source cannot be reached now. */
  | 'unavailable';

export class SealError extends CustodyError {
  declare readonly code: SealErrorCode;

  constructor(code: SealErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'SealError';
  }
}
