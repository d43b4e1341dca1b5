// Branding input (docs/platform/branding.md): free text refuses line breaks in every Unicode form, control
// characters (C0, DEL, C1), bidirectional overrides and lone surrogates; lengths are counted in code
// points; terms_url and privacy_url are plain https links, parsed by the WHATWG URL parser and stored
// normalized; every rejected field is named in one refusal (400 for unknown fields and wrong types, else 422); Idempotency-Key on PUT /branding replays the
// same body and refuses another with 409 idempotency_key_reused.
import t, { type Test } from 'tap';
import { setupPlatform } from '../setup-platform.ts';

type Setup = Awaited<ReturnType<typeof setupPlatform>>;

const TEXT_FIELDS = ['brand_name', 'legal_name', 'from_name', 'app_title', 'footer_text', 'subject_override', 'intro_override'];

async function unchanged(t: Test, s: Setup, run: () => Promise<void>) {
  const before = (await s.call('GET', '/v1/branding')).json();
  const audit = (await s.platform.audit.list(s.sandbox.id)).length;
  await run();
  t.same((await s.call('GET', '/v1/branding')).json(), before, 'nothing changed');
  t.equal((await s.platform.audit.list(s.sandbox.id)).length, audit, 'nothing audited');
}

t.test('free text: every line break, control and bidi override refused in every text field, 422 naming it', async (t) => {
  const s = await setupPlatform(t);
  const bad: [string, string][] = [
    ['\r', 'line breaks'], ['\n', 'line breaks'], ['\r\n', 'line breaks'], ['\u0085', 'line breaks'], ['\u2028', 'line breaks'], ['\u2029', 'line breaks'], ['\v', 'line breaks'], ['\f', 'line breaks'],
    ['\u0000', 'control'], ['\u0001', 'control'], ['\t', 'control'], ['\u001b', 'control'], ['\u001f', 'control'], ['\u007f', 'control'], ['\u0080', 'control'], ['\u009b', 'control'], ['\u009f', 'control'],
    ['\u202a', 'bidirectional'], ['\u202b', 'bidirectional'], ['\u202c', 'bidirectional'], ['\u202d', 'bidirectional'], ['\u202e', 'bidirectional'], ['\u2066', 'bidirectional'], ['\u2067', 'bidirectional'], ['\u2068', 'bidirectional'], ['\u2069', 'bidirectional'],
    ['\ud800', 'lone surrogate'], ['\udfff', 'lone surrogate'], ['<', 'angle brackets'], ['>', 'angle brackets'],
  ];
  await unchanged(t, s, async () => {
    for (const [ch, reason] of bad) {
      for (const field of TEXT_FIELDS) {
        const r = await s.call('PUT', '/v1/branding', { [field]: `Acme${ch}Corp` });
        const what = `${field} with U+${ch.codePointAt(0)!.toString(16).padStart(4, '0')}`;
        t.equal(r.statusCode, 422, what);
        t.same(r.json().fields, [{ field, reason: r.json().fields[0].reason }], `${what}: the field named`);
        t.match(r.json().fields[0].reason, reason, `${what}: ${reason}`);
      }
      const c = await s.call('PUT', '/v1/branding', { copy_overrides: { singular: 'm', plural: `x${ch}y` } });
      t.equal(c.statusCode, 422);
      t.same(c.json().fields.map((f: { field: string }) => f.field), ['copy_overrides.plural']);
      const sf = await s.call('PUT', '/v1/branding', { surfaces: { email: { subject_override: `Hi${ch}` } } });
      t.same(sf.json().fields.map((f: { field: string }) => f.field), ['surfaces.email.subject_override']);
    }
  });
  const fine = ['Café Zürich', 'Acme 🎉', 'שלום Acme', 'مرحبا\u200f Acme', 'Acme\u200eCorp', 'Family 👨‍👩‍👧', 'Tab-free & "quoted" \'text\''];
  for (const v of fine) {
    const r = await s.call('PUT', '/v1/branding', { footer_text: v });
    t.equal(r.statusCode, 200, JSON.stringify(v));
    t.equal(r.json().theme.footer_text, v, 'stored as sent');
  }
});

