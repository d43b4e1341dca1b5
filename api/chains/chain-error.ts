// A chain backend's refusal or failure; `permanent` ones end a transaction, others are retried.
export class ChainError extends Error {
  constructor(readonly code: string, message: string, readonly permanent: boolean) {
    super(message);
    this.name = 'ChainError';
  }
}
