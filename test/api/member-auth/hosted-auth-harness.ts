// Shared setup of the Hosted Auth tests: a platform whose clock a test can move, the app built with a
// real SMTP sink as its mail relay, a sandbox workspace with an allowed origin, the registered result
// callback and a Hosted application whose BFF principal is a dedicated member_auth key; helpers for the
// BFF's calls, a PKCE pair, and a cookie-keeping form client for the page (what a browser does).
import type { Test } from 'tap';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { openTestStore } from '../../support/test-store.ts';
import { createPlatform } from '../../../api/platform.ts';
import { startSmtpSink } from '../../support/smtp-sink.ts';
import { SESSION_COLLECTIONS } from '../../../api/member-auth/member-session-records.ts';
import { COLLECTIONS } from '../../../api/member-auth/member-auth-records.ts';
import { HOSTED_COLLECTIONS } from '../../../api/member-auth/hosted-records.ts';
import { HostedMembers } from '../../../api/member-auth/hosted-members.ts';

export const HOSTED = {
  begin: '/v1/member-auth/hosted/authorizations',
  exchange: '/v1/member-auth/hosted/authorizations/exchange',
  demo: '/v1/member-auth/hosted/authorizations/sandbox-demo',
  session: '/v1/member-auth/session',
  refresh: '/v1/member-auth/refresh',
} as const;

export function pkcePair() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface HostedSetupOptions {
  /** The origin the application runs at (its callback is `<origin>/callback`). */
  origin?: string;
  enrollment?: 'invite_only' | 'open';
  requireTotp?: boolean;
  /** The API server's listening origin, when the test listens (the page's public base). */
  publicUrl?: string;
  /** Extra API_* settings. */
  env?: Record<string, string>;
}

