// SDK helpers for vault policies (docs/policies.md): build and approve a policy change, approve an
// intent, and chain an intent after the vault's previous link. Keys stay with the caller: the approver's
// and the API key's secrets are used here, in the customer's process, and never sent.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { parsePolicyDocument, policyHash, type PolicyDocument } from '../../core/policy/policy-document.ts';
import { intentApprovalMessage, policyChangeApprovalMessage, signApproval, type Approval } from '../../core/policy/policy-approval.ts';
import { nextChainLink, signChainLink, type ChainLink } from '../../core/policy/intent-chain.ts';
import { decodeIntent } from '../../core/intents/intent.ts';

export type { Approval, ChainLink, PolicyDocument };

/** An approver's approval of an intent (its exact bytes) under the vault's policy version in force. */
export function approveIntent(o: { vaultId: string; policyVersion: number; intent: Uint8Array; approverId: string; secretKey: Uint8Array }): Approval {
  return signApproval(o.approverId, intentApprovalMessage(o.vaultId, o.policyVersion, bytesToHex(sha256(o.intent))), o.secretKey);
}

/** An approver's approval of replacing policy `fromVersion` with `next` (validated first). */
export function approvePolicyChange(o: { fromVersion: number; next: unknown; approverId: string; secretKey: Uint8Array }): Approval {
  const doc = parsePolicyDocument(o.next);
  return signApproval(o.approverId, policyChangeApprovalMessage(doc.vault_id, o.fromVersion, policyHash(doc)), o.secretKey);
}

/** The body of `PUT /v1/vaults/{id}/policy`, validated: sign it as a request with an API key. */
export function policyChangeBody(next: unknown, approvals: Approval[] = []): { policy: PolicyDocument; approvals: Approval[] } {
  return { policy: parsePolicyDocument(next), approvals };
}

/** The intent's link of the vault's intent chain after `prev` (none: the first), signed with the API key. */
export function chainIntent(o: { vaultId: string; intent: Uint8Array; prev?: ChainLink | undefined; apiSecretKey: Uint8Array }): { link: ChainLink; bytes: Uint8Array } {
  const i = decodeIntent(o.intent);
  const link = nextChainLink({ organization: i.organization, vaultId: o.vaultId, prev: o.prev, intentHash: bytesToHex(sha256(o.intent)), notAfter: i.notAfter });
  return { link, bytes: signChainLink(link, o.apiSecretKey) };
}
