// The webhooks' collections (docs/platform/webhooks.md), each declared once with its record type
// (docs/api-storage.md, "The interface"). The delivery queue's layout is described in delivery-queue.ts.
import { collection } from '../store/collection.ts';
import type { DeliveryRecord, Envelope } from './delivery-engine.ts';
import type { QueueState } from './delivery-queue.ts';
import type { EndpointRecord } from './webhook-endpoints.ts';

/** Index `<workspace> NUL <endpoint id>`. */
export const WEBHOOK_ENDPOINTS = collection<EndpointRecord>('webhook_endpoints');
/** Index `<workspace> NUL <delivery id>`. */
export const WEBHOOK_DELIVERIES = collection<DeliveryRecord>('webhook_deliveries');
/** Events as emitted, with the workspace they were emitted in. */
export const WEBHOOK_EVENTS = collection<Envelope & { tenant: string; workspace: string }>('webhook_events');
/** `<endpoint>/<due ms, 16 digits>/<delivery id>`: every queued row. */
export const DELIVERY_DUE = collection<{ delivery_id: string }>('delivery_due');
/** `<turn ms, 16 digits>/<endpoint>`: endpoints with queued rows. */
export const DELIVERY_READY = collection<{ endpoint_id: string }>('delivery_ready');
/** `<endpoint>`: its queue's state. */
export const DELIVERY_QUEUES = collection<QueueState>('delivery_queues');
/** The global queue of earlier versions: `<due ms, 16 digits>_<delivery id>`; emptied by the engine's migration. */
export const LEGACY_DELIVERY_QUEUE = collection<{ delivery_id: string }>('delivery_queue');
