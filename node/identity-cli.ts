// `npm run node-identity`: prints the node's public identity as JSON (node id, Ed25519 signing key,
// X25519 encryption key) without starting it, creating the identity on first use exactly as the node
// does at first start. The operator signs the service-node roster from these (docs/trust.md
// "Committees"); a customer names its own node in its signed vault request with them. It opens the
// node's store (NODE_DATA_DIR and the other NODE_* settings), so run it while the node is stopped.
// `--help` prints the usage and touches nothing; any other argument is a usage error (exit 2).
import { parseArgs } from 'node:util';
import { ConfigError } from '../common/config.ts';
import { toHex } from '../common/bytes.ts';
import { loadNodeConfig } from './config.ts';
import { loadNodeStorageKey } from './storage/storage-key.ts';
import { createLogger } from '../common/logger.ts';
import { SealedStore } from './storage/sealed-store.ts';
import { configuredRollbackAnchor } from './storage/configured-anchor.ts';
import { storeBackendFor } from './storage/store-backend.ts';
import { NodeIdentity } from './runtime/identity.ts';

const USAGE = `usage: npm run node-identity [-- --help]
Prints this node's public identity as one JSON line, {node_id, signing_key, encryption_key, kind, created},
creating the identity (and the storage key, unless NODE_CREATE_STORAGE_KEY=false) on first use exactly as
the node does at first start. It opens the node's store: run it with the node's own settings
(NODE_CONFIG_FILE, or NODE_DATA_DIR, NODE_STORE_REMOTE, NODE_STORAGE_KEY_FILE, NODE_KIND, NODE_OWNER, ...)
while the node is stopped. Exits 2 on a usage error, 78 on a bad setting, 1 on any other failure.`;

let help: boolean | undefined;
try {
  ({ values: { help } } = parseArgs({ args: process.argv.slice(2), options: { help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false }));
} catch (err) {
  process.stderr.write(`node-identity: ${(err as Error).message}\n${USAGE}\n`);
  process.exit(2);
}
if (help) {
  process.stdout.write(USAGE + '\n');
  process.exit(0);
}

try {
  const config = loadNodeConfig();
  // The storage key as the node loads it (a key file, or unsealed by KMS in an enclave): the identity
  // this prints is the one the node will run with. Logs go to stderr; stdout carries only the identity.
  // The same store as the node's: <dataDir>/db, or the host store of NODE_STORE_REMOTE.
  const backend = storeBackendFor(config);
  let store: SealedStore;
  try {
    const log = createLogger('node-identity', config.logLevel, process.stderr);
    const storageKey = await loadNodeStorageKey(config, log, backend);
    // The node's anchor, so this program's writes (a new identity) keep it in step with the store. It
    // only reads or creates the identity, which no older copy can change: it needs no voucher, and
    // deletes nothing (that is the node's own start, node/main.ts).
    const anchor = configuredRollbackAnchor(config, storageKey, log);
    store = await SealedStore.openOn(backend, storageKey, { ...(anchor ? { anchor } : {}), adoptUnheaded: config.storeAdopt });
  } catch (err) {
    await backend.close().catch(() => undefined);
    throw err;
  }
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
