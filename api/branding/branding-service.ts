// Tenant branding (docs/platform/branding.md): a raw theme patch-written by the tenant, optional
// per-surface overrides, resolution surface → tenant → platform default, and a public bundle reached by a
// signed claim token. Every change is audited. Branding is kept per environment: one record per workspace
// (tenant + sandbox or production), and a claim token names the workspace whose branding it serves.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { RecordRepository } from '../store/record-repository.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import { productionWorkspaceOf } from '../tenancy/environments.ts';
import { FieldValidationError, SchemaValidationError, type FieldError } from '../validation.ts';
import { BRANDING } from './collections.ts';
import { isInvisibleOnly } from '../text-input.ts';

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

// Free text lands in emails (sender name, subject) and on hosted pages. Refused: line breaks in every
// Unicode form (CR, LF, VT, FF, NEL U+0085, LS U+2028, PS U+2029), every other control character (C0,
// DEL, C1; tab included), the bidirectional embedding, override and isolate controls (U+202A-U+202E,
// U+2066-U+2069: they reorder what a reader sees, e.g. a sender name or a subject), lone surrogates,
// and angle brackets. Lengths are counted in Unicode code points, not UTF-16 units.
const LINE_BREAKS = new Set([0x0a, 0x0b, 0x0c, 0x0d, 0x85, 0x2028, 0x2029]);
const isControl = (cp: number) => cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f);
const isBidiControl = (cp: number) => (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
const isLoneSurrogate = (cp: number) => cp >= 0xd800 && cp <= 0xdfff; // iterating by code point, a pair is one

/** Why a free-text value is refused, or undefined when it is acceptable. */
function freeTextProblem(v: string, max: number): string | undefined {
  let length = 0;
  let problem: string | undefined;
  for (const ch of v) {
    length++;
    const cp = ch.codePointAt(0)!;
    problem ??= isLoneSurrogate(cp) ? 'must be valid Unicode text (no lone surrogates)'
      : LINE_BREAKS.has(cp) ? 'line breaks are not allowed'
        : isControl(cp) ? 'control characters are not allowed'
          : isBidiControl(cp) ? 'bidirectional override characters are not allowed'
            : ch === '<' || ch === '>' ? 'angle brackets are not allowed' : undefined;
  }
  return length > max ? `at most ${max} characters` : problem ?? (isInvisibleOnly(v) ? 'must contain a visible character' : undefined);
}

export const MAX_LINK_URL = 2048;

/**
 * terms_url and privacy_url: a plain https link, parsed by the WHATWG URL parser and stored as it
 * serializes it (`https://Example.COM:443/a/../t` becomes `https://example.com/t`; a Unicode host becomes
 * its punycode). Refused: anything the parser rejects, any scheme but https, credentials, an explicit
 * port other than 443, a host that is an IP address or a single label (these links are for people), and
 * input with spaces or control characters, which the parser would otherwise drop silently. A query and a
 * fragment are kept. At most 2048 characters, before and after normalization.
 */
export function normalizeHttpsLink(v: unknown): { url: string } | { problem: string } {
  if (typeof v !== 'string' || v.length === 0) return { problem: 'must be an https URL' };
  if (v.length > MAX_LINK_URL) return { problem: `at most ${MAX_LINK_URL} characters` };
  for (const ch of v) {
    const cp = ch.codePointAt(0)!;
    if (cp === 0x20 || isControl(cp) || LINE_BREAKS.has(cp) || isBidiControl(cp) || isLoneSurrogate(cp)) return { problem: 'must not contain spaces or control characters' };
  }
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return { problem: 'must be an absolute https URL' };
  }
  if (u.protocol !== 'https:') return { problem: 'must be an https URL' };
  if (u.username || u.password) return { problem: 'must not carry credentials' };
  if (!u.hostname) return { problem: 'must name a host' };
  if (u.port !== '') return { problem: 'must use the default https port' };
  if (u.hostname.startsWith('[') || /^[0-9.]+$/.test(u.hostname)) return { problem: 'must name the host by a domain name, not an IP address' };
  if (!u.hostname.replace(/\.$/, '').includes('.')) return { problem: 'must name a fully-qualified domain' };
  if (u.href.length > MAX_LINK_URL) return { problem: `at most ${MAX_LINK_URL} characters once normalized` };
  return { url: u.href };
}

