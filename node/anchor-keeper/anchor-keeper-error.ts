// Errors of an anchor keeper (keeper-service.ts): a CustodyError whose code the server answers with, in
// the project's one error shape ({ error, code }), and the status core/errors/http-status.ts gives it.
import { CustodyError } from '../../core/errors/custody-error.ts';

export type AnchorKeeperErrorCode =
  /** A request that is not one the keeper takes (a malformed client key, a version out of range). */
  | 'invalid_request'
  /** A statement whose signature does not verify under the client key it names. */
  | 'unauthorized'
  /** The keeper holds as many clients as it was told to and takes no new one. */
  | 'rate_limited'
  /** A record the keeper cannot read back (its own storage is damaged). */
  | 'internal';

export class AnchorKeeperError extends CustodyError {
  declare readonly code: AnchorKeeperErrorCode;

  constructor(code: AnchorKeeperErrorCode, message: string) {
    super(code, message);
    this.name = 'AnchorKeeperError';
  }
}
