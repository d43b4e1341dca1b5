// The API as a Fastify application factory. server.ts boots it; tests call buildApp and use inject.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from '../common/logger.ts';
import type { ApiConfig } from './config.ts';
import { installErrorHandling } from './errors.ts';
import { healthRoutes } from './routes/health.ts';
import type { CoordinatorClient } from './coordinator/coordinator-client.ts';
import type { VaultService } from './vaults/vault-service.ts';
import { requestAuth } from './auth/request-auth.ts';
import { apiKeyRoutes } from './routes/v1/api-keys.ts';
import { vaultRoutes } from './routes/v1/vaults.ts';
import { committeeRoutes } from './routes/v1/committees.ts';
import { nodeRoutes } from './routes/v1/nodes.ts';
import { endUserAuthRoutes } from './routes/v1/end-user-auth.ts';
import { transactionRoutes } from './routes/v1/transactions.ts';
import type { TransactionService } from './transactions/transaction-service.ts';
import type { Platform } from './platform.ts';
import { bearerAuth } from './auth/bearer-auth.ts';
import { ReplayGuard } from './auth/replay-guard.ts';
import { webhookEndpointRoutes } from './routes/v1/webhook-endpoints.ts';
import { webhookDeliveryRoutes } from './routes/v1/webhook-deliveries.ts';
import { brandingRoutes, emailDomainRoutes, logoRoutes } from './routes/v1/branding.ts';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { strictValidatorCompiler } from './validation.ts';
import { FROM_QUERY_TEXT } from '../core/api-schemas/query.ts';
import { createHmac } from 'node:crypto';
import { CursorCodec } from './store/pagination.ts';
import { loadServerKeys } from './store/server-keys.ts';

