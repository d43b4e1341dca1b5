// A chain backend's refusal or failure; `permanent` ones end a transaction, others are retried.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { ErrorCode } from '../../core/errors/error-codes.ts';

export class ChainError extends CustodyError {
  constructor(code: ErrorCode, message: string, readonly permanent: boolean) {
    super(code, message);
    this.name = 'ChainError';
  }
}
