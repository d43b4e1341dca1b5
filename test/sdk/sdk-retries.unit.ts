// The SDK's timeouts and retries (docs/sdk.md "Timeouts and retries"), against the real vault API
// listening on a socket behind a fault-injecting HTTP proxy: the proxy loses answers after the API has
// acted, holds them past the SDK's timeout, answers 429/503 with Retry-After itself, and resets
// connections. Every operation completes exactly once, read back from the API's store: a write the
// SDK cannot repeat safely is tried once and reported as of unknown outcome, never done twice.
import t, { type Test } from 'tap';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { vaultApp } from '../api/vault/vault-app.ts';
import { CustodyApiError, CustodyClient } from '../../api/sdk/client.ts';
import { SdkError } from '../../api/sdk/sdk-error.ts';
import { Transport, retryAfterMs } from '../../api/sdk/transport.ts';

type Fault =
  | 'pass'
  /** Forwarded; the API's whole answer is read, then the client's connection is destroyed. */
  | 'drop-answer'
  /** Forwarded; the answer is held past the client's timeout, then sent. */
  | 'hold-answer'
  /** Not forwarded: the connection is destroyed as the request arrives. */
  | 'reset'
  /** Not forwarded: answered by the proxy. */
  | { status: 429 | 502 | 503 | 504; retryAfter?: string };

/**
 * A proxy to `upstream` that applies to each request the first scripted fault for its `METHOD /path`
 * (no query), and records what it saw and what it forwarded.
 */
async function faultyProxy(t: Test, upstream: number, holdMs: number) {
  const script: { on: string; fault: Fault }[] = [];
  const next = (name: string): Fault => {
    const i = script.findIndex((s) => s.on === name);
    return i < 0 ? 'pass' : script.splice(i, 1)[0]!.fault;
  };
  const fail = (on: string, ...faults: Fault[]) => script.push(...faults.map((fault) => ({ on, fault })));
  const forwarded: string[] = [];
  const seen: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const name = `${req.method} ${req.url!.split('?')[0]}`;
    const fault = next(name);
    seen.push(name);
    if (fault === 'reset') return void req.socket.destroy();
    if (typeof fault === 'object') {
      req.resume();
      return void res.writeHead(fault.status, { 'content-type': 'text/html', ...(fault.retryAfter !== undefined ? { 'retry-after': fault.retryAfter } : {}) }).end(`<html>${fault.status} from the proxy</html>`);
    }
    forwarded.push(name);
    const up = request({ host: '127.0.0.1', port: upstream, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (c: Buffer) => chunks.push(c));
      answer.on('end', () => {
        if (fault === 'drop-answer') return void req.socket.destroy();
        const send = () => res.writeHead(answer.statusCode!, answer.headers).end(Buffer.concat(chunks));
        if (fault === 'hold-answer') setTimeout(() => (res.destroyed ? undefined : send()), holdMs).unref();
        else send();
      });
    });
    // The client may give up first (its timeout destroys the connection): the forward then fails, which
    // ends this exchange and nothing else.
    up.on('error', () => req.socket.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return { port: (server.address() as AddressInfo).port, fail, forwarded, seen };
}

async function setup(t: Test) {
  const a = await vaultApp(t, { limits: { apiKeysPerOrg: 10, vaultsPerOrg: 10 } });
  await a.app.listen({ host: '127.0.0.1', port: 0 });
  const proxy = await faultyProxy(t, (a.app.server.address() as AddressInfo).port, 3_000);
  const client = new CustodyClient({
    baseUrl: `http://127.0.0.1:${proxy.port}`, organization: a.org.id, keyId: a.creds.keyId, secretKey: a.creds.secretKey,
    timeoutMs: 1_000, retry: { attempts: 4, baseDelayMs: 20, maxDelayMs: 2_000 },
  });
  return { a, proxy, client };
}

async function countVaults(a: Awaited<ReturnType<typeof vaultApp>>): Promise<number> {
  let n = 0;
  for await (const v of a.store.all<{ org: string }>('vaults')) if (v.org === a.org.id) n++;
  return n;
}

