// Where a payment's platform fee goes on chain (docs/platform/payments.md "Fees on chain"): the
// operator's collector per chain (API_PLATFORM_FEE_COLLECTORS). The tenant's collector is named by the
// tenant's fee schedule (api/fees/fee-schedules.ts). A fee of 0 makes no transfer and needs no collector.
import { chainMap } from '../config.ts';

export interface FeeCollectors {
  /** The operator's fee collector on `chain`, lower case, if configured. */
  platform(chain: string): string | undefined;
}

/** The platform's collectors as configured: `<chain>=<address>,…`. */
export function feeCollectorsOf(c: { platformFeeCollectors?: string | undefined }): FeeCollectors {
  const platform = chainMap(c.platformFeeCollectors);
  return { platform: (chain) => platform[chain]?.toLowerCase() };
}
