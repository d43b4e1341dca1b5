// Tenant branding (docs/platform/branding.md): a raw theme patch-written by the tenant, optional
// per-surface overrides, resolution surface → tenant → platform default, and a public bundle reached by a
// signed claim token. Every change is audited.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { RecordStore } from '../store/record-store.ts';
import { ApiError } from '../errors.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';

const HEX = /^#[0-9A-Fa-f]{6}$/;
const EMAIL = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;
const PRESETS = ['member', 'customer', 'user', 'client'];

type Rule = { kind: 'text'; max: number } | { kind: 'email' } | { kind: 'color'; nullable?: boolean } | { kind: 'https' } | { kind: 'preset' } | { kind: 'copy' };

export const THEME_FIELDS: Record<string, Rule> = {
  brand_name: { kind: 'text', max: 120 },
  legal_name: { kind: 'text', max: 160 },
  from_name: { kind: 'text', max: 120 },
  from_email: { kind: 'email' }, reply_to_email: { kind: 'email' }, support_email: { kind: 'email' },
  primary_color: { kind: 'color' }, secondary_color: { kind: 'color' }, accent_color: { kind: 'color' },
  primary_color_dark: { kind: 'color' }, secondary_color_dark: { kind: 'color' }, accent_color_dark: { kind: 'color' },
  email_button_color: { kind: 'color' }, email_bg_color: { kind: 'color' }, email_text_color: { kind: 'color' },
  app_title: { kind: 'text', max: 120 },
  footer_text: { kind: 'text', max: 500 },
  terms_url: { kind: 'https' }, privacy_url: { kind: 'https' },
  subject_override: { kind: 'text', max: 200 },
  intro_override: { kind: 'text', max: 1000 },
  display_term_preset: { kind: 'preset' },
  copy_overrides: { kind: 'copy' },
};

export type Theme = Record<string, unknown>;

export const PLATFORM_DEFAULT: Theme = {
  brand_name: 'Custody Platform', legal_name: 'Custody Platform', from_name: 'Custody Platform', from_email: 'no-reply@platform.invalid', reply_to_email: null,
  support_email: 'support@platform.invalid', primary_color: '#1F4FD8', secondary_color: '#0F172A', accent_color: '#10B981', primary_color_dark: '#5B8CFF',
  secondary_color_dark: '#E2E8F0', accent_color_dark: '#34D399', email_button_color: '#1F4FD8', email_bg_color: '#FFFFFF', email_text_color: '#111827',
  app_title: 'Custody Platform', footer_text: null, terms_url: null, privacy_url: null, subject_override: null, intro_override: null,
  display_term_preset: 'member', copy_overrides: null, logo_url: null,
};

const invalid = (field: string, why: string) => new ApiError(422, 'validation_failed', `${field}: ${why}`);

function freeText(field: string, v: string, max: number): void {
  if (v.length > max) throw invalid(field, `at most ${max} characters`);
  if (/[\r\n<>]/.test(v)) throw invalid(field, 'newlines and angle brackets are not allowed');
}

/**
 * The surfaces the spec's product descriptions name, each of which can override the tenant theme:
 * the Hosted Auth page, the Hosted Account Center, and the emails the platform sends for the tenant.
 */
export const SURFACES = ['hosted_auth', 'account_center', 'email'] as const;
export type Surface = (typeof SURFACES)[number];
export const isSurface = (s: string): s is Surface => (SURFACES as readonly string[]).includes(s);

/** Validates a theme patch; throws validation_failed naming the first rejected field (after `prefix`). */
export function validateThemePatch(patch: Record<string, unknown>, prefix = ''): void {
  for (const [name, v] of Object.entries(patch)) {
    const rule = THEME_FIELDS[name];
    const field = `${prefix}${name}`;
    if (!rule) throw invalid(field, 'not an editable theme field');
    if (v === null) continue;
    switch (rule.kind) {
      case 'text':
        if (typeof v !== 'string') throw invalid(field, 'must be text');
        freeText(field, v, rule.max);
        break;
      case 'email':
        if (typeof v !== 'string' || v.length > 254 || !EMAIL.test(v)) throw invalid(field, 'must be a valid email address');
        break;
      case 'color':
        if (typeof v !== 'string' || !HEX.test(v)) throw invalid(field, 'must be a six-digit #RRGGBB color');
        break;
      case 'https': {
        let u: URL | undefined;
        try {
          u = typeof v === 'string' && v.length <= 2048 ? new URL(v) : undefined;
        } catch {
          u = undefined;
        }
        if (!u || u.protocol !== 'https:' || u.username || u.password) throw invalid(field, 'must be an https URL');
        break;
      }
      case 'preset':
        if (typeof v !== 'string' || !PRESETS.includes(v)) throw invalid(field, `must be one of ${PRESETS.join(', ')}`);
        break;
      case 'copy': {
        if (typeof v !== 'object' || Array.isArray(v)) throw invalid(field, 'must be an object with singular, plural, possessive');
        const o = v as Record<string, unknown>;
        const keys = Object.keys(o);
        if (keys.some((k) => !['singular', 'plural', 'possessive'].includes(k))) throw invalid(field, 'only singular, plural and possessive');
        for (const k of keys) {
          if (typeof o[k] !== 'string') throw invalid(`${field}.${k}`, 'must be text');
          freeText(`${field}.${k}`, o[k] as string, 60);
        }
        break;
      }
    }
  }
}