t.test('a vault created through lost, held and refused answers exists once', async (t) => {
  const { a, proxy, client } = await setup(t);
  // The API creates the vault, the answer is lost; the retry's answer is held past the timeout; the
  // next is a 503 from the proxy; the fourth gets through. Each attempt is signed afresh.
  proxy.fail('POST /v1/vaults', 'drop-answer', 'hold-answer', { status: 503, retryAfter: '0' });
  const v = await client.createVault({ tier: 'hosted', name: 'resilient' });
  t.equal(v.name, 'resilient');
  t.equal(proxy.seen.filter((s) => s === 'POST /v1/vaults').length, 4, 'four attempts');
  t.equal(proxy.forwarded.filter((s) => s === 'POST /v1/vaults').length, 3, 'three reached the API (the 503 did not)');
  t.equal(await countVaults(a), 1, 'and the organization has exactly one vault');
  t.equal((await client.getVault(v.id)).id, v.id, 'the one answered');

  // The same Idempotency-Key with another body is refused, and creates nothing.
  const key = 'vault-key-1';
  const first = await client.createVault({ tier: 'hosted', name: 'keyed' }, { idempotencyKey: key });
  t.equal((await client.createVault({ tier: 'hosted', name: 'keyed' }, { idempotencyKey: key })).id, first.id, 'the same key and body: the same vault');
  await t.rejects(client.createVault({ tier: 'hosted', name: 'other' }, { idempotencyKey: key }), { status: 409, code: 'idempotency_key_reused' });
  t.equal(await countVaults(a), 2, 'two vaults in all');
});

t.test('a write that cannot be repeated safely is tried once when its answer is lost, and says the outcome is unknown', async (t) => {
  const { a, proxy, client } = await setup(t);
  const before = (await client.listApiKeys()).length;
  proxy.fail('POST /v1/api-keys', 'drop-answer');
  const pub = bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
  const err = await client.registerApiKey({ public_key: pub, label: 'lost answer' }).then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof SdkError && err.code === 'network', 'a network error');
  t.match((err as Error).message, /may or may not have been processed/, 'which says the outcome is unknown');
  t.equal(proxy.seen.filter((s) => s === 'POST /v1/api-keys').length, 1, 'not sent again');
  t.equal((await client.listApiKeys()).length, before + 1, 'the API registered it once');

  // A 429 is never acted on: retried after its Retry-After, and the key is registered once.
  proxy.fail('POST /v1/api-keys', { status: 429, retryAfter: '0' });
  const pub2 = bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
  t.match(await client.registerApiKey({ public_key: pub2, label: 'after 429' }), { label: 'after 429' });
  t.equal(proxy.seen.filter((s) => s === 'POST /v1/api-keys').length, 3);
  t.equal((await client.listApiKeys()).length, before + 2);

  // A 503 is ambiguous for such a write: reported, not repeated.
  proxy.fail('POST /v1/api-keys', { status: 503 });
  await t.rejects(client.registerApiKey({ public_key: bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())) }), { status: 503, code: 'unavailable', requestId: null });
  t.equal((await client.listApiKeys()).length, before + 2, 'nothing registered');
  let stored = 0;
  for await (const k of a.store.all<{ org?: string }>('api_keys')) if (k.org === a.org.id) stored++;
  t.equal(stored, before + 2, 'as the store holds');
});

t.test('reads retry through resets and gateway errors; errors carry the request id and every rejected field', async (t) => {
  const { proxy, client } = await setup(t);
  proxy.fail('GET /v1/vaults', 'reset', { status: 502 }, { status: 504 });
  t.match(await client.listVaults(), { data: [] }, 'the fourth attempt answers');
  t.equal(proxy.seen.filter((s) => s === 'GET /v1/vaults').length, 4);

  proxy.fail('GET /v1/vaults', 'reset', 'reset', 'reset', 'reset');
  await t.rejects(client.listVaults(), { code: 'network' }, 'four resets: the attempts run out');

  const bad = await client.request('POST', '/v1/vaults', { tier: 'hosted', name: 5, colour: 'red' }).then(() => undefined, (e: unknown) => e);
  t.ok(bad instanceof CustodyApiError);
  const e = bad as CustodyApiError;
  t.equal(e.status, 400);
  t.match(e.requestId, /\S/, 'the request id the API logged');
  t.same(e.fields?.map((f) => f.field).sort(), ['colour', 'name'], 'every rejected field, by its JSON name');
});

