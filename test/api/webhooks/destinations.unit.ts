// Webhook destinations (docs/security.md "Webhook destinations (SSRF)"): every spelling of a non-public
// address refused; names checked on their resolved addresses at connect time (an injected lookup, no
// network), DNS rebinding refused; redirects not followed; response bodies read up to a bound and the
// rest cancelled; failures reported as categories; the allow-list for local receivers.
import t, { type Test } from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect as netConnect, type AddressInfo } from 'node:net';
import type { buildConnector } from 'undici';
import { DestinationPolicy, isPublicAddress } from '../../../api/webhooks/destination-policy.ts';
import { OutboundHttp, DEFAULT_MAX_RESPONSE_BYTES, type HostLookup } from '../../../api/webhooks/outbound-http.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { setupPlatform, receiver, LOOPBACK_RECEIVERS } from '../setup-platform.ts';

const PUBLIC_V4 = '93.184.215.14';
const STRICT = DestinationPolicy.STRICT;
const req = { body: '{"id":"evt_1","type":"webhook.test"}', headers: { 'content-type': 'application/json' } };

/** A loopback HTTP server that counts the TCP connections made to it. */
async function server(t: Test, handler: (req: IncomingMessage, res: ServerResponse) => void) {
  let connections = 0;
  const s = createServer(handler);
  s.on('connection', () => { connections++; });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    s.closeAllConnections();
    s.close(() => r());
  }));
  return { port: (s.address() as AddressInfo).port, connections: () => connections };
}

/** Stands in for the socket step: records the (already checked) addresses and opens a plain socket to `port`. */
function socketTo(port: number) {
  const seen: string[] = [];
  const connector: buildConnector.connector = (opts, cb) => {
    seen.push(opts.hostname);
    const s = netConnect(port, '127.0.0.1');
    s.once('connect', () => cb(null, s)).once('error', (e) => cb(e, null));
  };
  return { seen, connector };
}

function client(t: Test, o: ConstructorParameters<typeof OutboundHttp>[0]) {
  const c = new OutboundHttp(o);
  t.teardown(() => c.close());
  return c;
}

const NON_PUBLIC_URLS = [
  'https://127.0.0.1/', 'https://127.1/', 'https://2130706433/', 'https://0x7f.1/', 'https://0x7f000001/', 'https://0177.0.0.1/', 'https://017700000001/',
  'https://127.255.255.254/', 'https://[::1]/', 'https://[0:0:0:0:0:0:0:1]/', 'https://[::ffff:127.0.0.1]/', 'https://[::ffff:7f00:1]/', 'https://[::127.0.0.1]/',
  'https://[64:ff9b::7f00:1]/', 'https://[2002:7f00:1::]/', 'https://169.254.169.254/latest/meta-data/', 'https://[::ffff:169.254.169.254]/', 'https://0xa9fea9fe/',
  'https://[fe80::1]/', 'https://[febf::1]/', 'https://[fc00::1]/', 'https://[fd12:3456::1]/', 'https://[fec0::1]/', 'https://0.0.0.0/', 'https://0/', 'https://[::]/',
  'https://100.64.0.1/', 'https://100.127.255.254/', 'https://10.1.2.3/', 'https://172.16.0.1/', 'https://172.31.255.255/', 'https://192.168.1.1/',
  'https://224.0.0.1/', 'https://255.255.255.255/', 'https://198.18.0.1/', 'https://192.0.2.1/', 'https://localhost/', 'https://LOCALHOST./', 'https://api.localhost/',
];

