// Signer node process: opens its sealed store, loads or creates its identity, and holds a link to each
// configured coordinator until SIGINT/SIGTERM. With coordinator shards (docs/operations.md "Coordinator
// shards") the one session host serves every link, answering each session on the link that opened it.
import { ExportRecords } from './storage/export-records.ts';
import { defaultExportGovernance, policyExportGovernance } from './runtime/authorization/export-governance.ts';
import * as grpc from '@grpc/grpc-js';
import { existsSync, readFileSync } from 'node:fs';
import { NodeConfigSchema, anchorProblem, loadNodeConfig } from './config.ts';
import { ConfigError, settingsUsage } from '../common/config.ts';
import { ProtocolWorkers, defaultWorkerCount } from './runtime/workers/protocol-workers.ts';
import { createLogger } from '../common/logger.ts';
import { RefusedToStart, runMain } from '../common/process.ts';
import { loadNodeStorageKey } from './storage/storage-key.ts';
import { SealedStore, SealedStoreError } from './storage/sealed-store.ts';
import { storeVouching } from './storage/store-vouching.ts';
import { RollbackAnchorError } from './storage/rollback-anchor.ts';
import { KeeperRollbackAnchor } from './storage/keeper-rollback-anchor.ts';
import { configuredRollbackAnchor, describeAnchor } from './storage/configured-anchor.ts';
import { toHex } from '../common/bytes.ts';
import { storeBackendFor, storeLocation } from './storage/store-backend.ts';
import { RemoteKvClient } from '../tee/host-store/remote-kv-client.ts';
import { NodeIdentity } from './runtime/identity.ts';
import { nativePrimitives } from './runtime/native-primitives.ts';
import { CoordinatorLink } from './transport/coordinator-link.ts';
import { KIND_VALUES } from '../core/link/node-kind.ts';
import { SessionHost } from './runtime/session-host.ts';
import { VaultShareStore } from './storage/vault-shares.ts';
import { PresignatureStore } from './storage/presignature-store.ts';
import { FrostNonceStore } from './storage/frost-nonce-store.ts';
import { loadApiKeysFile } from './runtime/authorization/api-key-registry.ts';
import { TrustRegistry } from './runtime/authorization/trust-registry.ts';
import { IntentAuthorizer } from './runtime/authorization/sign-authorizer.ts';
import { IntentLedger } from './runtime/authorization/intent-ledger.ts';
import { RosterRegistry } from './runtime/authorization/roster-registry.ts';
import { nodeProtocols } from './runtime/sessions/node-protocols.ts';
import { loadTeeVerifier } from '../tee/attestation/enrolment-verifier.ts';
import { createMetricsRegistry } from '../common/metrics/metrics-registry.ts';
import { serveMetrics } from '../common/metrics/metrics-server.ts';
import { NodeSessionMetrics } from './runtime/session-metrics.ts';
import { StorePruner } from './runtime/store-pruner.ts';
import { answerInventory } from './runtime/inventory-answer.ts';


