// Applies the trust log a session carries (docs/trust.md) to the node's registry before the session's
// own checks: a malformed or failing entry refuses the session with bad_trust_log.
import { SessionRefused } from '../session-host.ts';
import type { TrustRegistry } from './trust-registry.ts';
import { TrustEntryError, type OrgTrust } from './trust-state.ts';

const MAX_ENTRIES = 10_000;

export async function applyCarriedLog(trust: TrustRegistry, org: string, log: readonly Uint8Array[] | undefined): Promise<OrgTrust> {
  // The session contract (core/session/session-contract.ts) already bounds a decoded log; this holds for any caller.
  if (log !== undefined && (!Array.isArray(log) || log.length > MAX_ENTRIES || log.some((e) => !(e instanceof Uint8Array) || e.length === 0))) {
    throw new SessionRefused('bad_trust_log', `the trust log is a list of at most ${MAX_ENTRIES} encoded entries`);
  }
  try {
    return await trust.apply(org, log ?? []);
  } catch (err) {
    if (err instanceof TrustEntryError) throw new SessionRefused('bad_trust_log', err.message);
    throw err;
  }
}
