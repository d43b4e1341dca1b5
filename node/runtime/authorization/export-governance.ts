// What governs a vault's key export on this node (docs/export.md): how many approvals of which approver
// keys it needs, and how long after a node first sees the customer's request it waits before sealing
// its share. A node reads this from its own view, never from the request or the coordinator. Until
// the customer's policy document (docs/policies.md) names an `export` section, the default applies:
// no approvals (k = 0) and the delay of NODE_EXPORT_DELAY_SECONDS.

/** The export rules of one vault as this node sees them now. */
export interface ExportRules {
  /** Distinct approvals needed (0: none). */
  k: number;
  /** Ed25519 public keys (32 bytes) whose approvals count. */
  approverKeys: Uint8Array[];
  /** Seconds between the start of the delay on this node and the sealing of its share. */
  delaySeconds: number;
}

export interface ExportGovernance {
  forVault(owner: string, vaultId: string): ExportRules | Promise<ExportRules>;
}

/** 24 hours: long enough for a customer to notice an export it did not start (the webhook at its start). */
export const DEFAULT_EXPORT_DELAY_SECONDS = 24 * 3600;

/** The rules without a policy: no approvals, the configured delay. */
export function defaultExportGovernance(delaySeconds = DEFAULT_EXPORT_DELAY_SECONDS): ExportGovernance {
  if (!Number.isSafeInteger(delaySeconds) || delaySeconds < 0) throw new Error('the export delay is whole non-negative seconds');
  return { forVault: () => ({ k: 0, approverKeys: [], delaySeconds }) };
}