export async function setupHosted(t: Test, o: HostedSetupOptions = {}) {
  let skewMs = 0;
  const clock = () => Date.now() + skewMs;
  const sink = await startSmtpSink(t);
  const { dir, store } = await openTestStore('hosted-');
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects'), clock });
  const server = await buildApp({
    config: loadApiConfig({ API_DATA_DIR: dir, API_SMTP_URL: sink.url, API_SMTP_FROM: 'auth@platform.test', ...(o.publicUrl ? { API_PUBLIC_URL: o.publicUrl } : {}), ...o.env }),
    logger: createLogger('api', 'silent'), platform,
  });
  t.teardown(async () => {
    await server.close();
    await store.close();
  });
  const { tenant, sandbox, production } = await platform.tenancy.createTenant('Acme');
  const owner = await platform.tenancy.createKey(sandbox.id, 'owner');
  const viewer = await platform.tenancy.createKey(sandbox.id, 'viewer');
  const bffKey = await platform.tenancy.createKey(sandbox.id, 'member_auth', { label: 'bff' });
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT', url: string, body?: unknown, token = owner.token, headers: Record<string, string> = {}) =>
    server.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });

  const origin = o.origin ?? 'http://127.0.0.1:9';
  const callback = `${origin}/callback`;
  const must = async (r: Awaited<ReturnType<typeof call>>, status: number) => {
    if (r.statusCode !== status) throw new Error(`expected ${status}, got ${r.statusCode}: ${r.body}`);
    return r.json();
  };
  await must(await call('POST', '/v1/tenant/member-auth/allowed-origins', { origin }), 201);
  await must(await call('POST', '/v1/tenant/member-auth/redirect-urls', { url: callback }), 201);
  const createApp = async (enrollment: 'invite_only' | 'open', requireTotp = false) =>
    (await must(await call('POST', '/v1/tenant/member-auth/applications/hosted', { enrollment, origin, result_callback_url: callback, bff_key_id: bffKey.key.id, require_totp: requireTotp }), 201)) as { id: string; publishable_key: string; version: number };
  const app = await createApp(o.enrollment ?? 'invite_only', o.requireTotp ?? false);
  const other = await platform.tenancy.createTenant('Other');
  const otherOwner = await platform.tenancy.createKey(other.sandbox.id, 'owner');
  const members = new HostedMembers(store, platform.audit, platform.cursors, platform.clock);

  /** A BFF call: the BFF key and the application's publishable key unless told otherwise. */
  const bff = (method: 'GET' | 'POST', url: string, body?: unknown, x: { pk?: string; token?: string; session?: string } = {}) =>
    call(method, url, body, x.token ?? bffKey.token, { 'x-svc-publishable-key': x.pk ?? app.publishable_key, ...(x.session ? { 'x-member-session-id': x.session } : {}) });

  async function begin(x: { pk?: string; state?: string } = {}) {
    const pkce = pkcePair();
    const state = x.state ?? randomBytes(12).toString('base64url');
    const r = await bff('POST', HOSTED.begin, { redirect_uri: callback, state, code_challenge: pkce.challenge, code_challenge_method: 'S256' }, x.pk ? { pk: x.pk } : {});
    const body = await must(r, 201) as { id: string; authorization_url: string; expires_at: string; application_id: string };
    return { ...body, pkce, state, path: new URL(body.authorization_url).pathname };
  }

  async function invite(email: string, appId = app.id) {
    return (await must(await call('POST', `/v1/tenant/member-auth/applications/${appId}/members`, { email }), 201)) as { id: string; email: string; status: string };
  }

  /** The browser side of the page through inject: keeps the flow cookie, reads the CSRF token from the form. */
  function browser(path: string) {
    let cookie: string | undefined;
    let csrf: string | undefined;
    const cookieHeader = (): Record<string, string> => (cookie ? { cookie } : {});
    async function get(url = path) {
      const r = await server.inject({ method: 'GET', url, headers: cookieHeader() });
      const set = r.headers['set-cookie'];
      if (typeof set === 'string') cookie = set.split(';')[0];
      csrf = /name="csrf" value="([^"]+)"/.exec(r.body)?.[1] ?? csrf;
      return r;
    }
    /** Posts a form step; `x.csrf: null` leaves the token out, `x.noCookie` the cookie. */
    async function post(step: 'email' | 'code' | 'resend' | 'totp', fields: Record<string, string> = {}, x: { csrf?: string | null; noCookie?: boolean } = {}) {
      const form = new URLSearchParams({ ...(x.csrf === null ? {} : { csrf: x.csrf ?? csrf ?? '' }), ...fields });
      return server.inject({ method: 'POST', url: `${path}/${step}`, headers: { 'content-type': 'application/x-www-form-urlencoded', ...(x.noCookie ? {} : cookieHeader()) }, payload: form.toString() });
    }
    /** Posts, then follows a 303 back to the page (GET), as a browser would; a callback redirect is returned as is. */
    async function submit(step: 'email' | 'code' | 'resend' | 'totp', fields: Record<string, string> = {}) {
      const r = await post(step, fields);
      if (r.statusCode === 303 && String(r.headers.location).startsWith('/v1/hosted-auth/')) return get(String(r.headers.location));
      return r;
    }
    return { get, post, submit, get cookie() { return cookie; } };
  }

  /** Begin, open, email, code (from the sink), and TOTP when given: the callback's code and state. */
  async function ceremony(email: string, x: { totp?: () => string; pk?: string } = {}) {
    const a = await begin(x.pk ? { pk: x.pk } : {});
    const b = browser(a.path);
    await b.get();
    await b.submit('email', { email });
    const code = await sink.nextCode(email);
    let r = await b.submit('code', { code });
    if (x.totp) r = await b.submit('totp', { code: x.totp() });
    if (r.statusCode !== 303) throw new Error(`ceremony did not reach the callback: ${r.statusCode} ${r.body.slice(0, 400)}`);
    const loc = new URL(String(r.headers.location));
    return { a, b, location: loc, code: loc.searchParams.get('code')!, state: loc.searchParams.get('state')! };
  }

  async function exchange(c: { a: { pkce: { verifier: string } }; code: string }, x: { pk?: string; token?: string } = {}) {
    return bff('POST', HOSTED.exchange, { code: c.code, code_verifier: c.a.pkce.verifier, redirect_uri: callback }, x);
  }

  async function snapshot(): Promise<string> {
    const out: Record<string, unknown[]> = {};
    for (const c of [...Object.values(SESSION_COLLECTIONS).map((c) => c.name), ...Object.values(HOSTED_COLLECTIONS).map((c) => c.name), COLLECTIONS.applications.name, 'audit_log']) {
      const rows: unknown[] = [];
      for await (const r of store.all(c)) rows.push(r);
      out[c] = rows;
    }
    return JSON.stringify(out);
  }

  return {
    dir, store, platform, server, sink, tenant, sandbox, production, owner, viewer, bffKey, call, must, origin, callback, app, createApp, other, otherOwner, members,
    bff, begin, invite, browser, ceremony, exchange, snapshot,
    /** Moves the platform's clock. */
    advance: (seconds: number) => { skewMs += seconds * 1000; },
  };
}

export type HostedHarness = Awaited<ReturnType<typeof setupHosted>>;

/** The error code a refused page shows (data-error-code), or undefined. */
export const pageError = (html: string): string | undefined => /data-error-code="([a-z_]+)"/.exec(html)?.[1];
