// The policy evaluator (docs/policies.md "Rules"): given a vault's policy, an intent, the approvals
// collected for it and the vault's earlier spends, allow or refuse with a reason code and words. Pure
// and sans-IO: the API runs it for a fast answer, every signer node runs it again before it signs, on
// what it verified itself.
import { bytesToHex } from '@noble/hashes/utils.js';
import type { Intent } from '../intents/intent.ts';
import { normalizeRecipient, type PolicyDocument, type Quorum } from './policy-document.ts';
import { intentApprovalMessage, verifyApproval, type Approval } from './policy-approval.ts';

/** One movement of the vault's value an intent makes. */
export interface Transfer {
  asset: string;
  recipient: string;
  amount: bigint;
}

/** A contract call an intent makes (EVM): the contract and the 4-byte selector, or null for data shorter than one. */
export interface ContractCall {
  chain: string;
  contract: string;
  selector: string | null;
}

export interface IntentEffects {
  transfers: Transfer[];
  call?: ContractCall;
}

/** A spend counted against a window: `at` is the latest time (Unix seconds) it may have been made. */
export interface Spend {
  asset: string;
  amount: bigint;
  at: number;
}

export const ERC20_TRANSFER = '0xa9059cbb';
export const ERC20_APPROVE = '0x095ea7b3';

const hex = (b: Uint8Array) => `0x${bytesToHex(b)}`;

/** transfer(address,uint256) or approve(address,uint256) calldata, decoded; undefined for anything else. */
export function decodeErc20Call(data: Uint8Array): { selector: string; to: string; amount: bigint } | undefined {
  if (data.length !== 68) return undefined;
  const selector = hex(data.subarray(0, 4));
  if (selector !== ERC20_TRANSFER && selector !== ERC20_APPROVE) return undefined;
  // An address word is 12 zero bytes then 20: anything else is not an ABI-encoded address.
  if (data.subarray(4, 16).some((b) => b !== 0)) return undefined;
  let amount = 0n;
  for (const b of data.subarray(36, 68)) amount = (amount << 8n) | BigInt(b);
  return { selector, to: hex(data.subarray(16, 36)), amount };
}

/**
 * What an intent does with the vault's value. An EVM native transfer moves `amount` to `to`; with
 * calldata it is also a call on `to`, and an ERC-20 `transfer` or `approve` in that calldata moves (or
 * allows moving) the decoded amount of the token `to` to the decoded recipient. A Safe owner's signature
 * is a call on the Safe's target that moves none of the wallet's own value. A Bitcoin transfer moves
 * each output (change is not an output of the intent).
 */
export function intentEffects(intent: Intent): IntentEffects {
  if (intent.kind === 'btc.transfer') {
    const asset = `bitcoin:${intent.network}:native`;
    return { transfers: intent.outputs.map((o) => ({ asset, recipient: normalizeRecipient(o.address), amount: o.amount })) };
  }
  const chain = `eip155:${intent.chainId}`;
  if (intent.kind === 'evm.safe_tx') {
    return { transfers: [], call: { chain, contract: hex(intent.to), selector: intent.data.length >= 4 ? hex(intent.data.subarray(0, 4)) : null } };
  }
  const to = hex(intent.to);
  if (intent.asset.kind === 'erc20') return { transfers: [{ asset: `${chain}:${hex(intent.asset.contract)}`, recipient: to, amount: intent.amount }] };
  const transfers: Transfer[] = [];
  if (intent.amount > 0n || !intent.data.length) transfers.push({ asset: `${chain}:native`, recipient: to, amount: intent.amount });
  if (!intent.data.length) return { transfers };
  const erc20 = decodeErc20Call(intent.data);
  if (erc20) transfers.push({ asset: `${chain}:${to}`, recipient: erc20.to, amount: erc20.amount });
  return { transfers, call: { chain, contract: to, selector: intent.data.length >= 4 ? hex(intent.data.subarray(0, 4)) : null } };
}

