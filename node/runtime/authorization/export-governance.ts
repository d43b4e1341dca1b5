// What governs a vault's key export on this node (docs/export.md): how many approvals of which approver
// keys it needs, and how long after a node first sees the customer's request it waits before sealing
// its share. A node reads this from its own view, never from the request or the coordinator: the vault's
// policy in force (docs/policies.md) when it names an `export` section; otherwise the default:
// no approvals (k = 0) and the delay of NODE_EXPORT_DELAY_SECONDS.
import { hexToBytes } from '@noble/hashes/utils.js';
import { exportGovernance } from '../../../core/policy/policy-document.ts';
import type { TrustRegistry } from './trust-registry.ts';
import { vaultPolicy } from './trust-state.ts';

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

/**
 * The rules from the vault's policy in force on this node (its own verified trust log, docs/policies.md
 * "Export") when the policy has an `export` section; `fallback` otherwise.
 */
export function policyExportGovernance(trust: Pick<TrustRegistry, 'state'>, fallback: ExportGovernance, now: () => number = Date.now): ExportGovernance {
  return {
    async forVault(owner, vaultId) {
      const policy = vaultPolicy(await trust.state(owner), vaultId, Math.floor(now() / 1000));
      const rules = exportGovernance(policy?.doc);
      if (!rules) return fallback.forVault(owner, vaultId);
      return { k: rules.k, approverKeys: rules.approverKeys.map((a) => hexToBytes(a.publicKey)), delaySeconds: rules.delaySeconds };
    },
  };
}
