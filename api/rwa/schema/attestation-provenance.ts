// The provenance check of the attestations (docs/platform/rwa.md, docs/platform/transparency-log.md
// "provenance/verify"): every `attestation` entry of a token's log is re-verified from the entry alone,
// its attester's signature over its statement, as anyone holding the log can.
import type { ProvenanceChecker, ProvenanceProblem } from '../log/provenance.ts';
import { verifyAttestationEntry } from './attestation.ts';

export const ATTESTATION_CHECK = 'attestation_signatures';

export function attestationChecker(): ProvenanceChecker {
  return {
    name: ATTESTATION_CHECK,
    async check(ctx) {
      const problems: ProvenanceProblem[] = [];
      let checked = 0;
      for (const entry of ctx.entries) {
        if (entry?.kind !== 'attestation') continue;
        checked++;
        const r = await verifyAttestationEntry(entry.body);
        if (!r.ok) problems.push({ index: entry.index, kind: entry.kind, detail: r.reason });
      }
      return { checked, problems };
    },
  };
}
