// Surface-specific branding overrides: resolution surface → tenant → platform default (table-driven), the
// theme's validation rules applied to every surface, the raw and resolved views, the public bundle per
// surface, permissions and audit.
import t from 'tap';
import { setupPlatform } from '../setup-platform.ts';
import { PLATFORM_DEFAULT, PUBLIC_FIELDS, SURFACES } from '../../../api/branding/branding-service.ts';

type Row = { name: string; tenant: Record<string, unknown>; surfaces: Record<string, Record<string, unknown>>; expect: [surface: string | null, field: string, value: unknown][] };

const resolution: Row[] = [
  { name: 'nothing set: the platform default everywhere', tenant: {}, surfaces: {},
    expect: [[null, 'brand_name', PLATFORM_DEFAULT.brand_name], ['email', 'brand_name', PLATFORM_DEFAULT.brand_name], ['hosted_auth', 'primary_color', PLATFORM_DEFAULT.primary_color]] },
  { name: 'tenant only: every surface inherits it', tenant: { brand_name: 'Acme' }, surfaces: {},
    expect: [[null, 'brand_name', 'Acme'], ['email', 'brand_name', 'Acme'], ['hosted_auth', 'brand_name', 'Acme'], ['account_center', 'brand_name', 'Acme']] },
  { name: 'surface only: that surface, the default elsewhere', tenant: {}, surfaces: { hosted_auth: { app_title: 'Acme Sign-in' } },
    expect: [['hosted_auth', 'app_title', 'Acme Sign-in'], [null, 'app_title', PLATFORM_DEFAULT.app_title], ['email', 'app_title', PLATFORM_DEFAULT.app_title]] },
  { name: 'both: the surface wins, other fields fall through', tenant: { brand_name: 'Acme', support_email: 'help@acme.example' }, surfaces: { email: { brand_name: 'Acme Mail' } },
    expect: [['email', 'brand_name', 'Acme Mail'], ['email', 'support_email', 'help@acme.example'], ['account_center', 'brand_name', 'Acme'], [null, 'brand_name', 'Acme']] },
  { name: 'dark colors take the layered light color', tenant: { primary_color: '#111111' }, surfaces: { email: { primary_color: '#FF0000' } },
    expect: [['email', 'primary_color_dark', '#FF0000'], ['account_center', 'primary_color_dark', '#111111'], [null, 'primary_color_dark', '#111111']] },
  { name: 'an explicit tenant dark color holds under a surface light override', tenant: { primary_color: '#111111', primary_color_dark: '#222222' }, surfaces: { email: { primary_color: '#FF0000' } },
    expect: [['email', 'primary_color', '#FF0000'], ['email', 'primary_color_dark', '#222222']] },
  { name: 'a surface dark override beats everything', tenant: { accent_color: '#111111' }, surfaces: { account_center: { accent_color_dark: '#ABCDEF' } },
    expect: [['account_center', 'accent_color_dark', '#ABCDEF'], ['account_center', 'accent_color', '#111111'], ['hosted_auth', 'accent_color_dark', '#111111']] },
  { name: 'copy and preset overrides per surface', tenant: { display_term_preset: 'customer' }, surfaces: { hosted_auth: { display_term_preset: 'client', copy_overrides: { singular: 'patron' } } },
    expect: [['hosted_auth', 'display_term_preset', 'client'], ['hosted_auth', 'copy_overrides', { singular: 'patron' }], ['email', 'display_term_preset', 'customer']] },
];

const reset = Object.fromEntries([...Object.keys(PLATFORM_DEFAULT).filter((k) => k !== 'logo_url').map((k) => [k, null]), ['surfaces', Object.fromEntries(SURFACES.map((s) => [s, null]))]]);

