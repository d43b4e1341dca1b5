// The API's client of the coordinator's gRPC service. Every call fails with a CustodyError, decoded from
// the status details the coordinator sends (core/rpc/rpc-error.ts): callers branch on its code and kind.
import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import { createClient, type ServiceClient } from '../../proto/grpc.ts';
import { CoordinatorService } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import { KIND_NAMES, type NodeKindName } from '../../core/link/node-kind.ts';
import { rpcFailure } from '../../core/rpc/rpc-error.ts';

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
  // A coordinator back from a restart is redialed within seconds, not after gRPC's default backoff of up
  // to two minutes: its vaults' work resumes as soon as it answers (docs/operations.md "Coordinator shards").
  const client = createClient(CoordinatorService, opts.address, credentials, { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 5_000 });
  const calls = client as unknown as Record<string, unknown>;
  for (const method of CoordinatorService.methods) {
    const call = calls[method.localName] as (...args: unknown[]) => unknown;
    if (method.methodKind === 'unary') {
      calls[method.localName] = (...args: unknown[]) => (call(...args) as Promise<unknown>).catch((err: unknown) => {
        throw rpcFailure(err);
      });
    } else if (method.methodKind === 'server_streaming') {
      // A stream reports its failure as an 'error' event: the listeners get the CustodyError too.
      calls[method.localName] = (...args: unknown[]) => {
        const stream = call(...args) as { emit(event: string | symbol, ...rest: unknown[]): boolean };
        const emit = stream.emit.bind(stream);
        stream.emit = (event, ...rest) => (event === 'error' ? emit(event, rpcFailure(rest[0])) : emit(event, ...rest));
        return stream;
      };
    }
  }
  return client;
}

export interface NodeSummary {
  id: string;
  kind: NodeKindName | 'unknown';
  owner: string | null;
}

/** The attached nodes, or throws when the coordinator does not answer within `timeoutMs`. */
export async function attachedNodes(client: CoordinatorClient, timeoutMs = 1500): Promise<NodeSummary[]> {
  return (await listNodes(client, timeoutMs, false)).nodes;
}

/** A coordinator's active vaults that cannot sign ECDSA now (docs/vault-api.md "Signing readiness"). */
export interface UnsignableVaults {
  count: number;
  reasons: Record<string, number>;
  /** The first few, by vault id. */
  vaults: { vaultId: string; reason: string; detached: string[]; missingPairs: string[] }[];
}

/** The attached nodes and, with `signing`, the vaults that cannot sign; throws when the coordinator does not answer in time. */
export async function listNodes(client: CoordinatorClient, timeoutMs: number, signing: boolean): Promise<{ nodes: NodeSummary[]; unsignable?: UnsignableVaults }> {
  const res = await client.listNodes({ signing }, { deadline: Date.now() + timeoutMs });
  const nodes: NodeSummary[] = res.nodes.map((n) => ({ id: n.nodeId, kind: KIND_NAMES[n.kind] ?? 'unknown', owner: n.owner || null }));
  const u = res.unsignable;
  if (!u) return { nodes };
  return {
    nodes,
    unsignable: {
      count: u.count, reasons: { ...u.reasons },
      vaults: u.vaults.map((v) => ({ vaultId: v.vaultId, reason: v.readiness?.reason ?? '', detached: [...(v.readiness?.detached ?? [])], missingPairs: [...(v.readiness?.missingPairs ?? [])] })),
    },
  };
}