t.test('every spelling of a non-public address is refused, as a URL and as a resolved address', async (t) => {
  for (const url of NON_PUBLIC_URLS) t.match(STRICT.checkUrl(url), /public address/, url);
  for (const a of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::7f00:1', '169.254.169.254', 'fe80::1', 'fe80::1%eth0', 'fc00::1', 'fd00::1', '0.0.0.0', '::',
    '100.64.0.1', '10.0.0.1', '172.20.1.1', '192.168.0.1', '64:ff9b::a9fe:a9fe', '2001:db8::1', 'ff02::1', 'not-an-ip']) {
    t.notOk(STRICT.allowsAddress({ protocol: 'https:', hostname: 'hooks.example.com', port: 443 }, a), `connect to ${a} refused`);
    t.notOk(isPublicAddress(a), `${a} is not public`);
  }
  for (const a of [PUBLIC_V4, '1.1.1.1', '2606:4700:4700::1111', '::ffff:1.1.1.1']) t.ok(STRICT.allowsAddress({ protocol: 'https:', hostname: 'hooks.example.com', port: 443 }, a), `${a} is public`);
  t.notOk(STRICT.allowsAddress({ protocol: 'http:', hostname: 'hooks.example.com', port: 80 }, PUBLIC_V4), 'plain http refused even to a public address');
  t.equal(STRICT.checkUrl('https://hooks.example.com/x'), null, 'a name passes until it is resolved');
  t.equal(STRICT.checkUrl(`https://${PUBLIC_V4}/x`), null);
  t.equal(STRICT.checkUrl('https://[2606:4700:4700::1111]/x'), null);
  t.match(STRICT.checkUrl('http://hooks.example.com/x'), /https/);
  t.match(STRICT.checkUrl(`http://${PUBLIC_V4}/x`), /https/);
  t.match(STRICT.checkUrl('ftp://hooks.example.com/x'), /https/);
});

