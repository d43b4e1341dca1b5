// What the onboarding status (docs/platform/tenancy.md "Onboarding") reports of a workspace's integration
// gateway: the one question it asks the gateway records, kept to one method so that whichever store holds
// them answers it: the gateway service (api/gateways/gateway-service.ts `check`): an active gateway that serves.
import type { WorkspaceRecord } from './tenancy-service.ts';

export interface GatewayReadiness {
  /** Whether the workspace has a gateway that may carry its traffic, and a sentence saying why or why not. */
  check(workspace: WorkspaceRecord): Promise<{ configured: boolean; detail: string }>;
}

export const NO_GATEWAYS: GatewayReadiness = {
  check: () => Promise.resolve({ configured: false, detail: 'this service has no integration gateways yet' }),
};
