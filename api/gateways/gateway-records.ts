// Integration gateways as stored (docs/platform/gateways.md): a workspace's own payment rail reached over
// HTTPS, the history of what happened to it, its conformance runs and the transfers submitted to it.

export const GATEWAY_STATUSES = ['active', 'suspended', 'disabled'] as const;
export type GatewayStatus = (typeof GATEWAY_STATUSES)[number];

export interface GatewayRecord {
  v: 1;
  /** `gwy_…`; also the rail's name on funding requests and in the ledger. */
  id: string;
  tenant: string;
  workspace: string;
  /** The workspace's environment: sandbox calls the gateway in its sandbox mode, production in live mode. */
  environment: 'sandbox' | 'production';
  name: string;
  /** https origin and optional path prefix; the protocol's paths are appended (`<base_url>/v1/transfers`). */
  base_url: string;
  /** ISO 4217 codes the gateway moves. */
  currencies: string[];
  /** Ed25519 public key (hex) the gateway signs its callbacks with; `keyid` is the gateway's id. */
  callback_public_key: string;
  status: GatewayStatus;
  /** Pinned TLS keys (base64 SHA-256 of the SPKI): the current one, and the next during a rotation. */
  pins: { current: string; next: string | null; pinned_at: string } | null;
  /** The latest finished conformance run. */
  conformance: { run_id: string; suite_version: number; base_url: string; passed: boolean; finished_at: string } | null;
  created_at: string;
  updated_at: string;
}

export const GATEWAY_EVENT_TYPES = ['created', 'updated', 'status_changed', 'pin_changed', 'conformance_run', 'call_failed', 'callback_refused'] as const;
export type GatewayEventType = (typeof GATEWAY_EVENT_TYPES)[number];

/** One entry of a gateway's history (`GET /integration-gateways/{id}/events`); never changed. */
export interface GatewayEventRecord {
  v: 1;
  /** `gev_…`, time-ordered. */
  id: string;
  gateway_id: string;
  tenant: string;
  workspace: string;
  type: GatewayEventType;
  /** Ids, enumerated states, categories and short fixed sentences only: never a body the gateway sent. */
  data: Record<string, string | number | boolean | null>;
  actor: { type: string; id: string };
  created_at: string;
}

export interface ConformanceCheck {
  /** The check's name (docs/platform/gateways.md "Conformance"). */
  name: string;
  passed: boolean;
  /** Why it failed, or what it saw; a sentence of the suite's, never the gateway's text. */
  detail: string;
}

export interface ConformanceRunRecord {
  v: 1;
  /** `gcr_…`. */
  id: string;
  gateway_id: string;
  tenant: string;
  workspace: string;
  suite_version: number;
  base_url: string;
  passed: boolean;
  checks: ConformanceCheck[];
  started_at: string;
  finished_at: string;
}

/**
 * A transfer the gateway answered for, keyed `<gateway id>/<reference>`: what its callbacks are checked
 * against (a gateway reports only on transfers it was given, with the amount it was given).
 */
export interface GatewayTransferRecord {
  v: 1;
  gateway_id: string;
  reference: string;
  transfer_id: string;
  direction: 'pull' | 'push';
  amount: string;
  currency: string;
}

/** A callback received for a conformance run's transfer, keyed `<gateway id>/<reference>`. */
export interface ConformanceCallbackRecord {
  v: 1;
  /** Null: the signature verified; else why it did not (the verifier's sentence). */
  refused: string | null;
  /** The transfer as the callback stated it (only when it parsed). */
  transfer: Record<string, unknown> | null;
  received_at: string;
}
