// API process: loads configuration, connects to the coordinator, serves HTTP until SIGINT/SIGTERM.
import { ApiConfigSchema, chainBackends, coordinatorShards, loadApiConfig } from './config.ts';
import { settingsUsage } from '../common/config.ts';
import { TransactionService } from './transactions/transaction-service.ts';
import { TransactionWorker } from './transactions/transaction-worker.ts';
import { connectChains } from './chains/connect-chains.ts';
import { createLogger } from '../common/logger.ts';
import { runMain } from '../common/process.ts';
import { buildApp } from './app.ts';
import { CoordinatorShards } from './coordinator/coordinator-shards.ts';
import { openServingStore, storeKind } from './store/open-store.ts';
import { VaultService } from './vaults/vault-service.ts';
import { VaultJobs } from './vaults/vault-jobs.ts';
import { loadTeeVerifier } from '../tee/attestation/enrolment-verifier.ts';
import { createPlatform } from './platform.ts';
import { join } from 'node:path';
import { emailProviderFromConfig, objectStoreFromConfig } from './adapters/adapters-from-config.ts';
import { CustomerLinks } from './customers/customer-links.ts';
import { EventRelay } from './customers/event-relay.ts';
import { createMetricsRegistry } from '../common/metrics/metrics-registry.ts';
import { serveMetrics } from '../common/metrics/metrics-server.ts';
import { webhookDeliveryMetrics } from './metrics/webhook-metrics.ts';
import { MemberAuthRetention } from './member-auth/member-auth-retention.ts';
import { pruneQuotes } from './payments/payment-quotes.ts';
import { pruneIdempotency } from './idempotency.ts';
import { serviceAddresses } from './webhooks/service-addresses.ts';

await runMain('api', async () => {
  const config = loadApiConfig();
  const log = createLogger('api', config.logLevel);
  // One client per coordinator shard, all with the same mutual-TLS settings (docs/operations.md "Coordinator shards").
  const shards = coordinatorShards(config);
  const coordinator = shards.length
    ? CoordinatorShards.connect(shards, { tlsCa: config.coordinatorTlsCa, tlsCert: config.coordinatorTlsCert, tlsKey: config.coordinatorTlsKey })
    : undefined;
  if (!coordinator) log.warn('no coordinator configured: /readyz reports unavailable');
  else if (shards.length > 1) log.info({ shards: shards.map((s) => s.name) }, 'coordinator shards');
  const serving = await openServingStore(config, log, () => process.kill(process.pid, 'SIGTERM'));
  const store = serving.store;
  log.info({ store: storeKind(config) }, 'record store open');
  const vaults = new VaultService({
    store, environment: config.environment, limits: { apiKeysPerOrg: config.maxApiKeysPerOrg, vaultsPerOrg: config.maxVaultsPerOrg },
    verifyTee: loadTeeVerifier(config.teeRootsFile, config.teeAllowDevRoot),
    ...(coordinator ? { placeVault: (id: string) => coordinator.placement(id) } : {}),
  });
  if (config.teeAllowDevRoot) log.warn('API_TEE_ALLOW_DEV_ROOT: TEE enrolments under a DEV-ONLY attestation root are accepted; never in production');
  const jobs = new VaultJobs(vaults, coordinator, log, undefined, undefined, { perOrganization: config.jobsPerOrganization, leaseMs: config.jobLeaseMs });
  const chains = connectChains(chainBackends(config));
  const transactions = new TransactionService({
    vaults, hasBackend: (chain) => chains.has(chain),
    utxos: async (chain, address) => (await chains.bitcoin(chain)?.utxos(address)) ?? [],
    busyOutputs: (wallet): Promise<Set<string>> => txWorker.busyOutputs(wallet),
  });
  const txWorker = new TransactionWorker({ vaults, transactions, coordinator, chains, log, trustLog: (org) => vaults.trustLog(org), perOrganization: config.jobsPerOrganization, leaseMs: config.jobLeaseMs });
  const emailProvider = emailProviderFromConfig(config);
  const objectStore = objectStoreFromConfig(config);
  const metrics = createMetricsRegistry();
  const platform = await createPlatform(store, { objectDir: join(config.dataDir, 'objects'), ...(emailProvider ? { emailProvider } : {}), ...(objectStore ? { objectStore } : {}), webhookAllowedDestinations: config.webhookAllowedDestinations, webhookSelfAddresses: serviceAddresses(config), onDeliveryOutcome: webhookDeliveryMetrics(metrics), idempotencyWindowMs: config.idempotencyWindowS * 1000 });
  if (config.webhookAllowedDestinations.length) log.warn({ allowed: config.webhookAllowedDestinations }, 'webhooks may reach these non-public or plain-http destinations (API_WEBHOOK_ALLOWED_DESTINATIONS)');
  const app = await buildApp({ config, logger: log, coordinator, vaults, transactions, platform, chains, metrics });
  const address = await app.listen({ host: config.host, port: config.port });
  log.info({ address }, 'api listening');
  // Off the public port (docs/operations.md "Metrics and health"); none unless configured.
  const metricsServer = config.metricsListen ? await serveMetrics(metrics, { listen: config.metricsListen }) : undefined;
  if (metricsServer) log.info({ listen: config.metricsListen, port: metricsServer.port }, 'metrics listening');
  jobs.start();
  txWorker.start();
  platform.deliveries.start();
  // Vault and transaction events, from the vault API's outbox to the linked workspace's webhooks (docs/customers.md).
  const relay = new EventRelay({ store, links: new CustomerLinks(store), deliveries: platform.deliveries, log, audit: platform.audit });
  relay.start();
  const stopPruning = platform.deliveries.startPruning();
  // Member-auth records that can no longer matter (docs/platform/member-auth.md "Retention").
  const stopMemberAuthSweep = new MemberAuthRetention({ store, clock: platform.clock, batch: config.memberAuthSweepBatch, log }).start(config.memberAuthSweepIntervalS * 1000);
  // Payment quotes a day past their expiry (api/payments/payment-quotes.ts), hourly with the sweep.
  const quoteTimer = setInterval(() => {
    pruneQuotes(store, platform.clock()).catch((err: unknown) => log.warn({ category: (err as { code?: string }).code ?? 'error' }, 'payment quote pruning failed'));
    // Idempotency records past their window (api/idempotency.ts).
    pruneIdempotency(store, platform.clock(), platform.idempotencyWindowMs).catch((err: unknown) => log.warn({ category: (err as { code?: string }).code ?? 'error' }, 'idempotency record pruning failed'));
  }, config.memberAuthSweepIntervalS * 1000);
  quoteTimer.unref();
  return {
    log,
    async stop() {
      await jobs.stop();
      await txWorker.stop();
      stopPruning();
      stopMemberAuthSweep();
      clearInterval(quoteTimer);
      await relay.stop();
      await platform.deliveries.stop();
      await platform.endpoints.http.close();
      await app.close();
      await metricsServer?.close();
      coordinator?.close();
      await serving.close();
    },
  };
}, () => settingsUsage('usage: node api/server.js (npm start runs it; docs/operations.md)\nThe API: the vault API and the customer platform API over HTTP.', ApiConfigSchema, 'API_CONFIG_FILE'));