/**
 * The surfaces the spec's product descriptions name, each of which can override the tenant theme:
 * the Hosted Auth page, the Hosted Account Center, and the emails the platform sends for the tenant.
 */
export const SURFACES = ['hosted_auth', 'account_center', 'email'] as const;
export type Surface = (typeof SURFACES)[number];
export const isSurface = (s: string): s is Surface => (SURFACES as readonly string[]).includes(s);

/**
 * The rejected fields of a branding body, in the two kinds of docs/platform/errors.md: `schema` (an
 * unknown field or surface, a wrong JSON type: 400 invalid_request) and `rules` (the theme's rules: 422
 * validation_failed). A body with any of the first kind is refused as such, before its rules are told.
 */
interface Rejections { schema: FieldError[]; rules: FieldError[] }

function throwRejections(r: Rejections): void {
  if (r.schema.length) throw new SchemaValidationError(r.schema);
  if (r.rules.length) throw new FieldValidationError(r.rules);
}

/**
 * Checks a theme patch, adding every rejected field (after `prefix`) to `errors`; returns the patch as
 * it is stored (links normalized). Field names are looked up as own properties only, so `constructor`,
 * `toString` or `__proto__` are unknown fields like any other.
 */
function checkThemePatch(patch: Record<string, unknown>, prefix: string, errors: Rejections): Record<string, unknown> {
  const out: [string, unknown][] = [];
  const reject = (field: string, reason: string) => errors.rules.push({ field, reason });
  const schema = (field: string, reason: string) => errors.schema.push({ field, reason });
  for (const [name, v] of Object.entries(patch)) {
    const rule = Object.hasOwn(THEME_FIELDS, name) ? THEME_FIELDS[name] : undefined;
    const field = `${prefix}${name}`;
    if (!rule) {
      schema(field, 'not an editable theme field');
      continue;
    }
    if (v === null) {
      out.push([name, null]);
      continue;
    }
    if (rule.kind === 'copy' ? typeof v !== 'object' || Array.isArray(v) : typeof v !== 'string') {
      schema(field, rule.kind === 'copy' ? 'must be an object with singular, plural, possessive' : 'must be text');
      continue;
    }
    // The JSON type is checked above: a string for every kind but `copy`, an object for `copy`.
    const text = v as string;
    switch (rule.kind) {
      case 'text': {
        const problem = freeTextProblem(text, rule.max);
        if (problem) reject(field, problem);
        else out.push([name, text.normalize('NFC')]);
        break;
      }
      case 'email':
        if (text.length > 254 || !EMAIL.test(text)) reject(field, 'must be a valid email address');
        else out.push([name, text]);
        break;
      case 'color':
        if (!HEX.test(text)) reject(field, 'must be a six-digit #RRGGBB color');
        else out.push([name, text]);
        break;
      case 'https': {
        const link = normalizeHttpsLink(text);
        if ('problem' in link) reject(field, link.problem);
        else out.push([name, link.url]);
        break;
      }
      case 'preset':
        if (!PRESETS.includes(text)) reject(field, `must be one of ${PRESETS.join(', ')}`);
        else out.push([name, text]);
        break;
      case 'copy': {
        const o = v as Record<string, unknown>;
        const before = errors.schema.length + errors.rules.length;
        for (const k of Object.keys(o)) {
          if (!['singular', 'plural', 'possessive'].includes(k)) {
            schema(`${field}.${k}`, 'only singular, plural and possessive');
            continue;
          }
          if (typeof o[k] !== 'string') {
            schema(`${field}.${k}`, 'must be text');
            continue;
          }
          const problem = freeTextProblem(o[k], 60);
          if (problem) reject(`${field}.${k}`, problem);
        }
        if (errors.schema.length + errors.rules.length === before) out.push([name, Object.fromEntries(Object.entries(o).map(([k, x]) => [k, (x as string).normalize('NFC')]))]);
        break;
      }
    }
  }
  return Object.fromEntries(out);
}

