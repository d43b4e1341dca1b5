// Signer node configuration: read once at boot from the environment (and NODE_CONFIG_FILE),
// validated, frozen.
import { Type, type Static } from '@sinclair/typebox';
import { join } from 'node:path';
import { ConfigError, isLoopbackHost, loadConfig, splitHostPort } from '../common/config.ts';
import { isValidEd25519PublicKeyHex } from '../common/ed25519.ts';
import { majority, quorumProblem } from './storage/keeper-rollback-anchor.ts';

export const NodeConfigSchema = Type.Object({
  coordinator: Type.String({ env: 'NODE_COORDINATOR', default: '127.0.0.1:7400', pattern: '^(\\[[^\\],]+\\]|[^:,]+):\\d{1,5}(,(\\[[^\\],]+\\]|[^:,]+):\\d{1,5})*$', description: 'host:port of the coordinator, or a comma-separated list of every coordinator shard\'s host:port: the node attaches to each (docs/operations.md "Coordinator shards")' }),
  dataDir: Type.String({ env: 'NODE_DATA_DIR', default: './data/node', minLength: 1 }),
  storageKeyFile: Type.Optional(Type.String({ env: 'NODE_STORAGE_KEY_FILE', minLength: 1, description: 'defaults to <dataDir>/storage.key' })),
  storeAdopt: Type.Boolean({ env: 'NODE_STORE_ADOPT', default: false, description: 'open, once, a store written before it had an authenticated head (docs/storage.md)' }),
  storeRemote: Type.Optional(Type.String({ env: 'NODE_STORE_REMOTE', pattern: '^(\\[[^\\]]+\\]|[^:]+):\\d{1,5}$', description: 'host:port of a host store (npm run enclave-host-store) that keeps this node\'s store instead of <dataDir>/db; an enclave node reaches its parent this way (docs/storage.md)' })),
  rollbackAnchorFile: Type.Optional(Type.String({ env: 'NODE_ROLLBACK_ANCHOR_FILE', minLength: 1, description: 'file, on storage the host cannot roll back, that keeps the store version (docs/storage.md)' })),
  rollbackAnchorKeepers: Type.Optional(Type.String({ env: 'NODE_ROLLBACK_ANCHOR_KEEPERS', pattern: '^https?://[^/?#,\\s]+(,https?://[^/?#,\\s]+)*$', description: 'comma-separated origins of the anchor keepers (npm run anchor-keeper) that keep the store version, run by parties other than this node\'s host; instead of NODE_ROLLBACK_ANCHOR_FILE, and what an enclave node uses (docs/storage.md "Anchor keepers")' })),
  rollbackAnchorKeeperKeys: Type.Optional(Type.String({ env: 'NODE_ROLLBACK_ANCHOR_KEEPER_KEYS', pattern: '^[0-9a-fA-F]{64}(,[0-9a-fA-F]{64})*$', description: 'the keepers\' Ed25519 public keys (hex, from npm run anchor-keeper -- --public-key), in the order of NODE_ROLLBACK_ANCHOR_KEEPERS' })),
  rollbackAnchorReadQuorum: Type.Optional(Type.Integer({ env: 'NODE_ROLLBACK_ANCHOR_READ_QUORUM', minimum: 1, maximum: 64, description: 'valid keeper answers an open needs; default a majority of the keepers; with the write quorum it must exceed the number of keepers' })),
  rollbackAnchorWriteQuorum: Type.Optional(Type.Integer({ env: 'NODE_ROLLBACK_ANCHOR_WRITE_QUORUM', minimum: 1, maximum: 64, description: 'keeper acknowledgements a store write waits for; default a majority of the keepers' })),
  rollbackAnchorKeeperTimeoutMs: Type.Integer({ env: 'NODE_ROLLBACK_ANCHOR_KEEPER_TIMEOUT_MS', default: 5000, minimum: 100, maximum: 60000, description: 'how long one request to a keeper may take, connection to last byte' }),
  development: Type.Boolean({ env: 'NODE_DEVELOPMENT', default: false, description: 'development mode: runs without a rollback anchor (NODE_ROLLBACK_ANCHOR_FILE or NODE_ROLLBACK_ANCHOR_KEEPERS), and every start over a written store then deletes the OT setups and the material made ahead (never in production)' }),
  storeAcceptUnvouched: Type.Boolean({ env: 'NODE_STORE_ACCEPT_UNVOUCHED', default: false, description: 'open a store the rollback anchor does not vouch for (missing, empty or behind), deleting its OT setups, presignatures and precommitted nonces; logged (docs/storage.md "Rollback anchor")' }),
  createStorageKey: Type.Boolean({ env: 'NODE_CREATE_STORAGE_KEY', default: true, description: 'create the key file at first start when absent' }),
  environment: Type.Union([Type.Literal('sandbox'), Type.Literal('production')], { env: 'NODE_ENVIRONMENT', default: 'sandbox', description: 'production refuses development stand-ins (the dev-insecure sealer) and, for a tee node, any storage key not sealed with KMS' }),
  storageKeySealer: Type.Union([Type.Literal('file'), Type.Literal('kms'), Type.Literal('dev-insecure')], { env: 'NODE_STORAGE_KEY_SEALER', default: 'file', description: 'file: the key file (NODE_STORAGE_KEY_FILE); kms: sealed to the enclave build with AWS KMS; dev-insecure: a development stand-in for kms (docs/tee.md "Sealing the storage key")' }),
  sealedStorageKeyFile: Type.Optional(Type.String({ env: 'NODE_SEALED_STORAGE_KEY_FILE', minLength: 1, description: 'kms and dev-insecure: the sealed storage key; defaults to <dataDir>/storage.key.sealed' })),
  kmsRegion: Type.Optional(Type.String({ env: 'NODE_KMS_REGION', pattern: '^[a-z]{2}(-[a-z]+)+-\\d{1,2}$', description: 'AWS region of the KMS key, e.g. eu-west-1' })),
  kmsEndpoint: Type.Optional(Type.String({ env: 'NODE_KMS_ENDPOINT', pattern: '^https?://[^/?#]+$', description: 'origin of the KMS API; default https://kms.<region>.amazonaws.com' })),
  kmsKeyId: Type.Optional(Type.String({ env: 'NODE_KMS_KEY_ID', minLength: 1, maxLength: 2048, description: 'the KMS key: key id, key ARN, alias/<name> or alias ARN' })),
  kmsAccessKeyId: Type.Optional(Type.String({ env: 'NODE_KMS_ACCESS_KEY_ID', pattern: '^[A-Z0-9]{16,128}$' })),
  kmsSecretAccessKey: Type.Optional(Type.String({ env: 'NODE_KMS_SECRET_ACCESS_KEY', description: 'never printed' })),
  kmsSessionToken: Type.Optional(Type.String({ env: 'NODE_KMS_SESSION_TOKEN', description: 'with temporary credentials; never printed' })),
  teeAttestCommand: Type.Optional(Type.String({ env: 'NODE_TEE_ATTEST_COMMAND', pattern: '^/', description: 'kms: absolute path of the command that prints the NSM attestation document for `--public-key <hex>` (docs/tee.md)' })),
  devSealerKeyFile: Type.Optional(Type.String({ env: 'NODE_DEV_SEALER_KEY_FILE', minLength: 1, description: 'dev-insecure: the wrapping secret; defaults to <dataDir>/dev-sealer.key' })),
  kind: Type.Union([Type.Literal('service'), Type.Literal('self'), Type.Literal('tee')], { env: 'NODE_KIND', default: 'service' }),
  owner: Type.String({ env: 'NODE_OWNER', default: '', maxLength: 128, description: 'organization that runs a self or tee node' }),
  retiredShareRetentionHours: Type.Integer({ env: 'NODE_RETIRED_SHARE_RETENTION_HOURS', default: 168, minimum: 0, maximum: 8760, description: 'how long a share this node dealt away in a committed reshare is kept sealed, unusable, before it is erased; erased at the next start after that (0: at the next start) (docs/sessions.md "Reshare, two phases")' }),
  exportDelaySeconds: Type.Integer({ env: 'NODE_EXPORT_DELAY_SECONDS', default: 86400, minimum: 0, maximum: 31_536_000, description: 'how long after this node first sees a customer-signed key export request it waits before sealing its share, while no policy names an export delay (docs/export.md)' }),
  reconnectMinMs: Type.Integer({ env: 'NODE_RECONNECT_MIN_MS', default: 200, minimum: 10, maximum: 60000 }),
  reconnectMaxMs: Type.Integer({ env: 'NODE_RECONNECT_MAX_MS', default: 5000, minimum: 10, maximum: 300000 }),
  tlsCa: Type.Optional(Type.String({ env: 'NODE_TLS_CA', description: 'PEM CA of the coordinator certificate' })),
  tlsCert: Type.Optional(Type.String({ env: 'NODE_TLS_CERT', description: 'PEM client certificate' })),
  tlsKey: Type.Optional(Type.String({ env: 'NODE_TLS_KEY', description: 'PEM client key' })),
  apiKeysFile: Type.Optional(Type.String({ env: 'NODE_API_KEYS_FILE', description: 'bootstrap API keys: {"<org>": {"<key id>": "<ed25519 public key hex>"}}' })),
  operatorKeys: Type.String({ env: 'NODE_OPERATOR_KEYS', default: '', pattern: '^([0-9a-fA-F]{64}(,[0-9a-fA-F]{64})*)?$', description: 'comma-separated Ed25519 public keys (hex) whose bootstrap entries root organizations (docs/trust.md)' }),
  teeRootsFile: Type.Optional(Type.String({ env: 'NODE_TEE_ROOTS_FILE', minLength: 1, description: 'PEM roots TEE attestations must chain to; default the AWS Nitro Enclaves root shipped in tee/attestation/roots/' })),
  teeAllowDevRoot: Type.Boolean({ env: 'NODE_TEE_ALLOW_DEV_ROOT', default: false, description: 'accept a DEV-ONLY attestation root (local clusters and tests only; docs/tee.md)' }),
  protocolWorkers: Type.Optional(Type.Integer({ env: 'NODE_PROTOCOL_WORKERS', minimum: 0, maximum: 64, description: 'worker threads for the long protocol steps (DKG, ECDSA OT setup), so signing rounds and heartbeats never wait behind them; 0 runs them on the main thread; default one per core beyond the first, 1 to 4 (docs/sessions.md "Worker threads")' })),
  metricsListen: Type.Optional(Type.String({ env: 'NODE_METRICS_LISTEN', pattern: '^(\\[[^\\]]+\\]|[^:]+):\\d{1,5}$', description: 'host:port serving GET /metrics, /healthz and /readyz (plain HTTP: loopback or a private interface; docs/operations.md "Metrics and health"); unset: no metrics port' })),
  logLevel: Type.Union([Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')], { env: 'NODE_LOG_LEVEL', default: 'info' }),
});

/** One anchor keeper as pinned: its origin and its Ed25519 public key (lowercase hex). */
export interface AnchorKeeperSetting {
  readonly url: string;
  readonly publicKey: string;
}

export type NodeConfig = Readonly<Omit<Static<typeof NodeConfigSchema>, 'operatorKeys'> & {
  storageKeyFile: string; sealedStorageKeyFile: string; devSealerKeyFile: string; operatorKeys: readonly string[];
  /** The keepers of NODE_ROLLBACK_ANCHOR_KEEPERS with their pinned keys, in order; empty without keepers. */
  anchorKeepers: readonly AnchorKeeperSetting[];
  /** Every coordinator the node attaches to, from NODE_COORDINATOR in its order; `coordinator` keeps the setting as given. */
  coordinators: readonly string[];
}>;

/**
 * A node process needs its rollback anchor, outside development mode (node/main.ts checks this at start):
 * a file, or keepers. A tee node in production does not take a file: any file it reaches is its parent's,
 * rolled back with the store (docs/tee.md "A rollback anchor outside the parent").
 */
export function anchorProblem(c: Pick<NodeConfig, 'rollbackAnchorFile' | 'rollbackAnchorKeepers' | 'development' | 'storeAcceptUnvouched' | 'kind' | 'environment'>): string | undefined {
  if (c.rollbackAnchorFile && c.kind === 'tee' && c.environment === 'production' && !c.storeAcceptUnvouched) {
    return 'NODE_ROLLBACK_ANCHOR_FILE (rollbackAnchorFile): a tee node in production keeps no anchor in a file, which its parent holds and rolls back with the store; use anchor keepers run by another party, NODE_ROLLBACK_ANCHOR_KEEPERS and NODE_ROLLBACK_ANCHOR_KEEPER_KEYS (docs/tee.md "A rollback anchor outside the parent")';
  }
  if (c.rollbackAnchorFile || c.rollbackAnchorKeepers || c.development || c.storeAcceptUnvouched) return undefined;
  return 'NODE_ROLLBACK_ANCHOR_FILE (rollbackAnchorFile) or NODE_ROLLBACK_ANCHOR_KEEPERS (rollbackAnchorKeepers): one is required, kept where the host cannot roll it back (docs/storage.md "Rollback anchor"); NODE_DEVELOPMENT=true runs without one on a development machine';
}

/** The keepers and quorums as configured, checked; `problems` gets what is wrong. */
function anchorKeepersOf(c: Static<typeof NodeConfigSchema>, problems: string[]): AnchorKeeperSetting[] {
  const urls = (c.rollbackAnchorKeepers ? c.rollbackAnchorKeepers.split(',') : []).map((u) => {
    try {
      return new URL(u).origin;
    } catch {
      problems.push(`NODE_ROLLBACK_ANCHOR_KEEPERS (rollbackAnchorKeepers): ${u} is not a URL`);
      return u;
    }
  });
  const keys = c.rollbackAnchorKeeperKeys ? c.rollbackAnchorKeeperKeys.toLowerCase().split(',') : [];
  if (urls.length === 0) {
    if (keys.length || c.rollbackAnchorReadQuorum !== undefined || c.rollbackAnchorWriteQuorum !== undefined) problems.push('NODE_ROLLBACK_ANCHOR_KEEPER_KEYS and the quorums go with NODE_ROLLBACK_ANCHOR_KEEPERS, which is not set');
    return [];
  }
  if (c.rollbackAnchorFile) problems.push('NODE_ROLLBACK_ANCHOR_FILE and NODE_ROLLBACK_ANCHOR_KEEPERS: one anchor, not both');
  if (keys.length !== urls.length) problems.push(`NODE_ROLLBACK_ANCHOR_KEEPER_KEYS (rollbackAnchorKeeperKeys): one pinned key per keeper, in the order of NODE_ROLLBACK_ANCHOR_KEEPERS; got ${keys.length} keys for ${urls.length} keepers`);
  if (new Set(urls).size !== urls.length) problems.push('NODE_ROLLBACK_ANCHOR_KEEPERS (rollbackAnchorKeepers): lists a keeper twice');
  if (new Set(keys).size !== keys.length) problems.push('NODE_ROLLBACK_ANCHOR_KEEPER_KEYS (rollbackAnchorKeeperKeys): pins one key for two keepers (one party is one keeper)');
  for (const k of keys) if (!isValidEd25519PublicKeyHex(k)) problems.push(`NODE_ROLLBACK_ANCHOR_KEEPER_KEYS (rollbackAnchorKeeperKeys): ${k} is not an Ed25519 public key`);
  for (const u of urls) {
    // Answers are signed and bound to the node's challenge, so the link is not what protects them; TLS
    // still keeps the link's traffic (which node writes, how often) to the two ends, as for KMS.
    if (u.startsWith('http:') && !(c.development && URL.canParse(u) && isLoopbackHost(new URL(u).hostname))) {
      problems.push(`NODE_ROLLBACK_ANCHOR_KEEPERS (rollbackAnchorKeepers): plain http is refused (${u}); use https (only a development machine, NODE_DEVELOPMENT=true, may reach a keeper on loopback over http)`);
    }
  }
  const q = quorumProblem(urls.length, c.rollbackAnchorReadQuorum ?? majority(urls.length), c.rollbackAnchorWriteQuorum ?? majority(urls.length));
  if (q) problems.push(`NODE_ROLLBACK_ANCHOR_READ_QUORUM, NODE_ROLLBACK_ANCHOR_WRITE_QUORUM: ${q}`);
  return urls.map((url, i) => Object.freeze({ url, publicKey: keys[i] ?? '' }));
}

export function loadNodeConfig(env?: Record<string, string | undefined>): NodeConfig {
  const c = loadConfig(NodeConfigSchema, { env, fileVar: 'NODE_CONFIG_FILE' });
  const problems: string[] = [];
  if (c.reconnectMinMs > c.reconnectMaxMs) problems.push('NODE_RECONNECT_MIN_MS must not exceed NODE_RECONNECT_MAX_MS');
  if (c.development && c.environment === 'production') problems.push('NODE_DEVELOPMENT (development) is refused with NODE_ENVIRONMENT=production');
  if (c.kind !== 'service' && !c.owner) problems.push(`NODE_OWNER (owner): a ${c.kind} node names the organization that runs it`);
  const tls = [c.tlsCa, c.tlsCert, c.tlsKey].filter(Boolean).length;
  if (tls !== 0 && tls !== 3) problems.push('NODE_TLS_CA, NODE_TLS_CERT and NODE_TLS_KEY go together (mutual TLS)');
  const coordinators = c.coordinator.split(',');
  if (new Set(coordinators).size !== coordinators.length) problems.push(`NODE_COORDINATOR (coordinator): lists a coordinator twice: ${c.coordinator}`);
  for (const address of coordinators) {
    if (tls === 0 && !isLoopbackHost(splitHostPort(address).host)) problems.push(`NODE_COORDINATOR (coordinator): plaintext is allowed on loopback only; got ${address} without TLS`);
  }
  // Settings are named, never their values: the KMS credentials are among them.
  if (c.storageKeySealer === 'kms') {
    const missing = ([['NODE_KMS_REGION', c.kmsRegion], ['NODE_KMS_KEY_ID', c.kmsKeyId], ['NODE_KMS_ACCESS_KEY_ID', c.kmsAccessKeyId], ['NODE_KMS_SECRET_ACCESS_KEY', c.kmsSecretAccessKey], ['NODE_TEE_ATTEST_COMMAND', c.teeAttestCommand]] as const).filter(([, v]) => !v).map(([k]) => k);
    if (missing.length) problems.push(`NODE_STORAGE_KEY_SEALER=kms needs ${missing.join(', ')}`);
    // The storage key crosses this link sealed, but its request and answer say what the enclave asks for:
    // TLS always, but for a development machine's local KMS double.
    if (c.kmsEndpoint?.startsWith('http:') && !(c.development && isLoopbackHost(new URL(c.kmsEndpoint).hostname))) {
      problems.push('NODE_KMS_ENDPOINT (kmsEndpoint): plain http is refused; use https (only a development machine, NODE_DEVELOPMENT=true, may reach a local KMS double on loopback over http)');
    }
  }
  if (c.environment === 'production' && c.storageKeySealer === 'dev-insecure') problems.push('NODE_STORAGE_KEY_SEALER (storageKeySealer): dev-insecure is refused with NODE_ENVIRONMENT=production (it seals to a file the host can read)');
  if (c.environment === 'production' && c.teeAllowDevRoot) problems.push('NODE_TEE_ALLOW_DEV_ROOT (teeAllowDevRoot): must be false with NODE_ENVIRONMENT=production (a DEV-ONLY attestation root proves nothing)');
  if (c.environment === 'production' && c.kind === 'tee' && c.storageKeySealer !== 'kms') problems.push(`NODE_STORAGE_KEY_SEALER (storageKeySealer): a tee node in production seals its storage key with kms; got ${c.storageKeySealer}`);
  const anchorKeepers = anchorKeepersOf(c, problems);
  if (problems.length) throw new ConfigError(problems);
  const operatorKeys = Object.freeze(c.operatorKeys ? c.operatorKeys.toLowerCase().split(',') : []);
  return Object.freeze({
    ...c, coordinators: Object.freeze(coordinators), anchorKeepers: Object.freeze(anchorKeepers), storageKeyFile: c.storageKeyFile ?? join(c.dataDir, 'storage.key'), operatorKeys,
    sealedStorageKeyFile: c.sealedStorageKeyFile ?? join(c.dataDir, 'storage.key.sealed'), devSealerKeyFile: c.devSealerKeyFile ?? join(c.dataDir, 'dev-sealer.key'),
  });
}
