// The stored shape of a workspace's member-auth configuration (docs/platform/member-auth.md): allowed
// origins, redirect URLs and applications (one BYO OIDC, any number of Hosted Auth), and the views the
// API answers with. Nothing here is secret: a publishable key is an identifier, the BFF principal a key id.
import type { Environment } from '../tenancy/tenancy-service.ts';
import { collection } from '../store/collection.ts';

export const COLLECTIONS = {
  origins: collection<AllowedOriginRecord>('member_auth_origins'),
  /** `<workspace> NUL <normalized origin>` → the origin's id: one record per origin and workspace. */
  originNames: collection<{ id: string }>('member_auth_origin_names'),
  redirectUrls: collection<RedirectUrlRecord>('member_auth_redirect_urls'),
  /** `<workspace> NUL <normalized url>` → the redirect URL's id. */
  redirectNames: collection<{ id: string }>('member_auth_redirect_names'),
  applications: collection<ApplicationRecord>('member_auth_applications'),
  /** `<workspace>` → the id of its one BYO OIDC application. */
  byo: collection<{ id: string }>('member_auth_byo'),
  /** `<publishable key>` → the application it selects. */
  publishableKeys: collection<PublishableKeyRecord>('member_auth_publishable_keys'),
} as const;

export interface AllowedOriginRecord { id: string; tenant: string; workspace: string; origin: string; created_at: string }
export interface RedirectUrlRecord { id: string; tenant: string; workspace: string; url: string; origin: string; created_at: string }

export interface ByoOidcSettings {
  /** Exactly as configured and as the discovery document names it. */
  issuer: string;
  /** The OIDC client id proofs must be issued to (`aud`). */
  audience: string;
  /** The pinned provider namespace member identities of this application live in; never linked to another. */
  provider_namespace: string;
  jwks_uri: string;
  jwks_thumbprints: string[];
  discovered_at: string;
  /** Oldest provider proof (`auth_time`/`iat`) a member action accepts, in seconds. */
  max_proof_age_sec: number;
  /** A proof must carry one of these `acr` values (none: any). */
  required_acr: string[];
  /** A proof's `amr` must include all of these. */
  required_amr: string[];
}

export type Enrollment = 'invite_only' | 'open';

export interface HostedSettings {
  enrollment: Enrollment;
  /** An allowed origin of the workspace: where the application's pages run. */
  origin: string;
  /** A registered redirect URL: where the one-time Hosted result goes. */
  result_callback_url: string;
  /** The workspace bearer key (the BFF principal) allowed to exchange Hosted results. */
  bff_key_id: string;
  /** Challenge an existing TOTP factor after the email code. */
  require_totp: boolean;
  /**
   * The tenant's opt-in to passkeys enrolled on the Account Center (docs/end-user-auth.md "Account Center
   * passkeys"); absent: off. Turned on only while the organization's customer-signed end-user-auth
   * registration names the service's Account Center key, which is what the nodes enforce.
   */
  account_center_passkeys?: boolean;
}

export type ApplicationKind = 'byo_oidc' | 'hosted';

export interface ApplicationRecord {
  id: string;
  tenant: string;
  workspace: string;
  environment: Environment;
  kind: ApplicationKind;
  /** 1 on creation, one more on every change: sessions created later recheck it. */
  version: number;
  publishable_key: string;
  byo_oidc: ByoOidcSettings | null;
  hosted: HostedSettings | null;
  created_at: string;
  updated_at: string;
}

export interface PublishableKeyRecord { application: string; tenant: string; workspace: string; environment: Environment }

export type ApplicationView = Omit<ApplicationRecord, 'tenant' | 'workspace' | 'hosted'> & { hosted: (HostedSettings & { account_center_passkeys: boolean }) | null };
export type AllowedOriginView = Omit<AllowedOriginRecord, 'tenant' | 'workspace'>;
export type RedirectUrlView = Omit<RedirectUrlRecord, 'tenant' | 'workspace'>;

export function applicationView(a: ApplicationRecord): ApplicationView {
  const { tenant: _t, workspace: _w, ...v } = a;
  return { ...v, hosted: v.hosted ? { ...v.hosted, account_center_passkeys: v.hosted.account_center_passkeys ?? false } : null };
}

export function originView(o: AllowedOriginRecord): AllowedOriginView {
  return { id: o.id, origin: o.origin, created_at: o.created_at };
}

export function redirectUrlView(r: RedirectUrlRecord): RedirectUrlView {
  return { id: r.id, url: r.url, origin: r.origin, created_at: r.created_at };
}
