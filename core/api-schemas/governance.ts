// What the vault API answers for a vault's governance: a key export (docs/export.md "API") and a vault's
// policy (docs/policies.md "The API"). Shared by the API, which stores and answers them, and the SDK.
import type { PolicyDocument } from '../policy/policy-document.ts';

/** A key export as answered: the customer's signed request, the approvals collected, what the nodes answered. */
export interface VaultExportView {
  /** The request id the customer chose and signed. */
  id: string;
  vault_id: string;
  /** The canonical export request, hex. */
  request: string;
  /** exportRequestHash of the request, hex: what approvers sign. */
  request_sha256: string;
  recipient_key: string;
  /** Unix seconds, as signed. */
  not_before: number;
  /** waiting: some node has not sealed; sealed: at least `threshold` nodes sealed their share. */
  state: 'waiting' | 'sealed';
  approvals: { approver_key: string; signature: string; created_at: string }[];
  /** Each member's last answer: waiting (with when it seals), sealed, or failed (with its code). */
  nodes: { node_id: string; status: 'waiting' | 'sealed' | 'failed'; ready_at: number | null; code: string | null }[];
  /** Sealed shares, hex, as the nodes returned them: only the recipient's private key opens them. */
  shares: { node_id: string; party: number; enc: string; ciphertext: string }[];
  threshold: number | null;
  created_at: string;
  updated_at: string;
}

export interface PolicyVersionView {
  version: number;
  sha256: string;
  /** Unix seconds from which it is in force, as the API saw the change (each node counts a loosening's delay from when it first sees it). */
  effective_at: number;
  tightening: boolean;
  policy: PolicyDocument;
}

/** GET /v1/vaults/{vaultId}/policy. */
export interface PolicyView {
  vault_id: string;
  in_force: PolicyVersionView | null;
  pending: PolicyVersionView[];
  refused: { version: number; reason: string }[];
  /** The head of the vault's intent chain: the next intent's link follows it. */
  chain: { seq: number; hash: string; until: number; link: string } | null;
  /** The policy fixed at the vault's creation, which the API enforces until a policy is in force. */
  legacy_policy: Record<string, unknown> | null;
  /** The legacy policy as a version-1 document with the same meaning, for the customer to sign (PUT), while the vault has none. */
  migration: PolicyDocument | null;
}
