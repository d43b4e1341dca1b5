// Whether a new policy only tightens the one in force (docs/policies.md "Changing a policy"): a change
// that tightens applies at once; anything else is a loosening and waits out the current policy's
// `change_delay_seconds`. The comparison is conservative: a change this module cannot prove tighter, rule
// by rule, counts as loosening.
import type { PolicyDocument, Quorum } from './policy-document.ts';

const sub = <T>(a: readonly T[] | undefined, b: readonly T[] | undefined) => (a ?? []).every((x) => (b ?? []).includes(x));

/** `next` caps are at least as strict as `prev`: every asset capped before is capped no higher now. */
function capsTighter(prev: Record<string, string> | undefined, next: Record<string, string> | undefined): boolean {
  if (!prev) return true;
  return Object.entries(prev).every(([a, cap]) => next !== undefined && Object.hasOwn(next, a) && BigInt(next[a]!) <= BigInt(cap));
}

/** A quorum of `next` that demands at least what `q` demanded, of the same or fewer approvers, in the same case or more. */
function quorumKept(q: Quorum, next: PolicyDocument): boolean {
  return (next.quorums ?? []).some((n) => {
    if (n.k < q.k || !sub(n.approvers, q.approvers)) return false;
    if ('rule' in q.when) return 'rule' in n.when && (n.when.rule === q.when.rule || n.when.rule === 'any');
    if ('rule' in n.when) return n.when.rule === 'any';
    const prevAbove = q.when.above;
    const nextAbove = n.when.above;
    return Object.entries(prevAbove).every(([a, t]) => Object.hasOwn(nextAbove, a) && BigInt(nextAbove[a]!) <= BigInt(t));
  });
}

/** Whether an approver id means the same key in both policies (a re-keyed id is a new approver). */
const sameApprovers = (prev: PolicyDocument, next: PolicyDocument) =>
  (next.approvers ?? []).every((a) => { const p = prev.approvers?.find((x) => x.id === a.id); return p === undefined || (p.public_key === a.public_key && p.member === a.member); });

/** True when `next` allows nothing `prev` refused, rule by rule; false means a loosening. */
export function isTightening(prev: PolicyDocument, next: PolicyDocument): boolean {
  if (prev.default_deny && !next.default_deny) return false;
  if (next.change_delay_seconds < prev.change_delay_seconds) return false;
  if (!capsTighter(prev.per_transaction_cap, next.per_transaction_cap)) return false;
  if (prev.rolling_window) {
    const p = prev.rolling_window;
    const n = next.rolling_window;
    if (!n || n.seconds < p.seconds || !capsTighter(p.caps, n.caps)) return false;
  }
  if (prev.recipient_allowlist && !(next.recipient_allowlist && sub(next.recipient_allowlist, prev.recipient_allowlist))) return false;
  if (!sub(prev.recipient_denylist, next.recipient_denylist)) return false;
  if (prev.asset_allowlist && !(next.asset_allowlist && sub(next.asset_allowlist, prev.asset_allowlist))) return false;
  if (prev.contract_calls || (prev.default_deny && next.contract_calls)) {
    const allowed = next.contract_calls ?? [];
    const before = prev.contract_calls ?? [];
    // Every (contract, selector) allowed now was allowed before.
    if (!allowed.every((n) => before.some((p) => p.chain === n.chain && p.contract === n.contract && sub(n.selectors, p.selectors)))) return false;
    if (!next.contract_calls && !next.default_deny) return false;
  }
  if (!sameApprovers(prev, next)) return false;
  if (!(prev.quorums ?? []).every((q) => quorumKept(q, next))) return false;
  if (prev.export) {
    const p = prev.export;
    const n = next.export;
    if (!n || n.approvers_k < p.approvers_k || n.delay_seconds < p.delay_seconds || !sub(n.approvers, p.approvers)) return false;
  }
  return true;
}