export interface AppOptions {
  config: ApiConfig;
  logger: Logger;
  coordinator?: CoordinatorClient | undefined;
  vaults?: VaultService | undefined;
  transactions?: TransactionService | undefined;
  /** The customer platform API (tenancy, webhooks, branding), authenticated by workspace bearer keys. */
  platform?: Platform | undefined;
  /** Seconds since the epoch, for signature freshness (injectable in tests). */
  now?: () => number;
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger as FastifyBaseLogger,
    bodyLimit: opts.config.bodyLimitBytes,
    // Request lines are logged by the hooks below without the query string, which may carry an
    // upload signature or a claim token.
    logController: new LogController({ disableRequestLogging: true }),
    // Unknown fields are refused, not silently dropped: bad input changes nothing and says so. Both APIs
    // validate with api/validation.ts; should a route outside them get a schema, ajv coerces nothing
    // and fills in no defaults either.
    ajv: { customOptions: { removeAdditional: false, allErrors: false, coerceTypes: false, useDefaults: false, keywords: [FROM_QUERY_TEXT] } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  installErrorHandling(app);
  app.addHook('onResponse', async (req, reply) => {
    req.log.info({ method: req.method, path: req.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });
  // The OpenAPI document is generated from the routes' TypeBox schemas: GET /openapi.json, page at /docs.
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Threshold custody API', version: '1', description: 'Vault and transaction-signing API, and the customer platform API (docs/).' },
      components: {
        securitySchemes: {
          httpSignature: { type: 'apiKey', in: 'header', name: 'Signature', description: 'RFC 9421 Ed25519 request signature (docs/request-signing.md)' },
          bearer: { type: 'http', scheme: 'bearer', description: 'workspace key svc_test_... or svc_live_...' },
        },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  await app.register(healthRoutes, { coordinator: opts.coordinator });
  const vaults = opts.vaults;
  if (vaults) {
    // The lists walk store indexes that records of an earlier version may lack: they are brought up to
    // date here, before the API serves and before server.ts starts the workers that write those records.
    await vaults.prepareIndexes();
    await opts.transactions?.prepareIndexes();
    // The lists' cursors are MACed as the platform API's are (docs/platform/pagination.md), under a key
    // of their own derived from the same server key.
    const cursors = new CursorCodec(createHmac('sha256', (await loadServerKeys(vaults.store)).cursorKey).update('vault-api-cursors').digest());
    // The vault API: every route under /v1 is authenticated by an RFC 9421 request signature.
    await app.register(async (v1) => {
      // Input is checked as sent: a number where a string belongs, or a string where a list belongs, is
      // refused rather than coerced (api/validation.ts; the platform API uses the same validator).
      v1.setValidatorCompiler(strictValidatorCompiler);
      // The spec's status sets for the vault API have no 413 or 415: a body it cannot take is a bad request.
      v1.setErrorHandler((err: FastifyError, req, reply) => {
        if (err.statusCode === 415) return reply.code(400).send({ error: `the body must be sent as application/json (got Content-Type ${req.headers['content-type'] ?? 'none'})`, code: 'invalid_request' });
        if (err.statusCode === 413) return reply.code(400).send({ error: `the body is larger than ${opts.config.bodyLimitBytes} bytes`, code: 'invalid_request' });
        // Rethrown to the app's handler (api/errors.ts); Fastify would send a rethrown non-Error as a 200 body.
        throw (err as unknown) instanceof Error ? err : new Error('a non-Error was thrown', { cause: err });
      });
      documentAs(v1, 'vault API', 'httpSignature');
      // Nonces are claimed in the API's store: a signature is accepted once, across restarts (docs/security.md).
      await v1.register(requestAuth, { findKey: (id) => vaults.activeKey(id), replayGuard: new ReplayGuard(vaults.store), publicOrigin: opts.config.publicUrl, ...(opts.now ? { now: opts.now } : {}) });
      await v1.register(apiKeyRoutes, { vaults });
      await v1.register(vaultRoutes, { vaults, cursors });
      await v1.register(committeeRoutes, { coordinator: opts.coordinator, vaults });
      await v1.register(nodeRoutes, {
        vaults, coordinator: opts.coordinator,
        setup: { coordinatorAddress: opts.config.nodeCoordinatorAddress, operatorKeys: opts.config.nodeOperatorKeys ? opts.config.nodeOperatorKeys.toLowerCase().split(',') : [] },
      });
      await v1.register(endUserAuthRoutes, { vaults });
      if (opts.transactions) await v1.register(transactionRoutes, { transactions: opts.transactions, cursors });
    }, { prefix: '/v1' });
  }
  const platform = opts.platform;
  if (platform) {
    // The platform API: workspace bearer keys, role permissions, and RFC 9421 signatures on production changes.
    const now = opts.now ?? (() => Math.floor(platform.clock() / 1000));
    await app.register(async (p) => {
      documentAs(p, 'platform API', 'bearer');
      // Strict input as on the vault API: no coercion, no defaults, unknown fields refused (docs/security.md).
      p.setValidatorCompiler(strictValidatorCompiler);
      await p.register(bearerAuth, { tenancy: platform.tenancy, mfa: platform.mfa, replayGuard: new ReplayGuard(platform.store), publicOrigin: opts.config.publicUrl, now });
      await p.register(webhookEndpointRoutes, { platform });
      await p.register(webhookDeliveryRoutes, { platform });
      await p.register(brandingRoutes, { platform });
      await p.register(emailDomainRoutes, { platform });
      await p.register(logoRoutes, { platform, publicOrigin: opts.config.publicUrl });
    }, { prefix: '/v1' });
  }
  return app;
}

/**
 * Every route registered in `scope` after this call is documented under `tag` with the security scheme
 * that authenticates it, so no route of an API can appear in the OpenAPI document without them.
 */
function documentAs(scope: FastifyInstance, tag: string, scheme: 'httpSignature' | 'bearer'): void {
  scope.addHook('onRoute', (route) => {
    const schema = (route.schema ?? {}) as Record<string, unknown>;
    route.schema = { tags: [tag], security: [{ [scheme]: [] }], ...schema };
  });
}
