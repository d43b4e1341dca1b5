// Which committees a node joins for a DKG or a reshare (DESIGN.md "Trust", docs/trust.md "Committees"):
// every member it can verify on its own, and the tier's shape checked here rather than taken from the
// coordinator. A service member is on the operator-signed roster with the same node id and both keys;
// the customer member of a self or customer_tee key is a node the organization enrolled through its
// trust log (docs/trust.md "Enrolled nodes"): active, of the tier's kind, with the same keys, and for
// customer_tee with attested measurements the organization allows now; when the customer's signed
// request names its node, only that one. The parties are exactly the committee the customer's request
// names, when it names one.
import { bytesToHex } from '@noble/hashes/utils.js';
import type { SignedRoster } from '../../../core/trust/roster.ts';
import { SessionRefused } from '../session-host.ts';
import type { ErrorCode } from '../../../core/errors/error-codes.ts';
import { enrolledNode, measurementsAllowed, type CustomerNode, type OrgTrust } from './trust-state.ts';
import type { TierName } from '../../../core/tiers.ts';

export interface CommitteeParty {
  nodeId: string;
  signingKey: Uint8Array;
  encryptionKey: Uint8Array;
}

export interface CommitteeCheck {
  tier: TierName;
  threshold: number;
  /** The parties that will hold the key: every DKG party, or the receivers of a reshare. */
  members: readonly CommitteeParty[];
  roster: SignedRoster;
  /** The owner's trust as this node holds it, the session's log applied: its enrolled nodes and measurements. */
  org: OrgTrust;
  /** The customer's node as its signed request names it. */
  customerNode?: CustomerNode | undefined;
  /** The node ids the customer's signed request names: the members must be exactly these. */
  shown?: readonly string[] | undefined;
}

/** Hosted keys today: three roster service nodes, any two sign. */
export const HOSTED_SIZE = 3;
export const HOSTED_THRESHOLD = 2;

const refuse = (code: ErrorCode, message: string): never => {
  throw new SessionRefused(code, message);
};

/** Throws SessionRefused (unverified_committee or bad_committee) unless the committee passes. */
export function checkCommittee(c: CommitteeCheck): void {
  const ids = c.members.map((m) => m.nodeId);
  if (c.shown) {
    const shown = new Set(c.shown);
    if (shown.size !== ids.length || ids.some((id) => !shown.has(id))) {
      refuse('unverified_committee', `the committee (${[...ids].sort().join(', ')}) is not the one the customer's request names (${[...shown].sort().join(', ')})`);
    }
  }
  const roster = new Map(c.roster.nodes.map((n) => [n.nodeId, n]));
  let service = 0;
  let customer = 0;
  for (const m of c.members) {
    const sk = bytesToHex(m.signingKey);
    const ek = bytesToHex(m.encryptionKey);
    const listed = roster.get(m.nodeId);
    if (listed) {
      if (listed.signingKey !== sk || listed.encryptionKey !== ek) refuse('unverified_committee', `party ${m.nodeId} is on roster version ${c.roster.version} with other keys`);
      service++;
      continue;
    }
    const enrolled = enrolledNode(c.org, m.nodeId);
    if (!enrolled) refuse('unverified_committee', `party ${m.nodeId} is neither on the operator's roster (version ${c.roster.version}) nor a node ${c.org.org} enrolled`);
    if (enrolled!.revoked) refuse('node_revoked', `party ${m.nodeId}: ${c.org.org} revoked this node's enrolment`);
    if (enrolled!.signingKey !== sk || enrolled!.encryptionKey !== ek) refuse('unverified_committee', `party ${m.nodeId} has other keys than ${c.org.org} enrolled`);
    const named = c.customerNode;
    if (named && (named.nodeId !== m.nodeId || named.signingKey !== sk || named.encryptionKey !== ek)) {
      refuse('unverified_committee', `party ${m.nodeId} is not the customer's node its signed request names (${named.nodeId})`);
    }
    const kind = c.tier === 'customer_tee' ? 'tee' : 'self';
    if (c.tier !== 'hosted' && enrolled!.kind !== kind) refuse('bad_committee', `party ${m.nodeId} is enrolled as a ${enrolled!.kind} node; a ${c.tier} key needs a ${kind} node`);
    if (c.tier === 'customer_tee' && !measurementsAllowed(c.org, enrolled!.pcrs)) {
      refuse('unpinned_measurements', `party ${m.nodeId}: its attested measurements are not among the ones ${c.org.org} allows (version ${c.org.teeMeasurements?.version ?? 'none'})`);
    }
    customer++;
  }
  if (c.tier === 'hosted') {
    if (customer !== 0 || service !== HOSTED_SIZE || c.threshold !== HOSTED_THRESHOLD) {
      refuse('bad_committee', `a hosted key is ${HOSTED_THRESHOLD}-of-${HOSTED_SIZE} roster service nodes; this session seats ${service} service and ${customer} other nodes, threshold ${c.threshold}`);
    }
    return;
  }
  // The customer's node is required for every signature: the threshold is the committee's size.
  if (customer !== 1 || service < 1 || c.threshold !== c.members.length) {
    refuse('bad_committee', `a ${c.tier} key is the customer's node and one or more roster service nodes, all required; this session seats ${service} service and ${customer} customer nodes, threshold ${c.threshold} of ${c.members.length}`);
  }
}
