// A refused attestation document (docs/tee.md "Verifying a Nitro attestation document"): a CustodyError
// whose code says which check failed, kept as a class so a caller can tell an attestation failure from
// its own errors with `instanceof`.
import { CustodyError } from '../../core/errors/custody-error.ts';

export type AttestationErrorCode =
  | 'bad_attestation'
  | 'bad_attestation_signature'
  | 'bad_attestation_chain'
  | 'untrusted_attestation_root'
  | 'dev_attestation_root'
  | 'attestation_expired'
  | 'attestation_not_yet_valid'
  | 'stale_attestation'
  | 'debug_enclave'
  | 'attestation_pcr_mismatch'
  | 'attestation_nonce_mismatch'
  | 'bad_config';

export class AttestationError extends CustodyError {
  declare readonly code: AttestationErrorCode;

  constructor(code: AttestationErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'AttestationError';
  }
}
