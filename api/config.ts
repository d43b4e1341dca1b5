// API configuration: read once at boot from the environment (and API_CONFIG_FILE), validated, frozen.
import { Type, type Static } from '@sinclair/typebox';
import { ConfigError, isLoopbackHost, loadConfig, splitHostPort } from '../common/config.ts';

export const ApiConfigSchema = Type.Object({
  host: Type.String({ env: 'API_HOST', default: '127.0.0.1', minLength: 1 }),
  port: Type.Integer({ env: 'API_PORT', default: 8080, minimum: 0, maximum: 65535 }),
  dataDir: Type.String({ env: 'API_DATA_DIR', default: './data/api', minLength: 1 }),
  coordinator: Type.Optional(Type.String({ env: 'API_COORDINATOR', pattern: '^(\\[[^\\]]+\\]|[^:]+):\\d{1,5}$', description: 'host:port of the coordinator' })),
  coordinatorTlsCa: Type.Optional(Type.String({ env: 'API_COORDINATOR_TLS_CA' })),
  coordinatorTlsCert: Type.Optional(Type.String({ env: 'API_COORDINATOR_TLS_CERT' })),
  coordinatorTlsKey: Type.Optional(Type.String({ env: 'API_COORDINATOR_TLS_KEY' })),
  environment: Type.Union([Type.Literal('sandbox'), Type.Literal('production')], { env: 'API_ENVIRONMENT', default: 'sandbox', description: 'sandbox serves test chains, production main chains' }),
  publicUrl: Type.Optional(Type.String({ env: 'API_PUBLIC_URL', pattern: '^https?://[^/]+$', description: 'origin clients address (for @target-uri); default http://<Host>' })),
  maxApiKeysPerOrg: Type.Integer({ env: 'API_MAX_API_KEYS', default: 10, minimum: 1, maximum: 1000 }),
  maxVaultsPerOrg: Type.Integer({ env: 'API_MAX_VAULTS', default: 100, minimum: 1, maximum: 1000000 }),
  bodyLimitBytes: Type.Integer({ env: 'API_BODY_LIMIT_BYTES', default: 1_048_576, minimum: 1024, maximum: 10_485_760 }),
  emailProvider: Type.Union([Type.Literal('none'), Type.Literal('local-dns')], { env: 'API_EMAIL_PROVIDER', default: 'none', description: 'sending-domain provider: none, or local-dns (verifies published records through DNS)' }),
  emailDnsServers: Type.Optional(Type.String({ env: 'API_EMAIL_DNS_SERVERS', pattern: '^[0-9a-fA-F:.\\[\\],]+$', description: 'comma-separated DNS servers for local-dns verification' })),
  logLevel: Type.Union([Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')], { env: 'API_LOG_LEVEL', default: 'info' }),
});

export type ApiConfig = Readonly<Static<typeof ApiConfigSchema>>;

export function loadApiConfig(env?: Record<string, string | undefined>): ApiConfig {
  const c = loadConfig(ApiConfigSchema, { env, fileVar: 'API_CONFIG_FILE' });
  const tls = [c.coordinatorTlsCa, c.coordinatorTlsCert, c.coordinatorTlsKey].filter(Boolean).length;
  if (tls !== 0 && tls !== 3) throw new ConfigError(['API_COORDINATOR_TLS_CA, API_COORDINATOR_TLS_CERT and API_COORDINATOR_TLS_KEY go together (mutual TLS)']);
  if (c.coordinator && tls === 0 && !isLoopbackHost(splitHostPort(c.coordinator).host)) {
    throw new ConfigError([`API_COORDINATOR (coordinator): plaintext is allowed on loopback only; got ${c.coordinator} without TLS`]);
  }
  return c;
}
