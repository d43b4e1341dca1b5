// API configuration: read once at boot from the environment (and API_CONFIG_FILE), validated, frozen.
import { Type, type Static } from '@sinclair/typebox';
import ipaddr from 'ipaddr.js';
import { ConfigError, isLoopbackHost, loadConfig, splitHostPort } from '../common/config.ts';
import { chainInfo } from './vaults/wallet-address.ts';
import { DestinationPolicy } from './webhooks/destination-policy.ts';
import { DEFAULT_SHARD, type ShardAddress } from './coordinator/coordinator-shards.ts';

export const ApiConfigSchema = Type.Object({
  host: Type.String({ env: 'API_HOST', default: '127.0.0.1', minLength: 1 }),
  port: Type.Integer({ env: 'API_PORT', default: 8080, minimum: 0, maximum: 65535 }),
  dataDir: Type.String({ env: 'API_DATA_DIR', default: './data/api', minLength: 1 }),
  databaseUrl: Type.Optional(Type.String({ env: 'API_DATABASE_URL', secret: true, pattern: '^postgres(ql)?://', description: 'postgres://user@host:port/database: keep the records in PostgreSQL instead of LevelDB under API_DATA_DIR (docs/api-storage.md)' })),
  databasePasswordFile: Type.Optional(Type.String({ env: 'API_DATABASE_PASSWORD_FILE', minLength: 1, description: 'file holding the PostgreSQL password (a mounted secret), read at each new connection; keeps it out of API_DATABASE_URL' })),
  coordinator: Type.Optional(Type.String({ env: 'API_COORDINATOR', pattern: '^(\\[[^\\]]+\\]|[^:]+):\\d{1,5}$', description: 'host:port of the coordinator, when there is one (the shard named default); API_COORDINATORS for several' })),
  coordinators: Type.Optional(Type.String({
    env: 'API_COORDINATORS', pattern: '^[a-z0-9][a-z0-9-]{0,31}=(\\[[^\\],]+\\]|[^:,=]+):\\d{1,5}(,[a-z0-9][a-z0-9-]{0,31}=(\\[[^\\],]+\\]|[^:,=]+):\\d{1,5})*$',
    description: 'comma-separated <shard>=<host:port>: the coordinator shards vaults are spread over by vault id; a shard\'s name is kept in its vaults\' records, so a shard holding vaults is never removed or renamed (docs/operations.md "Coordinator shards")',
  })),
  coordinatorTlsCa: Type.Optional(Type.String({ env: 'API_COORDINATOR_TLS_CA' })),
  coordinatorTlsCert: Type.Optional(Type.String({ env: 'API_COORDINATOR_TLS_CERT' })),
  coordinatorTlsKey: Type.Optional(Type.String({ env: 'API_COORDINATOR_TLS_KEY' })),
  environment: Type.Union([Type.Literal('sandbox'), Type.Literal('production')], { env: 'API_ENVIRONMENT', default: 'sandbox', description: 'sandbox serves test chains, production main chains' }),
  publicUrl: Type.Optional(Type.String({ env: 'API_PUBLIC_URL', pattern: '^https?://[^/]+$', description: 'origin clients address (for @target-uri); default http://<Host>' })),
  maxApiKeysPerOrg: Type.Integer({ env: 'API_MAX_API_KEYS', default: 10, minimum: 1, maximum: 1000 }),
  maxVaultsPerOrg: Type.Integer({ env: 'API_MAX_VAULTS', default: 100, minimum: 1, maximum: 1000000 }),
  jobLeaseMs: Type.Integer({ env: 'API_JOB_LEASE_MS', default: 15000, minimum: 3000, maximum: 300000, description: 'lease on a key or transaction job, renewed every third of it while it runs: how long the jobs of an instance that died wait before another instance takes them' }),
  jobsPerOrganization: Type.Integer({ env: 'API_JOBS_PER_ORGANIZATION', default: 8, minimum: 1, maximum: 1000, description: 'key generations, reshares and transaction signings of one organization running at once, over every instance' }),
  bodyLimitBytes: Type.Integer({ env: 'API_BODY_LIMIT_BYTES', default: 1_048_576, minimum: 1024, maximum: 10_485_760 }),
  emailProvider: Type.Union([Type.Literal('none'), Type.Literal('local-dns'), Type.Literal('ses')], { env: 'API_EMAIL_PROVIDER', default: 'none', description: 'sending-domain provider: none, local-dns (verifies published records through DNS) or ses (Amazon SES v2 domain identities)' }),
  sesRegion: Type.Optional(Type.String({ env: 'API_SES_REGION', pattern: '^[a-z]{2}(-[a-z]+)+-\\d{1,2}$', description: 'AWS region of the SES account, e.g. eu-west-1' })),
  sesEndpoint: Type.Optional(Type.String({ env: 'API_SES_ENDPOINT', pattern: '^https?://[^/?#]+$', description: 'origin of the SES v2 API; default https://email.<region>.amazonaws.com' })),
  sesAccessKeyId: Type.Optional(Type.String({ env: 'API_SES_ACCESS_KEY_ID', pattern: '^[A-Z0-9]{16,128}$' })),
  sesSecretAccessKey: Type.Optional(Type.String({ env: 'API_SES_SECRET_ACCESS_KEY', description: 'never printed' })),
  objectStore: Type.Union([Type.Literal('directory'), Type.Literal('s3')], { env: 'API_OBJECT_STORE', default: 'directory', description: 'upload store: directory (<data dir>/objects, uploads through the API) or s3 (presigned PUTs to a bucket)' }),
  s3Endpoint: Type.Optional(Type.String({ env: 'API_S3_ENDPOINT', pattern: '^https?://[^/?#]+$', description: 'origin of the S3 API, e.g. https://s3.eu-west-1.amazonaws.com' })),
  s3Bucket: Type.Optional(Type.String({ env: 'API_S3_BUCKET', pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' })),
  s3Region: Type.Optional(Type.String({ env: 'API_S3_REGION', pattern: '^[a-z0-9-]{2,32}$' })),
  s3AccessKeyId: Type.Optional(Type.String({ env: 'API_S3_ACCESS_KEY_ID', pattern: '^[A-Za-z0-9._-]{3,128}$' })),
  s3SecretAccessKey: Type.Optional(Type.String({ env: 'API_S3_SECRET_ACCESS_KEY', description: 'never printed' })),
  s3PathStyle: Type.Boolean({ env: 'API_S3_PATH_STYLE', default: true, description: 'path-style URLs (https://host/bucket/key) or virtual-hosted (https://bucket.host/key)' }),
  emailDnsServers: Type.Optional(Type.String({ env: 'API_EMAIL_DNS_SERVERS', pattern: '^[0-9a-fA-F:.\\[\\],]+$', description: 'comma-separated DNS servers for local-dns verification' })),
  operatorKeyFile: Type.Optional(Type.String({ env: 'API_OPERATOR_KEY_FILE', minLength: 1, description: 'hex Ed25519 secret key the operator command signs organization bootstraps with (docs/trust.md)' })),
  smtpUrl: Type.Optional(Type.String({ env: 'API_SMTP_URL', secret: true, pattern: '^smtps?://', description: 'smtp://[user:pass@]host:port or smtps://…: where Hosted Auth sign-in codes are sent (docs/platform/hosted-auth.md); unset: Hosted Auth authorizations are refused (503)' })),
  smtpFrom: Type.String({ env: 'API_SMTP_FROM', default: 'no-reply@platform.invalid', minLength: 3, maxLength: 254, pattern: '^[^\\s@<>]+@[^\\s@<>]+$', description: 'the From address of the emails the platform sends (the tenant theme names the sender)' }),
  memberAuthExchangeKeyFile: Type.Optional(Type.String({ env: 'API_MEMBER_AUTH_EXCHANGE_KEY_FILE', minLength: 1, description: 'file holding the 32-byte key (64 hex digits) that seals stored member-auth proof exchanges; a generated key kept in the store when absent (docs/platform/member-auth.md)' })),
  idempotencyWindowS: Type.Integer({ env: 'API_IDEMPOTENCY_WINDOW_S', default: 86_400, minimum: 60, maximum: 30 * 86_400, description: 'seconds an Idempotency-Key\'s record answers a repeated request; older records are pruned hourly (docs/operations.md "Idempotency")' }),
  memberAuthSweepIntervalS: Type.Integer({ env: 'API_MEMBER_AUTH_SWEEP_INTERVAL_S', default: 3600, minimum: 60, maximum: 86_400, description: 'seconds between two runs of the member-auth retention sweep (docs/platform/member-auth.md "Retention")' }),
  memberAuthSweepBatch: Type.Integer({ env: 'API_MEMBER_AUTH_SWEEP_BATCH', default: 500, minimum: 10, maximum: 10_000, description: 'records of each member-auth collection one sweep run deletes at most' }),
  hostedPageRatePerMinute: Type.Integer({ env: 'API_HOSTED_PAGE_RATE_PER_MINUTE', default: 30, minimum: 1, maximum: 10_000, description: 'form POSTs one client address (an IPv6 /64) may make per minute to the Hosted Auth and Account Center pages (docs/platform/hosted-auth.md "Limits")' }),
  trustProxy: Type.String({ env: 'API_TRUST_PROXY', default: '', pattern: '^[0-9A-Za-z:./, ]*$', description: 'the reverse proxies (an ingress, a load balancer) whose X-Forwarded-For names the client: comma-separated addresses, CIDR ranges or loopback, linklocal, uniquelocal; or the number of proxy hops in front of the API (1 to 16); empty: none, the peer is the client (docs/operations.md "Client addresses and proxies")' }),
  rateLimitWindowS: Type.Integer({ env: 'API_RATE_LIMIT_WINDOW_S', default: 60, minimum: 1, maximum: 3600, description: 'seconds of one rate-limit window; a window starts at the first request it counts' }),
  rateLimitPerAddress: Type.Integer({ env: 'API_RATE_LIMIT_PER_ADDRESS', default: 2400, minimum: 1, maximum: 10_000_000, description: 'requests one client address (an IPv6 /64) may make per window, counted before authentication, over every instance; more is 429 rate_limited' }),
  rateLimitPerKey: Type.Integer({ env: 'API_RATE_LIMIT_PER_KEY', default: 1200, minimum: 1, maximum: 10_000_000, description: 'requests one API key (a vault API signing key or a workspace bearer key) may make per window, over every instance; more is 429 rate_limited' }),
  publicBrandingRatePerMinute: Type.Integer({ env: 'API_PUBLIC_BRANDING_RATE_PER_MINUTE', default: 60, minimum: 1, maximum: 100_000, description: 'reads of the public branding bundle one client address may make per minute (docs/platform/branding.md)' }),
  operatorTokenFile: Type.Optional(Type.String({ env: 'API_OPERATOR_TOKEN_FILE', minLength: 1, description: 'file holding the operator API secret (at least 32 characters); the API serves /operator/v1 with it, the operator command sends it (docs/operations.md)' })),
  operatorApiUrl: Type.Optional(Type.String({ env: 'API_OPERATOR_API_URL', pattern: '^https?://[^/?#]+$', description: 'origin of the running API the operator command talks to (docs/operations.md); unset: the command opens the store itself' })),
  nodeCoordinatorAddress: Type.Optional(Type.String({ env: 'API_NODE_COORDINATOR_ADDRESS', pattern: '^(\\[[^\\],]+\\]|[^:,]+):\\d{1,5}(,(\\[[^\\],]+\\]|[^:,]+):\\d{1,5})*$', description: 'host:port customer nodes dial, or a comma-separated list with every coordinator shard\'s (GET /v1/node-config; a node attaches to each)' })),
  nodeOperatorKeys: Type.String({ env: 'API_NODE_OPERATOR_KEYS', default: '', pattern: '^([0-9a-fA-F]{64}(,[0-9a-fA-F]{64})*)?$', description: 'comma-separated operator Ed25519 public keys customer nodes set as NODE_OPERATOR_KEYS (GET /v1/node-config)' }),
  teeRootsFile: Type.Optional(Type.String({ env: 'API_TEE_ROOTS_FILE', minLength: 1, description: 'PEM roots a TEE enrolment\'s attestation must chain to; default the AWS Nitro Enclaves root' })),
  teeAllowDevRoot: Type.Boolean({ env: 'API_TEE_ALLOW_DEV_ROOT', default: false, description: 'accept DEV-ONLY attestation roots (local clusters and tests; refused in production)' }),
  chainBackends: Type.Optional(Type.String({
    env: 'API_CHAIN_BACKENDS', pattern: '^[a-z0-9-]+=https?://[^,\\s]+(,[a-z0-9-]+=https?://[^,\\s]+)*$',
    description: 'comma-separated <chain>=<url>: EVM JSON-RPC endpoints and Esplora-compatible Bitcoin backends',
  })),
  fundingRail: Type.Union([Type.Literal('none'), Type.Literal('sandbox')], { env: 'API_FUNDING_RAIL', default: 'none', description: 'the fiat payment rail of funding and off-ramp requests: none (their creation is 503) or sandbox (a double that moves no money; refused in production) (docs/platform/funding.md)' }),
  sandboxRailSettleMs: Type.Integer({ env: 'API_SANDBOX_RAIL_SETTLE_MS', default: 5000, minimum: 0, maximum: 86_400_000, description: 'how long the sandbox rail takes to settle, fail or return a transfer' }),
  fundingStablecoins: Type.Optional(Type.String({ env: 'API_FUNDING_STABLECOINS', pattern: '^[a-z0-9-]+=0x[0-9a-fA-F]{40}(,[a-z0-9-]+=0x[0-9a-fA-F]{40})*$', description: 'comma-separated <chain>=<contract>: the stablecoin (an ERC20PresetMinterPauser the issuer may mint) per chain; each chain needs a backend in API_CHAIN_BACKENDS' })),
  fundingIssuerKeyFile: Type.Optional(Type.String({ env: 'API_FUNDING_ISSUER_KEY_FILE', minLength: 1, description: 'file holding the stablecoin issuer\'s secp256k1 key (0x and 64 hex digits): the minter account, never a customer\'s key' })),
  fundingRedemptionAddresses: Type.Optional(Type.String({ env: 'API_FUNDING_REDEMPTION_ADDRESSES', pattern: '^[a-z0-9-]+=0x[0-9a-fA-F]{40}(,[a-z0-9-]+=0x[0-9a-fA-F]{40})*$', description: 'comma-separated <chain>=<address>: where holders send stablecoin to redeem it (GET /v1/off-ramp-requests/burn-address); default the issuer\'s address' })),
  escrowContracts: Type.Optional(Type.String({ env: 'API_ESCROW_CONTRACTS', pattern: '^[a-z0-9-]+=0x[0-9a-fA-F]{40}(,[a-z0-9-]+=0x[0-9a-fA-F]{40})*$', description: 'comma-separated <chain>=<contract>: the TokenEscrow contract per chain (docs/platform/escrows.md); each chain needs a backend in API_CHAIN_BACKENDS and a stablecoin in API_FUNDING_STABLECOINS' })),
  escrowFundingWindowSec: Type.Integer({ env: 'API_ESCROW_FUNDING_WINDOW_SEC', default: 86_400, minimum: 60, maximum: 2_592_000, description: 'how long an escrow waits for its deposit before it expires' }),
  tokenizationDeployerKeyFile: Type.Optional(Type.String({ env: 'API_TOKENIZATION_DEPLOYER_KEY_FILE', minLength: 1, description: 'file holding the tokenization deployer\'s secp256k1 key (0x and 64 hex digits): the service account that pays for token deployments and Safe executions on every EVM chain of API_CHAIN_BACKENDS; never a customer\'s key (docs/platform/tokenization.md)' })),
  tokenizationRelayerKeyFile: Type.Optional(Type.String({ env: 'API_TOKENIZATION_RELAYER_KEY_FILE', minLength: 1, description: 'file holding the gasless relayer\'s secp256k1 key (0x and 64 hex digits): the service account that sends holders\' signed ERC-2771 forward requests to the forwarder and pays their gas, on every chain tokenization runs on; another account than the deployer; unset: gasless relaying is off (docs/platform/tokenization.md "Gasless transfers")' })),
  tokenizationRelayCapWei: Type.String({ env: 'API_TOKENIZATION_RELAY_CAP_WEI', default: '100000000000000000', pattern: '^(0|[1-9][0-9]{0,30})$', description: 'what the relayer may spend on gas for one tenant on one chain within API_TOKENIZATION_RELAY_WINDOW_SEC, in wei of the chain\'s native coin (decimal digits); default 0.1 of the coin' }),
  tokenizationRelayWindowSec: Type.Integer({ env: 'API_TOKENIZATION_RELAY_WINDOW_SEC', default: 86_400, minimum: 60, maximum: 2_592_000, description: 'the rolling period of the relay cap: relays sent within the last this many seconds count against it' }),
  tokenizationChallengeTtlSec: Type.Integer({ env: 'API_TOKENIZATION_CHALLENGE_TTL_SEC', default: 600, minimum: 30, maximum: 86_400, description: 'how long an authority\'s proof challenge stays usable' }),
  rwaLogKeyFile: Type.Optional(Type.String({ env: 'API_RWA_LOG_KEY_FILE', minLength: 1, description: 'file holding the Ed25519 seed (64 hex digits) that signs every token log\'s checkpoints; a generated key kept in the store when absent, for development (docs/platform/transparency-log.md "The log key")' })),
  rwaLogOrigin: Type.Optional(Type.String({ env: 'API_RWA_LOG_ORIGIN', pattern: '^[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~-]+)*$', description: 'what every token log\'s origin line starts with, `<this>/rwa/<token id>`; default the host of API_PUBLIC_URL, else localhost; a log keeps the origin of its first checkpoint' })),
  gatewayTimeoutMs: Type.Integer({ env: 'API_GATEWAY_TIMEOUT_MS', default: 10_000, minimum: 100, maximum: 60_000, description: 'how long one call to an integration gateway may take, connect to last byte, before it is a timeout (docs/platform/gateways.md)' }),
  gatewayCallbackWaitMs: Type.Integer({ env: 'API_GATEWAY_CALLBACK_WAIT_MS', default: 15_000, minimum: 100, maximum: 120_000, description: 'how long a conformance run waits for the gateway\'s callbacks' }),
  offRampWindowSec: Type.Integer({ env: 'API_OFF_RAMP_WINDOW_SEC', default: 3600, minimum: 60, maximum: 604_800, description: 'how long an off-ramp request waits for the holder\'s transfer before it expires' }),
  webhookAllowedDestinations: Type.Array(Type.String({ minLength: 1 }), {
    env: 'API_WEBHOOK_ALLOWED_DESTINATIONS', default: [],
    description: 'comma-separated addresses, CIDR ranges and host names (each optionally :port) webhooks may reach besides https to public addresses, e.g. 127.0.0.1,localhost:8443,10.0.0.0/8; for development and tests only, refused in production',
  }),
  platformFeeBps: Type.String({ env: 'API_PLATFORM_FEE_BPS', default: '0', pattern: '^([0-9]|[1-9][0-9]{1,3}|10000)$', description: 'the platform\'s fee on every payment in basis points (0 to 10000, digits only: 1.5 is refused, not truncated) of its amount, added to the tenant\'s fee (docs/platform/fees.md)' }),
  platformFeeFixed: Type.String({ env: 'API_PLATFORM_FEE_FIXED', default: '0', pattern: '^(0|[1-9][0-9]{0,77})$', description: 'the platform\'s fixed fee on every payment, in base units of the payment\'s asset (docs/platform/fees.md)' }),
  platformFeeCollectors: Type.Optional(Type.String({ env: 'API_PLATFORM_FEE_COLLECTORS', pattern: '^[a-z0-9-]+=0x[0-9a-fA-F]{40}(,[a-z0-9-]+=0x[0-9a-fA-F]{40})*$', description: 'comma-separated <chain>=<address>: where a payment\'s platform fee is transferred on chain (docs/platform/payments.md); a payment with a platform fee on a chain without one is 503' })),
  paymentSweepMs: Type.Integer({ env: 'API_PAYMENT_SWEEP_MS', default: 2000, minimum: 200, maximum: 600_000, description: 'milliseconds between two runs of the payment sweep, which follows approvals and transactions to confirmed (docs/platform/payments.md)' }),
  metricsListen: Type.Optional(Type.String({ env: 'API_METRICS_LISTEN', pattern: '^(\\[[^\\]]+\\]|[^:]+):\\d{1,5}$', description: 'host:port serving GET /metrics, off the public port (plain HTTP: loopback or a private interface; docs/operations.md "Metrics and health"); unset: no metrics port' })),
  logLevel: Type.Union([Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')], { env: 'API_LOG_LEVEL', default: 'info' }),
});

export type ApiConfig = Readonly<Static<typeof ApiConfigSchema>>;

export function loadApiConfig(env?: Record<string, string | undefined>): ApiConfig {
  const c = loadConfig(ApiConfigSchema, { env, fileVar: 'API_CONFIG_FILE' });
  const tls = [c.coordinatorTlsCa, c.coordinatorTlsCert, c.coordinatorTlsKey].filter(Boolean).length;
  if (tls !== 0 && tls !== 3) throw new ConfigError(['API_COORDINATOR_TLS_CA, API_COORDINATOR_TLS_CERT and API_COORDINATOR_TLS_KEY go together (mutual TLS)']);
  if (c.coordinator && c.coordinators) throw new ConfigError(['API_COORDINATOR and API_COORDINATORS: set one (API_COORDINATOR=<host:port> is API_COORDINATORS=default=<host:port>)']);
  const shards = coordinatorShards(c);
  const names = new Set(shards.map((s) => s.name));
  const addresses = new Set(shards.map((s) => s.address));
  if (names.size !== shards.length) throw new ConfigError(['API_COORDINATORS (coordinators): a shard name appears twice']);
  if (addresses.size !== shards.length) throw new ConfigError(['API_COORDINATORS (coordinators): two shards name the same coordinator address']);
  for (const { address } of shards) {
    if (tls === 0 && !isLoopbackHost(splitHostPort(address).host)) {
      throw new ConfigError([`${c.coordinators ? 'API_COORDINATORS (coordinators)' : 'API_COORDINATOR (coordinator)'}: plaintext is allowed on loopback only; got ${address} without TLS`]);
    }
  }
  const need = (what: string, pairs: [string, unknown][]) => {
    const missing = pairs.filter(([, v]) => !v).map(([k]) => k);
    if (missing.length) throw new ConfigError([`${what} needs ${missing.join(', ')}`]);
  };
  // Static keys, when set, take precedence; without them the AWS SDK's standard credential chain applies.
  const bothOrNeither = (a: string, av: unknown, b: string, bv: unknown) => {
    if (!av !== !bv) throw new ConfigError([`${av ? a : b} is set without ${av ? b : a}: set both (static keys) or neither (the AWS credential chain)`]);
  };
  if (c.objectStore === 's3') {
    need('API_OBJECT_STORE=s3', [['API_S3_ENDPOINT', c.s3Endpoint], ['API_S3_BUCKET', c.s3Bucket], ['API_S3_REGION', c.s3Region]]);
    bothOrNeither('API_S3_ACCESS_KEY_ID', c.s3AccessKeyId, 'API_S3_SECRET_ACCESS_KEY', c.s3SecretAccessKey);
    plaintextOnLoopback('API_S3_ENDPOINT', c.s3Endpoint!);
  }
  if (c.emailProvider === 'ses') {
    need('API_EMAIL_PROVIDER=ses', [['API_SES_REGION', c.sesRegion]]);
    bothOrNeither('API_SES_ACCESS_KEY_ID', c.sesAccessKeyId, 'API_SES_SECRET_ACCESS_KEY', c.sesSecretAccessKey);
    if (c.sesEndpoint) plaintextOnLoopback('API_SES_ENDPOINT', c.sesEndpoint);
  }
  try {
    DestinationPolicy.fromAllowList(c.webhookAllowedDestinations);
  } catch (err) {
    throw new ConfigError([`API_WEBHOOK_ALLOWED_DESTINATIONS (webhookAllowedDestinations): ${(err as Error).message}`]);
  }
  if (c.environment === 'production' && c.webhookAllowedDestinations.length) {
    throw new ConfigError(['API_WEBHOOK_ALLOWED_DESTINATIONS (webhookAllowedDestinations): must be empty with API_ENVIRONMENT=production (webhooks go to public https addresses only)']);
  }
  if (c.environment === 'production' && c.teeAllowDevRoot) {
    throw new ConfigError(['API_TEE_ALLOW_DEV_ROOT (teeAllowDevRoot): must be false with API_ENVIRONMENT=production (a DEV-ONLY attestation root proves nothing)']);
  }
  if (c.environment === 'production' && c.fundingRail === 'sandbox') {
    throw new ConfigError(['API_FUNDING_RAIL (fundingRail): sandbox is refused with API_ENVIRONMENT=production (the sandbox rail moves no money)']);
  }
  if (c.fundingStablecoins && !c.fundingIssuerKeyFile) throw new ConfigError(['API_FUNDING_STABLECOINS (fundingStablecoins): needs API_FUNDING_ISSUER_KEY_FILE']);
  for (const chain of Object.keys(chainMap(c.fundingStablecoins))) {
    if (!chainBackends(c)[chain]) throw new ConfigError([`API_FUNDING_STABLECOINS (fundingStablecoins): ${chain} has no backend in API_CHAIN_BACKENDS`]);
    // The sandbox rail's fiat is not real: the stablecoin it backs is minted on test chains only.
    if (c.fundingRail === 'sandbox' && chainInfo(chain)?.environment !== 'sandbox') throw new ConfigError([`API_FUNDING_STABLECOINS (fundingStablecoins): ${chain} is not a test chain; the sandbox rail mints on test chains only`]);
  }
  for (const chain of Object.keys(chainMap(c.escrowContracts))) {
    if (!chainBackends(c)[chain]) throw new ConfigError([`API_ESCROW_CONTRACTS (escrowContracts): ${chain} has no backend in API_CHAIN_BACKENDS`]);
    // An escrow holds the chain's stablecoin: without one there is nothing to escrow.
    if (!chainMap(c.fundingStablecoins)[chain]) throw new ConfigError([`API_ESCROW_CONTRACTS (escrowContracts): ${chain} has no stablecoin in API_FUNDING_STABLECOINS`]);
  }
  if (c.metricsListen && c.port !== 0 && splitHostPort(c.metricsListen).port === c.port) {
    throw new ConfigError([`API_METRICS_LISTEN (metricsListen): must not be the public port ${c.port}; metrics are served off it`]);
  }
  if (c.databasePasswordFile && !c.databaseUrl) {
    throw new ConfigError(['API_DATABASE_PASSWORD_FILE (databasePasswordFile): needs API_DATABASE_URL']);
  }
  if (c.databaseUrl && c.databasePasswordFile && /^postgres(ql)?:\/\/[^/@]*:[^/@]*@/.test(c.databaseUrl)) {
    throw new ConfigError(['API_DATABASE_URL (databaseUrl): carries a password and API_DATABASE_PASSWORD_FILE is set; give it once']);
  }
  try {
    trustProxyOf(c);
  } catch (err) {
    throw new ConfigError([`API_TRUST_PROXY (trustProxy): ${(err as Error).message}`]);
  }
  for (const chain of Object.keys(chainBackends(c))) {
    if (!chainInfo(chain)) throw new ConfigError([`API_CHAIN_BACKENDS (chainBackends): unknown chain ${chain}`]);
  }
  return c;
}

/**
 * The coordinator shards in configured order (the first takes vaults whose records name none): from
 * API_COORDINATORS, or API_COORDINATOR as the one shard `default`; empty without a coordinator.
 */
export function coordinatorShards(c: Pick<ApiConfig, 'coordinator' | 'coordinators'>): ShardAddress[] {
  if (c.coordinator) return [{ name: DEFAULT_SHARD, address: c.coordinator }];
  return (c.coordinators ?? '').split(',').filter(Boolean).map((p) => ({ name: p.slice(0, p.indexOf('=')), address: p.slice(p.indexOf('=') + 1) }));
}

/** What GET /v1/node-config gives customer nodes: every coordinator address from API_NODE_COORDINATOR_ADDRESS. */
export function nodeCoordinatorAddresses(c: Pick<ApiConfig, 'nodeCoordinatorAddress'>): string[] {
  return (c.nodeCoordinatorAddress ?? '').split(',').filter(Boolean);
}

const PROXY_KEYWORDS = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * Fastify's `trustProxy` from API_TRUST_PROXY (docs/operations.md "Client addresses and proxies"): false
 * (none: the peer is the client), a hop count (the nearest that many addresses are proxies), or the
 * proxies' addresses, CIDR ranges and the keywords loopback, linklocal, uniquelocal. Trusting every hop
 * (`true`) is not offered: any client could then name itself by sending X-Forwarded-For.
 */
export function trustProxyOf(c: Pick<ApiConfig, 'trustProxy'>): false | string[] | ((address: string, hop: number) => boolean) {
  const v = c.trustProxy.trim();
  if (v === '') return false;
  if (/^[0-9]+$/.test(v)) {
    const hops = Number(v);
    if (hops < 1 || hops > 16) throw new Error(`a hop count is 1 to 16; got ${v}`);
    // As Fastify reads a number (its types take none): the nearest `hops` addresses are proxies.
    return (_address, hop) => hop < hops;
  }
  const entries = v.split(',').map((e) => e.trim());
  for (const e of entries) {
    if (PROXY_KEYWORDS.has(e)) continue;
    if (e === '') throw new Error('an empty entry in the list');
    if (e.includes('/') ? !isValidCidr(e) : !ipaddr.isValid(e)) throw new Error(`${e} is not an address, a CIDR range or loopback, linklocal, uniquelocal`);
  }
  return entries;
}

function isValidCidr(e: string): boolean {
  try {
    ipaddr.parseCIDR(e);
    return true;
  } catch {
    return false;
  }
}

/** The configured chain backends by chain name. */
export function chainBackends(c: Pick<ApiConfig, 'chainBackends'>): Record<string, string> {
  return Object.fromEntries((c.chainBackends ?? '').split(',').filter(Boolean).map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));
}

/** A comma-separated `<chain>=<value>` setting as a map (API_FUNDING_STABLECOINS, API_FUNDING_REDEMPTION_ADDRESSES, API_ESCROW_CONTRACTS). */
export function chainMap(setting: string | undefined): Record<string, string> {
  return Object.fromEntries((setting ?? '').split(',').filter(Boolean).map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));
}

/** Credentials travel to these endpoints: plain http only on loopback. The setting's name is printed, not its value. */
function plaintextOnLoopback(name: string, origin: string): void {
  const u = new URL(origin);
  if (u.protocol === 'http:' && !isLoopbackHost(u.hostname)) throw new ConfigError([`${name}: plain http is allowed on loopback only; use https`]);
}
