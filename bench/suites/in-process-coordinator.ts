// A coordinator in the bench's own process for a cluster of three node processes (n1 to n3), on a port
// and a data directory of its own, with no presignature pool: what the gRPC signing suites share.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, type Cluster } from '../../test/cluster/cluster-harness.ts';
import { startCoordinator, type RunningCoordinator } from '../../coordinator/coordinator-server.ts';
import { loadCoordinatorConfig } from '../../coordinator/config.ts';
import { createLogger } from '../../common/logger.ts';

export async function inProcessCoordinator(cluster: Cluster, dirPrefix: string): Promise<{ coordinator: RunningCoordinator; dir: string; port: number }> {
  const dir = mkdtempSync(join(tmpdir(), dirPrefix));
  const port = await freePort();
  const coordinator = await startCoordinator(loadCoordinatorConfig({
    COORDINATOR_LISTEN: `127.0.0.1:${port}`, COORDINATOR_DATA_DIR: dir, COORDINATOR_ROSTER_FILE: await cluster.roster(['n1', 'n2', 'n3']),
    COORDINATOR_LOG_LEVEL: 'silent', COORDINATOR_PRESIGN_POOL_TARGET: '0',
  }), createLogger('c', 'silent'));
  cluster.useCoordinatorPort(port);
  return { coordinator, dir, port };
}

/** Stops what a suite's setup started, also after it failed halfway: the client, the nodes, the coordinator, its directory. */
export async function stopInProcess(o: { client?: { close(): void } | undefined; cluster?: Cluster | undefined; coordinator?: RunningCoordinator | undefined; dir?: string | undefined }): Promise<void> {
  o.client?.close();
  await o.cluster?.stop();
  await o.coordinator?.stop();
  if (o.dir) rmSync(o.dir, { recursive: true, force: true });
}
