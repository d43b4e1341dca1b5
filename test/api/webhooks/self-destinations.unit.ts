// Webhook destinations never reach the service itself (docs/security.md "Webhook destinations (SSRF)"):
// the API's listen address and public URL, its coordinators and operator API are refused at registration
// (422 validation_failed naming url, nothing stored) and at connect time after resolution (the delivery
// fails and nothing is sent), even when the development allow-list admits their range.
import t from 'tap';
import { DestinationPolicy } from '../../../api/webhooks/destination-policy.ts';
import { serviceAddresses } from '../../../api/webhooks/service-addresses.ts';
import { loadApiConfig } from '../../../api/config.ts';
import type { HostLookup } from '../../../api/webhooks/outbound-http.ts';
import { setupPlatform, receiver } from '../setup-platform.ts';

const portOf = (url: string) => Number(new URL(url).port);

t.test('the service addresses come from the config: listen, public URL, coordinators, operator API', async (t) => {
  const c = loadApiConfig({ API_HOST: '0.0.0.0', API_PORT: '8080', API_PUBLIC_URL: 'https://api.example.com', API_COORDINATORS: 'a=127.0.0.1:50051,b=[::1]:50052',
    API_OPERATOR_API_URL: 'http://127.0.0.1:9090' });
  t.same(serviceAddresses(c), ['0.0.0.0:8080', 'https://api.example.com', 'http://127.0.0.1:9090', '127.0.0.1:50051', '[::1]:50052']);
  const p = DestinationPolicy.fromAllowList(['127.0.0.0/8', '10.0.0.0/8', 'coord-a.internal']).withSelf([...serviceAddresses(c), 'coord-a.internal:50051', '10.0.0.7:50052']);
  const self = /must not point to this service/;
  for (const url of ['http://127.0.0.1:8080/', 'http://localhost:8080/', 'http://2130706433:8080/', 'http://0177.0.0.1:8080/', 'http://0x7f.1:8080/', 'http://[::ffff:127.0.0.1]:8080/',
    'https://api.example.com/hook', 'https://API.example.com.:443/', 'http://coord-a.internal:50051/', 'http://10.0.0.7:50052/', 'http://127.0.0.1:9090/', 'http://127.0.0.1:50051/', 'http://[::1]:50052/']) t.match(p.checkUrl(url), self, url);
  for (const url of ['http://127.0.0.1:8081/', 'http://127.0.0.2:8079/', 'http://coord-a.internal:50052/', 'http://10.0.0.7:50051/']) t.equal(p.checkUrl(url), null, url);
  // After resolution: a name that resolves to the wildcard listener's loopback or a coordinator's address.
  t.notOk(p.allowsAddress({ protocol: 'https:', hostname: 'rebind.example.com', port: 8080 }, '127.0.0.1'));
  t.notOk(p.allowsAddress({ protocol: 'https:', hostname: 'rebind.example.com', port: 8080 }, '::ffff:7f00:1'));
  t.notOk(p.allowsAddress({ protocol: 'http:', hostname: 'x.example.com', port: 50052 }, '10.0.0.7'));
  t.ok(p.allowsAddress({ protocol: 'http:', hostname: 'x.example.com', port: 50053 }, '10.0.0.7'));
  t.throws(() => DestinationPolicy.STRICT.withSelf(['no-port']), /host:port or an origin/);
});

t.test('allow-list admits 127.0.0.1, yet the API\'s own port is refused and another loopback port is allowed', async (t) => {
  const own = await receiver(t);
  const other = await receiver(t);
  const ownPort = portOf(own.url);
  const looked: string[] = [];
  const lookup: HostLookup = async (h) => {
    looked.push(h);
    return [{ address: '127.0.0.1', family: 4 }];
  };
  const s = await setupPlatform(t, { webhookAllowedDestinations: ['127.0.0.1'], webhookSelfAddresses: [`127.0.0.1:${ownPort}`, 'https://api.example.com', 'coord.internal:50051'], webhookLookup: lookup });
  const stored = async () => (await s.call('GET', '/v1/webhook-endpoints')).json().data.map((e: { url: string }) => e.url);
  for (const url of [own.url, `http://localhost:${ownPort}/hook`, `http://2130706433:${ownPort}/hook`, `http://0x7f.1:${ownPort}/hook`, 'https://api.example.com/hook', 'http://coord.internal:50051/']) {
    const r = await s.call('POST', '/v1/webhook-endpoints', { url, events: ['payment.confirmed'] });
    t.equal(r.statusCode, 422, url);
    t.match(r.json(), { code: 'validation_failed', error: /^url must not point to this service/ });
    t.same(await stored(), [], `nothing stored after ${url}`);
  }
  const ok = await s.call('POST', '/v1/webhook-endpoints', { url: other.url, events: ['payment.confirmed'] });
  t.equal(ok.statusCode, 201, 'another loopback port is allowed');
  t.match((await s.call('POST', `/v1/webhook-endpoints/${ok.json().id}/test`)).json(), { delivered: true, status_code: 200 });
  t.equal(other.got.length, 1);

  // A name that passes registration and resolves to the API's own address at delivery time.
  const ep = (await s.call('POST', '/v1/webhook-endpoints', { url: `https://rebind.example.com:${ownPort}/hook`, events: ['payment.confirmed'] })).json();
  t.same((await stored()).sort(), [other.url, `https://rebind.example.com:${ownPort}/hook`].sort());
  t.match((await s.call('POST', `/v1/webhook-endpoints/${ep.id}/test`)).json(), { delivered: false, status_code: null, error: 'destination_not_allowed' });
  await s.call('DELETE', `/v1/webhook-endpoints/${ok.json().id}`);
  const scope = { tenant: s.tenant.id, workspace: s.sandbox.id };
  const { deliveries } = await s.platform.deliveries.emit(scope, 'payment.confirmed', { type: 'payment', id: 'pay_s' }, { type: 'system', id: 't' }, { payment_id: 'pay_s', status: 'confirmed' });
  await s.platform.deliveries.runDue();
  const rows = await Promise.all(deliveries.map(async (d) => (await s.call('GET', `/v1/webhook-deliveries/${d.id}`)).json()));
  t.same(rows.map((r) => [r.last_error, r.last_status_code]), [['destination_not_allowed', null]], 'the delivery failed at connect time');
  t.ok(looked.includes('rebind.example.com'), 'checked after resolution');
  t.equal(own.got.length, 0, 'nothing ever reached the API\'s own port');
});
