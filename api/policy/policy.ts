// Vault policies and spend limits (docs/policies.md): a per-transaction cap, amounts per rolling time
// window, recipient allow and deny lists, and an asset allow list. A policy is fixed when the vault is
// created; every check here is pure over the policy, the transaction and the spends already in the window.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Policy } from '../../core/api-schemas/policy.ts';

// The policy shape (its TypeBox schema) is shared with the SDK: core/api-schemas/policy.ts.
export type { Policy };

/** One movement of value a transaction makes: to whom, which asset, how much (base units). */
export interface Transfer {
  recipient: string;
  asset: string;
  amount: bigint;
}

/** A spend already counted in a vault's rolling window. */
export interface WindowSpend {
  asset: string;
  amount: bigint;
  /** Milliseconds since the epoch. */
  at: number;
}

/** EVM addresses compare case-insensitively; Bitcoin addresses are compared as given (bech32 is lower case). */
export const normalizeRecipient = (r: string) => (/^0x[0-9a-fA-F]{40}$/.test(r) ? r.toLowerCase() : r);

const forbidden = (message: string) => new CustodyError('forbidden', message);

/**
 * Throws 403 `cap_exceeded` or 403 `forbidden` naming the reason when the transfers break the policy.
 * `window` holds the vault's earlier spends that still count (not failed, not rejected).
 */
export function checkPolicy(policy: Policy | null, transfers: Transfer[], window: WindowSpend[], now: number): void {
  if (!policy) return;
  const allow = policy.recipient_allowlist?.map(normalizeRecipient);
  const deny = new Set(policy.recipient_denylist?.map(normalizeRecipient));
  for (const t of transfers) {
    const to = normalizeRecipient(t.recipient);
    if (deny.has(to)) throw forbidden(`recipient ${t.recipient} is denied by the vault's policy`);
    if (allow && !allow.includes(to)) throw forbidden(`recipient ${t.recipient} is not on the vault's allow list`);
    if (policy.asset_allowlist && !policy.asset_allowlist.includes(t.asset)) throw forbidden(`asset ${t.asset} is not allowed by the vault's policy`);
  }
  const totals = new Map<string, bigint>();
  for (const t of transfers) totals.set(t.asset, (totals.get(t.asset) ?? 0n) + t.amount);
  for (const [asset, amount] of totals) {
    const cap = policy.per_transaction_cap?.[asset];
    if (cap !== undefined && amount > BigInt(cap)) throw new CustodyError('cap_exceeded', `amount ${amount} of ${asset} is over the per-transaction cap of ${cap}`);
  }
  const w = policy.rolling_window;
  if (!w) return;
  const since = now - w.seconds * 1000;
  for (const [asset, amount] of totals) {
    const cap = w.caps[asset];
    if (cap === undefined) continue;
    const spent = window.filter((s) => s.asset === asset && s.at > since).reduce((a, s) => a + s.amount, 0n);
    if (spent + amount > BigInt(cap)) {
      throw forbidden(`amount ${amount} of ${asset} is over the spend limit: ${spent} already spent of ${cap} per ${w.seconds} s`);
    }
  }
}

/**
 * A call the wallet authorizes without sending its own funds (a Safe owner's signature on a SafeTx,
 * docs/intents.md "Kind 3"): the recipient lists bound the contract it calls; caps and windows, which
 * count the wallet's own spends, do not apply. Throws 403 `forbidden` naming the reason.
 */
export function checkCallTarget(policy: Policy | null, target: string): void {
  if (!policy) return;
  const to = normalizeRecipient(target);
  if (policy.recipient_denylist?.map(normalizeRecipient).includes(to)) throw forbidden(`call target ${target} is denied by the vault's policy`);
  const allow = policy.recipient_allowlist?.map(normalizeRecipient);
  if (allow && !allow.includes(to)) throw forbidden(`call target ${target} is not on the vault's allow list`);
}
