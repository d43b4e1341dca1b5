// The kinds of signer node (service, self-hosted, TEE) by name, and their wire values on the node link
// and coordinator API: the nodes, the coordinator and the API all translate between the two.
import { NodeKind } from '../../proto/gen/mpc/v1/node_link_pb.ts';

export type NodeKindName = 'service' | 'self' | 'tee';

export const KIND_NAMES: Record<number, NodeKindName | undefined> = {
  [NodeKind.SERVICE]: 'service',
  [NodeKind.SELF]: 'self',
  [NodeKind.TEE]: 'tee',
};

export const KIND_VALUES: Record<NodeKindName, NodeKind> = { service: NodeKind.SERVICE, self: NodeKind.SELF, tee: NodeKind.TEE };
