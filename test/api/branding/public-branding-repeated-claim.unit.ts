// GET /v1/public/branding always answers 200 (platform-api.md "Branding"): a repeated claim_token is no
// one valid token, so it answers the platform-default bundle, never 400, and reveals no workspace's theme.
import t from 'tap';
import { setupPlatform } from '../setup-platform.ts';

t.test('a repeated claim_token answers 200 with the platform default', async (t) => {
  const s = await setupPlatform(t);
  const themed = await s.call('PUT', '/v1/branding', { brand_name: 'Acme Pay' });
  t.equal(themed.statusCode, 200);
  const token = encodeURIComponent(themed.json().public_claim_token as string);
  const get = (q: string) => s.app.inject({ method: 'GET', url: `/v1/public/branding${q}`, remoteAddress: '127.0.0.31' });
  const one = await get(`?claim_token=${token}`);
  t.equal(one.statusCode, 200);
  t.equal(one.json().brand_name, 'Acme Pay', 'one valid token: the workspace\'s bundle');
  const fallback = (await get('')).json().brand_name as string;
  t.not(fallback, 'Acme Pay');
  for (const q of [`?claim_token=${token}&claim_token=${token}`, `?claim_token=${token}&claim_token=junk`, '?claim_token=a&claim_token=b&claim_token=c']) {
    const r = await get(q);
    t.equal(r.statusCode, 200, `${q.slice(0, 40)}: 200`);
    t.equal(r.json().brand_name, fallback, 'the platform default');
  }
  t.equal((await s.call('GET', '/v1/branding')).json().theme.brand_name, 'Acme Pay', 'nothing changed');
});