await runMain('node', async ({ fail }) => {
  const config = loadNodeConfig();
  const noAnchor = anchorProblem(config);
  if (noAnchor) throw new ConfigError([noAnchor]);
  const log = createLogger('node', config.logLevel);
  const backend = storeBackendFor(config);
  // A storage key kept in a file outlives the store it was made with: its presence says a store existed.
  const keyFile = config.storeRemote ? undefined : config.storageKeySealer === 'file' ? config.storageKeyFile : config.sealedStorageKeyFile;
  const keyExisted = keyFile !== undefined && existsSync(keyFile);
  const storageKey = await loadNodeStorageKey(config, log, backend);
  const anchor = configuredRollbackAnchor(config, storageKey, log);
  if (anchor instanceof KeeperRollbackAnchor) {
    log.info({ ...describeAnchor(config), readQuorum: anchor.readQuorum, writeQuorum: anchor.writeQuorum, anchorClientKey: toHex(anchor.clientKey) }, 'rollback anchor kept by anchor keepers');
  }
  const store = await SealedStore.openOn(backend, storageKey, { ...(anchor ? { anchor } : {}), ...storeVouching(config) }).catch((err: unknown) => {
    // What the store found wrong, said plainly: the operator's next step is in the message.
    if (err instanceof SealedStoreError) throw new RefusedToStart(`the store in ${storeLocation(config)}: ${err.message}`, { cause: err });
    // Too few keepers answered: never taken for an empty anchor. They may come back: exit 75, retried.
    if (err instanceof RollbackAnchorError && err.code === 'anchor_unavailable') throw new RefusedToStart(`the rollback anchor: ${err.message}`, { cause: err, temporary: true });
    if (err instanceof RollbackAnchorError) throw new RefusedToStart(`the rollback anchor: ${err.message}`, { cause: err });
    throw err;
  });
  if (keyExisted && store.empty) {
    await store.close();
    // Never a new identity on an emptied store: the operator says so by removing the key too.
    throw new RefusedToStart([`the store in ${storeLocation(config)} is empty, but this node's storage key ${keyFile} exists: the store's files were deleted or the directory emptied, and a node started on it would come up as a new node with a new identity. Restore the store; to make this a new node on purpose, remove the storage key file (and the rollback anchor) as well (docs/storage.md "Damage")`].join(''));
  }
  if (backend instanceof RemoteKvClient) {
    log.info({ store: storeLocation(config) }, 'store kept by a host store');
    // A node whose store is gone cannot sign or keep a record: it stops rather than run on without one.
    backend.onLost((err) => {
      // Exits 75 (EX_TEMPFAIL), not 0: the supervisor starts it again, and it reconnects at start.
      log.error({ code: err.code, reason: err.message }, 'the link to the host store is lost: stopping to be restarted');
      fail('the link to the host store is lost');
    });
    if (config.storageKeySealer === 'file') log.warn({ storageKeyFile: config.storageKeyFile }, 'a remote store with a storage key file: the key file must outlive the node as the store does (an enclave node seals its key: docs/tee.md)');
  }
  if (store.adopted) log.info('the store had no authenticated head yet: one was written over its present records');
  if (store.unvouched) {
    log.warn({ why: store.unvouched, deleted: store.droppedUnanchored, override: config.storeAcceptUnvouched, development: config.development },
      'the rollback anchor does not vouch for this store: its OT setups and the material made ahead were deleted, since it could be an older copy (docs/storage.md "Rollback anchor")');
  }
  if (!anchor) log.warn('no rollback anchor (NODE_ROLLBACK_ANCHOR_FILE or NODE_ROLLBACK_ANCHOR_KEEPERS): a restore of the whole data directory from an older copy would not be noticed (docs/storage.md); no presignatures are kept');
  const { identity, created } = await NodeIdentity.loadOrCreate(store);
  const nodeLog = log.child({ nodeId: identity.nodeId });
  nodeLog.info({ created, kind: config.kind }, created ? 'identity created' : 'identity loaded');

  let credentials: grpc.ChannelCredentials;
  if (config.tlsCa && config.tlsCert && config.tlsKey) {
    credentials = grpc.credentials.createSsl(readFileSync(config.tlsCa), readFileSync(config.tlsKey), readFileSync(config.tlsCert));
  } else {
    credentials = grpc.credentials.createInsecure();
    nodeLog.warn({ coordinator: config.coordinator }, 'plaintext gRPC to a loopback coordinator: development only');
  }
  // One link per coordinator, named by its address: the origin the session host keys its sessions by.
  const links = new Map(config.coordinators.map((address) => [address, new CoordinatorLink({
    address, credentials, identity, kind: KIND_VALUES[config.kind], owner: config.owner,
    software: 'threshold-custody-node/0.1.0', reconnectMinMs: config.reconnectMinMs, reconnectMaxMs: config.reconnectMaxMs, log: nodeLog.child({ coordinator: address }),
  })] as const));
  const vault = new VaultShareStore(store);
  // ECDSA presignatures made ahead (docs/protocols/pools.md): kept only over an anchored store; expired
  // entries and those of an epoch the key moved on from are swept at start and every quarter hour.
  // FROST nonce pairs precommitted ahead are kept and swept alike.
  const presignatures = new PresignatureStore(store, { primitives: nativePrimitives });
  const frostNonces = new FrostNonceStore(store);
  const ledger = new IntentLedger(store);
  const registry = createMetricsRegistry();
  // What protects nothing any more goes, once now and every quarter hour (docs/storage.md "Pruning"):
  // intent records and session claims long past, pool entries and used marks past their expiry or
  // epoch, shares dealt away in committed reshares past their retention window (epoch.ts).
  const pruner = new StorePruner({ vault, ledger, presignatures, frostNonces, log: nodeLog, registry });
  pruner.start();
  if (config.teeAllowDevRoot) nodeLog.warn('NODE_TEE_ALLOW_DEV_ROOT: TEE attestations under a DEV-ONLY root are accepted; never in production');
  const trust = new TrustRegistry(store, {
    operatorKeys: config.operatorKeys, fileKeys: loadApiKeysFile(config.apiKeysFile), verifyTee: loadTeeVerifier(config.teeRootsFile, config.teeAllowDevRoot),
  });
  const authorizer = new IntentAuthorizer(trust, Date.now, { chainHead: (vaultId) => ledger.chainHead(vaultId) });
  // Read at each scrape; `host` is assigned before the first one can come.
  const metrics = new NodeSessionMetrics(registry, { running: (): number => host.running, attached: () => [...links].map(([address, l]) => [address, l.attached] as const) });
  // One host, one set of protocol dependencies: the intent ledger, the session claims and the OT pair
  // locks are the node's whatever coordinator opens a session.
  const workerCount = config.protocolWorkers ?? defaultWorkerCount();
  const workers = workerCount > 0 ? new ProtocolWorkers(workerCount, (why) => nodeLog.error({ why }, 'a protocol worker was lost; its session fails')) : undefined;
  nodeLog.info({ protocolWorkers: workerCount }, 'protocol workers');
  const host = new SessionHost(identity, (m, origin) => void links.get(origin)?.send(m), nodeProtocols({ vault, authorizer, trust, ledger, rosters: new RosterRegistry(store, config.operatorKeys), presignatures, frostNonces, identity, retiredShareRetentionMs: config.retiredShareRetentionHours * 3600_000, exportRecords: new ExportRecords(store), exportGovernance: policyExportGovernance(trust, defaultExportGovernance(config.exportDelaySeconds)), ...(workers ? { workers } : {}) }), nodeLog, Date.now, metrics);
  for (const [address, link] of links) {
    link.on('session', (b) => {
      if (b.case === 'open') host.onOpen(b.value, address);
      else if (b.case === 'relay' && b.value.envelope) host.onRelay(b.value.envelope, address);
      else if (b.case === 'cancel') host.onCancel(b.value.sessionId, b.value.reason, address);
    });
    // Public data only, on the link that asked (inventory-answer.ts).
    link.on('inventory', (req) => {
      void answerInventory(vault, req).then((page) => link.send({ body: { case: 'inventory', value: page } }), (err: unknown) => {
        nodeLog.warn({ err: (err as Error).message }, 'inventory request failed');
        link.send({ body: { case: 'inventory', value: { requestId: req.requestId, errorCode: 'internal', errorMessage: 'the node could not list its keys' } } });
      });
    });
    // Only that coordinator's sessions end: another shard's run on.
    link.on('detached', () => host.abortFrom(address, 'detached from the coordinator'));
    link.start();
  }
  // Ready while attached to every coordinator: off one shard, the node takes part in none of that
  // shard's sessions, and a vault there whose committee holds this node may not reach its threshold.
  const metricsServer = config.metricsListen ? await serveMetrics(registry, { listen: config.metricsListen, ready: () => [...links.values()].every((l) => l.attached) }) : undefined;
  if (metricsServer) nodeLog.info({ listen: config.metricsListen, port: metricsServer.port }, 'metrics listening');
  return {
    log: nodeLog,
    async stop() {
      await metricsServer?.close();
      host.abortAll('stopping');
      for (const link of links.values()) link.stop();
      await workers?.close();
      await pruner.stop();
      await store.close();
    },
  };
}, () => settingsUsage('usage: npm run node (or node node/main.js; docs/self-node.md)\nA signer node: holds its key shares sealed and signs what the customer authorized.', NodeConfigSchema, 'NODE_CONFIG_FILE'));
