// GET /v1/transactions with a workspace bearer key (docs/platform/payments.md "GET /v1/transactions"): the
// workspace's payment flows, funding and off-ramp requests, oldest first under one cursor; filters by kind
// and holder; a walk that sees new flows arrive repeats and misses nothing; the request-signed list is the
// same path's other answer, and each credential refuses the other's filters.
import t from 'tap';
import { fundingApp } from '../funding/funding-app.ts';
import { UNITS_PER_CENT } from '../../../api/funding/stablecoin-issuer.ts';

interface Flow { id: string; kind: string; status: string; account_holder_id: string; amount: string; direction: string; fiat: { amount: string; currency: string } }
interface FlowPage { data: Flow[]; has_more: boolean; next_cursor: string | null }

t.test('the workspace\'s payment flows on GET /v1/transactions with a bearer key', async (t) => {
  const s = await fundingApp(t);
  const ada = await s.holder();
  const bob = await s.holder();
  let n = 0;
  const fund = async (h: typeof ada, cents: string) => {
    const r = await s.bearer('POST', '/v1/funding-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, fiat_amount: cents, currency: 'USD' }, s.acme.owner, { 'idempotency-key': `f-${++n}` });
    t.equal(r.statusCode, 201, r.body);
    s.clock.advance(1000);
    return r.json().id as string;
  };
  const offRamp = async (h: typeof ada, cents: bigint) => {
    const r = await s.bearer('POST', '/v1/off-ramp-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, stablecoin_amount: (cents * UNITS_PER_CENT).toString(), currency: 'USD' }, s.acme.owner, { 'idempotency-key': `o-${++n}` });
    t.equal(r.statusCode, 201, r.body);
    s.clock.advance(1000);
    return r.json().id as string;
  };
  const first = await fund(ada, '1000');
  const out = await offRamp(bob, 250n);
  const second = await fund(bob, '2000');
  const list = async (query = '', token = s.acme.owner) => s.bearer('GET', `/v1/transactions${query}`, undefined, token);

  const all = await list();
  t.equal(all.statusCode, 200, all.body);
  const page = all.json() as FlowPage;
  t.same(page.data.map((f) => f.id), [first, out, second], 'both kinds, oldest first');
  t.match(page.data[0], { kind: 'funding', account_holder_id: ada.id, direction: 'in', amount: (1000n * UNITS_PER_CENT).toString(), fiat: { amount: '1000', currency: 'USD' } });
  t.match(page.data[1], { kind: 'off_ramp', account_holder_id: bob.id, direction: 'out', status: 'awaiting_transfer' });
  t.same(((await list('?kind=off_ramp')).json() as FlowPage).data.map((f) => f.id), [out], 'by kind');
  t.same(((await list(`?account_holder_id=${bob.id}`)).json() as FlowPage).data.map((f) => f.id), [out, second], 'by holder');
  t.same(((await list('', await s.acme.key('viewer'))).json() as FlowPage).data.length, 3, 'a viewer has payment.read');

  // A walk one at a time while flows arrive: nothing twice, nothing missed, the new ones at the end.
  const seen: string[] = [];
  let cursor: string | null = null;
  const added: string[] = [];
  do {
    const r = await list(`?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    t.equal(r.statusCode, 200, r.body);
    const p = r.json() as FlowPage;
    seen.push(...p.data.map((f) => f.id));
    if (added.length < 2) added.push(await (added.length ? offRamp(ada, 10n) : fund(ada, '300')));
    cursor = p.next_cursor;
  } while (cursor);
  t.same(seen, [first, out, second, ...added], 'every flow once, in order');
  t.equal(new Set(seen).size, seen.length);

  // Credentials and filters.
  t.match({ status: (await list('', await s.acme.key('brand_manager'))).statusCode, code: (await list('', await s.acme.key('brand_manager'))).json().code }, { status: 403, code: 'role_denied' });
  t.equal((await s.app.inject({ method: 'GET', url: '/v1/transactions', headers: { authorization: 'Bearer svc_test_nonsense' } })).statusCode, 401, 'an unknown key');
  const wrongFilter = await list('?state=final');
  t.match({ status: wrongFilter.statusCode, code: wrongFilter.json().code }, { status: 400, code: 'invalid_request' }, 'the vault list\'s filter with a bearer key');
  t.equal(((await list('', s.globex.owner)).json() as FlowPage).data.length, 0, 'another tenant sees none of these');
  const signedList = await s.signed('GET', '/v1/transactions');
  t.equal(signedList.statusCode, 200, signedList.body);
  t.same(signedList.json().data, [], 'a request signature lists the organization\'s vault-API transactions (none here), not the flows');
  const signedKind = await s.signed('GET', '/v1/transactions?kind=funding');
  t.match({ status: signedKind.statusCode, code: signedKind.json().code }, { status: 400, code: 'invalid_request' }, 'the flow list\'s filter with a signature');
  const forged = await list(`?cursor=${encodeURIComponent('x'.repeat(40))}`);
  t.equal(forged.statusCode, 400, 'a forged cursor');
});
