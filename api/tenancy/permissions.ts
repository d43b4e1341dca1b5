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
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const ROLES = {
  owner: PERMISSIONS,
  admin: PERMISSIONS,
  developer: ['webhook.read', 'webhook.create', 'webhook.update', 'webhook.rotate', 'webhook.test', 'webhook.delete', 'webhook.replay'],
  brand_manager: ['branding.manage', 'branding.email_domain.manage'],
  viewer: ['webhook.read'],
} as const satisfies Record<string, readonly Permission[]>;
export type Role = keyof typeof ROLES;

export function isRole(r: string): r is Role {
  return Object.hasOwn(ROLES, r);
}

export function roleAllows(role: Role, p: Permission): boolean {
  return (ROLES[role] as readonly Permission[]).includes(p);
}
