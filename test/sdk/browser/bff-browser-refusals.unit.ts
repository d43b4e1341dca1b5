// The browser package (docs/platform/bff.md "The browser package"; platform-api.md "BFF helper and browser
// rules", last item), as its esbuild bundle: ESM importing nothing (no Node built-in, no package), and
// refusing, before anything is sent, every API key, provider proof, session id, access or refresh token and
// caller-supplied authorization header, by option, header or argument, and every BFF of another origin.
// What it does send goes to the same origin with the browser's cookies and the CSRF header the BFF checks
// (checkBffRequest, also tested here).
import t, { type Test } from 'tap';
import { relative } from 'node:path';
import { bundleBrowserPackage } from '../../../deploy/sdk/build-browser.mjs';
import type * as BrowserPackage from '../../../api/sdk/browser/index.ts';
import { BffError, checkBffRequest } from '../../../api/sdk/index.ts';

const ORIGIN = 'https://app.example';

async function loadBundle(t: Test) {
  const { text, metafile } = await bundleBrowserPackage();
  const pkg = await import(`data:text/javascript;base64,${Buffer.from(text).toString('base64')}`) as typeof BrowserPackage;
  const sent: { url: string; init: RequestInit }[] = [];
  let answer = () => new Response(JSON.stringify({ signed_in: false }), { status: 200, headers: { 'content-type': 'application/json' } });
  const fetch = (async (url: string, init: RequestInit) => {
    sent.push({ url: String(url), init });
    return answer();
  }) as unknown as typeof globalThis.fetch;
  const navigated: string[] = [];
  const location = { origin: ORIGIN, assign: (u: string) => void navigated.push(u) };
  const client = (o: Record<string, unknown> = {}) => new pkg.BffClient({ fetch, location, ...o } as BrowserPackage.BffClientOptions);
  /** Expects `f` to throw (or reject with) a BffBrowserError of `code` and nothing to have been sent. */
  async function refused(f: () => unknown, code: string, what: string) {
    const before = sent.length + navigated.length;
    let err: unknown;
    try {
      await f();
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof pkg.BffBrowserError, `${what}: a BffBrowserError`);
    t.equal((err as BrowserPackage.BffBrowserError | undefined)?.code, code, `${what}: ${code}`);
    t.equal(sent.length + navigated.length, before, `${what}: nothing sent`);
  }
  return { text, metafile, pkg, sent, navigated, client, refused, setAnswer: (f: () => Response) => { answer = f; } };
}

