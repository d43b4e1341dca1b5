// The per-client-address limit on the Hosted Auth and Account Center pages' form POSTs
// (docs/platform/hosted-auth.md "Limits"): past API_HOSTED_PAGE_RATE_PER_MINUTE posts in a minute, an
// address gets 429 rate_limited with Retry-After and a readable page, before anything is read or
// changed; both pages count together; another address is not affected; the next minute it may post again.
import t from 'tap';
import { setupHosted, pageError } from './hosted-auth-harness.ts';
import { snapshot } from './account-center-harness.ts';
import { PageRateLimit, clientKey, DEFAULT_PAGE_RATE_PER_MINUTE } from '../../../api/hosted-page/page-rate-limit.ts';

const form = { 'content-type': 'application/x-www-form-urlencoded' };

t.test('an address past the limit gets 429 with Retry-After and a readable page; others and the next minute are not affected', async (t) => {
  const h = await setupHosted(t);
  await h.invite('ray@example.com');
  // Start on a whole minute of the platform's clock, so the window cannot turn during the test.
  h.advance((60_000 - (h.platform.clock() % 60_000)) / 1000 + 1);
  const a = await h.begin();
  const page = h.browser(a.path);
  await page.get();
  const from = (remoteAddress: string, url: string) => h.server.inject({ method: 'POST', url, headers: form, payload: 'csrf=x', remoteAddress });

  const before = await snapshot(h);
  // Half on the sign-in page, half on an Account Center URL: one count per address.
  for (let i = 0; i < DEFAULT_PAGE_RATE_PER_MINUTE; i++) {
    const r = await from('203.0.113.7', i % 2 ? `${a.path}/resend` : `/v1/account-center/hac_${'a'.repeat(43)}/resend`);
    t.not(r.statusCode, 429, `post ${i + 1} is not limited`);
  }
  const limited = await from('203.0.113.7', `${a.path}/email`);
  t.equal(limited.statusCode, 429, 'one more is limited');
  t.equal(pageError(limited.body), 'rate_limited');
  t.match(limited.body, /<h1>Too many attempts<\/h1>/, 'titled');
  t.match(limited.body, /Too many attempts from your network\. Wait \d+ seconds, then try again\./, 'a readable page');
  const retry = Number(limited.headers['retry-after']);
  t.ok(retry >= 1 && retry <= 60, `Retry-After: ${retry} s, the rest of the minute`);
  t.match(String(limited.headers['content-security-policy']), /default-src 'none'/, 'the pages\' headers');
  const center = await from('203.0.113.7', `/v1/account-center/hac_${'a'.repeat(43)}/email`);
  t.equal(center.statusCode, 429, 'the Account Center page shares the count');
  t.equal(await snapshot(h), before, 'a limited post reads and changes nothing');

  const other = await h.server.inject({ method: 'POST', url: `${a.path}/email`, headers: form, payload: 'csrf=x', remoteAddress: '198.51.100.9' });
  t.equal(other.statusCode, 403, 'another address is answered as usual (here: no flow cookie)');
  t.equal(pageError(other.body), 'hosted_flow_mismatch');

  h.advance(retry);
  const next = await from('203.0.113.7', `${a.path}/email`);
  t.equal(next.statusCode, 403, 'after Retry-After, the address posts again');
});

t.test('IPv6 addresses count by their /64; IPv4-mapped addresses as IPv4', async (t) => {
  t.equal(clientKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd'), '2001:db8:1:2::/64');
  t.equal(clientKey('2001:db8:1:2::1'), '2001:db8:1:2::/64', 'the same subscriber block');
  t.equal(clientKey('2001:0db8:0001:0002:0:0:0:1'), '2001:db8:1:2::/64', 'leading zeros do not make another key');
  t.equal(clientKey('2001:db8::1'), '2001:db8:0:0::/64');
  t.equal(clientKey('::1'), '0:0:0:0::/64');
  t.equal(clientKey('::ffff:192.0.2.1'), '192.0.2.1');
  t.equal(clientKey('192.0.2.1'), '192.0.2.1');

  let now = 120_000;
  const limit = new PageRateLimit(2, () => now);
  t.same([limit.take('2001:db8:1:2::1'), limit.take('2001:db8:1:2::ffff')], [undefined, undefined]);
  now += 15_000;
  t.equal(limit.take('2001:db8:1:2:9::9'), 45, 'a third address of the same /64 is limited: Retry-After 45 s');
  t.equal(limit.take('2001:db8:1:3::1'), undefined, 'the next /64 is another client');
  now += 45_000;
  t.equal(limit.take('2001:db8:1:2::1'), undefined, 'a new minute');
});

t.test('memory is bounded: past the cap of addresses a minute, new ones go uncounted; counted ones stay limited', async (t) => {
  let now = 600_000;
  const limit = new PageRateLimit(1, () => now, 3);
  for (const ip of ['192.0.2.1', '192.0.2.2', '192.0.2.3']) t.equal(limit.take(ip), undefined, `${ip}: its one post`);
  t.ok(limit.take('192.0.2.1') !== undefined, 'a counted address past its limit is limited');
  t.same([limit.take('192.0.2.4'), limit.take('192.0.2.4'), limit.take('192.0.2.4')], [undefined, undefined, undefined], 'a fourth address is not tracked this minute');
  now += 60_000;
  t.equal(limit.take('192.0.2.4'), undefined, 'the next minute it is counted');
  t.ok(limit.take('192.0.2.4') !== undefined, 'and limited');
});
