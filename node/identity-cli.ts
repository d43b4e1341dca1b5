// `npm run node-identity`: prints the node's public identity as JSON (node id, Ed25519 signing key,
// X25519 encryption key) without starting it, creating the identity on first use exactly as the node
// does at first start. The operator signs the service-node roster from these (docs/trust.md
// "Committees"); a customer names its own node in its signed vault request with them. It opens the
// node's store (NODE_DATA_DIR and the other NODE_* settings), so run it while the node is stopped.
import { join } from 'node:path';
import { ConfigError } from '../common/config.ts';
import { toHex } from '../common/bytes.ts';
import { loadNodeConfig } from './config.ts';
import { loadStorageKey } from './storage/storage-key.ts';
import { SealedStore } from './storage/sealed-store.ts';
import { NodeIdentity } from './runtime/identity.ts';

try {
  const config = loadNodeConfig();
  const store = await SealedStore.open(join(config.dataDir, 'db'), loadStorageKey(config.storageKeyFile, config.createStorageKey), { adoptUnheaded: config.storeAdopt });
  try {
    const { identity, created } = await NodeIdentity.loadOrCreate(store);
    process.stdout.write(JSON.stringify({
      node_id: identity.nodeId, signing_key: toHex(identity.signingKey), encryption_key: toHex(identity.encryptionKey), kind: config.kind, created,
    }) + '\n');
  } finally {
    await store.close();
  }
} catch (err) {
  process.stderr.write(`node-identity: ${err instanceof ConfigError ? err.message : (err as Error).message}\n`);
  process.exit(err instanceof ConfigError ? 78 : 1);
}
