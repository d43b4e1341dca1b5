// Shared setup of the BFF helper tests: the real API (platform, BYO OIDC application, the real OpenID
// provider of test/api/member-auth) listening on loopback, so the SDK talks to it over HTTP; a fetch that
// records every call and can lose answers; and BFF instances over one store.
import type { Test } from 'tap';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { setupMemberAuth } from '../api/member-auth/member-auth-harness.ts';
import { BffError, BffSessions, MemberAuthClient, MemoryBffStore, type BffSessionsOptions, type BffStore } from '../../api/sdk/index.ts';

export interface Sent {
  method: string;
  path: string;
  body: Record<string, unknown> | undefined;
  status: number | undefined;
  answer: Record<string, unknown> | undefined;
  recovered: boolean;
  /** The answer was received by the network layer but never reached the SDK. */
  dropped: boolean;
}

/**
 * `lose(path, n)` decides, for the n-th call of a path (from 1), whether the answer is lost: 'after'
 * lets the API process the request and drops its answer (the API committed; the BFF never knows),
 * 'before' fails without sending.
 */
export type Loss = (path: string, n: number) => 'after' | 'before' | undefined;

export function recordingFetch() {
  const sent: Sent[] = [];
  const counts = new Map<string, number>();
  let lose: Loss = () => undefined;
  const f: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const n = (counts.get(url.pathname) ?? 0) + 1;
    counts.set(url.pathname, n);
    const loss = lose(url.pathname, n);
    const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : undefined;
    const entry: Sent = { method: init?.method ?? 'GET', path: url.pathname, body, status: undefined, answer: undefined, recovered: false, dropped: loss !== undefined };
    sent.push(entry);
    if (loss === 'before') throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED (simulated)') });
    const res = await fetch(input, init);
    const text = await res.text();
    entry.status = res.status;
    entry.answer = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
    entry.recovered = res.headers.get('member-exchange-recovered') === 'true';
    if (loss === 'after') throw new TypeError('fetch failed', { cause: new Error('socket hang up (simulated, after the answer arrived)') });
    return new Response(text, { status: res.status, headers: res.headers });
  };
  return {
    fetch: f,
    sent,
    calls: (path: string) => sent.filter((s) => s.path === path),
    setLoss: (l: Loss) => { lose = l; },
  };
}

export async function setupBff(t: Test) {
  const h = await setupMemberAuth(t);
  await h.server.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${(h.server.server.address() as AddressInfo).port}`;
  const net = recordingFetch();
  const { token } = await h.platform.tenancy.createKey(h.sandbox.id, 'member_auth');
  const client = new MemberAuthClient({ baseUrl, apiKey: token, publishableKey: h.app.publishable_key, fetch: net.fetch });
  const store = new MemoryBffStore(h.platform.clock);
  const storeKey = new Uint8Array(randomBytes(32));
  /** One BFF instance; several made here share the store and the key, as instances behind one load balancer. */
  const instance = (o: Partial<BffSessionsOptions> & { store?: BffStore } = {}) =>
    new BffSessions({ client, store, storeKey, now: h.platform.clock, retryDelayMs: 5, ...o });

  async function audit(action?: string): Promise<{ action: string; after: Record<string, unknown> | null }[]> {
    const rows: { action: string; after: Record<string, unknown> | null }[] = [];
    for await (const r of h.store.all<{ action: string; after: Record<string, unknown> | null }>('audit_log')) rows.push(r);
    return action ? rows.filter((r) => r.action === action) : rows;
  }

  /** A whole sign-in through one instance: begin, the provider's code flow with the nonce, complete. */
  async function signIn(bff: BffSessions, sub = 'alice') {
    const begun = await bff.beginSignIn();
    const idToken = await h.op.signIn({ sub, nonce: begun.nonce, maxAge: 300 });
    return { ...(await bff.completeSignIn(begun.transactionId, idToken)), begun, idToken };
  }

  return { h, baseUrl, net, client, store, storeKey, instance, audit, signIn, token };
}

/** Expects `p` to fail with a BffError of `code`; the error, for further checks. */
export async function rejectsBff(t: Test, p: Promise<unknown>, code: string, what: string): Promise<BffError | undefined> {
  try {
    await p;
    t.fail(`${what}: resolved`);
  } catch (err) {
    t.ok(err instanceof BffError, `${what}: a BffError`);
    t.equal((err as BffError).code, code, `${what}: ${code}`);
    return err as BffError;
  }
  return undefined;
}