t.test('the transport: full jitter, Retry-After within bounds, a refused connection retried for any request', async (t) => {
  t.equal(retryAfterMs('3'), 3000);
  t.equal(retryAfterMs(new Date(Date.now() + 5_000).toUTCString(), Date.now()) !== null, true);
  t.equal(retryAfterMs('soon'), null);
  t.equal(retryAfterMs(null), null);

  const waits: number[] = [];
  let calls = 0;
  const answers = [
    () => new Response('{"error":"slow down","code":"rate_limited"}', { status: 429, headers: { 'retry-after': '2' } }),
    () => new Response('{}', { status: 503 }),
    () => new Response('{"ok":true}', { status: 200 }),
  ];
  const tr = new Transport({
    baseUrl: 'http://x.test', retry: { attempts: 4, baseDelayMs: 100, maxDelayMs: 5_000 }, random: () => 0.999,
    sleep: async (ms) => void waits.push(ms), fetch: (async () => answers[calls++]!()) as typeof fetch,
  });
  t.same((await tr.send({ method: 'GET', path: '/v1/x', headers: () => ({}) })).json, { ok: true });
  t.same(waits, [2000, 199], 'Retry-After as asked, then a jittered wait below base * 2^1');

  // A Retry-After beyond the bound ends the retries, and the error says what was asked.
  const far = new Transport({ baseUrl: 'http://x.test', retry: { maxDelayMs: 1_000 }, sleep: async () => void t.fail('no wait'), fetch: (async () => new Response('{"error":"later","code":"rate_limited"}', { status: 429, headers: { 'retry-after': '60', 'x-request-id': 'req-9' } })) as typeof fetch });
  await t.rejects(far.send({ method: 'GET', path: '/v1/x', headers: () => ({}) }), { status: 429, code: 'rate_limited', retryAfterMs: 60_000, requestId: 'req-9' });

  // Connection refused: nothing was sent, so even a write that cannot be repeated is retried.
  let attempts = 0;
  const refused = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
  const tr2 = new Transport({
    baseUrl: 'http://x.test', sleep: async () => undefined,
    fetch: (async () => {
      if (attempts++ < 2) throw refused;
      return new Response('{"done":1}', { status: 201 });
    }) as typeof fetch,
  });
  t.same((await tr2.send({ method: 'POST', path: '/v1/y', payload: '{}', headers: () => ({}) })).json, { done: 1 });
  t.equal(attempts, 3);

  t.throws(() => new Transport({ baseUrl: 'http://x.test', timeoutMs: -1 }), { code: 'invalid_config' });
});

