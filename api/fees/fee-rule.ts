// Fee rules and the fee of one payment (docs/platform/fees.md "Rules"): pure functions over bigints, no
// store and no clock. A rule's fee for an amount is clamp(fixed + floor(amount * bps / 10000), min, max);
// the rule applied to a payment is the most specific one matching its kind and asset, and two rules that
// could both be the most specific for one payment are refused when the schedule is created, so the choice
// never depends on the order rules were written in.
import type { FieldError } from '../validation.ts';
import { parseAsset, parseBaseUnits } from './base-units.ts';

export const PAYMENT_KINDS = ['transfer', 'payment_request', 'escrow'] as const;
export type PaymentKind = (typeof PAYMENT_KINDS)[number];

export const MAX_BASIS_POINTS = 10_000;
export const MAX_RULES = 50;

export interface FeeRule {
  payment_kind: PaymentKind | '*';
  /** An asset id (base-units.ts) or `*`. */
  asset: string;
  basis_points: number;
  fixed: bigint;
  min: bigint;
  /** null: no upper bound. */
  max: bigint | null;
}

/** A rule as the API carries it: amounts as digit strings. */
export interface FeeRuleJson {
  payment_kind: string;
  asset: string;
  basis_points: number;
  fixed: string;
  min: string;
  max: string | null;
}

/** clamp(fixed + floor(amount * bps / 10000), min, max). Amounts are non-negative, so `/` is the floor. */
export function ruleFee(rule: Pick<FeeRule, 'basis_points' | 'fixed' | 'min' | 'max'>, amount: bigint): bigint {
  const raw = rule.fixed + (amount * BigInt(rule.basis_points)) / BigInt(MAX_BASIS_POINTS);
  const low = raw < rule.min ? rule.min : raw;
  return rule.max !== null && low > rule.max ? rule.max : low;
}

/** How specific a rule is: one for each of kind and asset it names exactly. */
type Matchable = { payment_kind: string; asset: string };

export const specificity = (r: Matchable) => (r.payment_kind === '*' ? 0 : 1) + (r.asset === '*' ? 0 : 1);

export const ruleMatches = (r: Matchable, kind: PaymentKind, asset: string) =>
  (r.payment_kind === '*' || r.payment_kind === kind) && (r.asset === '*' || r.asset === asset);

/** The most specific rule matching the payment, undefined when none does. Rules passed checkRules, so it is unique. */
export function matchRule<R extends Matchable>(rules: readonly R[], kind: PaymentKind, asset: string): R | undefined {
  let best: R | undefined;
  for (const r of rules) if (ruleMatches(r, kind, asset) && (!best || specificity(r) > specificity(best))) best = r;
  return best;
}

/** Whether some payment matches both rules (each field equal, or `*` on either side). */
const overlap = (a: Matchable, b: Matchable) =>
  (a.payment_kind === '*' || b.payment_kind === '*' || a.payment_kind === b.payment_kind) && (a.asset === '*' || b.asset === '*' || a.asset === b.asset);

/**
 * The rules checked and parsed, or every rejected field (`rules[i].field`): kinds and assets, basis points
 * 0 to 10000, amounts as base-unit strings, min <= max, and no two rules equally specific for one payment
 * (the same kind and asset, or one naming only the kind and the other only the asset).
 */
export function checkRules(input: readonly FeeRuleJson[]): { rules: FeeRule[]; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const rules: FeeRule[] = [];
  if (input.length < 1 || input.length > MAX_RULES) errors.push({ field: 'rules', reason: `1 to ${MAX_RULES} rules` });
  input.forEach((r, i) => {
    const at = (f: string) => `rules[${i}].${f}`;
    const kind = r.payment_kind === '*' || (PAYMENT_KINDS as readonly string[]).includes(r.payment_kind) ? (r.payment_kind as FeeRule['payment_kind']) : undefined;
    if (!kind) errors.push({ field: at('payment_kind'), reason: `one of ${PAYMENT_KINDS.join(', ')} or *` });
    const asset = r.asset === '*' ? '*' : parseAsset(r.asset)?.id;
    if (!asset) errors.push({ field: at('asset'), reason: 'an asset id, <chain>:native or <chain>:0x<token contract>, or *' });
    if (!Number.isInteger(r.basis_points) || r.basis_points < 0 || r.basis_points > MAX_BASIS_POINTS) errors.push({ field: at('basis_points'), reason: `an integer from 0 to ${MAX_BASIS_POINTS}` });
    const amount = (f: 'fixed' | 'min' | 'max', v: string) => {
      const n = parseBaseUnits(v);
      if (n === undefined) errors.push({ field: at(f), reason: 'base units: decimal digits without leading zeros, at most 78' });
      return n;
    };
    const fixed = amount('fixed', r.fixed);
    const min = amount('min', r.min);
    const max = r.max === null ? null : amount('max', r.max);
    if (min !== undefined && max !== undefined && max !== null && min > max) errors.push({ field: at('max'), reason: 'must be at least min' });
    if (kind && asset && fixed !== undefined && min !== undefined && max !== undefined) rules.push({ payment_kind: kind, asset, basis_points: r.basis_points, fixed, min, max });
  });
  if (rules.length === input.length) {
    for (let i = 0; i < rules.length; i++) {
      for (let j = i + 1; j < rules.length; j++) {
        const a = rules[i]!;
        const b = rules[j]!;
        // Equally specific and overlapping: the same pair, or kind-only against asset-only, whose one
        // common payment a rule naming both would settle.
        const settled = a.payment_kind !== b.payment_kind && rules.some((r) => r.payment_kind !== '*' && r.asset !== '*'
          && r.payment_kind === (a.payment_kind === '*' ? b.payment_kind : a.payment_kind) && r.asset === (a.asset === '*' ? b.asset : a.asset));
        if (overlap(a, b) && specificity(a) === specificity(b) && !settled) {
          const same = a.payment_kind === b.payment_kind && a.asset === b.asset;
          errors.push({ field: `rules[${j}]`, reason: same ? `the same payment_kind and asset as rules[${i}]: remove one`
            : `as specific as rules[${i}] for a ${a.payment_kind === '*' ? b.payment_kind : a.payment_kind} payment of ${a.asset === '*' ? b.asset : a.asset}: add a rule naming both, or remove one` });
        }
      }
    }
  }
  return { rules, errors };
}

export const ruleJson = (r: FeeRule): FeeRuleJson => ({ payment_kind: r.payment_kind, asset: r.asset, basis_points: r.basis_points, fixed: r.fixed.toString(), min: r.min.toString(), max: r.max === null ? null : r.max.toString() });
export const ruleOfJson = (r: FeeRuleJson): FeeRule => ({ payment_kind: r.payment_kind as FeeRule['payment_kind'], asset: r.asset, basis_points: r.basis_points, fixed: BigInt(r.fixed), min: BigInt(r.min), max: r.max === null ? null : BigInt(r.max) });
