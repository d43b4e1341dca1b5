// Hosted Auth in a real browser (platform-api.md "Confidential exchange rules" 12, "BFF helper and browser
// rules"; docs/platform/hosted-auth.md): headless Chromium drives the whole ceremony against the API
// listening on loopback. A tiny HTTP server plays the customer's BFF: it begins the authorization with its
// bearer key and publishable key, receives the callback, exchanges the result with its PKCE verifier and
// reads the member session. The code comes from a real SMTP sink; the second run answers a TOTP challenge
// (otpauth). A screenshot shows the tenant's primary colour on the page's brand bar. A third run enrols an
// authenticator in the Account Center (docs/platform/account-center.md), which the next sign-in asks for.
// Then, in the same browser and on the same origin, the sample BFF (examples/bff/) takes over: its page
// drives the browser package (docs/platform/bff.md "The browser package") through every operation it
// covers, against the same API, with nothing but the cookie in the browser.
import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Request } from 'playwright-core';
import { PNG } from 'pngjs';
import { TOTP, Secret } from 'otpauth';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { setupHosted, HOSTED, pkcePair } from './hosted-auth-harness.ts';
import { AC } from './account-center-harness.ts';
import { buildSampleBff } from '../../../examples/bff/sample-bff.ts';
import { bundleBrowserPackage } from '../../../deploy/sdk/build-browser.mjs';
import type * as BrowserPackage from '../../../api/sdk/browser/index.ts';

const CHROMIUM = '/usr/bin/chromium';
const BRAND = { r: 0xd8, g: 0x1b, b: 0x60 };