t.test('an answer longer than maxResponseBytes ends the call, on node:http and through fetch, and is not tried again; redirects are not followed', async (t) => {
  const CAP = 1024;
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    const path = req.url!.split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    req.resume();
    const json = (extra: Record<string, string> = {}) => res.writeHead(200, { 'content-type': 'application/json', ...extra });
    if (path === '/v1/exact') {
      // Exactly the cap: read whole.
      const body = JSON.stringify({ pad: 'x'.repeat(CAP - 10) });
      return void json({ 'content-length': String(Buffer.byteLength(body)) }).end(body);
    }
    if (path === '/v1/announced' || path === '/v1/vaults') return void json({ 'content-length': String(CAP + 1) }).end('{' + ' '.repeat(CAP - 1) + '}');
    if (path === '/v1/streamed') {
      // No Content-Length: the body is cut off as it arrives, long before the server would end it.
      json();
      const chunk = Buffer.alloc(512, 0x20);
      let sent = 0;
      const more = () => {
        if (res.destroyed || sent > 64) return void res.end();
        sent++;
        res.write(chunk, () => setImmediate(more));
      };
      return void more();
    }
    if (path === '/v1/error-page') return void res.writeHead(502, { 'content-type': 'text/html' }).end('<html>' + 'x'.repeat(CAP) + '</html>');
    if (path === '/v1/moved') return void res.writeHead(302, { location: '/v1/elsewhere', 'content-type': 'application/json' }).end('{"error":"moved","code":"moved"}');
    return void json().end('{"reached":true}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  for (const [how, extra] of [['node:http', {}], ['fetch', { fetch }]] as const) {
    const tr = new Transport({ baseUrl, maxResponseBytes: CAP, retry: { attempts: 4 }, sleep: async () => undefined, ...extra });
    hits.clear();
    const exact = await tr.send<{ pad: string }>({ method: 'GET', path: '/v1/exact', headers: () => ({}) });
    t.equal(exact.json.pad.length, CAP - 10, `${how}: an answer of exactly the cap is read whole`);
    for (const path of ['/v1/announced', '/v1/streamed', '/v1/error-page']) {
      const err = await tr.send({ method: 'GET', path, headers: () => ({}) }).then(() => undefined, (e: unknown) => e);
      t.ok(err instanceof SdkError && err.code === 'bad_response', `${how} ${path}: bad_response`);
      t.match((err as Error).message, `longer than maxResponseBytes (${CAP})`, `${how} ${path}: the message names the cap`);
      t.equal(hits.get(path), 1, `${how} ${path}: a read with a too-long answer is not tried again`);
    }
    // A write: the outcome may be unknown, and the message says to read before doing it again.
    const write = await tr.send({ method: 'POST', path: '/v1/announced', payload: '{}', headers: () => ({}) }).then(() => undefined, (e: unknown) => e);
    t.match((write as Error).message, 'may have been processed', `${how}: a write's too-long answer says its outcome may be unknown`);
    const moved = await tr.send({ method: 'GET', path: '/v1/moved', headers: () => ({}) }).then(() => undefined, (e: unknown) => e);
    t.ok(moved instanceof CustodyApiError && moved.status === 302, `${how}: a redirect is an error answer`);
    t.equal(hits.get('/v1/elsewhere'), undefined, `${how}: the redirect is not followed`);
  }
  for (const bad of [0, -1, 1.5, Number.NaN]) t.throws(() => new Transport({ baseUrl, maxResponseBytes: bad }), { code: 'invalid_config' }, `maxResponseBytes ${bad} is refused`);
  const client = new CustodyClient({ baseUrl, organization: 'org_x', keyId: 'key_x', secretKey: new Uint8Array(32), maxResponseBytes: CAP });
  await t.rejects(client.listVaults(), { code: 'bad_response' }, 'the vault client takes the setting');
});

t.test('a wait meets the API key\'s request budget: it waits out Retry-After and polls on', async (t) => {
  // A budget of 3 requests a second (docs/operations.md "Rate limits"); the vault never becomes active
  // (no coordinator): the wait is told to end once it has read for 1.2 s.
  const a = await vaultApp(t, { env: { API_RATE_LIMIT_PER_KEY: '3', API_RATE_LIMIT_WINDOW_S: '1' } });
  await a.app.listen({ host: '127.0.0.1', port: 0 });
  // No retries of its own: whatever the wait survives, the wait itself handled.
  const client = new CustodyClient({
    baseUrl: `http://127.0.0.1:${(a.app.server.address() as AddressInfo).port}`, organization: a.org.id, keyId: a.creds.keyId, secretKey: a.creds.secretKey,
    retry: { attempts: 1 },
  });
  const v = await client.createVault({ tier: 'hosted', name: 'waited' });
  const reads: number[] = [];
  const started = Date.now();
  const done = () => Date.now() - started >= 1_200;
  await client.waitForVault(v.id, done, { timeoutMs: 5_000, intervalMs: 20, progress: () => reads.push(Date.now() - started) });
  t.ok(reads.some((ms) => ms >= 1_200), 'the wait ended as told, past the 429s the 20 ms polling met');
  // At least the first read and one past 1.2 s; at most 3 in each one-second window the wait spanned
  // (how many windows depends on the machine's speed, so the bound is computed, not fixed).
  const windows = Math.floor(reads.at(-1)! / 1_000) + 2;
  t.ok(reads.length >= 2 && reads.length <= 3 * windows, `${reads.length} reads in ${windows} windows: at most 3 in each`);
  const outside: number[] = [];
  for (let i = 0; i < 4; i++) outside.push(await client.getVault(v.id).then(() => 200, (err: CustodyApiError) => err.status));
  t.equal(outside.at(-1), 429, `a call outside a wait gets the 429 once the budget is spent (${outside.join(', ')})`);
  const late = await client.waitForVault(v.id, () => true, { timeoutMs: 100 }).catch((err: unknown) => err);
  t.match(late, { status: 429, code: 'rate_limited' }, 'a wait whose deadline comes before Retry-After ends on the 429, which carries it');
  t.ok((late as CustodyApiError).retryAfterMs! > 0);
});
