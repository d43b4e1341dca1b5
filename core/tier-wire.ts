// Tiers on the coordinator API (proto mpc/v1 Tier) and back: the API sends them, the coordinator reads
// them. Apart from core/tiers.ts so the SDK's tier list does not pull the generated gRPC code.
import { Tier } from '../proto/gen/mpc/v1/coordinator_pb.ts';
import type { TierName } from './tiers.ts';

export const WIRE_TIERS: Record<TierName, Tier> = { hosted: Tier.HOSTED, self: Tier.SELF, customer_tee: Tier.CUSTOMER_TEE };

/** The tier a wire value names, or undefined for an unknown value. */
export function tierFromWire(t: Tier): TierName | undefined {
  return (Object.keys(WIRE_TIERS) as TierName[]).find((name) => WIRE_TIERS[name] === t);
}
