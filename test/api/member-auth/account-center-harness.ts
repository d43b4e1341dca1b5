// Shared helpers of the Account Center and recovery tests: the page as a browser uses it (flow cookie,
// CSRF token), a hosted member's sign-in, a handoff opened and signed into, TOTP codes at the platform's
// time (docs/platform/account-center.md).
import { Secret, TOTP } from 'otpauth';
import { pkcePair, type HostedHarness } from './hosted-auth-harness.ts';
import { ACCOUNT_CENTER_COLLECTIONS } from '../../../api/member-auth/account-center-records.ts';

export const AC = { handoffs: '/v1/account-center/handoffs', exchange: '/v1/account-center/handoffs/exchange' } as const;


/** A TOTP code of a base32 secret at the platform's time, `offsetSteps` steps away. */
export const codeOf = (h: HostedHarness, base32: string, offsetSteps = 0) =>
  new TOTP({ secret: Secret.fromBase32(base32), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: h.platform.clock() + offsetSteps * 30_000 });
export const codeOfHex = (h: HostedHarness, hex: string) => codeOf(h, Secret.fromHex(hex).base32);

/**
 * A page (the Account Center's, or the Hosted Auth page for recovery) as a browser uses it: keeps the
 * flow cookie, reads the CSRF token, follows a 303 back to the page.
 */
export function centerBrowser(h: HostedHarness, path: string) {
  let cookie: string | undefined;
  let csrf: string | undefined;
  const cookieHeader = (): Record<string, string> => (cookie ? { cookie } : {});
  async function get(url = path) {
    const r = await h.server.inject({ method: 'GET', url, headers: cookieHeader() });
    const set = r.headers['set-cookie'];
    if (typeof set === 'string') cookie = set.split(';')[0];
    csrf = /name="csrf" value="([^"]+)"/.exec(r.body)?.[1] ?? csrf;
    return r;
  }
  async function post(step: string, fields: Record<string, string> = {}, x: { csrf?: string | null; noCookie?: boolean } = {}) {
    const form = new URLSearchParams({ ...(x.csrf === null ? {} : { csrf: x.csrf ?? csrf ?? '' }), ...fields });
    return h.server.inject({ method: 'POST', url: `${path}/${step}`, headers: { 'content-type': 'application/x-www-form-urlencoded', ...(x.noCookie ? {} : cookieHeader()) }, payload: form.toString() });
  }
  async function submit(step: string, fields: Record<string, string> = {}) {
    const r = await post(step, fields);
    if (r.statusCode === 303 && String(r.headers.location).startsWith('/v1/')) return get(String(r.headers.location));
    return r;
  }
  return { get, post, submit };
}

/** A hosted member signed in (email code, and TOTP when `totp` gives one): its session grant. */
export async function signIn(h: HostedHarness, email: string, totp?: () => string) {
  const c = await h.ceremony(email, totp ? { totp } : {});
  const x = await h.exchange(c);
  if (x.statusCode !== 201) throw new Error(`exchange: ${x.statusCode} ${x.body}`);
  return x.json() as { session_id: string; refresh_credential: string; member: { id: string } };
}

/** Begins a handoff from `session` and signs the expected member in on the page: the browser on the account page. */
export async function openCenter(h: HostedHarness, session: string, email: string, totp?: () => string) {
  const pkce = pkcePair();
  const begun = await h.bff('POST', AC.handoffs, { return_url: h.callback, state: 'ac-state', code_challenge: pkce.challenge }, { session });
  if (begun.statusCode !== 201) throw new Error(`handoff: ${begun.statusCode} ${begun.body}`);
  const handoff = begun.json() as { id: string; handoff_url: string; expires_at: string };
  const b = centerBrowser(h, new URL(handoff.handoff_url).pathname);
  await b.get();
  await b.submit('email', { email });
  let page = await b.submit('code', { code: await h.sink.nextCode(email) });
  if (totp) page = await b.submit('totp', { code: totp() });
  return { handoff, pkce, b, page };
}

/** Enrols a TOTP factor through the page: its base32 secret. */
export async function enrolOnPage(h: HostedHarness, b: ReturnType<typeof centerBrowser>) {
  const setup = await b.submit('enrol');
  const base32 = /id="totp-secret">([A-Z2-7]+)</.exec(setup.body)![1]!;
  const done = await b.submit('enrol-confirm', { code: codeOf(h, base32) });
  return { setup, done, base32 };
}

/** The recovery codes a page shows. */
export const codesOf = (html: string): string[] => [...html.matchAll(/<li>([a-z0-9]{5}-[a-z0-9]{5})<\/li>/g)].map((m) => m[1]!);

/** The harness's snapshot plus the Account Center's own collections: what a refusal must leave as it was. */
export async function snapshot(h: HostedHarness): Promise<string> {
  const out: Record<string, unknown[]> = {};
  for (const c of Object.values(ACCOUNT_CENTER_COLLECTIONS).map((c) => c.name)) {
    const rows: unknown[] = [];
    for await (const r of h.store.all(c)) rows.push(r);
    out[c] = rows;
  }
  return `${await h.snapshot()}\n${JSON.stringify(out)}`;
}