/**
 * Validates a PUT /branding body: tenant-wide theme fields, plus `surfaces` mapping a surface to a patch
 * of the same fields under the same rules (or to null, which drops all of that surface's overrides).
 */
export function validateBrandingPatch(body: Record<string, unknown>): { theme: Record<string, unknown>; surfaces: Partial<Record<Surface, Record<string, unknown> | null>> } {
  const { surfaces, ...theme } = body;
  validateThemePatch(theme);
  if (surfaces === undefined) return { theme, surfaces: {} };
  if (surfaces === null || typeof surfaces !== 'object' || Array.isArray(surfaces)) throw invalid('surfaces', `must be an object keyed by surface (${SURFACES.join(', ')})`);
  const out: Partial<Record<Surface, Record<string, unknown> | null>> = {};
  for (const [name, p] of Object.entries(surfaces as Record<string, unknown>)) {
    if (!isSurface(name)) throw invalid(`surfaces.${name}`, `not a surface; one of ${SURFACES.join(', ')}`);
    if (p !== null && (typeof p !== 'object' || Array.isArray(p))) throw invalid(`surfaces.${name}`, 'must be an object of theme fields, or null');
    if (p !== null) validateThemePatch(p as Record<string, unknown>, `surfaces.${name}.`);
    out[name] = p as Record<string, unknown> | null;
  }
  return { theme, surfaces: out };
}

/**
 * Layers field by field: the surface override, else the tenant theme, else the platform default. A dark
 * palette color left unset in both layers takes the layered light color.
 */
export function resolveTheme(raw: Theme, logoUrl: string | null, override: Theme = {}): Theme {
  const layered: Theme = {};
  for (const k of Object.keys(THEME_FIELDS)) {
    const v = override[k] ?? raw[k];
    if (v !== undefined && v !== null) layered[k] = v;
  }
  const out: Theme = { ...PLATFORM_DEFAULT, ...layered };
  for (const base of ['primary_color', 'secondary_color', 'accent_color']) if (layered[`${base}_dark`] == null && layered[base] != null) out[`${base}_dark`] = layered[base];
  out.logo_url = logoUrl;
  return out;
}

export const PUBLIC_FIELDS = ['brand_name', 'support_email', 'logo_url', 'primary_color', 'secondary_color', 'accent_color', 'primary_color_dark', 'secondary_color_dark', 'accent_color_dark', 'app_title', 'footer_text', 'terms_url', 'privacy_url'];

interface BrandingRecord { tenant: string; theme: Theme; surfaces?: Partial<Record<Surface, Theme>>; logo_url: string | null; updated_at: string }

const rawView = (t: Theme): Theme => Object.fromEntries(Object.keys(THEME_FIELDS).map((k) => [k, t[k] ?? null]));

/** What the audit log records: the tenant theme, and the surface overrides once there are any. */
const auditView = (r: BrandingRecord): Theme => (r.surfaces && Object.keys(r.surfaces).length ? { ...r.theme, surfaces: r.surfaces } : r.theme);

/** Applies a patch to stored fields: present values are set, null unsets. */
function applyPatch(base: Theme, patch: Record<string, unknown>): Theme {
  const out: Theme = { ...base, ...patch };
  for (const [k, v] of Object.entries(patch)) if (v === null) delete out[k];
  return out;
}

export class BrandingService {
  constructor(private readonly store: RecordStore, private readonly audit: AuditLog, private readonly claimKey: Uint8Array, private readonly clock: () => number = Date.now) {}

