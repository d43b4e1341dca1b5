// The coordinator's own look at a TEE node before it seats one in a customer_tee committee (docs/tee.md
// "Enrolling a TEE node"): the organization's trust log must enrol the node as `tee`, not revoke it, with
// the keys the node attached with, carrying an attestation that verifies (tee/attestation/) with user_data
// binding those keys, and with PCRs in the highest measurement version the log pins. Nothing here is a
// security boundary: every signer node verifies the same log itself, signatures included, and the
// coordinator may be malicious. It stops a session that every honest node would refuse before it starts,
// and names the reason.
import { bytesToHex } from '@noble/hashes/utils.js';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { decodeTrustEntry, requestEntryCreated, type RequestEntry } from '../../core/trust/trust-entry.ts';
import { teeNodeBinding } from '../../core/trust/tee-binding.ts';
import { measurementSetProblem, pcrsAllowed } from '../../core/trust/tee-measurements.ts';
import type { TeeAttestationVerifier } from '../../tee/attestation/enrolment-verifier.ts';

/** How far after the enrolment's signature its attestation is judged, as the nodes do. */
const ATTESTATION_SKEW_S = 300;

interface Seen {
  enrolment?: { entry: RequestEntry; body: Record<string, unknown> };
  revoked: boolean;
  measurements?: { version: number; allowed: Record<string, string>[] };
}

function jsonBody(e: RequestEntry): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(e.body));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What the log says of `nodeId`: its first enrolment, whether it is revoked, the highest measurements. */
function read(trustLog: readonly Uint8Array[], nodeId: string): Seen {
  const seen: Seen = { revoked: false };
  for (const bytes of trustLog) {
    let entry;
    try {
      entry = decodeTrustEntry(bytes);
    } catch {
      continue;
    }
    if (entry.kind !== 'request') continue;
    let path: string;
    try {
      path = new URL(entry.url).pathname;
    } catch {
      continue;
    }
    if (entry.method === 'POST' && /\/v1\/nodes$/.test(path)) {
      const body = jsonBody(entry);
      if (body?.node_id === nodeId && !seen.enrolment) seen.enrolment = { entry, body };
    } else if (entry.method === 'POST' && path.endsWith(`/v1/nodes/${nodeId}/revoke`)) {
      seen.revoked = true;
    } else if (entry.method === 'PUT' && /\/v1\/tee\/measurements$/.test(path)) {
      const body = jsonBody(entry);
      if (typeof body?.version === 'number' && Array.isArray(body.allowed) && (!seen.measurements || body.version > seen.measurements.version)) {
        seen.measurements = { version: body.version, allowed: body.allowed as Record<string, string>[] };
      }
    }
  }
  return seen;
}

/** Throws a CustodyError naming why no honest node would seat this TEE node; returns when nothing stands in the way. */
export function admitTeeMember(o: { org: string; nodeId: string; signingKey: Uint8Array; encryptionKey: Uint8Array; trustLog: readonly Uint8Array[]; verify: TeeAttestationVerifier }): void {
  const seen = read(o.trustLog, o.nodeId);
  if (!seen.enrolment) throw new CustodyError('unverified_committee', `${o.org} has not enrolled TEE node ${o.nodeId}`, { culprits: [o.nodeId] });
  if (seen.revoked) throw new CustodyError('node_revoked', `${o.org} revoked node ${o.nodeId}`, { culprits: [o.nodeId] });
  const { entry, body } = seen.enrolment;
  const sk = bytesToHex(o.signingKey);
  const ek = bytesToHex(o.encryptionKey);
  if (body.kind !== 'tee') throw new CustodyError('bad_committee', `node ${o.nodeId} is enrolled as a ${String(body.kind)} node, not tee`, { culprits: [o.nodeId] });
  if (String(body.signing_key).toLowerCase() !== sk || String(body.encryption_key).toLowerCase() !== ek) {
    throw new CustodyError('unverified_committee', `node ${o.nodeId} attached with other keys than ${o.org} enrolled`, { culprits: [o.nodeId] });
  }
  let pcrs: Record<string, string>;
  try {
    const doc = new Uint8Array(Buffer.from(String(body.attestation ?? ''), 'base64'));
    pcrs = o.verify(doc, { at: new Date((requestEntryCreated(entry) + ATTESTATION_SKEW_S) * 1000), userData: teeNodeBinding(o.org, o.nodeId, sk, ek) });
  } catch (err) {
    throw new CustodyError('bad_attestation', `the attestation of TEE node ${o.nodeId} does not verify: ${(err as Error).message}`, { culprits: [o.nodeId], cause: err });
  }
  const m = seen.measurements;
  if (!m || !pcrsAllowed(m.allowed.filter((set) => measurementSetProblem(set) === undefined), pcrs)) {
    throw new CustodyError('unpinned_measurements', `TEE node ${o.nodeId}: its attested measurements are not among the ones ${o.org} allows (version ${m?.version ?? 'none'})`, { culprits: [o.nodeId] });
  }
}
