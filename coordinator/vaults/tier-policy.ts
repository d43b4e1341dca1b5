// Which nodes hold a key, by tier (DESIGN.md): hosted 2-of-3 service nodes; self 2-of-2 with one
// service node and the customer's self node; customer_tee 2-of-2 with one service node and the
// customer's enclave node. Service members come only from the operator-signed roster (with the keys it
// lists), since every node refuses any other (docs/trust.md "Committees"); the customer member is the
// enrolled node the customer's signed request or the API names (docs/trust.md "Enrolled nodes"), never
// one chosen because it says which organization it belongs to.
import { bytesToHex } from '@noble/hashes/utils.js';
import type { AttachedNodeInfo } from '../nodes/node-registry.ts';
import type { SignedRoster } from '../../core/trust/roster.ts';
import type { TierName } from '../../core/tiers.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';

export interface Committee {
  nodeIds: string[];
  threshold: number;
}

/** The threshold a committee of `size` members has at `tier`: hosted 2, otherwise every member. */
export function thresholdFor(tier: TierName, size: number): number {
  return tier === 'hosted' ? 2 : size;
}

/** Attached service nodes listed on the roster with the same keys (all attached ones without a roster). */
export function rosterServiceNodes(attached: AttachedNodeInfo[], roster: SignedRoster | undefined): AttachedNodeInfo[] {
  const listed = new Map(roster?.nodes.map((n) => [n.nodeId, n]) ?? []);
  return attached.filter((n) => {
    if (n.kind !== 'service') return false;
    if (!roster) return true;
    const r = listed.get(n.nodeId);
    return r !== undefined && r.signingKey === bytesToHex(n.signingKey) && r.encryptionKey === bytesToHex(n.encryptionKey);
  });
}

export function committeeFor(tier: TierName, attached: AttachedNodeInfo[], roster?: SignedRoster, customerNodeId?: string): Committee {
  const service = rosterServiceNodes(attached, roster).map((n) => n.nodeId).sort();
  if (tier === 'hosted') {
    if (service.length < 3) throw new CustodyError('not_enough_nodes', `hosted keys need 3 service nodes; ${service.length} attached`);
    return { nodeIds: service.slice(0, 3), threshold: 2 };
  }
  const kind = tier === 'self' ? 'self' : 'tee';
  if (!customerNodeId) throw new CustodyError('no_customer_node', `a ${tier} vault needs the customer's enrolled ${kind} node named`);
  const customer = attached.filter((n) => n.kind === kind && n.nodeId === customerNodeId).map((n) => n.nodeId);
  if (!customer.length) throw new CustodyError('no_customer_node', `the customer's node ${customerNodeId} (${kind}) is not attached`);
  if (!service.length) throw new CustodyError('not_enough_nodes', 'no service node is attached');
  return { nodeIds: [service[0]!, customer[0]!], threshold: 2 };
}
