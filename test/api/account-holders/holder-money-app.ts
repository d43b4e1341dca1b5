// Shared setup for the member money tests (holder balance and the sandbox bank): the funding tests' app
// (test/api/funding/funding-app.ts: both APIs on one real store, Acme and Globex, an active holder with a
// linked hosted vault's evm-local wallet), and for each holder a member signed in with a real Hosted Auth
// sandbox-demo session (its own Hosted application and BFF key), linked to the holder by staff.
import type { Test } from 'tap';
import { fundingApp, type FundingAppOptions } from '../funding/funding-app.ts';

type Method = 'GET' | 'POST';
const ORIGIN = 'http://127.0.0.1:9';

export async function moneyApp(t: Test, opts: FundingAppOptions = {}) {
  const s = await fundingApp(t, opts);
  const configured = new Set<string>();
  type Who = typeof s.acme;

  /** A Hosted application of `who`'s sandbox workspace with its own BFF key, and its demo persona's session. */
  const session = async (who: Who) => {
    const ok = async (r: Awaited<ReturnType<typeof s.bearer>>) => {
      if (r.statusCode !== 201) throw new Error(r.body);
      return r.json();
    };
    if (!configured.has(who.sandbox.id)) {
      await ok(await s.bearer('POST', '/v1/tenant/member-auth/allowed-origins', { origin: ORIGIN }, who.owner));
      await ok(await s.bearer('POST', '/v1/tenant/member-auth/redirect-urls', { url: `${ORIGIN}/callback` }, who.owner));
      configured.add(who.sandbox.id);
    }
    const bff = await s.platform.tenancy.createKey(who.sandbox.id, 'member_auth', { label: 'bff' });
    const app = await ok(await s.bearer('POST', '/v1/tenant/member-auth/applications/hosted', { enrollment: 'invite_only', origin: ORIGIN, result_callback_url: `${ORIGIN}/callback`, bff_key_id: bff.key.id }, who.owner));
    const grant = await ok(await s.bearer('POST', '/v1/member-auth/hosted/authorizations/sandbox-demo', {}, bff.token, { 'x-svc-publishable-key': app.publishable_key }));
    const headers = { 'x-svc-publishable-key': app.publishable_key as string, 'x-member-session-id': grant.session_id as string };
    return { bff: bff.token, headers, memberId: grant.member.id as string };
  };

  /** An active holder with its wallet, linked to a fresh member; `self` calls /v1/account-holders/self/<path> on the member's session. */
  const member = async (who: Who = s.acme) => {
    const h = await s.holder(who);
    const m = await session(who);
    const linked = await s.bearer('PATCH', `/v1/account-holders/${h.id}`, { member_id: m.memberId }, who.owner, { 'if-match': '"4"' });
    if (linked.statusCode !== 200) throw new Error(linked.body);
    const self = (method: Method, path: string, body?: unknown, extra: Record<string, string> = {}, token = m.bff) =>
      s.bearer(method, `/v1/account-holders/self/${path}`, body, token, { ...m.headers, ...extra });
    return { ...h, ...m, self };
  };

  return { ...s, session, member };
}

export type MoneyApp = Awaited<ReturnType<typeof moneyApp>>;
