// The compliance part of a payment quote (docs/platform/fees.md "Compliance checks"): each check has an
// enumerated name, a result and, when it fails, an enumerated code; no free text, and nothing about a
// person beyond what its ids and states say. A failed `block` check makes the payment impossible; a failed
// `review` check means it may go ahead only after the tenant's own review.
export const CHECKS = {
  source_holder_active: 'block',
  source_holder_verification: 'review',
  destination_holder_active: 'block',
  destination_holder_verification: 'review',
  destination_holder_wallet: 'block',
  vault_policy: 'block',
  total_within_limit: 'block',
} as const satisfies Record<string, 'block' | 'review'>;
export type CheckName = keyof typeof CHECKS;

export const CHECK_CODES = [
  'account_holder_not_active',
  'verification_not_current',
  'destination_no_wallet',
  'cap_exceeded',
  'policy_forbidden',
  'payment_limit_exceeded',
] as const;
export type CheckCode = (typeof CHECK_CODES)[number];

export interface Check { name: CheckName; result: 'pass' | 'fail'; code: CheckCode | null }
export type ComplianceStatus = 'pass' | 'review' | 'block';

export const pass = (name: CheckName): Check => ({ name, result: 'pass', code: null });
export const fail = (name: CheckName, code: CheckCode): Check => ({ name, result: 'fail', code });

/** block if a blocking check failed, else review if a review check failed, else pass. */
export function complianceStatus(checks: readonly Check[]): ComplianceStatus {
  const failed = checks.filter((c) => c.result === 'fail').map((c) => CHECKS[c.name]);
  return failed.includes('block') ? 'block' : failed.includes('review') ? 'review' : 'pass';
}
