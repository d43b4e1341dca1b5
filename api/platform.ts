// The platform API's services, built once over one store and handed to the routes.
import type { RecordRepository } from './store/record-repository.ts';
import { AuditLog } from './tenancy/audit-log.ts';
import { MfaTokens } from './tenancy/mfa-tokens.ts';
import { CursorCodec } from './store/pagination.ts';
import { loadServerKeys, type ServerKeys } from './store/server-keys.ts';
import { TenancyService } from './tenancy/tenancy-service.ts';
import { NO_GATEWAYS, type GatewayReadiness } from './tenancy/gateway-readiness.ts';
import { WebhookEndpoints } from './webhooks/webhook-endpoints.ts';
import { DeliveryEngine, type DeliveryOutcome } from './webhooks/delivery-engine.ts';
import { BrandingService } from './branding/branding-service.ts';
import type { ObjectStore } from './adapters/object-store.ts';
import { DirectoryObjectStore } from './adapters/directory-object-store.ts';
import { EmailDomains, type EmailDomainProvider } from './branding/email-domains.ts';
import { createHmac } from 'node:crypto';
import { migrateToPerEnvironment } from './tenancy/environments.ts';
import { DestinationPolicy } from './webhooks/destination-policy.ts';
import { IDEMPOTENCY_WINDOW_MS } from './idempotency.ts';
import type { HostLookup } from './webhooks/outbound-http.ts';

export interface Platform {
  store: RecordRepository;
  keys: ServerKeys;
  tenancy: TenancyService;
  cursors: CursorCodec;
  mfa: MfaTokens;
  audit: AuditLog;
  endpoints: WebhookEndpoints;
  deliveries: DeliveryEngine;
  branding: BrandingService;
  objects: ObjectStore;
  emailDomains: EmailDomains;
  /** What the onboarding status reports of the workspace's integration gateway (api/tenancy/gateway-readiness.ts). */
  gatewayReadiness: GatewayReadiness;
  /** Milliseconds since the epoch. */
  clock: () => number;
  /** How long an Idempotency-Key's record answers (API_IDEMPOTENCY_WINDOW_S; api/idempotency.ts). */
  idempotencyWindowMs: number;
}

export async function createPlatform(store: RecordRepository, opts: { emailProvider?: EmailDomainProvider; objectDir?: string; objectStore?: ObjectStore; clock?: () => number; webhookTimeoutMs?: number; schedule?: number[]; concurrency?: number;
  /** API_WEBHOOK_ALLOWED_DESTINATIONS: destinations allowed besides https to public addresses; none by default. */
  webhookAllowedDestinations?: readonly string[]; webhookSelfAddresses?: readonly string[]; webhookLookup?: HostLookup;
  /** Each delivery attempt's outcome, for the metrics (api/metrics/webhook-metrics.ts). */
  onDeliveryOutcome?: (outcome: DeliveryOutcome) => void;
  /** Uniform in [0, 1) for the retry jitter (Math.random by default). */
  webhookRandom?: () => number;
  /** API_IDEMPOTENCY_WINDOW_S in ms; 24 hours by default. */
  idempotencyWindowMs?: number } = {}): Promise<Platform> {
  const clock = opts.clock ?? Date.now;
  const idempotencyWindowMs = opts.idempotencyWindowMs ?? IDEMPOTENCY_WINDOW_MS;
  const keys = await loadServerKeys(store);
  // Records once kept per tenant (branding, sending domains) become production's (docs/security.md).
  await migrateToPerEnvironment(store, clock);
  const tenancy = new TenancyService(store, clock);
  // Keys made before they were indexed by workspace join the index (GET /v1/workspace-tokens); once.
  await tenancy.prepareIndexes();
  const cursors = new CursorCodec(keys.cursorKey);
  const audit = new AuditLog(store, clock);
  const endpoints = new WebhookEndpoints({ store, cursors, audit, signingSeed: keys.webhookSeed, clock, idempotencyWindowMs, ...(opts.webhookTimeoutMs ? { timeoutMs: opts.webhookTimeoutMs } : {}),
    destinations: DestinationPolicy.fromAllowList(opts.webhookAllowedDestinations ?? []).withSelf(opts.webhookSelfAddresses ?? []), ...(opts.webhookLookup ? { lookup: opts.webhookLookup } : {}) });
  const deliveries = new DeliveryEngine({ store, endpoints, cursors, clock, ...(opts.schedule ? { schedule: opts.schedule } : {}), ...(opts.concurrency ? { concurrency: opts.concurrency } : {}), ...(opts.onDeliveryOutcome ? { onOutcome: opts.onDeliveryOutcome } : {}), ...(opts.webhookRandom ? { random: opts.webhookRandom } : {}) });
  // Rows queued by an earlier version (one global queue) move to their endpoints' queues; idempotent.
  await deliveries.migrate();
  return { store, keys, clock, idempotencyWindowMs, cursors, audit, endpoints, deliveries, emailDomains: new EmailDomains(store, audit, opts.emailProvider, clock), objects: opts.objectStore ?? new DirectoryObjectStore(opts.objectDir ?? 'objects', createHmac('sha256', keys.cursorKey).update('object-store').digest()), branding: new BrandingService(store, audit, keys.cursorKey, clock), tenancy, gatewayReadiness: NO_GATEWAYS, mfa: new MfaTokens(keys.mfaKey, store) };
}
