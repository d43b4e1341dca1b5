// The platform fee (docs/platform/fees.md "The platform fee"): the operator's fee on every payment, set
// in the API configuration (API_PLATFORM_FEE_BPS, API_PLATFORM_FEE_FIXED) and read-only to tenants. It is
// a rule for every kind and asset, with no minimum above zero and no maximum. Both settings are digit
// strings checked by a pattern, so a fractional value is refused at boot rather than truncated.
import type { ApiConfig } from '../config.ts';
import type { FeeRule } from './fee-rule.ts';

export type PlatformFee = FeeRule & { payment_kind: '*'; asset: '*' };

export function platformFeeOf(c: Pick<ApiConfig, 'platformFeeBps' | 'platformFeeFixed'>): PlatformFee {
  return Object.freeze({ payment_kind: '*', asset: '*', basis_points: Number(c.platformFeeBps), fixed: BigInt(c.platformFeeFixed), min: 0n, max: null });
}

/** GET /v1/fee-schedules/platform-fee. */
export const platformFeeView = (f: PlatformFee) => ({ basis_points: f.basis_points, fixed: f.fixed.toString(), min: f.min.toString(), max: f.max === null ? null : f.max.toString(), asset: '*' as const });
