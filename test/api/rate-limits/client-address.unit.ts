// The client address a request is counted under (api/rate-limits/client-address.ts) and the proxies
// whose X-Forwarded-For is believed (API_TRUST_PROXY, api/config.ts trustProxyOf): an IPv4 address as
// is, an IPv6 address by its /64, an IPv4-mapped one as its IPv4; behind a trusted proxy the client it
// names, from anyone else the peer itself.
import t, { type Test } from 'tap';
import Fastify from 'fastify';
import { clientAddressKey } from '../../../api/rate-limits/client-address.ts';
import { loadApiConfig, trustProxyOf } from '../../../api/config.ts';

t.test('IPv4 as is; IPv6 by its /64 in one spelling; IPv4-mapped as its IPv4', async (t) => {
  t.equal(clientAddressKey('192.0.2.1'), '192.0.2.1');
  t.equal(clientAddressKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd'), '2001:db8:1:2::/64');
  t.equal(clientAddressKey('2001:db8:1:2::1'), '2001:db8:1:2::/64', 'another interface of the same subscriber block');
  t.equal(clientAddressKey('2001:0DB8:0001:0002:0:0:0:1'), '2001:db8:1:2::/64', 'leading zeros and case make no other key');
  t.equal(clientAddressKey('2001:db8:1:3::1'), '2001:db8:1:3::/64', 'the next /64 is another client');
  t.equal(clientAddressKey('2001:db8::1'), '2001:db8::/64');
  t.equal(clientAddressKey('::1'), '::/64');
  t.equal(clientAddressKey('::ffff:192.0.2.1'), '192.0.2.1', 'IPv4-mapped, dotted');
  t.equal(clientAddressKey('::ffff:c000:201'), '192.0.2.1', 'IPv4-mapped, in hex');
  t.equal(clientAddressKey('not-an-address'), 'not-an-address', 'anything else is counted as given');
});

t.test('API_TRUST_PROXY: none, a hop count, or addresses, ranges and keywords; anything else refused at start', async (t) => {
  const of = (v: string) => trustProxyOf({ trustProxy: v });
  t.equal(of(''), false, 'unset: the peer is the client');
  t.same(of('10.0.0.0/8, fd00::/8,loopback'), ['10.0.0.0/8', 'fd00::/8', 'loopback']);
  t.same(of('192.0.2.10'), ['192.0.2.10']);
  t.equal(typeof of('2'), 'function', 'a hop count');
  t.equal(loadApiConfig({}).trustProxy, '', 'none by default');
  for (const [value, reason] of [
    ['true', /true is not an address/], ['10.0.0.0/33', /10\.0\.0\.0\/33 is not an address/], ['0', /a hop count is 1 to 16/],
    ['17', /a hop count is 1 to 16/], ['10.0.0.1,,10.0.0.2', /an empty entry/], ['example.com', /example\.com is not an address/],
  ] as const) {
    t.throws(() => loadApiConfig({ API_TRUST_PROXY: value }), { message: reason }, `${value}: refused`);
    t.throws(() => loadApiConfig({ API_TRUST_PROXY: value }), { message: /API_TRUST_PROXY \(trustProxy\)/ }, `${value}: the setting is named`);
  }
  t.throws(() => loadApiConfig({ API_TRUST_PROXY: '10.0.0.1;rm' }), /API_TRUST_PROXY/, 'characters no list has');
});

/** A bare server whose one route answers the key the request is counted under. */
async function keyServer(t: Test, trustProxy: string) {
  const app = Fastify({ trustProxy: trustProxyOf({ trustProxy }) });
  app.get('/', async (req) => clientAddressKey(req.ip));
  t.teardown(() => app.close());
  return async (remoteAddress: string, forwarded?: string) =>
    (await app.inject({ method: 'GET', url: '/', remoteAddress, headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded } })).body;
}

t.test('without trusted proxies X-Forwarded-For is ignored: the peer is counted', async (t) => {
  const key = await keyServer(t, '');
  t.equal(await key('10.0.0.5', '203.0.113.1'), '10.0.0.5');
  t.equal(await key('10.0.0.5', '203.0.113.2'), '10.0.0.5', 'two named clients behind one peer share its count');
  t.equal(await key('2001:db8:9:9::5', '203.0.113.1'), '2001:db8:9:9::/64');
});

t.test('behind a trusted proxy the client it names is counted; an untrusted peer cannot name one', async (t) => {
  const key = await keyServer(t, '10.0.0.0/8');
  t.equal(await key('10.0.0.5', '203.0.113.1'), '203.0.113.1');
  t.equal(await key('10.0.0.5', '203.0.113.2'), '203.0.113.2', 'each named client its own count');
  t.equal(await key('10.0.0.5', '2001:db8:1:2::7'), '2001:db8:1:2::/64', 'a named IPv6 client by its /64');
  t.equal(await key('10.0.0.5', '::ffff:203.0.113.3'), '203.0.113.3', 'a named IPv4-mapped client as its IPv4');
  t.equal(await key('10.0.0.5', '198.51.100.66, 203.0.113.1'), '203.0.113.1', 'what the client itself put in front is not believed');
  t.equal(await key('10.0.0.5', '198.51.100.66, 10.0.0.9'), '198.51.100.66', 'through two trusted proxies: the first untrusted hop');
  t.equal(await key('10.0.0.5'), '10.0.0.5', 'no header: the proxy itself');
  t.equal(await key('198.51.100.7', '203.0.113.1'), '198.51.100.7', 'a peer that is not a trusted proxy is counted as itself');
  t.equal(await key('::ffff:10.0.0.5', '203.0.113.4'), '203.0.113.4', 'a proxy connecting over IPv4-mapped IPv6 is recognized');
});

t.test('a hop count trusts that many nearest addresses, whoever they are', async (t) => {
  const key = await keyServer(t, '1');
  t.equal(await key('10.0.0.5', '198.51.100.66, 203.0.113.1'), '203.0.113.1', 'the one proxy appended the client');
  t.equal(await key('10.0.0.5'), '10.0.0.5');
});
