// The integration gateways' collections (docs/platform/gateways.md, docs/api-storage.md "The interface").
import { collection } from '../store/collection.ts';
import type { ConformanceCallbackRecord, ConformanceRunRecord, GatewayEventRecord, GatewayRecord, GatewayTransferRecord } from './gateway-records.ts';

/** Indexes `<workspace> NUL <id>`, and `active NUL <workspace> NUL <id>` while active. */
export const INTEGRATION_GATEWAYS = collection<GatewayRecord>('integration_gateways');
/** Append-only; index `<gateway id> NUL <event id>`. */
export const GATEWAY_EVENTS = collection<GatewayEventRecord>('integration_gateway_events');
/** Never changed; index `<gateway id> NUL <run id>`. */
export const GATEWAY_CONFORMANCE_RUNS = collection<ConformanceRunRecord>('integration_gateway_conformance_runs');
/** `<gateway id>/<reference>` → the transfer the gateway answered for it. */
export const GATEWAY_TRANSFERS = collection<GatewayTransferRecord>('integration_gateway_transfers');
/** `<gateway id>/<reference>` → a callback for a conformance run's transfer (the run reads and deletes it). */
export const GATEWAY_CONFORMANCE_CALLBACKS = collection<ConformanceCallbackRecord>('integration_gateway_conformance_callbacks');
/** `<gateway id>` → the last call failure recorded in its history: repeats are recorded once a minute. */
export const GATEWAY_FAILURE_MARKS = collection<{ v: 1; category: string; at: number }>('integration_gateway_failure_marks');