t.test('resolution order surface → tenant → platform default', async (t) => {
  const s = await setupPlatform(t);
  for (const row of resolution) {
    t.equal((await s.call('PUT', '/v1/branding', reset)).statusCode, 200);
    const r = await s.call('PUT', '/v1/branding', { ...row.tenant, surfaces: row.surfaces });
    t.equal(r.statusCode, 200, row.name);
    const v = r.json();
    t.same(v.resolution_order, ['surface', 'tenant', 'platform_default']);
    for (const [surface, field, want] of row.expect) {
      t.same(surface ? v.surfaces[surface].resolved[field] : v.resolved[field], want, `${row.name}: ${surface ?? 'tenant'}.${field}`);
    }
    for (const [name, o] of Object.entries(row.surfaces)) for (const [k, val] of Object.entries(o)) t.same(v.surfaces[name].theme[k], val, `raw ${name}.${k}`);
  }
});

// The theme's rules (422 validation_failed), then what is not the theme's shape at all (400 invalid_request).
const rejected: [string, unknown][] = [
  ['primary_color', 'red'], ['primary_color', '#FFF'], ['primary_color', '#FFFFFFFF'], ['accent_color_dark', '#GGGGGG'],
  ['brand_name', 'x'.repeat(121)], ['legal_name', 'x'.repeat(161)], ['brand_name', 'Line\nbreak'], ['app_title', 'a <b> c'], ['footer_text', 'x\r'],
  ['copy_overrides', { singular: 'm<' }], ['terms_url', 'http://example.com/terms'], ['privacy_url', 'javascript:alert(1)'],
  ['from_email', 'no-at-sign'], ['support_email', 'a@b'], ['display_term_preset', 'partner'],
];
const malformed: [string, unknown][] = [
  ['email_bg_color', 123], ['copy_overrides', { other: 'x' }], ['copy_overrides', 'x'], ['logo_url', 'https://example.com/logo.png'], ['unknown_field', 'x'], ['constructor', 'x'],
];

t.test('every theme rule applies to every surface: 422 validation_failed naming the field (400 invalid_request for an unknown field or a wrong type), nothing written', async (t) => {
  const s = await setupPlatform(t);
  await s.call('PUT', '/v1/branding', { brand_name: 'Acme', surfaces: { email: { brand_name: 'Acme Mail' } } });
  const before = (await s.call('GET', '/v1/branding')).json();
  const auditBefore = (await s.platform.audit.list(s.sandbox.id)).length;
  for (const surface of SURFACES) {
    for (const [field, value, status, code] of [...rejected.map(([f, v]) => [f, v, 422, 'validation_failed'] as const), ...malformed.map(([f, v]) => [f, v, 400, 'invalid_request'] as const)]) {
      const r = await s.call('PUT', '/v1/branding', { brand_name: 'Changed', surfaces: { [surface]: { app_title: 'Fine', [field]: value } } });
      t.equal(r.statusCode, status, `${surface}.${field}=${JSON.stringify(value).slice(0, 30)}`);
      t.same(r.json(), { error: r.json().error, code, fields: r.json().fields, request_id: r.headers['x-request-id'] });
      t.match(r.json().error, `surfaces.${surface}.${field}`);
      t.ok(r.json().fields.every((f: { field: string }) => f.field.startsWith(`surfaces.${surface}.${field}`)), 'the one rejected field is listed');
    }
  }
  const shapes: [unknown, string][] = [
    ['email', 'surfaces'], [[], 'surfaces'], [null, 'surfaces'], [{ web: {} }, 'surfaces.web'], [{ partner: { brand_name: 'x' } }, 'surfaces.partner'],
    [{ email: 'Acme' }, 'surfaces.email'], [{ email: ['x'] }, 'surfaces.email'],
  ];
  for (const [surfaces, named] of shapes) {
    const r = await s.call('PUT', '/v1/branding', { brand_name: 'Changed', surfaces });
    t.equal(r.statusCode, 400, JSON.stringify(surfaces));
    t.equal(r.json().code, 'invalid_request');
    t.match(r.json().error, named);
  }
  t.same((await s.call('GET', '/v1/branding')).json(), before, 'nothing changed');
  t.equal((await s.platform.audit.list(s.sandbox.id)).length, auditBefore, 'nothing audited');
});