  private async load(tenant: string): Promise<BrandingRecord> {
    return (await this.store.get<BrandingRecord>('branding', tenant)) ?? { tenant, theme: {}, logo_url: null, updated_at: new Date(0).toISOString() };
  }

  claimToken(tenant: string): string {
    const p = Buffer.from(tenant).toString('base64url');
    return `${p}.${createHmac('sha256', this.claimKey).update(`claim.${p}`).digest('base64url')}`;
  }

  private tenantOfClaim(token: string | undefined): string | undefined {
    if (!token || token.length > 200) return undefined;
    const [p, s, extra] = token.split('.');
    if (!p || !s || extra !== undefined) return undefined;
    const want = createHmac('sha256', this.claimKey).update(`claim.${p}`).digest();
    const given = Buffer.from(s, 'base64url');
    return given.length === want.length && timingSafeEqual(given, want) ? Buffer.from(p, 'base64url').toString('utf8') : undefined;
  }

  async view(tenant: string) {
    const r = await this.load(tenant);
    const surfaces = Object.fromEntries(SURFACES.map((s) => {
      const o = r.surfaces?.[s] ?? {};
      return [s, { theme: rawView(o), resolved: resolveTheme(r.theme, r.logo_url, o) }];
    }));
    return {
      resolved: resolveTheme(r.theme, r.logo_url), theme: { ...rawView(r.theme), logo_url: r.logo_url }, surfaces,
      resolution_order: ['surface', 'tenant', 'platform_default'], public_claim_token: this.claimToken(tenant), updated_at: r.updated_at,
    };
  }

  /** Patches the tenant theme and any surface overrides in one audited write; `{}` is a no-op. */
  async patch(scope: Scope, actor: Actor, body: Record<string, unknown>) {
    const { theme, surfaces } = validateBrandingPatch(body);
    const before = await this.load(scope.tenant);
    if (Object.keys(theme).length > 0 || Object.keys(surfaces).length > 0) {
      const nextSurfaces: Partial<Record<Surface, Theme>> = { ...before.surfaces };
      for (const [name, p] of Object.entries(surfaces) as [Surface, Record<string, unknown> | null][]) {
        const next = p === null ? {} : applyPatch(nextSurfaces[name] ?? {}, p);
        if (Object.keys(next).length) nextSurfaces[name] = next;
        else delete nextSurfaces[name];
      }
      const after: BrandingRecord = { ...before, theme: applyPatch(before.theme, theme), surfaces: nextSurfaces, updated_at: new Date(this.clock()).toISOString() };
      await this.store.batch([{ type: 'put', collection: 'branding', id: scope.tenant, value: after }, this.audit.op(scope, actor, 'branding.update', scope.tenant, auditView(before), auditView(after))]);
    }
    return this.view(scope.tenant);
  }

  async clearLogo(scope: Scope, actor: Actor) {
    const before = await this.load(scope.tenant);
    const after: BrandingRecord = { ...before, logo_url: null, updated_at: new Date(this.clock()).toISOString() };
    await this.store.batch([{ type: 'put', collection: 'branding', id: scope.tenant, value: after }, this.audit.op(scope, actor, 'branding.logo.delete', scope.tenant, { logo_url: before.logo_url }, { logo_url: null })]);
    return this.view(scope.tenant);
  }

  async setLogo(scope: Scope, actor: Actor, objectKey: string, logoUrl: string) {
    const before = await this.load(scope.tenant);
    const after: BrandingRecord = { ...before, logo_url: logoUrl, updated_at: new Date(this.clock()).toISOString() };
    await this.store.batch([{ type: 'put', collection: 'branding', id: scope.tenant, value: after }, this.audit.op(scope, actor, 'branding.logo.set', scope.tenant, { logo_url: before.logo_url }, { logo_url: logoUrl, object_key: objectKey })]);
    return this.view(scope.tenant);
  }

  /**
   * Never fails: any bad, unknown or missing claim token gets the platform default bundle. With a
   * surface, that surface's overrides come first.
   */
  async publicBundle(claimToken: string | undefined, surface?: Surface): Promise<Theme> {
    const tenant = this.tenantOfClaim(claimToken);
    const r = tenant ? await this.store.get<BrandingRecord>('branding', tenant) : undefined;
    const resolved = r ? resolveTheme(r.theme, r.logo_url, (surface && r.surfaces?.[surface]) || {}) : resolveTheme({}, null);
    return Object.fromEntries(PUBLIC_FIELDS.map((k) => [k, resolved[k] ?? null]));
  }
}
