// Errors of the host store link (docs/storage.md "A store kept by the enclave's parent"): a CustodyError
// whose code says what went wrong, so the node can tell a lost or lying host from its own errors.
import { CustodyError } from '../../core/errors/custody-error.ts';

export type HostStoreErrorCode =
  /** No link to the host store, or it was lost, or an answer did not come in time. */
  | 'unavailable'
  /** A frame that does not parse, or an answer that is not one to the question asked. */
  | 'bad_message'
  /** A key, value, batch or frame over its limit. */
  | 'payload_too_large'
  /** The host store already serves another client (one enclave per directory). */
  | 'conflict'
  /** A listing out of order, out of its range, or repeating a key: the host is lying. */
  | 'tampered'
  /** The host store failed to do what was asked (its LevelDB refused). */
  | 'internal';

export class HostStoreError extends CustodyError {
  declare readonly code: HostStoreErrorCode;

  constructor(code: HostStoreErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'HostStoreError';
  }
}
