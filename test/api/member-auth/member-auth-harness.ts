// Shared setup of the member-auth operation tests: a platform whose clock a test can move, a real OpenID
// provider on loopback, the workspace's BYO OIDC application registered against it, and helpers for the
// BFF's calls. `snapshot` reads every member-auth record and the audit log, so a refusal can be shown to
// have changed nothing.
import type { Test } from 'tap';
import { setupPlatform } from '../setup-platform.ts';
import { startProvider } from './oidc-provider-fixture.ts';
import { SESSION_COLLECTIONS } from '../../../api/member-auth/member-session-records.ts';
import { COLLECTIONS } from '../../../api/member-auth/member-auth-records.ts';

export const PATHS = {
  challenges: '/v1/member-auth/proof/challenges',
  exchange: '/v1/member-auth/proof/exchange',
  session: '/v1/member-auth/session',
  refresh: '/v1/member-auth/refresh',
  signOut: '/v1/member-auth/sign-out',
  byo: '/v1/tenant/member-auth/application',
  apps: '/v1/tenant/member-auth/applications',
} as const;

let seq = 0;
export const newExchangeId = () => `exch-${process.pid}-${Date.now()}-${++seq}`.padEnd(20, '0');

export async function setupMemberAuth(t: Test, byo: Record<string, unknown> = {}) {
  let skewMs = 0;
  const clock = () => Date.now() + skewMs;
  const s = await setupPlatform(t, { webhookAllowedDestinations: ['127.0.0.1'], clock });
  const op = await startProvider(t);
  const put = await s.call('PUT', PATHS.byo, { issuer: op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp', ...byo });
  if (put.statusCode !== 201) throw new Error(`BYO application not registered: ${put.body}`);
  const app = put.json() as { id: string; publishable_key: string; version: number };
  const other = await s.platform.tenancy.createTenant('Other');
  const otherOwner = await s.platform.tenancy.createKey(other.sandbox.id, 'owner');

  /** A BFF call: bearer, publishable key, and the session id when given. */
  const bff = (method: 'GET' | 'POST', url: string, body?: unknown, o: { pk?: string | null; session?: string; token?: string; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { ...(o.pk === null ? {} : { 'x-svc-publishable-key': o.pk ?? app.publishable_key }), ...(o.session ? { 'x-member-session-id': o.session } : {}), ...o.headers };
    return s.call(method as 'GET' | 'POST', url, body, o.token ?? s.owner.token, headers);
  };

  async function challenge(o: { pk?: string; token?: string } = {}): Promise<string> {
    const r = await bff('POST', PATHS.challenges, {}, o);
    if (r.statusCode !== 201) throw new Error(`challenge refused: ${r.body}`);
    return r.json().nonce as string;
  }

  /** Challenge, sign-in at the provider, exchange: the BFF's whole flow (rule 1). */
  async function signIn(sub = 'alice', o: { exchangeId?: string } = {}) {
    const nonce = await challenge();
    const idToken = await op.signIn({ sub, nonce, maxAge: 300 });
    const exchangeId = o.exchangeId ?? newExchangeId();
    const r = await bff('POST', PATHS.exchange, { exchange_id: exchangeId, id_token: idToken });
    if (r.statusCode !== 201) throw new Error(`exchange refused: ${r.body}`);
    return { ...(r.json() as { session_id: string; refresh_credential: string; expires_at: string; refresh_expires_at: string; member: { id: string; created: boolean } }), idToken, exchangeId, nonce };
  }

  async function snapshot(): Promise<string> {
    const out: Record<string, unknown[]> = {};
    for (const c of [...Object.values(SESSION_COLLECTIONS).map((c) => c.name), COLLECTIONS.applications.name, 'audit_log']) {
      const rows: unknown[] = [];
      for await (const r of s.store.all(c)) rows.push(r);
      out[c] = rows;
    }
    return JSON.stringify(out);
  }

  return {
    ...s, server: s.app, op, app, other, otherOwner, bff, challenge, signIn, snapshot,
    /** Moves the platform's clock (the provider keeps real time). */
    advance: (seconds: number) => { skewMs += seconds * 1000; },
  };
}

export type MemberAuthHarness = Awaited<ReturnType<typeof setupMemberAuth>>;
