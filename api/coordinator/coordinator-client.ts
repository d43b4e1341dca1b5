// The API's client of the coordinator's gRPC service.
import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import { createClient, type ServiceClient } from '../../proto/grpc.ts';
import { CoordinatorService } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import { KIND_NAMES, type NodeKindName } from '../../core/link/node-kind.ts';

export type CoordinatorClient = ServiceClient<(typeof CoordinatorService)['method']>;

export interface CoordinatorClientOptions {
  address: string;
  tlsCa?: string | undefined;
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
}

export function connectCoordinator(opts: CoordinatorClientOptions): CoordinatorClient {
  const credentials =
    opts.tlsCa && opts.tlsCert && opts.tlsKey
      ? grpc.credentials.createSsl(readFileSync(opts.tlsCa), readFileSync(opts.tlsKey), readFileSync(opts.tlsCert))
      : grpc.credentials.createInsecure();
  return createClient(CoordinatorService, opts.address, credentials);
}

export interface NodeSummary {
  id: string;
  kind: NodeKindName | 'unknown';
  owner: string | null;
}

/** The attached nodes, or throws when the coordinator does not answer within `timeoutMs`. */
export async function attachedNodes(client: CoordinatorClient, timeoutMs = 1500): Promise<NodeSummary[]> {
  const res = await client.listNodes({}, { deadline: Date.now() + timeoutMs });
  return res.nodes.map((n) => ({ id: n.nodeId, kind: KIND_NAMES[n.kind] ?? 'unknown', owner: n.owner || null }));
}
