// A vault's policy versions as its trust log leaves them (docs/policies.md "Changing a policy"), pure so
// the nodes (trust-state.ts) and the API reach the same answer from the same entries:
// - a change names a version higher than every one accepted before (a replay or an older change is
//   ignored);
// - it carries the approvals the policy in force names for policy changes (`when: {rule:
//   "policy_change"}`), over policyChangeApprovalMessage(vault, version in force, new hash);
// - a change that tightens the policy in force takes effect at once; any other waits that policy's
//   `change_delay_seconds`, counted from when the change was signed or, if later, first seen less a
//   grace of ten minutes (a
//   backdated signature gains nothing).
// The policy in force at a time is the highest version whose time has come.
import { CustodyError } from '../errors/custody-error.ts';
import { parsePolicyDocument, policyHash, type PolicyDocument } from './policy-document.ts';
import { policyChangeApprovalMessage, type Approval } from './policy-approval.ts';
import { checkApprovals } from './policy-evaluator.ts';
import { isTightening } from './policy-change.ts';

/** How far before its first sight a reader counts a loosening's delay from its signature's time (applyPolicyChange). */
export const FIRST_SIGHT_GRACE_S = 600;

export interface PolicyVersion {
  doc: PolicyDocument;
  hash: string;
  /** Unix seconds from which it is in force. */
  effectiveAt: number;
  /** Whether it took effect at once as a tightening. */
  tightening: boolean;
}

export interface VaultPolicyRecord {
  /** Accepted versions, ascending; versions superseded by one in force are dropped. */
  versions: PolicyVersion[];
  /** Changes that were not accepted, with why (a node ignores them; the API shows them). */
  refused?: { version: number; reason: string }[];
}

export interface PolicyChange {
  policy: PolicyDocument;
  approvals: Approval[];
}

const APPROVER_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

/** Parses the body of `PUT /v1/vaults/{id}/policy` (`{policy, approvals?}`); throws bad_policy. */
export function parsePolicyChange(body: unknown, vaultId: string): PolicyChange {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new CustodyError('bad_policy', 'the policy change must be a JSON object');
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (k !== 'policy' && k !== 'approvals') throw new CustodyError('bad_policy', `policy change: unknown field ${k}`);
  const policy = parsePolicyDocument(b.policy);
  if (policy.vault_id !== vaultId) throw new CustodyError('bad_policy', `the policy names vault ${policy.vault_id}, not ${vaultId}`);
  const raw = b.approvals ?? [];
  if (!Array.isArray(raw) || raw.length > 64) throw new CustodyError('bad_policy', 'approvals is a list of at most 64');
  const approvals = raw.map((a, i) => {
    const o = a as Record<string, unknown>;
    if (typeof a !== 'object' || a === null || Object.keys(o).some((k) => k !== 'approver_id' && k !== 'signature')
      || typeof o.approver_id !== 'string' || !APPROVER_ID.test(o.approver_id) || typeof o.signature !== 'string' || !/^[0-9a-f]{128}$/.test(o.signature)) {
      throw new CustodyError('bad_policy', `approvals[${i}] is {approver_id, signature (64 bytes hex)}`);
    }
    return { approver_id: o.approver_id, signature: o.signature };
  });
  return { policy, approvals };
}

/** The version in force at `now` (Unix seconds), if any. */
export function policyInForce(rec: VaultPolicyRecord | undefined, now: number): PolicyVersion | undefined {
  if (!rec) return undefined;
  let found: PolicyVersion | undefined;
  for (const v of rec.versions) if (v.effectiveAt <= now && (!found || v.doc.version > found.doc.version)) found = v;
  return found;
}

/** Versions accepted but not yet in force at `now`. */
export function pendingPolicies(rec: VaultPolicyRecord | undefined, now: number): PolicyVersion[] {
  const inForce = policyInForce(rec, now);
  return (rec?.versions ?? []).filter((v) => v.effectiveAt > now && (!inForce || v.doc.version > inForce.doc.version));
}

/**
 * Applies one signed change: `created` is the signature's time, `seen` when this node (or the API) first
 * applied it. Returns the new record (the input is not changed).
 */
export function applyPolicyChange(rec: VaultPolicyRecord | undefined, change: PolicyChange, created: number, seen: number): VaultPolicyRecord {
  const versions = [...(rec?.versions ?? [])];
  const refused = [...(rec?.refused ?? [])];
  const out = (reason: string): VaultPolicyRecord => ({ versions, refused: [...refused, { version: change.policy.version, reason }].slice(-16) });
  const at = Math.max(created, seen);
  const latest = versions.at(-1);
  if (latest && change.policy.version <= latest.doc.version) return out(`version ${change.policy.version} is not above ${latest.doc.version}`);
  const current = policyInForce(rec, at);
  const hash = policyHash(change.policy);
  if (current) {
    const quorums = (current.doc.quorums ?? []).filter((q) => 'rule' in q.when && q.when.rule === 'policy_change');
    const checked = checkApprovals(current.doc, policyChangeApprovalMessage(current.doc.vault_id, current.doc.version, hash), change.approvals);
    if ('code' in checked) return out(checked.message);
    const short = quorums.find((q) => q.approvers.filter((id) => checked.ids.has(id)).length < q.k);
    if (short) return out(`a policy change needs ${short.k} approvals from ${short.approvers.join(', ')}`);
  }
  const tightening = !current || isTightening(current.doc, change.policy);
  // A loosening's delay runs from its signature, when this reader saw it within FIRST_SIGHT_GRACE_S of
  // it; from when it saw it less the grace otherwise. So every node that sees the change soon (a node
  // outside the signing subsets learns it only at its next session) agrees with the API on when it
  // applies, and a backdated signature gains at most the grace.
  const start = Math.max(created, seen - FIRST_SIGHT_GRACE_S);
  versions.push({ doc: change.policy, hash, effectiveAt: tightening ? at : start + current!.doc.change_delay_seconds, tightening });
  // What a version in force supersedes can never be in force again.
  const inForce = policyInForce({ versions }, at);
  return { versions: versions.filter((v) => !inForce || v.doc.version >= inForce.doc.version), ...(refused.length ? { refused } : {}) };
}