export type PolicyRefusalCode =
  | 'asset_not_allowed' | 'recipient_denied' | 'recipient_not_allowed' | 'contract_call_denied' | 'default_deny'
  | 'cap_exceeded' | 'window_exceeded' | 'approval_required' | 'bad_approval' | 'unknown_approver' | 'duplicate_approval';

export interface QuorumStatus {
  /** Index in the policy's quorums. */
  index: number;
  k: number;
  approvers: string[];
  /** Approver ids of the set whose valid approvals are here. */
  approvedBy: string[];
}

export type PolicyDecision =
  | { allow: true; policyVersion: number; quorums: QuorumStatus[] }
  | { allow: false; code: PolicyRefusalCode; message: string; policyVersion: number; quorums?: QuorumStatus[] };

export interface PolicyInput {
  policy: PolicyDocument;
  intent: Intent;
  /** SHA-256 of the intent bytes, lower-case hex. */
  intentHash: string;
  approvals: readonly Approval[];
  /** The vault's earlier spends; those with `at` within the window count. */
  priorSpends: readonly Spend[];
  /** Member approvers whose passkey approvals of this intent verified (passkey-approval.ts). */
  passkeyVerified?: ReadonlySet<string>;
  /** Unix seconds. */
  now: number;
}

/** Totals per asset, in first-seen order. */
function totals(transfers: readonly Transfer[]): Map<string, bigint> {
  const t = new Map<string, bigint>();
  for (const x of transfers) t.set(x.asset, (t.get(x.asset) ?? 0n) + x.amount);
  return t;
}

const has = (r: Record<string, string> | undefined, k: string) => r !== undefined && Object.hasOwn(r, k);

/**
 * Validates the approvals against the policy's approvers (each known, signing this vault, policy version
 * and intent, none twice) and returns the approver ids, or a refusal.
 */
export function checkApprovals(policy: PolicyDocument, message: Uint8Array, approvals: readonly Approval[], passkeyVerified: ReadonlySet<string> = new Set()): { ids: Set<string> } | { code: PolicyRefusalCode; message: string } {
  const ids = new Set<string>();
  for (const a of approvals) {
    const approver = policy.approvers?.find((x) => x.id === a.approver_id);
    if (!approver) return { code: 'unknown_approver', message: `approver ${a.approver_id} is not one of the policy's approvers` };
    if (ids.has(a.approver_id)) return { code: 'duplicate_approval', message: `approver ${a.approver_id} approved twice; k approvals come from k distinct approvers` };
    if (approver.member !== undefined) {
      // Verified before, asynchronously (passkey-approval.ts): a member credential and an assertion.
      if (!passkeyVerified.has(a.approver_id)) return { code: 'bad_approval', message: `the passkey approval of ${a.approver_id} does not verify for this intent, vault and policy version ${policy.version}` };
      ids.add(a.approver_id);
      continue;
    }
    if (a.passkey !== undefined || !verifyApproval(a, message, approver.public_key!)) {
      return { code: 'bad_approval', message: `the approval of ${a.approver_id} does not verify for this intent, vault and policy version ${policy.version}` };
    }
    ids.add(a.approver_id);
  }
  return { ids };
}

/** Whether a quorum applies to these effects. */
function quorumApplies(q: Quorum, effects: IntentEffects, sums: Map<string, bigint>): boolean {
  if ('rule' in q.when) return q.when.rule === 'any' || (q.when.rule === 'contract_call' && effects.call !== undefined);
  const above = q.when.above;
  return [...sums].some(([asset, amount]) => has(above, asset) && amount > BigInt(above[asset]!));
}

