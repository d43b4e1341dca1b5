// Hosted Auth in a real browser (platform-api.md "Confidential exchange rules" 12, "BFF helper and browser
// rules"; docs/platform/hosted-auth.md): headless Chromium drives the whole ceremony against the API
// listening on loopback. A tiny HTTP server plays the customer's BFF: it begins the authorization with its
// bearer key and publishable key, receives the callback, exchanges the result with its PKCE verifier and
// reads the member session. The code comes from a real SMTP sink; the second run answers a TOTP challenge
// (otpauth). A screenshot shows the tenant's primary colour on the page's brand bar. A third run enrols an
// authenticator in the Account Center (docs/platform/account-center.md), which the next sign-in asks for.
import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { PNG } from 'pngjs';
import { TOTP, Secret } from 'otpauth';
import { setupHosted, HOSTED, pkcePair } from './hosted-auth-harness.ts';
import { AC } from './account-center-harness.ts';

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
  const bffServer = createServer((req: IncomingMessage, res: ServerResponse) => {
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
  await page.fill('#email', 'alice@acme.test');
  await Promise.all([page.waitForSelector('#code'), page.click('#submit')]);
  await page.fill('#code', await h.sink.nextCode('alice@acme.test'));
  await Promise.all([page.waitForSelector('#enrol'), page.click('#submit')]);
  await Promise.all([page.waitForSelector('#totp-secret'), page.click('#enrol')]);
  const secret = Secret.fromBase32((await page.textContent('#totp-secret'))!.trim());
  await page.fill('#totp', TOTP.generate({ secret, algorithm: 'SHA1', digits: 6, period: 30 }));
  await Promise.all([page.waitForSelector('#remove'), page.click('#submit')]);
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
});
