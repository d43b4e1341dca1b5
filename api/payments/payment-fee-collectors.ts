// Where a payment's fees go on chain (docs/platform/payments.md "Fees on chain"): the platform's collector
// per chain (API_PLATFORM_FEE_COLLECTORS) and the tenant's per workspace and chain
// (API_TENANT_FEE_COLLECTORS). A fee of 0 makes no transfer and needs no collector.
import { chainMap } from '../config.ts';

export interface FeeCollectors {
  /** The operator's fee collector on `chain`, lower case, if configured. */
  platform(chain: string): string | undefined;
  /** The tenant's fee collector for `workspace` on `chain`, lower case, if configured. */
  tenant(workspace: string, chain: string): string | undefined;
}

/** The collectors as configured: `<chain>=<address>,…` for the platform; `<workspace>/<chain>=<address>,…` for tenants. */
export function feeCollectorsOf(c: { platformFeeCollectors?: string | undefined; tenantFeeCollectors?: string | undefined }): FeeCollectors {
  const platform = chainMap(c.platformFeeCollectors);
  const tenant = chainMap(c.tenantFeeCollectors);
  return {
    platform: (chain) => platform[chain]?.toLowerCase(),
    tenant: (workspace, chain) => tenant[`${workspace}/${chain}`]?.toLowerCase(),
  };
}
