// The check of a tee node's enrolment attestation, shared by the signer nodes (each verifies every
// enrolment in an organization's trust log itself) and the API (which refuses a bad one at once):
// docs/tee.md "Enrolling a TEE node". A Nitro document verified against the pinned roots (the AWS Nitro
// root by default; a DEV-ONLY root only where the operator allowed it), valid at the given time, at most
// ATTESTATION_MAX_AGE_S old then, not a debug enclave, and whose user_data is the expected binding of
// the node's keys (core/trust/tee-binding.ts).
import { readFileSync } from 'node:fs';
import { bytesToHex, equalBytes } from '@noble/curves/utils.js';
import { verifyNitroAttestation } from './nitro.ts';
import { AttestationError } from './attestation-error.ts';
import { AWS_NITRO_ROOT_G1_PEM } from './roots/aws-nitro-root-g1.ts';

/** How old an attestation may be at the time it is judged. */
export const ATTESTATION_MAX_AGE_S = 3600;

export { AWS_NITRO_ROOT_G1_PEM };

/**
 * Verifies a TEE attestation document at `at` and that its user_data is `userData`; returns its PCRs
 * (index -> lower-case hex). Throws AttestationError on any failure.
 */
export type TeeAttestationVerifier = (doc: Uint8Array, expect: { at: Date; userData: Uint8Array }) => Record<string, string>;

export interface TeeVerifierOptions {
  /** PEM text of the pinned roots (one or more certificates). */
  rootsPem: string;
  /** Accept a DEV-ONLY root (dev-root.ts): local clusters and tests only. */
  allowDevRoot: boolean;
}

export function nitroTeeVerifier(opts: TeeVerifierOptions): TeeAttestationVerifier {
  const roots = opts.rootsPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (!roots.length) throw new AttestationError('bad_config', 'the TEE roots file holds no PEM certificate');
  return (doc, expect) => {
    const v = verifyNitroAttestation(doc, { roots, at: expect.at, allowDevRoot: opts.allowDevRoot, maxAgeMs: ATTESTATION_MAX_AGE_S * 1000 });
    if (!v.userData || !equalBytes(v.userData, expect.userData)) throw new AttestationError('bad_attestation', "user_data does not bind this node's keys to this organization");
    return Object.fromEntries([...v.pcrs.entries()].map(([i, value]) => [String(i), bytesToHex(value)]));
  };
}

/** The verifier a configuration asks for: the roots file (default the AWS Nitro root) and the dev-root switch. */
export function loadTeeVerifier(rootsFile: string | undefined, allowDevRoot: boolean): TeeAttestationVerifier {
  return nitroTeeVerifier({ rootsPem: rootsFile ? readFileSync(rootsFile, 'utf8') : AWS_NITRO_ROOT_G1_PEM, allowDevRoot });
}
