// Webhook delivery outcomes (docs/operations.md "Metrics and health"): one count per attempt by the
// status it left the row in. No endpoint, URL or workspace in the labels: those are customers'.
import { Counter, type Registry } from 'prom-client';
import type { DeliveryOutcome } from '../webhooks/delivery-engine.ts';

/** The counter, as the `onDeliveryOutcome` callback createPlatform (api/platform.ts) hands the engine. */
export function webhookDeliveryMetrics(registry: Registry): (outcome: DeliveryOutcome) => void {
  const deliveries = new Counter({ name: 'webhook_deliveries_total', help: 'Webhook delivery attempts by outcome: delivered, failed (retried later) or dlq (dead-lettered)', labelNames: ['outcome'], registers: [registry] });
  // Every outcome from zero, so a rate over a fresh process is defined.
  for (const outcome of ['delivered', 'failed', 'dlq'] as const) deliveries.inc({ outcome }, 0);
  return (outcome) => deliveries.inc({ outcome });
}