t.test('patch semantics: null unsets one override, a null surface drops all of them, {} is a no-op; audit and permissions', async (t) => {
  const s = await setupPlatform(t);
  const v1 = (await s.call('PUT', '/v1/branding', { surfaces: { email: { brand_name: 'Acme Mail', from_name: 'Acme' }, hosted_auth: { app_title: 'Sign in' } } })).json();
  t.same(Object.keys(v1.surfaces).sort(), [...SURFACES].sort(), 'every surface is in the view');
  t.equal(v1.surfaces.account_center.theme.brand_name, null, 'raw override null = inherited');
  t.equal(v1.theme.brand_name, null, 'surface overrides do not touch the tenant theme');
  const v2 = (await s.call('PUT', '/v1/branding', { surfaces: { email: { brand_name: null } } })).json();
  t.equal(v2.surfaces.email.theme.brand_name, null);
  t.equal(v2.surfaces.email.theme.from_name, 'Acme', 'other overrides of the surface stay');
  t.equal(v2.surfaces.email.resolved.brand_name, PLATFORM_DEFAULT.brand_name);
  const v3 = (await s.call('PUT', '/v1/branding', { surfaces: { hosted_auth: null } })).json();
  t.equal(v3.surfaces.hosted_auth.theme.app_title, null, 'null surface clears it');
  t.equal(v3.surfaces.email.theme.from_name, 'Acme');
  const noop = await s.call('PUT', '/v1/branding', { surfaces: {} });
  t.equal(noop.json().updated_at, v3.updated_at, '{ surfaces: {} } is a no-op');
  const denied = await s.call('PUT', '/v1/branding', { surfaces: { email: { brand_name: 'X' } } }, s.viewer.token);
  t.equal(denied.statusCode, 403);
  t.equal(denied.json().code, 'role_denied');
  t.equal((await s.call('GET', '/v1/branding', undefined, s.viewer.token)).json().surfaces.email.theme.from_name, 'Acme', 'any tenant key reads the surfaces');
  const audit = (await s.platform.audit.list(s.sandbox.id)).filter((a) => a.action === 'branding.update');
  t.equal(audit.length, 3);
  t.same(audit[0]!.before, {});
  t.same(audit[0]!.after, { surfaces: { email: { brand_name: 'Acme Mail', from_name: 'Acme' }, hosted_auth: { app_title: 'Sign in' } } });
  t.same(audit[2]!.after, { surfaces: { email: { from_name: 'Acme' } } });
});

t.test('public bundle per surface; an unknown surface is 400; a bad claim token still gets the default', async (t) => {
  const s = await setupPlatform(t);
  const view = (await s.call('PUT', '/v1/branding', { brand_name: 'Acme', primary_color: '#111111', surfaces: { hosted_auth: { brand_name: 'Acme ID', primary_color: '#00AA00' }, email: { from_email: 'mail@acme.example' } } })).json();
  const tok = encodeURIComponent(view.public_claim_token);
  const get = (q: string) => s.app.inject({ method: 'GET', url: `/v1/public/branding${q}`, remoteAddress: '127.0.0.20' });
  const cases: [string, Record<string, unknown>][] = [
    [`?claim_token=${tok}`, { brand_name: 'Acme', primary_color: '#111111', primary_color_dark: '#111111' }],
    [`?claim_token=${tok}&surface=hosted_auth`, { brand_name: 'Acme ID', primary_color: '#00AA00', primary_color_dark: '#00AA00' }],
    [`?claim_token=${tok}&surface=account_center`, { brand_name: 'Acme', primary_color: '#111111' }],
    [`?claim_token=${tok}&surface=email`, { brand_name: 'Acme' }],
    ['?claim_token=garbage&surface=hosted_auth', { brand_name: PLATFORM_DEFAULT.brand_name, primary_color: PLATFORM_DEFAULT.primary_color }],
    ['?surface=email', { brand_name: PLATFORM_DEFAULT.brand_name }],
  ];
  for (const [q, want] of cases) {
    const r = await get(q);
    t.equal(r.statusCode, 200, q);
    t.match(r.json(), want, q);
    t.same(Object.keys(r.json()).sort(), [...PUBLIC_FIELDS].sort(), 'only the public fields');
  }
  t.notOk('from_email' in (await get(`?claim_token=${tok}&surface=email`)).json(), 'sender fields stay internal on the email surface too');
  const bad = await get(`?claim_token=${tok}&surface=partner`);
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().code, 'invalid_request');
});
