// Which nodes hold a key, by tier (DESIGN.md): hosted 2-of-3 service nodes; self 2-of-2 with one
// service node and the customer's self node; customer_tee 2-of-2 with one service node and the
// customer's enclave node.
import type { AttachedNodeInfo } from '../nodes/node-registry.ts';

export type TierName = 'hosted' | 'self' | 'customer_tee';

export class PolicyError extends Error {
  constructor(readonly code: 'not_enough_nodes' | 'no_customer_node' | 'bad_committee', message: string) {
    super(message);
    this.name = 'PolicyError';
  }
}

export interface Committee {
  nodeIds: string[];
  threshold: number;
}

export function committeeFor(tier: TierName, owner: string, attached: AttachedNodeInfo[]): Committee {
  const service = attached.filter((n) => n.kind === 'service').map((n) => n.nodeId).sort();
  if (tier === 'hosted') {
    if (service.length < 3) throw new PolicyError('not_enough_nodes', `hosted keys need 3 service nodes; ${service.length} attached`);
    return { nodeIds: service.slice(0, 3), threshold: 2 };
  }
  const kind = tier === 'self' ? 'self' : 'tee';
  const customer = attached.filter((n) => n.kind === kind && n.owner === owner).map((n) => n.nodeId).sort();
  if (!customer.length) throw new PolicyError('no_customer_node', `no ${kind} node of ${owner} is attached`);
  if (!service.length) throw new PolicyError('not_enough_nodes', 'no service node is attached');
  return { nodeIds: [service[0]!, customer[0]!], threshold: 2 };
}
