// Coordinator configuration: read once at boot from the environment (and COORDINATOR_CONFIG_FILE),
// validated, frozen.
import { Type, type Static } from '@sinclair/typebox';
import { readFileSync } from 'node:fs';
import { ConfigError, isLoopbackHost, loadConfig, splitHostPort } from '../common/config.ts';
import { decodeRoster, RosterError, type SignedRoster } from '../core/trust/roster.ts';

export const CoordinatorConfigSchema = Type.Object({
  listen: Type.String({ env: 'COORDINATOR_LISTEN', default: '127.0.0.1:7400', pattern: '^(\\[[^\\]]+\\]|[^:]+):\\d{1,5}$', description: 'host:port the gRPC server binds' }),
  dataDir: Type.String({ env: 'COORDINATOR_DATA_DIR', default: './data/coordinator', minLength: 1 }),
  coordinatorId: Type.String({ env: 'COORDINATOR_ID', default: 'coordinator-local', minLength: 1, maxLength: 64 }),
  heartbeatIntervalMs: Type.Integer({ env: 'COORDINATOR_HEARTBEAT_MS', default: 2000, minimum: 100, maximum: 60000 }),
  dkgTimeoutMs: Type.Integer({ env: 'COORDINATOR_DKG_TIMEOUT_MS', default: 60000, minimum: 500, maximum: 600000 }),
  signTimeoutMs: Type.Integer({ env: 'COORDINATOR_SIGN_TIMEOUT_MS', default: 20000, minimum: 500, maximum: 600000 }),
  reshareTimeoutMs: Type.Integer({ env: 'COORDINATOR_RESHARE_TIMEOUT_MS', default: 60000, minimum: 500, maximum: 600000 }),
  roundTimeoutMs: Type.Integer({ env: 'COORDINATOR_ROUND_TIMEOUT_MS', default: 5000, minimum: 200, maximum: 600000, description: 'a signing or presigning session in which no node sends anything for this long ends, naming the nodes that are behind, and the signing goes on with another subset (docs/sessions.md "Signing subsets")' }),
  presignPoolTarget: Type.Integer({ env: 'COORDINATOR_PRESIGN_POOL_TARGET', default: 2, minimum: 0, maximum: 16, description: 'ECDSA presignatures kept ready per vault and derivation path in use, made when the vault is idle (docs/protocols/pools.md); 0: none' }),
  noncePoolTarget: Type.Integer({ env: 'COORDINATOR_FROST_NONCE_POOL_TARGET', default: 0, minimum: 0, maximum: 16, description: 'precommitted FROST nonce rows kept ready per vault, suite and derivation path in use, made when the vault is idle (docs/protocols/pools.md "FROST"); 0: none, every Taproot signing runs two rounds' }),
  attachWaitMs: Type.Integer({ env: 'COORDINATOR_ATTACH_WAIT_MS', default: 5000, minimum: 0, maximum: 60000, description: 'how long a signing waits for committee members that are redialing' }),
  rebuildWindowMs: Type.Integer({ env: 'COORDINATOR_REBUILD_WINDOW_MS', default: 120000, minimum: 0, maximum: 3600000, description: 'for this long after start, each node that attaches brings this coordinator\'s vault records forward from the nodes (docs/operations.md "Rebuilding a coordinator\'s records"); 0: only on request' }),
  rebuildAdoptAll: Type.Boolean({ env: 'COORDINATOR_REBUILD_ADOPT_ALL', default: false, description: 'in that window, rebuild a record for every key the nodes hold, not only bring forward the ones this coordinator has: for the only coordinator of a deployment (with shards it would take the other shards\' vaults)' }),
  rosterFile: Type.Optional(Type.String({ env: 'COORDINATOR_ROSTER_FILE', minLength: 1, description: 'the operator-signed service-node roster (hex, `npm run admin -- roster sign`); nodes join key generations and reshares only with it' })),
  tlsCert: Type.Optional(Type.String({ env: 'COORDINATOR_TLS_CERT', description: 'PEM server certificate' })),
  tlsKey: Type.Optional(Type.String({ env: 'COORDINATOR_TLS_KEY', description: 'PEM server key' })),
  tlsClientCa: Type.Optional(Type.String({ env: 'COORDINATOR_TLS_CLIENT_CA', description: 'PEM CA that signs node certificates (mutual TLS)' })),
  teeRootsFile: Type.Optional(Type.String({ env: 'COORDINATOR_TEE_ROOTS_FILE', minLength: 1, description: 'PEM roots a TEE member\'s attestation must chain to; default the AWS Nitro Enclaves root' })),
  teeAllowDevRoot: Type.Boolean({ env: 'COORDINATOR_TEE_ALLOW_DEV_ROOT', default: false, description: 'accept a DEV-ONLY attestation root (local clusters and tests only; docs/tee.md)' }),
  metricsListen: Type.Optional(Type.String({ env: 'COORDINATOR_METRICS_LISTEN', pattern: '^(\\[[^\\]]+\\]|[^:]+):\\d{1,5}$', description: 'host:port serving GET /metrics, /healthz and /readyz (plain HTTP: loopback or a private interface; docs/operations.md "Metrics and health"); unset: no metrics port' })),
  logLevel: Type.Union([Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')], { env: 'COORDINATOR_LOG_LEVEL', default: 'info' }),
});

/** The roster as the coordinator carries it: the signed bytes unchanged, and what they list. */
export interface LoadedRoster {
  bytes: Uint8Array;
  roster: SignedRoster;
}

export type CoordinatorConfig = Readonly<Static<typeof CoordinatorConfigSchema> & { roster?: LoadedRoster | undefined }>;

/** Reads the roster file once; the nodes verify its signature, the coordinator only needs its list. */
function readRoster(path: string): LoadedRoster {
  let hex: string;
  try {
    hex = readFileSync(path, 'utf8').trim().toLowerCase();
  } catch (err) {
    throw new ConfigError([`COORDINATOR_ROSTER_FILE (rosterFile): cannot read ${path}: ${(err as Error).message}`]);
  }
  try {
    if (!/^(?:[0-9a-f]{2})+$/.test(hex)) throw new RosterError('the file must hold the signed roster in hex');
    const bytes = new Uint8Array(Buffer.from(hex, 'hex'));
    return { bytes, roster: decodeRoster(bytes) };
  } catch (err) {
    if (err instanceof RosterError) throw new ConfigError([`COORDINATOR_ROSTER_FILE (rosterFile): ${path}: ${err.message}`]);
    throw err;
  }
}

export function loadCoordinatorConfig(env?: Record<string, string | undefined>): CoordinatorConfig {
  const config = loadConfig(CoordinatorConfigSchema, { env, fileVar: 'COORDINATOR_CONFIG_FILE' });
  const tls = [config.tlsCert, config.tlsKey, config.tlsClientCa].filter(Boolean).length;
  if (tls !== 0 && tls !== 3) throw new ConfigError(['COORDINATOR_TLS_CERT, COORDINATOR_TLS_KEY and COORDINATOR_TLS_CLIENT_CA go together (mutual TLS)']);
  if (tls === 0 && !isLoopbackHost(splitHostPort(config.listen).host)) {
    throw new ConfigError([`COORDINATOR_LISTEN (listen): plaintext is allowed on loopback only; got ${config.listen} without TLS`]);
  }
  return Object.freeze({ ...config, ...(config.rosterFile ? { roster: readRoster(config.rosterFile) } : {}) });
}