t.test('the allow-list: addresses, ranges, names, ports; malformed entries and production refuse to load', async (t) => {
  const p = DestinationPolicy.fromAllowList(['127.0.0.1', 'localhost:8443', '10.0.0.0/8', '[::1]:9000']);
  t.same(p.allowList, ['127.0.0.1', 'localhost:8443', '10.0.0.0/8', '[::1]:9000']);
  t.equal(p.checkUrl('http://127.0.0.1:1234/hook'), null);
  t.equal(p.checkUrl('http://localhost:8443/hook'), null);
  t.equal(p.checkUrl('http://localhost:8444/hook'), null, 'localhost is 127.0.0.1, listed on every port');
  t.match(DestinationPolicy.fromAllowList(['localhost:8443']).checkUrl('http://localhost:8444/hook'), /public address/, 'another port of an allowed name');
  t.equal(p.checkUrl('http://[::1]:9000/'), null);
  t.match(p.checkUrl('http://[::1]:9001/'), /public address/);
  t.match(p.checkUrl('http://192.168.1.1/'), /public address/);
  t.equal(p.checkUrl('http://svc.internal/'), null, 'a name may resolve into an allowed range');
  t.ok(p.allowsAddress({ protocol: 'http:', hostname: 'svc.internal', port: 80 }, '10.2.3.4'));
  t.notOk(p.allowsAddress({ protocol: 'http:', hostname: 'svc.internal', port: 80 }, '192.168.0.1'));
  t.ok(p.allowsAddress({ protocol: 'http:', hostname: 'localhost', port: 8443 }, '127.0.0.1'));
  t.notOk(p.allowsAddress({ protocol: 'http:', hostname: 'evil.example', port: 8443 }, '127.0.0.2'), 'a name entry admits that name, not its address for others');
  t.throws(() => DestinationPolicy.fromAllowList(['10.0.0.0/33']), /CIDR/);
  t.throws(() => DestinationPolicy.fromAllowList(['exa mple.com']), /not an address/);
  t.throws(() => DestinationPolicy.fromAllowList(['localhost:99999']), /port/);
  t.throws(() => loadApiConfig({ API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1', API_ENVIRONMENT: 'production' }), /must be empty with API_ENVIRONMENT=production/);
  t.throws(() => loadApiConfig({ API_WEBHOOK_ALLOWED_DESTINATIONS: 'a b' }), /API_WEBHOOK_ALLOWED_DESTINATIONS/);
  t.same(loadApiConfig({}).webhookAllowedDestinations, [], 'empty by default');
  t.same(loadApiConfig({ API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1,localhost:8443' }).webhookAllowedDestinations, ['127.0.0.1', 'localhost:8443']);
});

t.test('a name resolving to 127.0.0.1 is refused at connect time, with no connection made', async (t) => {
  const srv = await server(t, (_q, res) => res.end('ok'));
  const looked: string[] = [];
  const socket = socketTo(srv.port);
  const c = client(t, { policy: STRICT, lookup: async (h) => (looked.push(h), [{ address: '127.0.0.1', family: 4 }]), socketConnector: socket.connector });
  const r = await c.post(`https://hooks.example.com:${srv.port}/hook`, req);
  t.match(r, { delivered: false, status_code: null, error: 'destination_not_allowed', response_body: null });
  t.same(looked, ['hooks.example.com'], 'refused after resolving, at the connect step');
  t.same(socket.seen, [], 'no socket was opened');
  t.equal(srv.connections(), 0);
  // One private address among public ones is enough to refuse.
  const mixed = client(t, { policy: STRICT, lookup: async () => [{ address: PUBLIC_V4, family: 4 }, { address: '::ffff:169.254.169.254', family: 6 }], socketConnector: socket.connector });
  t.equal((await mixed.post('https://hooks.example.com/hook', req)).error, 'destination_not_allowed');
  t.same(socket.seen, []);
});

t.test('DNS rebinding: the first lookup public, the second private; the second connection is refused', async (t) => {
  const srv = await server(t, (q, res) => {
    q.resume();
    q.on('end', () => res.writeHead(200, { connection: 'close' }).end('ok'));
  });
  let n = 0;
  const lookup: HostLookup = async () => [{ address: n++ === 0 ? PUBLIC_V4 : '127.0.0.1', family: 4 }];
  const socket = socketTo(srv.port);
  const c = client(t, { policy: STRICT, lookup, socketConnector: socket.connector });
  const first = await c.post('https://rebind.example.com/hook', req);
  t.match(first, { delivered: true, status_code: 200, error: null, response_body: 'ok' }, 'the public answer is used');
  t.same(socket.seen, [PUBLIC_V4], 'connected to the checked address');
  const second = await c.post('https://rebind.example.com/hook', req);
  t.match(second, { delivered: false, status_code: null, error: 'destination_not_allowed' });
  t.equal(n, 2, 'resolved again for the new connection');
  t.same(socket.seen, [PUBLIC_V4], 'no socket for the private answer');
  t.equal(srv.connections(), 1);
});

t.test('a redirect is an answer, not followed: a 3xx fails the test call and the delivery', async (t) => {
  let internalHits = 0;
  const internal = await server(t, (_q, res) => { internalHits++; res.end('secret'); });
  const redirector = await server(t, (q, res) => {
    q.resume();
    q.on('end', () => res.writeHead(302, { location: `http://127.0.0.1:${internal.port}/latest/meta-data/` }).end());
  });
  // Both servers are allow-listed, so only the redirect rule keeps the request away from the second.
  const s = await setupPlatform(t, { webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: `http://127.0.0.1:${redirector.port}/hook`, events: ['payment.confirmed'] })).json();
  const r = await s.call('POST', `/v1/webhook-endpoints/${ep.id}/test`);
  t.match(r.json(), { delivered: false, status_code: 302, error: 'http_status' });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const { deliveries } = await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_r' }, { type: 'system', id: 't' }, { payment_id: 'pay_r', status: 'confirmed' });
  await s.platform.deliveries.runDue();
  t.match((await s.call('GET', `/v1/webhook-deliveries/${deliveries[0]!.id}`)).json(), { status: 'failed', attempt_count: 1, last_status_code: 302, last_error: 'http_status' });
  t.equal(internalHits, 0, 'the redirect target was never requested');
  t.equal(internal.connections(), 0);
});

t.test('a 10 MB body is not read: the stored body stops at the bound and the rest is cancelled', async (t) => {
  const TOTAL = 10 * 1024 * 1024;
  let sent = 0;
  let closed!: () => void;
  const done = new Promise<void>((r) => { closed = r; });
  const srv = await server(t, (q, res) => {
    q.resume();
    q.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(TOTAL) });
      res.on('close', () => closed());
      const chunk = Buffer.alloc(16 * 1024, 0x61);
      const pump = () => {
        if (res.destroyed) return;
        if (sent >= TOTAL) return void res.end();
        res.write(chunk);
        sent += chunk.length;
        setTimeout(pump, 2);
      };
      pump();
    });
  });
  const s = await setupPlatform(t, { webhookAllowedDestinations: [`127.0.0.1:${srv.port}`] });
  await s.call('POST', '/v1/webhook-endpoints', { url: `http://127.0.0.1:${srv.port}/hook`, events: ['payment.confirmed'] });
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const { deliveries } = await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_b' }, { type: 'system', id: 't' }, { payment_id: 'pay_b', status: 'confirmed' });
  await s.platform.deliveries.runDue();
  await done;
  const row = (await s.call('GET', `/v1/webhook-deliveries/${deliveries[0]!.id}`)).json();
  t.match(row, { status: 'delivered', last_status_code: 200 });
  t.equal(Buffer.byteLength(row.last_response_body), DEFAULT_MAX_RESPONSE_BYTES, 'the stored body is the bound');
  t.ok(sent < 1024 * 1024, `the server sent ${sent} of ${TOTAL} bytes before the client hung up`);
});

t.test('through the API: registration refuses non-public URLs (422 naming url); failures are categories only', async (t) => {
  const looked: string[] = [];
  const lookup: HostLookup = async (h) => {
    looked.push(h);
    if (h === 'gone.example.com') throw Object.assign(new Error('getaddrinfo ENOTFOUND gone.example.com via 10.0.0.2'), { code: 'ENOTFOUND' });
    return [{ address: '10.20.30.40', family: 4 }];
  };
  const s = await setupPlatform(t, { webhookLookup: lookup });
  for (const url of [...NON_PUBLIC_URLS.slice(0, 20).map((u) => u + 'hook'), 'http://hooks.example.com/hook', 'http://93.184.215.14/hook']) {
    const r = await s.call('POST', '/v1/webhook-endpoints', { url, events: ['payment.confirmed'] });
    t.equal(r.statusCode, 422, url);
    t.equal(r.json().code, 'validation_failed');
    t.match(r.json().error, /^url must /);
  }
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: 'https://hooks.example.com/hook', events: ['payment.confirmed'] })).json();
  t.equal((await s.call('PATCH', `/v1/webhook-endpoints/${ep.id}`, { url: 'https://169.254.169.254/' })).statusCode, 422, 'PATCH checks too');
  const test = await s.call('POST', `/v1/webhook-endpoints/${ep.id}/test`);
  t.match(test.json(), { delivered: false, status_code: null, error: 'destination_not_allowed' });
  t.same(looked, ['hooks.example.com'], 'the name resolving to 10.20.30.40 was refused at connect time');
  t.notMatch(test.body, /10\.20|ECONN|getaddrinfo/);

  const gone = (await s.call('POST', '/v1/webhook-endpoints', { url: 'https://gone.example.com/hook', events: ['payment.confirmed'] })).json();
  const r2 = await s.call('POST', `/v1/webhook-endpoints/${gone.id}/test`);
  t.match(r2.json(), { delivered: false, status_code: null, error: 'connection_failed' });
  t.notMatch(r2.body, /ENOTFOUND|10\.0\.0\.2|getaddrinfo/);

  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const { deliveries } = await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_e' }, { type: 'system', id: 't' }, { payment_id: 'pay_e', status: 'confirmed' });
  await s.platform.deliveries.runDue();
  const rows = await Promise.all(deliveries.map(async (d) => (await s.call('GET', `/v1/webhook-deliveries/${d.id}`)).json()));
  t.same(rows.map((r) => [r.last_error, r.last_status_code, r.last_response_body]).sort(), [['connection_failed', null, null], ['destination_not_allowed', null, null]]);

  // A row written before categories existed reads as one.
  const legacy = { ...rows[0], tenant: s.tenant.id, workspace: s.sandbox.id, queue_key: null, last_error: 'connection failed: connect ECONNREFUSED 10.0.0.5:6379' };
  await s.store.put('webhook_deliveries', legacy.id, legacy);
  t.equal((await s.call('GET', `/v1/webhook-deliveries/${legacy.id}`)).json().last_error, 'connection_failed');
});

t.test('an allow-listed local receiver still works; a closed local port is a generic connection failure', async (t) => {
  const s = await setupPlatform(t, { webhookAllowedDestinations: LOOPBACK_RECEIVERS });
  const rx = await receiver(t);
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] })).json();
  t.match((await s.call('POST', `/v1/webhook-endpoints/${ep.id}/test`)).json(), { delivered: true, status_code: 200, error: null });
  t.equal(rx.got.length, 1);
  const dead = (await s.call('POST', '/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/hook', events: ['payment.confirmed'] })).json();
  const r = await s.call('POST', `/v1/webhook-endpoints/${dead.id}/test`);
  t.match(r.json(), { delivered: false, status_code: null, error: 'connection_failed' });
  t.notMatch(r.body, /ECONNREFUSED|127\.0\.0\.1/);
  const strict = await setupPlatform(t);
  t.equal((await strict.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['payment.confirmed'] })).statusCode, 422, 'without the allow-list the same receiver is refused');
});