t.test('headless Chromium: email code, then email code and TOTP, back to the BFF with a member session; Account Center enrolment', async (t) => {
  // Not a skip: without the browser this test has not shown anything, and `npm test` installs it first.
  if (!existsSync(CHROMIUM)) return t.fail(`${CHROMIUM} is missing: run node deploy/test/ensure-chromium.mjs (npm test does)`);
  // The BFF: /login begins an authorization and redirects the browser; /callback exchanges the result.
  const pending = new Map<string, { verifier: string }>();
  let logins = 0;
  const outcomes: { state: string; status: number; grant?: { session_id: string; member: { id: string } }; session?: unknown; error?: string }[] = [];
  let accountSession = '';
  let accountOutcome: { status: number; summary: unknown } | undefined;
  let api = '';
  let pk = '';
  let token = '';
  const bffCall = (path: string, body: unknown, session?: string) => fetch(`${api}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${token}`, 'x-svc-publishable-key': pk, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(session ? { 'x-member-session-id': session } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // Once the first BFF's runs are done, the sample BFF answers on the same origin (the application's).
  let sample: FastifyInstance | undefined;
  const bffServer = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (sample) return sample.routing(req, res);
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://bff');
      if (url.pathname === '/login') {
        const { verifier, challenge } = pkcePair();
        const state = `st-${++logins}`;
        pending.set(state, { verifier });
        const r = await bffCall(HOSTED.begin, { redirect_uri: callback, state, code_challenge: challenge, code_challenge_method: 'S256' });
        const body = await r.json() as { authorization_url: string };
        res.writeHead(303, { location: body.authorization_url }).end();
        return;
      }
      if (url.pathname === '/account') {
        // The Account Center: a handoff from the member's session, back to the same callback.
        const { verifier, challenge } = pkcePair();
        const state = `ac-${++logins}`;
        pending.set(state, { verifier });
        const r = await bffCall(AC.handoffs, { return_url: callback, state, code_challenge: challenge }, url.searchParams.get('session') ?? '');
        res.writeHead(303, { location: (await r.json() as { handoff_url: string }).handoff_url }).end();
        return;
      }
      if (url.pathname === '/callback') {
        const state = url.searchParams.get('state') ?? '';
        const p = pending.get(state);
        if (!p) {
          res.writeHead(400).end('unknown state');
          return;
        }
        pending.delete(state);
        if (state.startsWith('ac-')) {
          const x = await bffCall(AC.exchange, { code: url.searchParams.get('code'), code_verifier: p.verifier, return_url: callback }, accountSession);
          accountOutcome = { status: x.status, summary: await x.json() };
          res.writeHead(200, { 'content-type': 'text/html' }).end('<p id="account-done">saved</p>');
          return;
        }
        const x = await bffCall(HOSTED.exchange, { code: url.searchParams.get('code'), code_verifier: p.verifier, redirect_uri: callback });
        const grant = await x.json() as { session_id: string; member: { id: string } };
        const s = await bffCall(HOSTED.session, undefined, grant.session_id);
        outcomes.push({ state, status: x.status, grant, session: await s.json() });
        res.writeHead(200, { 'content-type': 'text/html' }).end(`<p id="signed-in">signed in as ${grant.member.id}</p>`);
        return;
      }
      res.writeHead(404).end();
    })().catch((err: unknown) => res.writeHead(500).end(String(err)));
  });
  await new Promise<void>((r) => bffServer.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => { bffServer.closeAllConnections(); bffServer.close(() => r()); }));
  const bffOrigin = `http://127.0.0.1:${(bffServer.address() as AddressInfo).port}`;
  const callback = `${bffOrigin}/callback`;

  const h = await setupHosted(t, { origin: bffOrigin, enrollment: 'invite_only' });
  await h.server.listen({ port: 0, host: '127.0.0.1' });
  api = `http://127.0.0.1:${(h.server.server.address() as AddressInfo).port}`;
  pk = h.app.publishable_key;
  token = h.bffKey.token;
  const theme = await h.call('PUT', '/v1/branding', { brand_name: 'Acme Bank', primary_color: '#D81B60' });
  t.equal(theme.statusCode, 200, theme.body);
  const alice = await h.invite('alice@acme.test');
  const bob = await h.invite('bob@acme.test');
  const { secretHex } = await h.members.enrollTotp(bob.id);

  const profile = mkdtempSync(join(tmpdir(), 'hosted-chromium-'));
  t.teardown(() => rmSync(profile, { recursive: true, force: true }));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, timeout: 15_000,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.teardown(() => context.close());
  const page = context.pages()[0] ?? await context.newPage();
  /** On the Account Center's page: signs in by email code and enrols an authenticator; its secret. */
  const enrolTotp = async (email: string): Promise<Secret> => {
    await page.fill('#email', email);
    await Promise.all([page.waitForSelector('#code'), page.click('#submit')]);
    await page.fill('#code', await h.sink.nextCode(email));
    await Promise.all([page.waitForSelector('#enrol'), page.click('#submit')]);
    await Promise.all([page.waitForSelector('#totp-secret'), page.click('#enrol')]);
    const secret = Secret.fromBase32((await page.textContent('#totp-secret'))!.trim());
    await page.fill('#totp', TOTP.generate({ secret, algorithm: 'SHA1', digits: 6, period: 30 }));
    await Promise.all([page.waitForSelector('#remove'), page.click('#submit')]);
    return secret;
  };
  page.setDefaultTimeout(10_000);
  const scriptErrors: string[] = [];
  // A CSP violation is a console error; a failed load other than the favicon a failed response.
  page.on('console', (m) => { if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) scriptErrors.push(m.text()); });
  page.on('response', (r) => { if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) scriptErrors.push(`${r.status()} ${r.url()}`); });

  // Run 1: email code only.
  await page.goto(`${bffOrigin}/login`);
  t.match(page.url(), new RegExp(`^${api}/v1/hosted-auth/hau_`), 'the BFF sent the browser to the hosted page');
  const shot = PNG.sync.read(await page.screenshot());
  const at = (x: number, y: number) => { const i = (shot.width * y + x) << 2; return { r: shot.data[i]!, g: shot.data[i + 1]!, b: shot.data[i + 2]! }; };
  t.same(at(4, 4), BRAND, 'the brand bar is the tenant\'s primary colour');
  t.same(at(shot.width - 4, 40), BRAND, 'across the page');
  t.match(await page.textContent('#brand-bar'), /Acme Bank/, 'the tenant\'s name');
  const cookies = await context.cookies(api);
  t.match(cookies, [{ name: /^__Host-hauth-/, httpOnly: true, secure: true, sameSite: 'Lax', path: '/' }], 'the browser keeps the __Host- flow cookie');
  await page.fill('#email', 'alice@acme.test');
  await Promise.all([page.waitForURL(/\/v1\/hosted-auth\/hau_[^/]+$/), page.click('#submit')]);
  await page.fill('#code', await h.sink.nextCode('alice@acme.test'));
  await Promise.all([page.waitForURL(`${callback}?**`), page.click('#submit')]);
  t.match(await page.textContent('#signed-in'), alice.id, 'the BFF signed the member in');
  t.match(outcomes[0], { state: 'st-1', status: 201, grant: { member: { id: alice.id } }, session: { member: { id: alice.id }, application: { kind: 'hosted' }, amr: ['email_otp'] } });

  // Run 2: email code, then the member's TOTP factor.
  await page.goto(`${bffOrigin}/login`);
  await page.fill('#email', 'bob@acme.test');
  await Promise.all([page.waitForURL(/\/v1\/hosted-auth\/hau_[^/]+$/), page.click('#submit')]);
  await page.fill('#code', await h.sink.nextCode('bob@acme.test'));
  await Promise.all([page.waitForSelector('#totp'), page.click('#submit')]);
  const code = TOTP.generate({ secret: Secret.fromHex(secretHex), algorithm: 'SHA1', digits: 6, period: 30 });
  await page.fill('#totp', code);
  await Promise.all([page.waitForURL(`${callback}?**`), page.click('#submit')]);
  t.match(await page.textContent('#signed-in'), bob.id);
  t.match(outcomes[1], { state: 'st-2', status: 201, grant: { member: { id: bob.id } }, session: { member: { id: bob.id }, amr: ['email_otp', 'otp', 'mfa'] } });

  // Run 3: the Account Center: alice signs in on it, enrols an authenticator, and the next sign-in asks for it.
  accountSession = outcomes[0]!.grant!.session_id;
  await page.goto(`${bffOrigin}/account?session=${accountSession}`);
  t.match(page.url(), new RegExp(`^${api}/v1/account-center/hac_`), 'the BFF sent the browser to the Account Center');
  const secret = await enrolTotp('alice@acme.test');
  t.match(await page.textContent('#factor-status'), /set up/, 'the factor is enrolled');
  await Promise.all([page.waitForURL(`${callback}?**`), page.click('#finish')]);
  t.match(accountOutcome, { status: 200, summary: { member_id: alice.id, changes: ['totp_enrolled'], factors: [{ type: 'totp' }] } }, 'the BFF learns what changed');
  await page.goto(`${bffOrigin}/login`);
  await page.fill('#email', 'alice@acme.test');
  await Promise.all([page.waitForURL(/\/v1\/hosted-auth\/hau_[^/]+$/), page.click('#submit')]);
  await page.fill('#code', await h.sink.nextCode('alice@acme.test'));
  await Promise.all([page.waitForSelector('#totp'), page.click('#submit')]);
  // The enrolment used this step's code: the next step's (within the skew) signs in.
  await page.fill('#totp', TOTP.generate({ secret, algorithm: 'SHA1', digits: 6, period: 30, timestamp: Date.now() + 30_000 }));
  await Promise.all([page.waitForURL(`${callback}?**`), page.click('#submit')]);
  t.match(outcomes[2], { status: 201, grant: { member: { id: alice.id } }, session: { amr: ['email_otp', 'otp', 'mfa'] } }, 'the sign-in asked for the new factor');
  t.same(scriptErrors, [], 'no console error (no CSP violation) and no failed load');

  await t.test('the sample BFF\'s page drives the browser package through every operation it covers', async (t) => {
    const { text: bundle } = await bundleBrowserPackage();
    const app = await buildSampleBff({
      apiUrl: api, apiKey: h.bffKey.token, publishableKey: h.app.publishable_key, origin: bffOrigin, redirectUri: callback,
      holderApiKey: h.owner.token, sandboxDemo: true, storeKey: new Uint8Array(randomBytes(32)), browserBundle: bundle, now: h.platform.clock,
    });
    await app.ready();
    t.teardown(() => app.close());
    sample = app;

    // Carol: invited, her account holder linked to her member id and active, the tenant's policies published.
    const carol = await h.invite('carol@acme.test');
    const created = await h.call('POST', '/v1/account-holders', { type: 'individual', given_name: 'Carol', family_name: 'Jones', member_id: carol.id });
    t.equal(created.statusCode, 201, created.body);
    const holder = created.json() as { id: string };
    let etag = String(created.headers.etag);
    for (const change of [{ verification_status: 'pending' }, { verification_status: 'verified', status: 'active' }]) {
      const r = await h.call('PATCH', `/v1/account-holders/${holder.id}`, change, undefined, { 'if-match': etag });
      t.equal(r.statusCode, 200, r.body);
      etag = String(r.headers.etag);
    }
    t.equal((await h.call('PUT', '/v1/branding', { terms_url: 'https://acme.test/terms/v1', privacy_url: 'https://acme.test/privacy/v1' })).statusCode, 200);

    // What the page sends: every fetch of the package goes to this origin, with no credential header.
    const fetches: { url: string; headers: Record<string, string> }[] = [];
    const onRequest = (r: Request) => { if (r.resourceType() === 'fetch') fetches.push({ url: r.url(), headers: r.headers() }); };
    page.on('request', onRequest);
    t.teardown(() => { page.off('request', onRequest); });
    type Pkg = typeof BrowserPackage;
    // The page's own copy of the package, as its script imports it (page.evaluate runs in the page).
    const url = '/assets/bff-browser.js';
    type Doc = { cookie: string; createElement(n: 'img'): { naturalWidth: number; naturalHeight: number; onload: (() => void) | null; onerror: (() => void) | null; src: string } };

    await page.goto(`${bffOrigin}/`);
    await page.waitForSelector('#sign-in:not([hidden])');
    t.equal(await page.textContent('#status'), 'You are signed out.', 'the page asks the package: signed out');

    // In the browser: what the package never takes is refused before anything is sent.
    const before = fetches.length;
    const refusals = await page.evaluate(async ({ url, apiOrigin }) => {
      const m = await import(url) as Pkg;
      const tries: [string, () => unknown][] = [
        ['apiKey', () => new m.BffClient({ apiKey: 'svc_test_abc' } as never)],
        ['accessToken', () => new m.BffClient({ accessToken: 'x' } as never)],
        ['refreshToken', () => new m.BffClient({ refreshToken: 'x' } as never)],
        ['sessionId', () => new m.BffClient({ sessionId: 'mss_x' } as never)],
        ['idToken', () => new m.BffClient({ idToken: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln' } as never)],
        ['authorization header', () => new m.BffClient({ headers: { Authorization: 'Bearer x' } })],
        ['session header', () => new m.BffClient({ headers: { 'X-Member-Session-Id': 'mss_x' } })],
        ['another origin', () => new m.BffClient({ base: `${String(apiOrigin)}/v1` })],
        ['a proof as an argument', () => new m.BffClient().acceptConsents([{ policy: 'terms', version: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln' }])],
      ];
      const out: Record<string, string> = {};
      for (const [what, f] of tries) {
        try {
          await f();
          out[what] = 'accepted';
        } catch (e) {
          out[what] = `${(e as Error).name}:${(e as { code: string }).code}`;
        }
      }
      return out;
    }, { url, apiOrigin: api });
    t.same(refusals, {
      apiKey: 'BffBrowserError:credential_refused', accessToken: 'BffBrowserError:credential_refused', refreshToken: 'BffBrowserError:credential_refused',
      sessionId: 'BffBrowserError:credential_refused', idToken: 'BffBrowserError:credential_refused', 'authorization header': 'BffBrowserError:credential_refused',
      'session header': 'BffBrowserError:credential_refused', 'another origin': 'BffBrowserError:origin_refused', 'a proof as an argument': 'BffBrowserError:credential_refused',
    }, 'each refused with its typed error');
    t.equal(fetches.length, before, 'nothing was sent for any of them');
    t.same(await page.evaluate(async (url) => new ((await import(url)) as Pkg).BffClient().profile().then(() => 'signed in', (e: { code: string }) => e.code), url), 'signed_out', 'no session yet');
    const bare = await page.evaluate(async () => { const r = await fetch('/bff/profile'); return { status: r.status, body: await r.json() as { code: string } }; });
    t.match(bare, { status: 403, body: { code: 'csrf_refused' } }, 'a call without the package\'s CSRF header is refused');

    // Session launch: the page's button, the Hosted page, back signed in.
    await Promise.all([page.waitForURL(/\/v1\/hosted-auth\/hau_/), page.click('#sign-in')]);
    await page.fill('#email', 'carol@acme.test');
    await Promise.all([page.waitForURL(/\/v1\/hosted-auth\/hau_[^/]+$/), page.click('#submit')]);
    await page.fill('#code', await h.sink.nextCode('carol@acme.test'));
    await Promise.all([page.waitForURL(`${bffOrigin}/`), page.click('#submit')]);
    // The page shows the status, then asks for the enrolment: both are shown once #next is.
    await page.waitForSelector('#next:not([hidden])');
    t.equal(await page.textContent('#status'), `Signed in as ${carol.id}`, 'the page shows the member from the package\'s profile');
    t.equal(await page.textContent('#next'), 'Please accept our current terms.', 'and the enrolment\'s next step');
    const jar = await context.cookies(bffOrigin);
    t.match(jar.filter((c) => c.name.startsWith('__Host-bff')), [{ name: '__Host-bff-session', value: /^bfr_[A-Za-z0-9_-]{43}$/, httpOnly: true, secure: true, sameSite: 'Strict', path: '/' }], 'only the opaque reference, in a host-only HttpOnly Strict cookie');
    t.equal(await page.evaluate(() => (globalThis as unknown as { document: Doc }).document.cookie), '', 'which the page\'s script cannot read');

    // Every covered operation, from the page.
    const png = PNG.sync.write(Object.assign(new PNG({ width: 3, height: 2 }), { data: Buffer.alloc(3 * 2 * 4, 0x80) }));
    const r = await page.evaluate(async ({ url, pngBytes }) => {
      const m = await import(url) as Pkg;
      const c = new m.BffClient();
      const o: Record<string, unknown> = {};
      const attempt = async (f: () => Promise<unknown>) => f().then((ok) => ({ ok }), (e: { name: string; code: string; apiCode?: string; status?: number }) => ({ name: e.name, code: e.code, apiCode: e.apiCode, status: e.status }));
      o.session = await c.session();
      o.profile = await c.profile();
      o.enrolment = await c.enrolment();
      o.verification = await c.verification();
      const consents = await c.consents() as { policies: { policy: string; version: string }[]; all_current: boolean };
      o.consents = consents;
      o.wrongConsents = await attempt(() => c.acceptConsents([{ policy: 'terms', version: '0000000000000000' }]));
      o.accepted = await c.acceptConsents(consents.policies.map((p) => ({ policy: p.policy, version: p.version })));
      o.enrolmentAfter = await c.enrolment();
      o.balance = await c.balance();
      o.bankBalance = await c.bankBalance();
      o.bankTransactions = await c.bankTransactions({ limit: 10 });
      o.transactions = await c.transactions({ limit: 10 });
      const dex = await c.requestDataExport({ idempotencyKey: 'export-1' });
      o.dataExport = dex;
      o.dataExportRepeated = await c.requestDataExport({ idempotencyKey: 'export-1' });
      // The API's job prepares it in the background; the file comes through the BFF, from this origin.
      let ready = await c.dataExport(dex.id);
      for (let i = 0; i < 100 && ready.status === 'pending'; i++) ready = await new Promise((res) => setTimeout(res, 100)).then(() => c.dataExport(dex.id));
      o.dataExportReady = ready;
      if (ready.download) {
        const file = await fetch(ready.download.url);
        o.dataExportFile = { status: file.status, body: await file.json() as unknown };
      }
      o.walletReadiness = await c.walletReadiness();
      o.wallets = await c.wallets();
      o.provision = await attempt(() => c.provisionWallet({ vaultId: 'vlt_unknown', chains: ['evm-local'] }));
      o.noAvatar = await c.avatar();
      o.setAvatar = await c.setAvatar(new Uint8Array(pngBytes as number[]), 'image/png');
      o.avatar = await c.avatar();
      const img = (globalThis as unknown as { document: Doc }).document.createElement('img');
      await new Promise<void>((resolve, reject) => { img.onload = () => resolve(); img.onerror = () => reject(new Error('the avatar did not load')); img.src = (o.avatar as { url: string }).url; });
      o.image = [img.naturalWidth, img.naturalHeight];
      await c.removeAvatar();
      o.avatarRemoved = await c.avatar();
      o.accountCenterBefore = await c.accountCenterResult();
      return o;
    }, { url, pngBytes: [...png] });
    t.match(r.session, { signed_in: true, application_kind: 'hosted' }, 'session status');
    t.match(r.profile, { member_id: carol.id, application_kind: 'hosted', amr: ['email_otp'], account_holder: { id: holder.id, status: 'active', verification_status: 'verified' } }, 'the safe profile');
    t.notOk(JSON.stringify(r.profile).match(/mss_|mrc_|svc_|workspace/), 'with no session id, credential or workspace in it');
    t.match(r.enrolment, { account_holder_linked: true, consents_current: false, wallet_status: 'not_provisioned', next: 'accept_policies' }, 'enrolment: policies first');
    t.match(r.verification, { account_holder_id: holder.id, status: 'active', verification_status: 'verified' }, 'verification');
    t.match(r.consents, { account_holder_id: holder.id, all_current: false, policies: [{ policy: /terms|privacy/ }, { policy: /terms|privacy/ }] }, 'the current policies');
    t.match(r.wrongConsents, { name: 'BffBrowserError', code: 'refused', apiCode: 'consent_version_mismatch', status: 409 }, 'the API\'s refusal, typed');
    t.match(r.accepted, { id: /^cns_/, account_holder_id: holder.id, member_id: carol.id }, 'consents accepted');
    t.match(r.enrolmentAfter, { consents_current: true, next: 'provision_wallet' }, 'enrolment: the wallet next');
    t.match(r.balance, {}, 'the balance');
    t.match(r.bankBalance, { savings: { currency: 'USD' }, checking: { currency: 'USD' } }, 'the sandbox bank\'s balances');
    t.match(r.bankTransactions, { data: Array, has_more: false }, 'the bank\'s history');
    t.match(r.transactions, { data: Array }, 'the money movements');
    t.match(r.dataExport, { id: /^dex_/, status: 'pending', download: null }, 'a data export asked for');
    t.equal((r.dataExportRepeated as { id: string }).id, (r.dataExport as { id: string }).id, 'asked again with the same idempotency key: the same export');
    t.match(r.dataExportReady, { id: (r.dataExport as { id: string }).id, status: 'ready', download: { url: `/bff/data-exports/${(r.dataExport as { id: string }).id}/file` } }, 'ready, its file at the BFF');
    t.match(r.dataExportFile, { status: 200, body: { format_version: 1, export_id: (r.dataExport as { id: string }).id, account_holder: { id: holder.id } } }, 'the member\'s data, downloaded from the page\'s origin');
    t.match(r.walletReadiness, { account_holder_id: holder.id, status: 'not_provisioned', vault_id: null }, 'wallet readiness');
    t.match(r.wallets, { data: [], has_more: false }, 'no wallet yet');
    t.match(r.provision, { code: 'refused', status: 404, apiCode: 'not_found' }, 'a vault that is not the workspace\'s: the API\'s refusal');
    t.equal(r.noAvatar, null, 'no avatar yet');
    t.match(r.setAvatar, { content_type: 'image/png', url: '/bff/avatar/image' }, 'an avatar uploaded through the BFF');
    t.same(r.image, [3, 2], 'the image, served from the page\'s origin');
    t.equal(r.avatarRemoved, null, 'and removed');
    t.equal(r.accountCenterBefore, null, 'no Account Center visit yet');

    // Account Center handoff: the package sends the browser there; back on the page, the visit's result.
    await Promise.all([page.waitForURL(/\/v1\/account-center\/hac_/), page.click('#account-center')]);
    await enrolTotp('carol@acme.test');
    await Promise.all([page.waitForURL(`${bffOrigin}/`), page.click('#finish')]);
    await page.waitForSelector('#sign-out:not([hidden])');
    t.match(await page.evaluate(async (url) => new ((await import(url)) as Pkg).BffClient().accountCenterResult(), url), { member_id: carol.id, changes: ['totp_enrolled'], factors: [{ type: 'totp' }] }, 'what the visit changed');

    // Sign-out: the page's button; the session is gone at the BFF and the API.
    const audits = async () => { const n: string[] = []; for await (const a of h.store.all<{ action: string }>('audit_log')) n.push(a.action); return n; };
    const signOuts = (await audits()).filter((a) => a.includes('sign_out')).length;
    await Promise.all([page.waitForSelector('#sign-in:not([hidden])'), page.click('#sign-out')]);
    t.same(await page.evaluate(async (url) => new ((await import(url)) as Pkg).BffClient().session(), url), { signed_in: false, sandbox_demo: true }, 'signed out');
    t.equal((await context.cookies(bffOrigin)).filter((c) => c.name === '__Host-bff-session').length, 0, 'the cookie is cleared');
    t.ok((await audits()).filter((a) => a.includes('sign_out')).length > signOuts, 'the API ended the session');

    // The sandbox demo persona: the page's other button.
    await Promise.all([page.waitForSelector('#sign-out:not([hidden])'), page.click('#demo')]);
    t.match(await page.evaluate(async (url) => new ((await import(url)) as Pkg).BffClient().profile(), url), { member_id: /^hsub_/, amr: ['demo'], account_holder: null }, 'signed in as the demo persona');
    t.match(await page.evaluate(async (url) => new ((await import(url)) as Pkg).BffClient().enrolment(), url), { account_holder_linked: false, next: 'link_account_holder' }, 'who has no account holder yet');
    await Promise.all([page.waitForSelector('#sign-in:not([hidden])'), page.click('#sign-out')]);

    const mine = fetches.filter((f) => !f.url.startsWith(`${bffOrigin}/`));
    t.same(mine, [], 'every fetch of the page went to its own origin');
    t.ok(fetches.length > 25, 'the package\'s calls were seen');
    t.same(fetches.filter((f) => Object.keys(f.headers).some((k) => /^(authorization|x-member-session-id|x-svc-publishable-key|x-oidc-id-token)$/i.test(k))), [], 'none carried a credential header');
    // The failed loads are the refusals this test asked for, each once; nothing else failed.
    t.same(scriptErrors.filter((e) => !/^\d{3} /.test(e)), [], 'no console error (no CSP violation)');
    t.same(scriptErrors.filter((e) => /^\d{3} /.test(e)).map((e) => e.replace(bffOrigin, '')), [
      '401 /bff/profile', '403 /bff/profile', '409 /bff/consents', '404 /bff/wallet-provision', '404 /bff/avatar', '404 /bff/avatar',
    ], 'no failed load but the refusals asked for');
  });
});
