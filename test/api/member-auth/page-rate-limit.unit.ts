// The per-client-address limit on the Hosted Auth and Account Center pages' form POSTs
// (docs/platform/hosted-auth.md "Limits"): past API_HOSTED_PAGE_RATE_PER_MINUTE posts in a minute, an
// address gets 429 rate_limited with Retry-After, RateLimit and a readable page, before anything is read
// or changed; both pages count together; another address is not affected; an IPv6 client counts by its
// /64. The counting itself (shared stores, windows) is test/api/rate-limits/.
import t from 'tap';
import { setupHosted, pageError } from './hosted-auth-harness.ts';
import { snapshot } from './account-center-harness.ts';
import { DEFAULT_PAGE_RATE_PER_MINUTE } from '../../../api/hosted-page/page-rate-limit.ts';

const form = { 'content-type': 'application/x-www-form-urlencoded' };

t.test('an address past the limit gets 429 with Retry-After, RateLimit and a readable page; others are not affected', async (t) => {
  const h = await setupHosted(t);
  await h.invite('ray@example.com');
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
  t.match(limited.headers['ratelimit-policy'], `"hosted_page_forms";q=${DEFAULT_PAGE_RATE_PER_MINUTE};w=60`, 'the page budget is named');
  t.match(limited.headers.ratelimit, new RegExp(`"hosted_page_forms";r=0;t=${retry}(,|$)`), 'none left until Retry-After');
  t.match(String(limited.headers['content-security-policy']), /default-src 'none'/, 'the pages\' headers');
  const center = await from('203.0.113.7', `/v1/account-center/hac_${'a'.repeat(43)}/email`);
  t.equal(center.statusCode, 429, 'the Account Center page shares the count');
  t.equal(await snapshot(h), before, 'a limited post reads and changes nothing');

  const other = await h.server.inject({ method: 'POST', url: `${a.path}/email`, headers: form, payload: 'csrf=x', remoteAddress: '198.51.100.9' });
  t.equal(other.statusCode, 403, 'another address is answered as usual (here: no flow cookie)');
  t.equal(pageError(other.body), 'hosted_flow_mismatch');
  t.match(other.headers.ratelimit, `"hosted_page_forms";r=${DEFAULT_PAGE_RATE_PER_MINUTE - 1};t=`, 'its own count');
});

t.test('an IPv6 client counts by its /64; an IPv4-mapped address as its IPv4', async (t) => {
  const h = await setupHosted(t, { env: { API_HOSTED_PAGE_RATE_PER_MINUTE: '2' } });
  const a = await h.begin();
  const post = async (remoteAddress: string) => (await h.server.inject({ method: 'POST', url: `${a.path}/email`, headers: form, payload: 'csrf=x', remoteAddress })).statusCode;
  t.same([await post('2001:db8:1:2::1'), await post('2001:db8:1:2:ffff:ffff:ffff:ffff')], [403, 403], 'two posts of one /64 (no flow cookie: 403)');
  t.equal(await post('2001:db8:1:2:9::9'), 429, 'a third address of the same /64 is limited');
  t.equal(await post('2001:db8:1:3::1'), 403, 'the next /64 is another client');
  t.same([await post('192.0.2.1'), await post('::ffff:192.0.2.1')], [403, 403]);
  t.equal(await post('::ffff:c000:201'), 429, 'the mapped and the plain form of 192.0.2.1 share one count');
});

