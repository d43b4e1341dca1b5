// Where the node's store lives (docs/storage.md "Backends"): `<dataDir>/db`, or, with NODE_STORE_REMOTE,
// a host store on the enclave's parent (tee/host-store/). node/main.ts and node/identity-cli.ts open
// the same one through this.
import { join } from 'node:path';
import { splitHostPort } from '../../common/config.ts';
import type { NodeConfig } from '../config.ts';
import type { KvBackend } from './kv-backend.ts';
import { LevelKvBackend } from './level-kv-backend.ts';
import { RemoteKvClient } from '../../tee/host-store/remote-kv-client.ts';

export type StoreBackendSettings = Pick<NodeConfig, 'dataDir' | 'storeRemote'>;

/** Not opened yet: SealedStore.openOn (or the sealed key's loader) opens it. */
export function storeBackendFor(c: StoreBackendSettings): KvBackend {
  if (!c.storeRemote) return new LevelKvBackend(join(c.dataDir, 'db'));
  const { host, port } = splitHostPort(c.storeRemote);
  return new RemoteKvClient({ host: host.replace(/^\[|\]$/g, ''), port });
}

/** Where the store is, for logs. */
export const storeLocation = (c: StoreBackendSettings) => (c.storeRemote ? `host store ${c.storeRemote}` : join(c.dataDir, 'db'));