t.test('the bundle is ESM for browsers: it imports nothing, and is made only of the package\'s own files', async (t) => {
  const { text, metafile, pkg } = await loadBundle(t);
  const outputs = Object.values(metafile.outputs);
  t.equal(outputs.length, 1, 'one file');
  t.same(outputs[0]!.imports, [], 'no import left in the bundle: no Node built-in, no package');
  t.ok(outputs[0]!.exports.includes('BffClient') && outputs[0]!.exports.includes('BffBrowserError'), 'ESM exports');
  const inputs = Object.keys(metafile.inputs).map((p) => relative(process.cwd(), p).split('\\').join('/'));
  t.ok(inputs.length >= 4, 'the package\'s files');
  t.same(inputs.filter((p) => !p.startsWith('api/sdk/browser/')), [], 'every input is under api/sdk/browser/');
  for (const input of Object.values(metafile.inputs)) t.same(input.imports.filter((i) => !i.path.startsWith('api/sdk/browser/') && !i.path.includes('/api/sdk/browser/')), [], 'inputs import only each other');
  t.notMatch(text, /\brequire\(|\bfrom\s*["'](node:|[a-z@])|\bimport\(\s*["']|process\.env|\bBuffer\./, 'no require, no bare or node: import, no process or Buffer');
  t.equal(typeof pkg.BffClient, 'function', 'the bundle loads as a module');
});

t.test('every credential in an option or a header is refused before anything is sent', async (t) => {
  const { client, refused } = await loadBundle(t);
  const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl';
  const options: [string, Record<string, unknown>][] = [
    ['apiKey', { apiKey: 'svc_test_abc' }], ['api_key', { api_key: 'x' }], ['publishable+secret', { secretKey: 'x' }],
    ['accessToken', { accessToken: 'x' }], ['refreshToken', { refreshToken: 'x' }], ['refresh_credential', { refresh_credential: 'x' }],
    ['sessionId', { sessionId: 'x' }], ['memberSessionId', { memberSessionId: 'x' }], ['idToken', { idToken: jwt }],
    ['proof', { proof: 'x' }], ['providerProof', { providerProof: 'x' }], ['authorization', { authorization: 'Bearer x' }],
    ['token', { token: 'x' }],
  ];
  for (const [what, o] of options) await refused(() => client(o), 'credential_refused', `option ${what}`);
  const headers: [string, Record<string, string>][] = [
    ['Authorization', { Authorization: 'Bearer abc' }], ['authorization (any value)', { authorization: 'x' }],
    ['Proxy-Authorization', { 'Proxy-Authorization': 'Basic x' }], ['X-Member-Session-Id', { 'X-Member-Session-Id': 'mss_x' }],
    ['X-OIDC-ID-Token', { 'X-OIDC-ID-Token': jwt }], ['X-SVC-Publishable-Key', { 'X-SVC-Publishable-Key': 'pk_test_x' }],
    ['X-Access-Token', { 'X-Access-Token': 'x' }], ['X-Refresh-Token', { 'x-refresh-token': 'x' }], ['X-Api-Key', { 'X-Api-Key': 'x' }],
    ['Cookie', { Cookie: '__Host-bff-session=bfr_x' }], ['a bearer value under another name', { 'x-trace': 'Bearer abc' }],
    ['an API key under another name', { 'x-note': 'svc_live_abc' }], ['a JWT under another name', { 'x-note': jwt }],
    ['a session id under another name', { 'x-note': 'mss_abc' }], ['a refresh credential under another name', { 'x-note': 'mrc_abc' }],
  ];
  for (const [what, h] of headers) await refused(() => client({ headers: h }), 'credential_refused', `header ${what}`);
  await refused(() => client({ credentials: 'include' }), 'invalid_argument', 'an unknown option (the package sets credentials itself)');
  t.doesNotThrow(() => client({ headers: { 'x-trace-id': 'abc123', 'accept-language': 'en' } }), 'an ordinary header is taken');
});

t.test('a BFF of another origin is refused; a path or a URL of the page\'s origin is taken', async (t) => {
  const { client, refused, sent } = await loadBundle(t);
  await refused(() => client({ base: 'https://evil.example/bff' }), 'origin_refused', 'another origin');
  await refused(() => client({ base: 'http://app.example/bff' }), 'origin_refused', 'another scheme');
  await refused(() => client({ base: 'https://app.example:8443/bff' }), 'origin_refused', 'another port');
  await refused(() => client({ base: '//evil.example/bff' }), 'origin_refused', 'a scheme-relative URL');
  await refused(() => client({ base: 'https://app.example/bff', location: undefined, fetch: undefined }), 'origin_refused', 'an absolute URL where no page origin is known');
  await client({ base: `${ORIGIN}/members/` }).session();
  t.equal(sent.at(-1)!.url, '/members/session', 'an absolute URL of the page\'s origin becomes a path');
  await client({ base: '/api/bff' }).session();
  t.equal(sent.at(-1)!.url, '/api/bff/session');
});

t.test('every credential in an argument is refused before anything is sent', async (t) => {
  const { client, refused } = await loadBundle(t);
  const c = client();
  const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl';
  const cases: [string, () => unknown][] = [
    ['signIn(id token)', () => (c.signIn as (...a: unknown[]) => void)(jwt)],
    ['signIn({ idToken })', () => (c.signIn as (...a: unknown[]) => void)({ idToken: 'x' })],
    ['signIn({ code: hrc_ })', () => (c.signIn as (...a: unknown[]) => void)({ code: 'hrc_abc' })],
    ['signInSandboxDemo(a session id)', () => (c.signInSandboxDemo as (...a: unknown[]) => unknown)('mss_abc')],
    ['signOut({ sessionId })', () => c.signOut({ sessionId: 'mss_x' } as never)],
    ['signOut({ refreshToken })', () => c.signOut({ refreshToken: 'x' } as never)],
    ['acceptConsents with a token field', () => c.acceptConsents([{ policy: 'terms', version: 'v1', refresh_token: 'x' } as never])],
    ['acceptConsents with a session id value', () => c.acceptConsents([{ policy: 'terms', version: 'mss_abc' }])],
    ['provisionWallet({ accessToken })', () => c.provisionWallet({ vaultId: 'vlt_1', chains: ['evm-local'], accessToken: 'x' } as never)],
    ['provisionWallet with a JWT', () => c.provisionWallet({ vaultId: jwt, chains: [] })],
    ['provisionWallet with an API key in a chain', () => c.provisionWallet({ vaultId: 'vlt_1', chains: ['svc_test_x'] })],
    ['transactions({ cursor: bearer })', () => c.transactions({ cursor: 'Bearer abc' })],
    ['transactions({ authorization })', () => c.transactions({ authorization: 'x' } as never)],
    ['wallets({ sessionId })', () => c.wallets({ sessionId: 'x' } as never)],
    ['requestDataExport({ idempotencyKey: API key })', () => c.requestDataExport({ idempotencyKey: 'svc_test_x' })],
    ['requestDataExport({ apiKey })', () => c.requestDataExport({ apiKey: 'x' } as never)],
    ['dataExport(session id)', () => c.dataExport('mss_abc')],
    ['dataExport(BFF reference)', () => c.dataExport('bfr_abc')],
    ['setAvatar(a token)', () => c.setAvatar(jwt as never, 'image/png')],
  ];
  for (const [what, f] of cases) await refused(f, 'credential_refused', what);
});

t.test('what is sent: same-origin paths, the browser\'s cookies, the CSRF header, no authorization; answers become typed errors', async (t) => {
  const { client, sent, navigated, setAnswer, pkg } = await loadBundle(t);
  const c = client({ headers: { 'x-trace-id': 't1' } });
  t.same(await c.session(), { signed_in: false });
  const first = sent[0]!;
  t.equal(first.url, '/bff/session');
  t.equal(first.init.credentials, 'same-origin', 'the cookie goes with it, to this origin only');
  t.equal((first.init as { redirect?: string }).redirect, 'error', 'no redirect is followed');
  const h = first.init.headers as Record<string, string>;
  t.equal(h[pkg.BFF_CSRF_HEADER], pkg.BFF_CSRF_VALUE, 'the CSRF header');
  t.equal(h['x-trace-id'], 't1');
  t.notOk(Object.keys(h).some((k) => /authorization|session|token|key/i.test(k)), 'no credential header');

  setAnswer(() => new Response(JSON.stringify({ id: 'dex_1', status: 'pending', download: null }), { status: 202 }));
  await c.requestDataExport({ idempotencyKey: 'k-1' });
  t.equal(sent.at(-1)!.init.method, 'POST');
  t.equal((sent.at(-1)!.init.headers as Record<string, string>)['idempotency-key'], 'k-1');
  t.same(JSON.parse(String(sent.at(-1)!.init.body)), { format: 'json' }, 'the body names no member or holder');

  c.signIn();
  t.same(navigated, ['/bff/sign-in'], 'signIn is a navigation to the BFF');

  setAnswer(() => new Response(JSON.stringify({ code: 'signed_out', error: 'sign in' }), { status: 401 }));
  await t.rejects(c.profile(), { name: 'BffBrowserError', code: 'signed_out', status: 401 });
  setAnswer(() => new Response(JSON.stringify({ code: 'consent_version_mismatch', error: 'name every current policy' }), { status: 409 }));
  await t.rejects(c.acceptConsents([]), { code: 'refused', apiCode: 'consent_version_mismatch', status: 409, message: 'name every current policy' });
  setAnswer(() => new Response(JSON.stringify({ code: 'not_found', error: 'no avatar' }), { status: 404 }));
  t.equal(await c.avatar(), null, 'no avatar is null');
  setAnswer(() => new Response('<html>', { status: 200 }));
  await t.rejects(c.balance(), { code: 'bad_response' });
  setAnswer(() => new Response(JSON.stringify({ code: 'api_unavailable' }), { status: 502 }));
  await t.rejects(c.balance(), { code: 'unavailable', apiCode: 'api_unavailable' });
  setAnswer(() => { throw new TypeError('Failed to fetch'); });
  await t.rejects(c.balance(), { code: 'unavailable' });
});

t.test('the BFF side: checkBffRequest takes the package\'s calls from its own origin only', async (t) => {
  const origin = 'https://app.example';
  const ok = { 'x-bff-csrf': '1', 'sec-fetch-site': 'same-origin', origin };
  t.doesNotThrow(() => checkBffRequest({ headers: ok }, { origin }), 'the package\'s call');
  t.doesNotThrow(() => checkBffRequest({ headers: { 'x-bff-csrf': '1' } }, { origin }), 'a GET without fetch metadata (older browsers)');
  const refusedHeaders: [string, Record<string, string | string[]>][] = [
    ['no CSRF header', { 'sec-fetch-site': 'same-origin', origin }],
    ['a CSRF header of another value', { ...ok, 'x-bff-csrf': 'yes' }],
    ['the CSRF header twice', { ...ok, 'x-bff-csrf': ['1', '1'] }],
    ['another site', { ...ok, 'sec-fetch-site': 'cross-site' }],
    ['a sibling subdomain (same-site)', { ...ok, 'sec-fetch-site': 'same-site' }],
    ['another origin', { ...ok, origin: 'https://evil.example' }],
    ['an opaque origin', { ...ok, origin: 'null' }],
  ];
  t.doesNotThrow(() => checkBffRequest({ headers: { 'sec-fetch-site': 'same-origin' } }, { origin, resource: true }), 'an image of the page, without the header');
  refusedHeaders.push(['an image of another site\'s page', { 'sec-fetch-site': 'cross-site' }]);
  for (const [what, headers] of refusedHeaders) {
    let err: unknown;
    try {
      checkBffRequest({ headers }, { origin, resource: what.startsWith('an image') });
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof BffError && err.code === 'csrf_refused', `${what}: csrf_refused`);
  }
});