t.test('lengths are counted in code points: an emoji is one character', async (t) => {
  const s = await setupPlatform(t);
  const rows: [string, number, string, boolean][] = [
    ['brand_name', 120, '😀', true], ['brand_name', 121, '😀', false], ['legal_name', 160, '𝒜', true], ['legal_name', 161, '𝒜', false],
    ['from_name', 120, '🏦', true], ['app_title', 120, 'é', true], ['app_title', 121, 'é', false], ['footer_text', 500, '🙂', true], ['footer_text', 501, 'a', false],
    ['subject_override', 200, '📧', true], ['intro_override', 1000, '👋', true], ['intro_override', 1001, '👋', false],
  ];
  for (const [field, n, ch, ok] of rows) {
    const v = ch.repeat(n);
    const r = await s.call('PUT', '/v1/branding', { [field]: v });
    t.equal(r.statusCode, ok ? 200 : 422, `${field}: ${n} × ${ch} (${v.length} UTF-16 units)`);
    if (ok) t.equal(r.json().theme[field], v);
    else t.match(r.json().fields[0], { field, reason: /at most/ });
  }
  const copy = await s.call('PUT', '/v1/branding', { copy_overrides: { singular: '🙂'.repeat(60) } });
  t.equal(copy.statusCode, 200, 'copy_overrides: 60 emoji');
  t.equal((await s.call('PUT', '/v1/branding', { copy_overrides: { singular: '🙂'.repeat(61) } })).statusCode, 422);
});

t.test('terms_url and privacy_url: plain https links only, stored normalized', async (t) => {
  const s = await setupPlatform(t);
  const rejected: [string, string][] = [
    ['http://acme.example/terms', 'https'], ['javascript:alert(1)', 'https'], ['ftp://acme.example/terms', 'https'], ['data:text/html,hi', 'https'], ['wss://acme.example/', 'https'],
    ['https://user:pw@acme.example/terms', 'credentials'], ['https://user@acme.example/terms', 'credentials'], ['https://:pw@acme.example/', 'credentials'],
    ['https://acme.example:8443/terms', 'port'], ['https://acme.example:80/', 'port'],
    ['https://127.0.0.1/terms', 'IP address'], ['https://[::1]/terms', 'IP address'], ['https://0x7f.1/', 'IP address'], ['https://2130706433/', 'IP address'],
    ['https://localhost/terms', 'fully-qualified'], ['https://intranet/', 'fully-qualified'],
    ['not a url', 'spaces'], ['/terms', 'absolute'], ['//acme.example/terms', 'absolute'], ['https://', 'absolute'], ['', 'https URL'],
    [' https://acme.example/terms', 'spaces'], ['https://acme.example/terms ', 'spaces'], ['https://acme.exa\nmple/', 'spaces'], ['https://acme.example/te\trms', 'spaces'],
    ['https://acme.example/\u202eevil', 'spaces'], [`https://acme.example/${'a'.repeat(2030)}`, '2048'],
  ];
  await unchanged(t, s, async () => {
    for (const [url, reason] of rejected) {
      for (const field of ['terms_url', 'privacy_url']) {
        const r = await s.call('PUT', '/v1/branding', { [field]: url });
        t.equal(r.statusCode, 422, `${field} = ${JSON.stringify(url).slice(0, 60)}`);
        t.match(r.json().fields, [{ field, reason: new RegExp(reason) }], `${JSON.stringify(url).slice(0, 40)}: ${reason}`);
      }
    }
    t.equal((await s.call('PUT', '/v1/branding', { terms_url: 42 })).statusCode, 400, 'a number is not a URL: a wrong JSON type, 400');
  });
  const normalized: [string, string][] = [
    ['https://acme.example/terms', 'https://acme.example/terms'],
    ['HTTPS://Acme.EXAMPLE:443/a/../terms?v=2#section-3', 'https://acme.example/terms?v=2#section-3'],
    ['https://acme.example', 'https://acme.example/'],
    ['https://bücher.example/agb', 'https://xn--bcher-kva.example/agb'],
    ['https://acme.example/privacy%20policy', 'https://acme.example/privacy%20policy'],
    ['https://acme.example/ünïcode', 'https://acme.example/%C3%BCn%C3%AFcode'],
  ];
  for (const [input, stored] of normalized) {
    const r = await s.call('PUT', '/v1/branding', { terms_url: input, surfaces: { email: { privacy_url: input } } });
    t.equal(r.statusCode, 200, input);
    t.equal(r.json().theme.terms_url, stored, `${input} stored as ${stored}`);
    t.equal(r.json().surfaces.email.theme.privacy_url, stored, 'the same in a surface');
    t.equal((await s.app.inject({ method: 'GET', url: `/v1/public/branding?claim_token=${r.json().public_claim_token}` })).json().terms_url, stored, 'and in the public bundle');
  }
});

