// Wires the coordinator: its LevelDB state, the node link service and the API-facing service on one
// gRPC server. main.ts only boots this.
import * as grpc from '@grpc/grpc-js';
import { Level } from 'level';
import { readFileSync } from 'node:fs';
import { addService } from '../proto/grpc.ts';
import { NodeLinkService } from '../proto/gen/mpc/v1/node_link_pb.ts';
import { CoordinatorService } from '../proto/gen/mpc/v1/coordinator_pb.ts';
import type { Logger } from '../common/logger.ts';
import type { CoordinatorConfig } from './config.ts';
import { NodeRegistry, type AttachedNodeInfo } from './nodes/node-registry.ts';
import { createLinkHandler } from './nodes/link-server.ts';
import { SessionHub } from './sessions/session-hub.ts';
import { KIND_VALUES } from '../node/transport/attach.ts';

export interface RunningCoordinator {
  port: number;
  registry: NodeRegistry;
  hub: SessionHub;
  stop(): Promise<void>;
}

function toWire(n: AttachedNodeInfo) {
  return {
    nodeId: n.nodeId, kind: KIND_VALUES[n.kind], owner: n.owner, attachedAtMs: BigInt(n.attachedAtMs),
    signingKey: n.signingKey, encryptionKey: n.encryptionKey,
  };
}

export async function startCoordinator(config: CoordinatorConfig, log: Logger): Promise<RunningCoordinator> {
  const db = new Level<string, string>(config.dataDir, { valueEncoding: 'utf8' });
  await db.open();
  const registry = new NodeRegistry(db);
  const hub = new SessionHub({ send: (id, m) => registry.send(id, m), isAttached: (id) => registry.isAttached(id) }, log);
  registry.on('left', (nodeId) => hub.nodeLeft(nodeId));
  const server = new grpc.Server({ 'grpc.keepalive_time_ms': 10_000, 'grpc.keepalive_timeout_ms': 5_000 });

  addService(server, NodeLinkService, {
    attach: createLinkHandler({
      coordinatorId: config.coordinatorId, heartbeatIntervalMs: config.heartbeatIntervalMs, registry, log,
      onSession: (nodeId, msg) => hub.fromNode(nodeId, msg),
    }),
  });
  addService(server, CoordinatorService, {
    async listNodes() {
      return { nodes: registry.list().map(toWire) };
    },
    watchNodes(_req, call) {
      const send = (nodes: AttachedNodeInfo[]) => call.write({ nodes: nodes.map(toWire) });
      send(registry.list());
      registry.on('change', send);
      const stop = () => registry.off('change', send);
      call.on('cancelled', stop);
      call.on('close', stop);
      call.on('error', stop);
    },
  });

  let credentials: grpc.ServerCredentials;
  if (config.tlsCert && config.tlsKey && config.tlsClientCa) {
    credentials = grpc.ServerCredentials.createSsl(
      readFileSync(config.tlsClientCa),
      [{ cert_chain: readFileSync(config.tlsCert), private_key: readFileSync(config.tlsKey) }],
      true,
    );
    log.info('mutual TLS on the coordinator port');
  } else {
    credentials = grpc.ServerCredentials.createInsecure();
    log.warn({ listen: config.listen }, 'plaintext gRPC on loopback: development only');
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(config.listen, credentials, (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    port,
    registry,
    hub,
    async stop() {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      await db.close();
    },
  };
}
