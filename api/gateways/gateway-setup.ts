// The integration gateways as the configuration describes them (docs/platform/gateways.md
// "Configuration"): the service's gateway key (derived from the server's webhook seed), the webhooks'
// destination policy for every call, the call timeout and the conformance run's callback wait.
import type { ApiConfig } from '../config.ts';
import type { Platform } from '../platform.ts';
import { ReplayGuard } from '../auth/replay-guard.ts';
import type { HostLookup } from '../webhooks/outbound-http.ts';
import { GatewayClient, serviceGatewayKey } from './gateway-client.ts';
import { GatewayService } from './gateway-service.ts';

export function createGateways(config: ApiConfig, platform: Platform, opts: { callbackOrigin?: () => string; lookup?: HostLookup } = {}): GatewayService {
  const client = new GatewayClient({
    key: serviceGatewayKey(platform.keys.webhookSeed), policy: platform.endpoints.http.policy, lookup: opts.lookup,
    timeoutMs: config.gatewayTimeoutMs, now: () => Math.floor(platform.clock() / 1000),
  });
  const origin = config.publicUrl ?? `http://localhost:${config.port}`;
  return new GatewayService({
    store: platform.store, cursors: platform.cursors, audit: platform.audit, deliveries: platform.deliveries, client, policy: platform.endpoints.http.policy,
    replayGuard: new ReplayGuard(platform.store), callbackOrigin: opts.callbackOrigin ?? (() => origin), callbackWaitMs: config.gatewayCallbackWaitMs, clock: platform.clock,
  });
}
