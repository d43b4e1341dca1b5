// A tenant's guided setup (docs/platform/tenancy.md "Onboarding"): for each of its two workspaces, what is
// configured and what is missing of the six things a workspace needs (keys, a member-auth application,
// branding, a sending domain, a webhook endpoint, an integration gateway), and which of them the
// environment requires; and the one setup step the service can take without a customer's choice or secret.
import type { RecordRepository } from '../store/record-repository.ts';
import type { BrandingService } from '../branding/branding-service.ts';
import type { Actor } from './audit-log.ts';
import type { GatewayReadiness } from './gateway-readiness.ts';
import type { TenancyService, WorkspaceRecord, WorkspaceStatus, Environment } from './tenancy-service.ts';
import { BRANDING, EMAIL_DOMAINS } from '../branding/collections.ts';
import { WEBHOOK_ENDPOINTS } from '../webhooks/collections.ts';
import { COLLECTIONS as MEMBER_AUTH } from '../member-auth/member-auth-records.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Scope } from './scope.ts';

export const ONBOARDING_ITEMS = ['keys', 'member_auth_application', 'branding', 'sending_domain', 'webhook_endpoint', 'gateway'] as const;
export type OnboardingItemName = (typeof ONBOARDING_ITEMS)[number];

export interface OnboardingItem {
  item: OnboardingItemName;
  configured: boolean;
  /** Whether the environment is ready only with it. */
  required: boolean;
  detail: string;
  /** The call (or the operator's step) that configures it; null once configured. */
  next: string | null;
}

export interface EnvironmentStatus {
  environment: Environment;
  workspace_id: string;
  status: WorkspaceStatus;
  /** Active, and every required item configured. */
  ready: boolean;
  items: OnboardingItem[];
}

export interface OnboardingStatus { tenant_id: string; current_workspace_id: string; environments: EnvironmentStatus[] }

/**
 * Sandbox needs what an integration is built against (a key, a member-auth application, a webhook
 * endpoint); its look, its mail sender and its rail default to the platform's. Production needs all six.
 */
const REQUIRED: Record<Environment, ReadonlySet<OnboardingItemName>> = {
  sandbox: new Set(['keys', 'member_auth_application', 'webhook_endpoint']),
  production: new Set(ONBOARDING_ITEMS),
};

const NEXT: Record<OnboardingItemName, string> = {
  keys: 'the operator makes the workspace\'s keys (npm run admin -- key create)',
  member_auth_application: 'PUT /v1/tenant/member-auth/application or POST /v1/tenant/member-auth/applications/hosted',
  branding: 'PUT /v1/branding (or POST /v1/onboarding/setup for the defaults)',
  sending_domain: 'POST /v1/branding/email-domains, then POST /v1/branding/email-domains/{id}/verify',
  webhook_endpoint: 'POST /v1/webhook-endpoints',
  gateway: 'POST /v1/integration-gateways, then a passing conformance run',
};

export interface SetupResult { made: OnboardingItemName[]; status: OnboardingStatus }

export class Onboarding {
  constructor(private readonly o: { store: RecordRepository; tenancy: TenancyService; branding: BrandingService; gateways: GatewayReadiness }) {}

  /**
   * Both workspaces of the caller's tenant. Of the other workspace it says only whether each item is
   * configured: no record of it (no id, URL or domain) is named, as environments are separate.
   */
  async status(scope: Scope): Promise<OnboardingStatus> {
    const workspaces = (await this.o.tenancy.workspaces(scope.tenant)).sort((a, b) => (a.environment === b.environment ? 0 : a.environment === 'sandbox' ? -1 : 1));
    return { tenant_id: scope.tenant, current_workspace_id: scope.workspace, environments: await Promise.all(workspaces.map((w) => this.environment(w))) };
  }

  private async environment(w: WorkspaceRecord): Promise<EnvironmentStatus> {
    const found = await this.items(w);
    const items = ONBOARDING_ITEMS.map((item): OnboardingItem => {
      const { configured, detail } = found[item];
      return { item, configured, required: REQUIRED[w.environment].has(item), detail, next: configured ? null : NEXT[item] };
    });
    const status = w.status ?? 'active';
    return { environment: w.environment, workspace_id: w.id, status, ready: status === 'active' && items.every((i) => i.configured || !i.required), items };
  }

  private async items(w: WorkspaceRecord): Promise<Record<OnboardingItemName, { configured: boolean; detail: string }>> {
    const { store } = this.o;
    const under = `${w.id}\x00`;
    const [key, apps, branding, domains, endpoints, gateway] = await Promise.all([
      this.o.tenancy.hasActiveKey(w.id),
      MEMBER_AUTH.applications.in(store).byIndex(under, 20),
      BRANDING.in(store).get(w.id),
      EMAIL_DOMAINS.in(store).byIndex(under, 100),
      WEBHOOK_ENDPOINTS.in(store).byIndex(under, 100),
      this.o.gateways.check(w),
    ]);
    const verified = domains.filter((d) => d.status === 'verified').length;
    const enabled = endpoints.filter((e) => e.enabled).length;
    const kinds = [...new Set(apps.map((a) => a.kind))].sort().join(' and ');
    return {
      keys: { configured: key, detail: key ? 'the workspace has an active bearer key' : 'the workspace has no active bearer key' },
      member_auth_application: { configured: apps.length > 0, detail: apps.length > 0 ? `a ${kinds} application is registered` : 'no member-auth application is registered' },
      branding: branding?.theme.brand_name ? { configured: true, detail: 'the theme names the brand' } : { configured: false, detail: 'the theme names no brand: members see the platform default' },
      sending_domain: verified > 0 ? { configured: true, detail: `${verified} verified sending domain(s)` }
        : { configured: false, detail: domains.length > 0 ? 'no sending domain is verified yet' : 'no sending domain: mail goes from the platform sender' },
      webhook_endpoint: enabled > 0 ? { configured: true, detail: `${enabled} enabled webhook endpoint(s)` }
        : { configured: false, detail: endpoints.length > 0 ? 'every webhook endpoint is disabled' : 'no webhook endpoint' },
      gateway,
    };
  }

  /**
   * POST /v1/onboarding/setup, on the key's own workspace: makes the defaults that need no choice or
   * secret of the customer, each only when missing, so a rerun makes nothing. Today one: the branding
   * theme's `brand_name`, `app_title` and `from_name` become the tenant's name (an audited
   * `branding.update`), so members stop seeing the platform's name. Keys, applications, domains,
   * endpoints and gateways need the customer's origins, URLs, domains or secrets: the status says how
   * to make each. Runs under the workspace's setup lock, so concurrent runs make the defaults once.
   */
  async setup(scope: Scope, actor: Actor): Promise<SetupResult> {
    const made: OnboardingItemName[] = [];
    await this.o.store.exclusive(`onboarding:${scope.workspace}`, async () => {
      const tenant = await this.o.tenancy.tenant(scope.tenant);
      if (!tenant) throw new CustodyError('bug', 'the key names a tenant that does not exist');
      const theme = (await BRANDING.in(this.o.store).get(scope.workspace))?.theme ?? {};
      if (theme.brand_name) return;
      const patch = Object.fromEntries(['brand_name', 'app_title', 'from_name'].filter((f) => !theme[f]).map((f) => [f, tenant.name]));
      try {
        await this.o.branding.patch(scope, actor, patch);
      } catch (err) {
        // A tenant name the theme's text rules refuse (the operator's choice) leaves branding to the customer.
        if (err instanceof CustodyError && err.code === 'validation_failed') return;
        throw err;
      }
      made.push('branding');
    });
    return { made, status: await this.status(scope) };
  }
}
