// How many digests one signing session may carry.
import { SessionRefused } from '../session-host.ts';

export function checkDigests(digests: unknown): void {
  if (!Array.isArray(digests) || digests.length < 1 || digests.length > 256) throw new SessionRefused('bad_params', '1 to 256 digests');
}