/** The policy's answer for an intent (module header). Rules in order; the first refusal wins. */
export function evaluatePolicy(input: PolicyInput): PolicyDecision {
  const { policy, intent, now } = input;
  const v = policy.version;
  const refuse = (code: PolicyRefusalCode, message: string, quorums?: QuorumStatus[]): PolicyDecision => ({ allow: false, code, message, policyVersion: v, ...(quorums ? { quorums } : {}) });
  const effects = intentEffects(intent);
  const sums = totals(effects.transfers);
  const deny = new Set(policy.recipient_denylist ?? []);
  const allow = policy.recipient_allowlist ? new Set(policy.recipient_allowlist) : undefined;
  const named = (asset: string) => policy.asset_allowlist?.includes(asset) || has(policy.per_transaction_cap, asset) || has(policy.rolling_window?.caps, asset);
  for (const t of effects.transfers) {
    if (policy.asset_allowlist && !policy.asset_allowlist.includes(t.asset)) return refuse('asset_not_allowed', `asset ${t.asset} is not on the vault's asset allow list`);
    if (policy.default_deny && !named(t.asset)) return refuse('default_deny', `asset ${t.asset} is named by no rule of the vault's policy, which denies by default`);
    if (deny.has(t.recipient)) return refuse('recipient_denied', `recipient ${t.recipient} is denied by the vault's policy`);
    if (allow && !allow.has(t.recipient)) return refuse('recipient_not_allowed', `recipient ${t.recipient} is not on the vault's allow list`);
  }
  const call = effects.call;
  if (call) {
    if (deny.has(call.contract)) return refuse('recipient_denied', `contract ${call.contract} is denied by the vault's policy`);
    if (allow && !allow.has(call.contract)) return refuse('recipient_not_allowed', `contract ${call.contract} is not on the vault's allow list`);
    if (policy.contract_calls || policy.default_deny) {
      const rule = policy.contract_calls?.find((r) => r.chain === call.chain && r.contract === call.contract);
      if (!rule) return refuse(policy.contract_calls ? 'contract_call_denied' : 'default_deny', `calls to ${call.contract} on ${call.chain} are not allowed by the vault's policy`);
      if (call.selector === null || !rule.selectors.includes(call.selector)) {
        return refuse('contract_call_denied', `function ${call.selector ?? '(no selector)'} of ${call.contract} is not allowed by the vault's policy`);
      }
    }
  }
  for (const [asset, amount] of sums) {
    const cap = policy.per_transaction_cap?.[asset];
    if (has(policy.per_transaction_cap, asset) && amount > BigInt(cap!)) return refuse('cap_exceeded', `amount ${amount} of ${asset} is over the per-transaction cap of ${cap}`);
  }
  const w = policy.rolling_window;
  if (w) {
    const since = now - w.seconds;
    for (const [asset, amount] of sums) {
      if (!has(w.caps, asset)) continue;
      const cap = BigInt(w.caps[asset]!);
      const spent = input.priorSpends.filter((s) => s.asset === asset && s.at > since).reduce((a, s) => a + s.amount, 0n);
      if (spent + amount > cap) return refuse('window_exceeded', `amount ${amount} of ${asset} is over the spend limit: ${spent} already spent of ${cap} per ${w.seconds} s`);
    }
  }
  const checked = checkApprovals(policy, intentApprovalMessage(policy.vault_id, v, input.intentHash), input.approvals, input.passkeyVerified);
  if ('code' in checked) return refuse(checked.code, checked.message);
  const statuses: QuorumStatus[] = [];
  (policy.quorums ?? []).forEach((q, index) => {
    if (!quorumApplies(q, effects, sums)) return;
    statuses.push({ index, k: q.k, approvers: q.approvers, approvedBy: q.approvers.filter((id) => checked.ids.has(id)) });
  });
  const short = statuses.find((s) => s.approvedBy.length < s.k);
  if (short) {
    return refuse('approval_required', `the vault's policy needs ${short.k} approvals from ${short.approvers.join(', ')} for this intent; ${short.approvedBy.length} given`, statuses);
  }
  return { allow: true, policyVersion: v, quorums: statuses };
}
