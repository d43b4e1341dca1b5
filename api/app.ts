// The API as a Fastify application factory. server.ts boots it; tests call buildApp and use inject.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from '../common/logger.ts';
import type { ApiConfig } from './config.ts';
import { errorBodyWithRequestId, installErrorHandling } from './errors.ts';
import { clientErrorHandler, frameworkErrorsHandler, MAX_PARAM_LENGTH } from './framework-errors.ts';
import { healthRoutes } from './routes/health.ts';
import { fundingRoutes } from './routes/v1/funding.ts';
import { createGateways } from './gateways/gateway-setup.ts';
import type { GatewayService } from './gateways/gateway-service.ts';
import { integrationGatewayRoutes } from './routes/v1/integration-gateways.ts';
import { createFunding, type Funding } from './funding/funding-setup.ts';
import { escrowRoutes } from './routes/v1/escrows.ts';
import { tokenizationRoutes } from './routes/v1/tokenization.ts';
import { rwaActionRoutes } from './routes/v1/rwa-actions.ts';
import { ActionService } from './rwa/actions/action-service.ts';
import type { CapTableSource, TokenLog } from './rwa/seams.ts';
import { createTokenization, type Tokenization } from './tokenization/tokenization-setup.ts';
import { rwaLogRoutes } from './routes/v1/rwa-log.ts';
import { createTokenLog, type TokenLogPart } from './rwa/log/token-log-setup.ts';
import { rwaSchemaRoutes } from './routes/v1/rwa-schema.ts';
import { createRwaSchemas } from './rwa/schema/schema-setup.ts';
import { ATTESTATION_CHECK, attestationChecker } from './rwa/schema/attestation-provenance.ts';
import { OPERATION_CHAIN_CHECK, operationChainChecker, operationEntryBody } from './rwa/log/operation-provenance.ts';
import { rwaDocumentsRoutes } from './routes/v1/rwa-documents.ts';
import { createRwaDocuments } from './rwa/documents/documents-setup.ts';
import type { TokenFieldsReader } from './rwa/documents/token-fields-reader.ts';
import { rwaHoldersRoutes } from './routes/v1/rwa-holders.ts';
import { createRwaHolders } from './rwa/holders/holders-setup.ts';
import { createEscrows, type Escrows } from './escrow/escrow-setup.ts';
import { EscrowAuthorizer } from './escrow/escrow-authorizer.ts';
import type { CoordinatorClient } from './coordinator/coordinator-client.ts';
import { CoordinatorShards } from './coordinator/coordinator-shards.ts';
import { chainBackends, nodeCoordinatorAddresses, trustProxyOf } from './config.ts';
import { rateLimits } from './rate-limits/rate-limits.ts';
import { PostgresRecordStore } from './store/postgres/postgres-record-store.ts';
import type { VaultService } from './vaults/vault-service.ts';
import { requestAuth } from './auth/request-auth.ts';
import { apiKeyRoutes } from './routes/v1/api-keys.ts';
import { vaultRoutes } from './routes/v1/vaults.ts';
import { vaultPolicyRoutes } from './routes/v1/vault-policies.ts';
import { vaultExportRoutes } from './routes/v1/vault-exports.ts';
import { VaultExports } from './vaults/vault-exports.ts';
import { committeeRoutes } from './routes/v1/committees.ts';
import { nodeRoutes } from './routes/v1/nodes.ts';
import { endUserAuthRoutes } from './routes/v1/end-user-auth.ts';
import { transactionRoutes } from './routes/v1/transactions.ts';
import type { TransactionService } from './transactions/transaction-service.ts';
import { accountHolderRoutes } from './routes/v1/account-holders.ts';
import { accountHolderBankingRoutes } from './routes/v1/account-holder-banking.ts';
import { accountHolderExportRoutes } from './routes/v1/account-holder-exports.ts';
import { accountHolderAvatarRoutes } from './routes/v1/account-holder-avatars.ts';
import { contactRoutes } from './routes/v1/contacts.ts';
import { feeRoutes } from './routes/v1/fees.ts';
import { paymentRoutes } from './routes/v1/payments.ts';
import { paymentRequestRoutes } from './routes/v1/payment-requests.ts';
import { createPayments, type Payments } from './payments/payment-setup.ts';
import { PaymentFlows } from './payments/payment-flows.ts';
import { tenantRoutes } from './routes/v1/tenant.ts';
import { STABLECOIN_DECIMALS } from './funding/stablecoin-issuer.ts';
import { platformFeeOf } from './fees/platform-fee.ts';
import type { Platform } from './platform.ts';
import { bearerAuth } from './auth/bearer-auth.ts';
import { ReplayGuard } from './auth/replay-guard.ts';
import { webhookEndpointRoutes } from './routes/v1/webhook-endpoints.ts';
import { webhookDeliveryRoutes } from './routes/v1/webhook-deliveries.ts';
import { brandingRoutes, emailDomainRoutes, logoRoutes } from './routes/v1/branding.ts';
import { memberAuthConfigRoutes } from './routes/v1/member-auth-config.ts';
import { AccountCenterKeys } from './member-auth/account-center-keys.ts';
import { memberAuthRoutes } from './routes/v1/member-auth.ts';
import { createMemberActions, memberActionRoutes } from './routes/v1/member-actions.ts';
import type { MemberActions } from './member-auth/member-actions.ts';
import { memberAuthHostedRoutes } from './routes/v1/member-auth-hosted.ts';
import { SmtpMailer } from './email/mailer.ts';
import { readExchangeKeyFile } from './member-auth/exchange-cipher.ts';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { completeDocument, type OpenApiDocument } from './openapi/document.ts';
import { strictValidatorCompiler } from './validation.ts';
import { withFreeTextRules } from './text-input.ts';
import { cachedSerializerFactory } from './response-serializers.ts';
import { FROM_QUERY_TEXT } from '../core/api-schemas/query.ts';
import { createHmac } from 'node:crypto';
import { CursorCodec } from './store/pagination.ts';
import { loadServerKeys } from './store/server-keys.ts';
import { operatorRoutes } from './routes/operator.ts';
import { walletRoutes } from './routes/v1/wallets.ts';
import { installReplayHeader } from './idempotency.ts';
import { WalletService } from './wallets/wallet-service.ts';
import { CustomerLinks } from './customers/customer-links.ts';
import type { Chains } from './transactions/transaction-worker.ts';
import type { Registry } from 'prom-client';
import { installHttpMetrics } from './metrics/http-metrics.ts';
import { registerQueueMetrics } from './metrics/queue-metrics.ts';
import { requestTraceId } from './request-trace-id.ts';
import { installRequestSpans } from './request-spans.ts';

