// Roles of a workspace bearer key and the permissions each grants (docs/platform/tenancy.md).
export const PERMISSIONS = [
  'branding.manage',
  'branding.email_domain.manage',
  'webhook.read',
  'webhook.create',
  'webhook.update',
  'webhook.rotate',
  'webhook.test',
  'webhook.delete',
  'webhook.replay',
  'wallet.read',
  'wallet.decommission',
  'member_auth.read',
  'member_auth.manage',
  /** A BFF's member-session operations (proof exchange, session, refresh, sign-out). */
  'member_auth.session',
  'account_holder.read',
  'account_holder.manage',
  'funding.read',
  'funding.manage',
  'fee_schedule.read',
  'fee_schedule.manage',
  'payment.read',
  'payment.manage',
  'escrow.read',
  'escrow.manage',
  'tenant.read',
  /** The workspace's own name and status (suspend, reactivate) and its onboarding defaults: owners and admins only. */
  'tenant.manage',
  /** Tokens, their operations, authorities: read (docs/platform/tokenization.md). */
  'tokenization.read',
  /** Authorities and their proofs and control Safes, token deployments (service gas, new governance). */
  'tokenization.manage',
  /** Proposing a token's operations and submitting owner signatures for them. */
  'tokenization.operate',
  /** Integration gateways and their history, conformance runs and pins: read (docs/platform/gateways.md). */
  'gateway.read',
  /** Creating and changing integration gateways: where a workspace's fiat goes (owner and admin only). */
  'gateway.manage',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const ROLES = {
  owner: PERMISSIONS,
  admin: PERMISSIONS,
  // Decommissioning a wallet cannot be undone: owners and admins only (docs/platform/wallets.md). Fee
  // schedules set what every payment costs: owners and admins only (docs/platform/fees.md). Deploying a token
  // spends the service deployer's gas and sets who governs it, and an authority speaks for the tenant as an
  // issuer: tokenization.manage is owners' and admins' only; a developer proposes operations and submits
  // signatures (nothing executes without the Safe owners' signatures) (docs/platform/tokenization.md). An
  // integration gateway is where a workspace's fiat goes: gateway.manage is owners' and admins' only
  // (docs/platform/gateways.md).
  developer: ['webhook.read', 'webhook.create', 'webhook.update', 'webhook.rotate', 'webhook.test', 'webhook.delete', 'webhook.replay', 'wallet.read', 'member_auth.read', 'member_auth.manage', 'member_auth.session', 'account_holder.read', 'account_holder.manage', 'funding.read', 'funding.manage', 'fee_schedule.read', 'payment.read', 'payment.manage', 'escrow.read', 'escrow.manage', 'tenant.read', 'tokenization.read', 'tokenization.operate', 'gateway.read'],
  brand_manager: ['branding.manage', 'branding.email_domain.manage', 'tenant.read'],
  viewer: ['webhook.read', 'wallet.read', 'member_auth.read', 'account_holder.read', 'funding.read', 'fee_schedule.read', 'payment.read', 'escrow.read', 'tenant.read', 'tokenization.read', 'gateway.read'],
  // A customer backend (BFF) that holds member sessions and nothing else (platform-api.md, Hosted Auth rule 12).
  member_auth: ['member_auth.session'],
} as const satisfies Record<string, readonly Permission[]>;
export type Role = keyof typeof ROLES;

export function isRole(r: string): r is Role {
  return Object.hasOwn(ROLES, r);
}

export function roleAllows(role: Role, p: Permission): boolean {
  return (ROLES[role] as readonly Permission[]).includes(p);
}
