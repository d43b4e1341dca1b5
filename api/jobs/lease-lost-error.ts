// The refusal of a stale lease token (job-queue.ts): the job was claimed again after the lease lapsed, or
// has left the leased state. The worker holding the token must stop: another worker owns the job now.
import { CustodyError } from '../../core/errors/custody-error.ts';

export class LeaseLostError extends CustodyError {
  readonly jobId: string;

  constructor(jobId: string) {
    super('conflict', `job ${jobId} is not leased under this token any more`);
    this.name = 'LeaseLostError';
    this.jobId = jobId;
  }
}