/** Validates a theme patch; throws invalid_request, else validation_failed, naming every rejected field. Returns it as stored. */
export function validateThemePatch(patch: Record<string, unknown>, prefix = ''): Record<string, unknown> {
  const errors: Rejections = { schema: [], rules: [] };
  const out = checkThemePatch(patch, prefix, errors);
  throwRejections(errors);
  return out;
}

/**
 * Validates a PUT /branding body: tenant-wide theme fields, plus `surfaces` mapping a surface to a patch
 * of the same fields under the same rules (or to null, which drops all of that surface's overrides).
 * Every rejected field, tenant-wide or in any surface, is named in the one refusal: invalid_request for
 * unknown fields and surfaces and wrong JSON types, else validation_failed for the theme's rules; the
 * result is the body as stored (links normalized).
 */
export function validateBrandingPatch(body: Record<string, unknown>): { theme: Record<string, unknown>; surfaces: Partial<Record<Surface, Record<string, unknown> | null>> } {
  const errors: Rejections = { schema: [], rules: [] };
  const { surfaces, ...rawTheme } = body;
  const theme = checkThemePatch(rawTheme, '', errors);
  const out: Partial<Record<Surface, Record<string, unknown> | null>> = {};
  if (surfaces !== undefined) {
    if (surfaces === null || typeof surfaces !== 'object' || Array.isArray(surfaces)) {
      errors.schema.push({ field: 'surfaces', reason: `must be an object keyed by surface (${SURFACES.join(', ')})` });
    } else {
      for (const [name, p] of Object.entries(surfaces as Record<string, unknown>)) {
        if (!isSurface(name)) errors.schema.push({ field: `surfaces.${name}`, reason: `not a surface; one of ${SURFACES.join(', ')}` });
        else if (p === null) out[name] = null;
        else if (typeof p !== 'object' || Array.isArray(p)) errors.schema.push({ field: `surfaces.${name}`, reason: 'must be an object of theme fields, or null' });
        else out[name] = checkThemePatch(p as Record<string, unknown>, `surfaces.${name}.`, errors);
      }
    }
  }
  throwRejections(errors);
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

/** Collection `branding`, id = the workspace id (before environments were separated: the tenant id). */
export interface BrandingRecord { tenant: string; workspace?: string; theme: Theme; surfaces?: Partial<Record<Surface, Theme>>; logo_url: string | null; updated_at: string }

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
  constructor(private readonly store: RecordRepository, private readonly audit: AuditLog, private readonly claimKey: Uint8Array, private readonly clock: () => number = Date.now) {}

  private async load(scope: Scope): Promise<BrandingRecord> {
    return (await BRANDING.in(this.store).get(scope.workspace)) ?? { tenant: scope.tenant, workspace: scope.workspace, theme: {}, logo_url: null, updated_at: new Date(0).toISOString() };
  }

  /** The public claim token of a workspace's branding: base64url(workspace id) "." HMAC. */
  claimToken(workspace: string): string {
    const p = Buffer.from(workspace).toString('base64url');
    return `${p}.${createHmac('sha256', this.claimKey).update(`claim.${p}`).digest('base64url')}`;
  }

  /**
   * The workspace a claim token names. A token issued before environments were separated names a
   * tenant (`ten_...`); it keeps serving what it served then, the tenant's production branding.
   */
  private async workspaceOfClaim(token: string | undefined): Promise<string | undefined> {
    if (!token || token.length > 200) return undefined;
    const [p, s, extra] = token.split('.');
    if (!p || !s || extra !== undefined) return undefined;
    const want = createHmac('sha256', this.claimKey).update(`claim.${p}`).digest();
    const given = Buffer.from(s, 'base64url');
    if (given.length !== want.length || !timingSafeEqual(given, want)) return undefined;
    const named = Buffer.from(p, 'base64url').toString('utf8');
    if (named.startsWith('wks_')) return named;
    if (named.startsWith('ten_')) return (await productionWorkspaceOf(this.store, named))?.id;
    return undefined;
  }

  /** The caller's environment's branding: sandbox and production each have their own. */
  async view(scope: Scope) {
    const r = await this.load(scope);
    const surfaces = Object.fromEntries(SURFACES.map((s) => {
      const o = r.surfaces?.[s] ?? {};
      return [s, { theme: rawView(o), resolved: resolveTheme(r.theme, r.logo_url, o) }];
    }));
    return {
      resolved: resolveTheme(r.theme, r.logo_url), theme: { ...rawView(r.theme), logo_url: r.logo_url }, surfaces,
      resolution_order: ['surface', 'tenant', 'platform_default'], public_claim_token: this.claimToken(scope.workspace), updated_at: r.updated_at,
    };
  }

  /** Patches the tenant theme and any surface overrides in one audited write; `{}` is a no-op. */
  async patch(scope: Scope, actor: Actor, body: Record<string, unknown>) {
    const { theme, surfaces } = validateBrandingPatch(body);
    const before = await this.load(scope);
    if (Object.keys(theme).length > 0 || Object.keys(surfaces).length > 0) {
      const nextSurfaces: Partial<Record<Surface, Theme>> = { ...before.surfaces };
      for (const [name, p] of Object.entries(surfaces) as [Surface, Record<string, unknown> | null][]) {
        const next = p === null ? {} : applyPatch(nextSurfaces[name] ?? {}, p);
        if (Object.keys(next).length) nextSurfaces[name] = next;
        else delete nextSurfaces[name];
      }
      const after: BrandingRecord = { ...before, theme: applyPatch(before.theme, theme), surfaces: nextSurfaces, updated_at: new Date(this.clock()).toISOString() };
      await this.store.batch([BRANDING.putOp(scope.workspace, after), this.audit.op(scope, actor, 'branding.update', scope.workspace, auditView(before), auditView(after))]);
    }
    return this.view(scope);
  }

  async clearLogo(scope: Scope, actor: Actor) {
    const before = await this.load(scope);
    const after: BrandingRecord = { ...before, logo_url: null, updated_at: new Date(this.clock()).toISOString() };
    await this.store.batch([BRANDING.putOp(scope.workspace, after), this.audit.op(scope, actor, 'branding.logo.delete', scope.workspace, { logo_url: before.logo_url }, { logo_url: null })]);
    return this.view(scope);
  }

  async setLogo(scope: Scope, actor: Actor, objectKey: string, logoUrl: string) {
    const before = await this.load(scope);
    const after: BrandingRecord = { ...before, logo_url: logoUrl, updated_at: new Date(this.clock()).toISOString() };
    await this.store.batch([BRANDING.putOp(scope.workspace, after), this.audit.op(scope, actor, 'branding.logo.set', scope.workspace, { logo_url: before.logo_url }, { logo_url: logoUrl, object_key: objectKey })]);
    return this.view(scope);
  }

  /**
   * Never fails: any bad, unknown or missing claim token gets the platform default bundle. With a
   * surface, that surface's overrides come first. Serves the environment the token names.
   */
  async publicBundle(claimToken: string | undefined, surface?: Surface): Promise<Theme> {
    const workspace = await this.workspaceOfClaim(claimToken);
    const r = workspace ? await BRANDING.in(this.store).get(workspace) : undefined;
    const resolved = r ? resolveTheme(r.theme, r.logo_url, (surface && r.surfaces?.[surface]) || {}) : resolveTheme({}, null);
    return Object.fromEntries(PUBLIC_FIELDS.map((k) => [k, resolved[k] ?? null]));
  }
}