t.test('every rejected field is named in one refusal: 400 for unknown fields and wrong types first, then 422 for the theme rules', async (t) => {
  const s = await setupPlatform(t);
  const rules = {
    brand_name: 'Acme\nCorp', primary_color: 'red', terms_url: 'http://acme.example/terms', legal_name: 'Fine Holdings',
    copy_overrides: { singular: 'a<b', plural: 'ok' },
    surfaces: { email: { from_email: 'not-an-address', footer_text: 'a\u2028b', app_title: 'Fine' } },
  };
  const check = (r: Awaited<ReturnType<Setup['call']>>, status: number, code: string, want: string[], what: string) => {
    t.equal(r.statusCode, status, what);
    t.equal(r.json().code, code, what);
    t.same(r.json().fields.map((f: { field: string }) => f.field).sort(), [...want].sort(), `${what}: all of them, and only them`);
    for (const f of r.json().fields as { field: string; reason: string }[]) {
      t.ok(f.reason.length > 0, `${f.field}: ${f.reason}`);
      t.ok(r.json().error.includes(`${f.field}: ${f.reason}`), `the message carries ${f.field} too`);
    }
    t.same(Object.keys(r.json()).sort(), ['code', 'error', 'fields', 'request_id']);
  };
  await unchanged(t, s, async () => {
    const mixed = await s.call('PUT', '/v1/branding', {
      ...rules, logo_url: 'https://x.example/l.png', toString: 'x', app_title: 7,
      copy_overrides: { ...rules.copy_overrides, extra: 'x' },
      surfaces: { ...rules.surfaces, web: {}, hosted_auth: 'x' },
    });
    check(mixed, 400, 'invalid_request', ['logo_url', 'toString', 'app_title', 'copy_overrides.extra', 'surfaces.web', 'surfaces.hosted_auth'], 'unknown fields and wrong types');
    check(await s.call('PUT', '/v1/branding', rules), 422, 'validation_failed',
      ['brand_name', 'primary_color', 'terms_url', 'copy_overrides.singular', 'surfaces.email.from_email', 'surfaces.email.footer_text'], 'the theme rules');
  });
});