export interface AppOptions {
  config: ApiConfig;
  logger: Logger;
  /** The coordinator shards (api/coordinator/coordinator-shards.ts); one client stands for a single shard. */
  coordinator?: CoordinatorShards | CoordinatorClient | undefined;
  vaults?: VaultService | undefined;
  transactions?: TransactionService | undefined;
  /** The customer platform API (tenancy, webhooks, branding), authenticated by workspace bearer keys. */
  platform?: Platform | undefined;
  /** Seconds since the epoch, for signature freshness (injectable in tests). */
  now?: () => number;
  /** The chain backends, for a wallet's balance (GET /v1/wallets/{id}/balance). */
  chains?: Chains | undefined;
  /** Funding and off-ramp requests (docs/platform/funding.md); built from the configuration when absent. */
  funding?: Funding | undefined;
  /** Integration gateways (docs/platform/gateways.md); built from the configuration when absent. */
  gateways?: GatewayService | undefined;
  /** Escrows (docs/platform/escrows.md); built from the configuration when absent. */
  escrows?: Escrows | undefined;
  /** Tokenization (docs/platform/tokenization.md); built from the configuration when absent. */
  tokenization?: Tokenization | undefined;
  /** The token transparency logs (docs/platform/transparency-log.md); built from the configuration when absent. */
  tokenLog?: TokenLogPart | undefined;
  /** The `TokenLog` the real-world-asset parts append through; the transparency log's own when absent (tests record appends with theirs). */
  rwaTokenLog?: TokenLog | undefined;
  /** The tokens' public field values that metadata reads (docs/platform/rwa.md "Documents and metadata"); the fields part's when absent. */
  rwaTokenFields?: TokenFieldsReader | undefined;
  /** Distributions' and corporate actions' seams (api/rwa/seams.ts): their token log (the transparency log's when absent) and the cap table. */
  rwa?: { log?: TokenLog | undefined; capTable?: CapTableSource | undefined } | undefined;
  /** Where the request and queue metrics go; server.ts serves it off the public port (API_METRICS_LISTEN). */
  metrics?: Registry | undefined;
  /** Payments (docs/platform/payments.md); built from the configuration, with their sweep, when absent. */
  payments?: Payments | undefined;
  /** Called with the member actions once built (docs/platform/member-actions.md), for a caller that reads their batches. */
  onMemberActions?: ((actions: MemberActions) => void) | undefined;
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger as FastifyBaseLogger,
    bodyLimit: opts.config.bodyLimitBytes,
    // Behind the configured proxies req.ip is the client X-Forwarded-For names, else the peer (API_TRUST_PROXY).
    trustProxy: trustProxyOf(opts.config),
    // req.id, the logs' reqId and x-request-id are the request's trace id (api/request-trace-id.ts).
    genReqId: requestTraceId,
    // Errors Fastify or Node's parser raise before a route runs, in the one error model (api/framework-errors.ts).
    // Path parameters may be as long as a request line is: an over-long id reaches its route, which
    // authenticates first and then finds no such record.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: frameworkErrorsHandler(opts.config.bodyLimitBytes),
    clientErrorHandler,
    // Request lines are logged by the hooks below without the query string, which may carry an
    // upload signature or a claim token.
    logController: new LogController({ disableRequestLogging: true }),
    // Unknown fields are refused, not silently dropped: bad input changes nothing and says so. Both APIs
    // validate with api/validation.ts; should a route outside them get a schema, ajv coerces nothing
    // and fills in no defaults either, and names every bad field (allErrors: such routes take no body, and
    // the request's size is bounded by bodyLimit).
    ajv: { customOptions: { removeAdditional: false, allErrors: true, coerceTypes: false, useDefaults: false, keywords: [FROM_QUERY_TEXT] } },
    // Response serializers compiled once per schema in this process (api/response-serializers.ts).
    schemaController: { compilersFactory: { buildSerializer: cachedSerializerFactory } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  // First of the hooks: the request's server span is the context of everything after it (request-spans.ts).
  installRequestSpans(app);
  installErrorHandling(app);
  // Idempotent-Replayed: true on an answer replayed under an Idempotency-Key (api/idempotency.ts).
  installReplayHeader(app);
  if (opts.metrics) installHttpMetrics(app, opts.metrics);
  // Both APIs share one store (server.ts); readiness and the queue metrics read it.
  const store = opts.vaults?.store ?? opts.platform?.store;
  if (opts.metrics && store) registerQueueMetrics(opts.metrics, store);
  // Request budgets per client address and per API key, counted where every instance counts: the
  // database's table on PostgreSQL, this process's memory on LevelDB (api/rate-limits/rate-limits.ts).
  await app.register(rateLimits, {
    windowMs: opts.config.rateLimitWindowS * 1000, perAddress: opts.config.rateLimitPerAddress, perKey: opts.config.rateLimitPerKey,
    counters: store instanceof PostgresRecordStore ? store.rateLimitCounters() : undefined, log: opts.logger,
  });
  // The id the log lines of this request carry (reqId), on every answer (docs/api-reference.md), and in
  // every error body as `request_id` (docs/platform/errors.md).
  app.addHook('onSend', async (req, reply, payload) => {
    if (!reply.hasHeader('x-request-id')) reply.header('x-request-id', req.id);
    return reply.statusCode >= 400 ? errorBodyWithRequestId(payload, String(reply.getHeader('x-request-id'))) : payload;
  });
  app.addHook('onResponse', async (req, reply) => {
    req.log.info({ method: req.method, path: req.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });
  // The OpenAPI document is generated from the routes' TypeBox schemas: GET /openapi.json, page at /docs.
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      // Markdown, shown at the top of /docs: which scheme each API uses, and how to sign a request.
      info: { title: 'Threshold custody API', version: '1', description: [
        'Two APIs share this server; every operation names the scheme it needs (the padlock).',
        '',
        '**Vault API** (tags *api keys* to *end-user auth*): every request carries an RFC 9421 HTTP Message Signature made with one of the organization\'s Ed25519 API keys (`httpSignature`).',
        'OpenAPI cannot describe a signature computed per request, so **Authorize** and **Try it out** cannot make one: sign as below.',
        'The profile (covered components, `created`/`expires`, one-use `nonce`, `Content-Digest`) and a runnable example: `docs/request-signing.md` in the repository.',
        '',
        '**Platform API** (*webhooks*, *mfa*, *branding*, *wallets*): `Authorization: Bearer svc_test_…` or `svc_live_…` (**Authorize** → `bearer`). Production (`svc_live_`) changes are also signed, the same way, with the workspace key\'s signing key. Operations with no padlock (*health*, `/v1/public/…`) need nothing.',
        '',
        'Signing with the SDK (`CustodyClient` from `threshold-custody/sdk` signs every call itself; `signedHeaders` signs one request):',
        '```ts',
        'import { signedHeaders } from \'threshold-custody/sdk\';',
        '',
        'const url = \'https://api.example.com/v1/api-keys\';',
        'const body = JSON.stringify({ public_key: \'<64 hex>\', label: \'ci\' });',
        '// Content-Type, Content-Digest, Signature-Input, Signature: valid 60 s and accepted once; sign again to retry.',
        'const headers = signedHeaders({ keyId: \'key_…\', secretKey /* the 32-byte Ed25519 secret */ }, \'POST\', url, body);',
        'const res = await fetch(url, { method: \'POST\', headers, body });',
        '```',
        'With curl: the CLI (`npm run cli`) signs its own requests but prints no headers; `signed-headers.mjs` from `docs/request-signing.md` prints them for `curl -H @file`:',
        '```sh',
        'url=https://api.example.com/v1/vaults',
        'node --import tsx signed-headers.mjs GET "$url" > headers.txt',
        'curl -sS "$url" -H @headers.txt',
        '```',
      ].join('\n') },
      // One tag per area, vault API first; a route names its area's tag (test/api/openapi.unit.ts).
      tags: [
        { name: 'api keys', description: 'Vault API: the organization\'s Ed25519 request-signing keys' },
        { name: 'vaults', description: 'Vault API: threshold key vaults, their creation and share rotation' },
        { name: 'committees', description: 'Vault API: the signer nodes a new vault would get, to check and bind when creating it' },
        { name: 'wallets', description: 'Vault API: chain addresses derived under a vault, and a Bitcoin wallet\'s unspent outputs. Platform API: the same wallets\' balance, history, ledger, decommissioning and payment-request QR codes' },
        { name: 'transactions', description: 'Vault API: transactions authorized by a signed intent' },
        { name: 'nodes', description: 'Vault API: signer nodes the organization runs itself or in an enclave, and the enclave builds it allows' },
        { name: 'end-user auth', description: 'Vault API: the identity provider keys that hosted-tier end-user tokens verify against (docs/end-user-auth.md)' },
        { name: 'webhooks', description: 'Platform API: webhook endpoints, deliveries, the event catalog and the key webhooks are signed with' },
        { name: 'mfa', description: 'Platform API: one-use MFA proofs for sensitive operations' },
        { name: 'branding', description: 'Platform API: theme, logo and sending domains, and the public branding bundle' },
        { name: 'member auth', description: 'Platform API: member-auth configuration: allowed origins, redirect URLs, BYO OIDC and Hosted Auth applications and their publishable keys' },
        { name: 'account holders', description: 'Platform API: account holders (individuals and businesses), their change history, avatars, contacts, and the member self view: verification, consents, wallets' },
        { name: 'funding', description: 'Platform API: funding (fiat in through a payment rail, stablecoin minted to a holder\'s wallet) and off-ramp requests (stablecoin sent to the burn address, fiat paid out)' },
        { name: 'fees', description: 'Platform API: the tenant\'s fee schedules (immutable; the newest is in force) and the platform fee' },
        { name: 'payments', description: 'Platform API: payments between account holders (fees as on-chain transfers, approved as one batch member action), their dry run, and payment quotes: fees, total debit and compliance checks' },
        { name: 'escrows', description: 'Platform API: escrows between two account holders, held by the escrow contract on chain' },
        { name: 'tokenization', description: 'Platform API: token authorities and their proofs of control, and ERC-20, ERC-721 and ERC-1155 tokens governed by an admin Safe of the customer\'s vaults' },
        { name: 'integration gateways', description: 'Platform API: the workspace\'s own payment rail reached over HTTPS: its record, TLS pins, status, conformance runs and history' },
        { name: 'tenant', description: 'Platform API: the key\'s tenant, its workspaces and the chains its workspace can use' },
        { name: 'health', description: 'Liveness and readiness; no authentication' },
      ],
      components: {
        securitySchemes: {
          httpSignature: {
            type: 'apiKey', in: 'header', name: 'Signature',
            description: 'RFC 9421 HTTP Message Signature with an Ed25519 key: `Signature-Input` (covering `@method`, `@target-uri` and, with a body, `content-digest`; with `created`, `expires`, `nonce` and `keyid`), `Signature`, and `Content-Digest` (RFC 9530) for a body. '
              + 'The vault API signs every request with an API key (`keyid`: its id); the platform API signs production changes with the workspace key\'s signing key. '
              + 'OpenAPI cannot express the signing itself, and a pasted `Signature` is refused without its `Signature-Input` or when used twice: sign each request with the SDK or the example in the description above (docs/request-signing.md).',
          },
          bearer: { type: 'http', scheme: 'bearer', description: 'Platform API: a workspace key, `svc_test_…` (sandbox) or `svc_live_…` (production; changes are also signed: `httpSignature`)' },
          mfaToken: { type: 'apiKey', in: 'header', name: 'SVC-MFA-Token', description: 'A one-use MFA proof from POST /v1/mfa/verifications, issued for `<action>:<the route\'s id>` (docs/platform/tenancy.md)' },
        },
      },
    },
    // operationIds, descriptions, examples, named error body, headers and webhooks (docs/api-reference.md).
    transformObject: (d) => ('openapiObject' in d ? completeDocument(d.openapiObject as unknown as OpenApiDocument) as unknown as typeof d.openapiObject : d.swaggerObject),
  });
  // The filter box narrows the page to one area by its tag: some 340 operations are too many to scroll.
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { filter: true } });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  const coordinators = CoordinatorShards.of(opts.coordinator);
  await app.register(healthRoutes, { coordinators, store });
  const vaults = opts.vaults;
  if (vaults) {
    // Vaults on a shard no longer configured would have nowhere to go: the API does not start.
    await coordinators?.checkPlacements(vaults.store);
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
      v1.setValidatorCompiler(withFreeTextRules(strictValidatorCompiler));
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
      // GET /v1/wallets/{id} also takes the platform API's bearer keys (docs/customers.md "Wallets: one resource, one path").
      await v1.register(vaultRoutes, { vaults, cursors, coordinators, bearer: opts.platform ? { tenancy: opts.platform.tenancy, links: new CustomerLinks(vaults.store) } : undefined, clock: opts.platform?.clock, idempotencyWindowMs: opts.platform?.idempotencyWindowMs });
      await v1.register(committeeRoutes, { coordinators, vaults });
      await v1.register(vaultExportRoutes, { exports: new VaultExports(vaults, coordinators) });
      await v1.register(nodeRoutes, {
        vaults, coordinators,
        setup: { coordinatorAddresses: nodeCoordinatorAddresses(opts.config), operatorKeys: opts.config.nodeOperatorKeys ? opts.config.nodeOperatorKeys.toLowerCase().split(',') : [] },
      });
      await v1.register(endUserAuthRoutes, { vaults });
      if (opts.transactions) await v1.register(transactionRoutes, { transactions: opts.transactions, cursors, bearer: opts.platform ? { tenancy: opts.platform.tenancy, flows: new PaymentFlows({ store: opts.platform.store, cursors: opts.platform.cursors }) } : undefined });
      if (opts.transactions) await v1.register(vaultPolicyRoutes, { transactions: opts.transactions });
    }, { prefix: '/v1' });
  }
  const platform = opts.platform;
  // Set once the platform's funding is built below; the operator API's reconciliation reads it.
  let fundingService: Funding['service'] | undefined;
  if (platform) {
    // The platform API: workspace bearer keys, role permissions, and RFC 9421 signatures on production changes.
    const now = opts.now ?? (() => Math.floor(platform.clock() / 1000));
    await app.register(async (p) => {
      documentAs(p, 'platform API', 'bearer');
      // Strict input as on the vault API: no coercion, no defaults, unknown fields refused (docs/security.md).
      p.setValidatorCompiler(withFreeTextRules(strictValidatorCompiler));
      await p.register(bearerAuth, { tenancy: platform.tenancy, mfa: platform.mfa, replayGuard: new ReplayGuard(platform.store), publicOrigin: opts.config.publicUrl, now });
      await p.register(webhookEndpointRoutes, { platform });
      await p.register(webhookDeliveryRoutes, { platform });
      await p.register(brandingRoutes, { platform, publicPerMinute: opts.config.publicBrandingRatePerMinute });
      await p.register(emailDomainRoutes, { platform });
      await p.register(logoRoutes, { platform, publicOrigin: opts.config.publicUrl });
      // Account Center passkeys: the organization's opt-in as its customer-signed registration names it (docs/end-user-auth.md).
      const acLinks = vaults ? new CustomerLinks(vaults.store) : undefined;
      const acKeys = new AccountCenterKeys(platform.keys.cursorKey, opts.config.publicUrl);
      const acRegistration = vaults && acLinks ? async (scope: { tenant: string; workspace: string }) => {
        const org = await acLinks.orgOfWorkspace(scope);
        return org ? { org, config: await vaults.endUserAuth(org) } : undefined;
      } : undefined;
      await p.register(memberAuthConfigRoutes, {
        platform,
        ...(acRegistration ? { accountCenter: {
          keys: acKeys,
          registration: async (scope) => {
            const r = await acRegistration(scope);
            return r ? { org: r.org, accountCenter: r.config?.accountCenter } : undefined;
          },
        } } : {}),
      });
      await p.register(memberAuthRoutes, { platform, ...(opts.config.memberAuthExchangeKeyFile ? { exchangeKey: await readExchangeKeyFile(opts.config.memberAuthExchangeKeyFile) } : {}) });
      await p.register(accountHolderRoutes, { platform, vaults });
      await p.register(accountHolderAvatarRoutes, { platform, publicOrigin: opts.config.publicUrl });
      await p.register(contactRoutes, { platform });
      // Payments (docs/platform/payments.md): the sweep runs only for a service built here.
      const payments = opts.payments ?? createPayments(opts.config, platform, { store: vaults?.store, chains: opts.chains, log: opts.logger });
      if (!opts.payments) {
        p.addHook('onReady', async () => payments.start());
        p.addHook('onClose', async () => payments.stop());
      }
      app.decorate('payments', payments.service);
      await p.register(feeRoutes, { platform, platformFee: platformFeeOf(opts.config) }).register(paymentRoutes, { platform, walletStore: vaults?.store, platformFee: platformFeeOf(opts.config), payments: payments.service });
      // Payment requests (docs/platform/payment-requests.md): approving one makes its payment through the payment service.
      await p.register(paymentRequestRoutes, { platform, walletStore: vaults?.store, payments: payments.service });
      // Funding and off-ramp requests (docs/platform/funding.md): the sweep runs only for a service built here.
      // Integration gateways (docs/platform/gateways.md): a workspace's own rail, which funding uses when one is active.
      const gateways = opts.gateways ?? createGateways(opts.config, platform);
      // The onboarding status asks the gateway records whether the workspace has a gateway that serves.
      platform.gatewayReadiness = gateways;
      p.addHook('onClose', async () => gateways.close());
      await p.register(integrationGatewayRoutes, { platform, gateways, publicOrigin: opts.config.publicUrl, now });
      const funding = opts.funding ?? createFunding(opts.config, platform, { log: opts.logger, gateways });
      if (!opts.funding) {
        p.addHook('onReady', async () => funding.start());
        p.addHook('onClose', async () => funding.stop());
      }
      fundingService = funding.service;
      await p.register(fundingRoutes, { platform, funding: funding.service });
      // Escrows (docs/platform/escrows.md) hold the funding stablecoin in the escrow contract; the sweep as funding's.
      const escrows = opts.escrows ?? createEscrows(opts.config, platform, (c) => funding.service.stablecoinOf(c), { log: opts.logger });
      if (!opts.escrows) {
        p.addHook('onReady', async () => escrows.start());
        p.addHook('onClose', async () => escrows.stop());
      }
      await p.register(escrowRoutes, { platform, escrows: escrows.service });
      // Tokenization (docs/platform/tokenization.md): authorities, token deployments, operations of the admin Safe.
      const tokenization = opts.tokenization ?? createTokenization(opts.config, platform, { transactions: opts.transactions, log: opts.logger });
      if (!opts.tokenization) {
        p.addHook('onReady', async () => {
          void tokenization.operations.resumeAll().catch((err: unknown) => opts.logger.warn({ err }, 'resuming token operations failed'));
          void tokenization.vaultCalls.resumeAll().catch((err: unknown) => opts.logger.warn({ err }, 'resuming token calls failed'));
          void tokenization.gasless.resumeAll().catch((err: unknown) => opts.logger.warn({ err }, 'resuming gasless relays failed'));
        });
        p.addHook('onClose', async () => {
          await tokenization.vaultCalls.stop();
          await tokenization.gasless.close();
          await tokenization.operations.settled();
        });
      }
      await p.register(tokenizationRoutes, { platform, tokenization });
      // The token transparency logs (docs/platform/transparency-log.md): a witnessed Merkle log per token.
      const tokenLog = opts.tokenLog ?? await createTokenLog(opts.config, platform);
      if (!opts.tokenLog) p.addHook('onClose', async () => tokenLog.close());
      await p.register(rwaLogRoutes, { platform, tokenization, tokenLog });
      const appendLog = opts.rwaTokenLog ?? tokenLog.log;
      if (!tokenLog.provenance.names().includes(ATTESTATION_CHECK)) tokenLog.provenance.register(attestationChecker());
      // Every confirmed operation of a token is an `operation` entry of its log, checked against the chain by provenance/verify.
      tokenization.confirmed.listen((op) => appendLog.append({ tenant: op.tenant, workspace: op.workspace }, op.token_id, { kind: 'operation', body: operationEntryBody(op) }).then(() => undefined));
      if (!tokenLog.provenance.names().includes(OPERATION_CHAIN_CHECK)) tokenLog.provenance.register(operationChainChecker(tokenization));
      if (!opts.tokenization) p.addHook('onReady', async () => void tokenization.confirmed.resumePending().catch((err: unknown) => opts.logger.warn({ err }, 'logging confirmed token operations failed')));
      // Real-world assets: asset schemas, schema rebinds, a token's binding, fields and attesters (docs/platform/rwa.md).
      const rwaSchemas = createRwaSchemas(platform, tokenization, appendLog);
      await p.register(rwaSchemaRoutes, { platform, rwa: rwaSchemas });
      // RWA documents and metadata (docs/platform/rwa.md "Documents and metadata"): documents read by grantees only,
      // ERC-721 / ERC-1155 / ERC-7572 metadata from the token records and their public fields.
      const rwaDocuments = createRwaDocuments(platform, tokenization, appendLog, opts.rwaTokenFields ?? rwaSchemas.fields);
      await p.register(rwaDocumentsRoutes, { ...rwaDocuments, store: platform.store, clock: platform.clock, idempotencyWindowMs: platform.idempotencyWindowMs, publicOrigin: opts.config.publicUrl });
      // RWA holders (docs/platform/rwa.md "Holders, eligibility, lockups and the cap table"): eligibility and
      // lockups through each token's access registry, the cap table from the indexed Transfer history.
      const rwaHolders = createRwaHolders(platform, tokenization, appendLog);
      await p.register(rwaHoldersRoutes, { holders: rwaHolders });
      // Distributions and corporate actions (docs/platform/rwa.md): plans paid through the admin Safe's operations.
      await p.register(rwaActionRoutes, { actions: new ActionService({ store: platform.store, audit: platform.audit, tokenization, log: opts.rwa?.log ?? appendLog, capTable: opts.rwa?.capTable ?? rwaHolders.capTable, clock: platform.clock }) });
      await p.register(tenantRoutes, { platform, chainsWithBackend: Object.keys(chainBackends(opts.config)), stablecoin: (c) => funding.service.stablecoinOf(c), stablecoinDecimals: STABLECOIN_DECIMALS });
      await p.register(accountHolderBankingRoutes, { platform, vaults, chains: opts.chains, stablecoin: (c) => funding.service.stablecoinOf(c) });
      await p.register(accountHolderExportRoutes, { platform, vaults, publicOrigin: opts.config.publicUrl });
      await p.register(memberAuthHostedRoutes, {
        platform, publicOrigin: opts.config.publicUrl, pageRatePerMinute: opts.config.hostedPageRatePerMinute, mailer: opts.config.smtpUrl ? new SmtpMailer({ url: opts.config.smtpUrl, from: opts.config.smtpFrom }) : undefined,
        // Passkey enrolment and approvals on the Account Center, for tenants whose registration names the opt-in.
        accountCenterPasskeys: acRegistration ? { keys: acKeys, registration: acRegistration } : undefined,
      });
      if (vaults && opts.transactions) {
        const wallets = new WalletService({ vaults, transactions: opts.transactions, chains: opts.chains, links: new CustomerLinks(vaults.store), audit: platform.audit });
        await p.register(walletRoutes, { wallets, store: vaults.store, cursors: platform.cursors, clock: platform.clock, idempotencyWindowMs: platform.idempotencyWindowMs });
        // Member actions: a member's fresh proof for one exact transaction (docs/platform/member-actions.md).
        const memberActions = await createMemberActions(p, {
          platform, transactions: opts.transactions, publicOrigin: opts.config.publicUrl,
          ...(opts.config.memberAuthExchangeKeyFile ? { exchangeKey: await readExchangeKeyFile(opts.config.memberAuthExchangeKeyFile) } : {}),
        });
        opts.onMemberActions?.(memberActions);
        await p.register(memberActionRoutes, { platform, actions: memberActions });
        // A payment's transfers are approved as one batch member action with purpose {type: "payment"}.
        payments.service.useMemberActions(memberActions);
        // An escrow's funding and release are approved as one batch member action with purpose {type: "escrow"}.
        memberActions.registerPurpose('escrow', new EscrowAuthorizer(vaults.store, escrows.service));
        escrows.service.useActions(memberActions);
      }
    }, { prefix: '/v1' });
  }
  // The operator API (docs/operations.md): only with an operator secret configured, and both APIs' services.
  if (opts.config.operatorTokenFile && vaults && platform) {
    await app.register(operatorRoutes, {
      prefix: '/operator/v1', vaults, platform, environment: opts.config.environment, tokenFile: opts.config.operatorTokenFile,
      operatorKeys: opts.config.nodeOperatorKeys ? opts.config.nodeOperatorKeys.toLowerCase().split(',') : [],
      reconcile: () => (fundingService?.hasStablecoin() ? (scope) => fundingService!.reconcile(scope) : undefined),
      coordinators,
    });
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