t.test('Idempotency-Key on PUT /branding: same body replays, another body is 409, nothing written twice', async (t) => {
  const s = await setupPlatform(t);
  const key = (k: string) => ({ 'idempotency-key': k });
  const audit = async () => (await s.platform.audit.list(s.sandbox.id)).length;
  const first = await s.call('PUT', '/v1/branding', { brand_name: 'Acme', primary_color: '#112233' }, undefined, key('brand-1'));
  t.equal(first.statusCode, 200);
  const n = await audit();
  // The same body, keys in another order and other spacing: the stored answer, nothing written.
  const again = await s.app.inject({ method: 'PUT', url: '/v1/branding', headers: { authorization: `Bearer ${s.owner.token}`, 'content-type': 'application/json', 'idempotency-key': 'brand-1' }, payload: '{ "primary_color" : "#112233",\n "brand_name": "Acme" }' });
  t.equal(again.statusCode, 200);
  t.same(again.json(), first.json(), 'the first answer again');
  t.equal(await audit(), n, 'not written again');
  // Another body under the same key: 409, nothing changed.
  await unchanged(t, s, async () => {
    for (const body of [{ brand_name: 'Other' }, { brand_name: 'Acme' }, { brand_name: 'Acme', primary_color: '#112233', app_title: 'x' }, {}]) {
      const r = await s.call('PUT', '/v1/branding', body, undefined, key('brand-1'));
      t.equal(r.statusCode, 409, JSON.stringify(body));
      t.same(r.json(), { error: r.json().error, code: 'idempotency_key_reused', request_id: r.headers['x-request-id'] });
    }
  });
  // A later change without the key, then the key again: still the first answer, and no write.
  await s.call('PUT', '/v1/branding', { brand_name: 'Renamed' });
  const late = await s.call('PUT', '/v1/branding', { brand_name: 'Acme', primary_color: '#112233' }, undefined, key('brand-1'));
  t.same(late.json(), first.json(), 'a replay, not a second application');
  t.equal((await s.call('GET', '/v1/branding')).json().theme.brand_name, 'Renamed');
  // A refused request stores nothing: the key can be used again with a corrected body.
  t.equal((await s.call('PUT', '/v1/branding', { brand_name: 'a\nb' }, undefined, key('brand-2'))).statusCode, 422);
  t.equal((await s.call('PUT', '/v1/branding', { brand_name: 'Fixed' }, undefined, key('brand-2'))).statusCode, 200);
  t.equal((await s.call('PUT', '/v1/branding', { brand_name: 'Other' }, undefined, key('brand-2'))).statusCode, 409);
  // Concurrent retries under one key are applied once.
  const before = await audit();
  const all = await Promise.all(Array.from({ length: 5 }, () => s.call('PUT', '/v1/branding', { footer_text: 'Once' }, undefined, key('brand-3'))));
  t.same(all.map((r) => r.statusCode), [200, 200, 200, 200, 200]);
  t.equal(await audit(), before + 1, 'one write for five concurrent requests');
  // Keys are per workspace and per operation; a malformed key is 400.
  const other = await s.platform.tenancy.createKey((await s.platform.tenancy.createTenant('Other')).sandbox.id, 'owner');
  t.equal((await s.call('PUT', '/v1/branding', { brand_name: 'Theirs' }, other.token, key('brand-1'))).json().theme.brand_name, 'Theirs', 'another workspace has its own keys');
  for (const bad of ['', 'has space', 'x'.repeat(256), 'ünï']) {
    const r = await s.call('PUT', '/v1/branding', { brand_name: 'x' }, undefined, key(bad));
    t.equal(r.statusCode, 400, JSON.stringify(bad).slice(0, 20));
    t.equal(r.json().code, 'invalid_request');
  }
});

t.test('Idempotency-Key on POST /webhook-endpoints: the same rule', async (t) => {
  const s = await setupPlatform(t);
  const body = { url: 'https://example.com/hook', events: ['payment.confirmed'] };
  const a = await s.call('POST', '/v1/webhook-endpoints', body, undefined, { 'idempotency-key': 'create-1' });
  const b = await s.call('POST', '/v1/webhook-endpoints', { events: ['payment.confirmed'], url: 'https://example.com/hook' }, undefined, { 'idempotency-key': 'create-1' });
  t.equal(b.json().secret, a.json().secret);
  const c = await s.call('POST', '/v1/webhook-endpoints', { ...body, url: 'https://example.com/other' }, undefined, { 'idempotency-key': 'create-1' });
  t.equal(c.statusCode, 409);
  t.equal(c.json().code, 'idempotency_key_reused');
  t.equal((await s.call('GET', '/v1/webhook-endpoints')).json().data.length, 1, 'one endpoint');
});
