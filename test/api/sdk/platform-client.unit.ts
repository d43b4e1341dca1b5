// The platform API through the SDK's PlatformClient (docs/sdk.md "Platform API"), against the app in this
// process on a loopback port: webhook endpoints (an Idempotency-Key replay, a list walked page by page),
// branding (a 422 with its fields and request id), account holders and contacts, payments (quote,
// simulate, create, read, cancel, list), member-auth configuration, and the funding, escrow and
// tokenization lists; a refused call is a CustodyApiError with its status, code and request id.
import t from 'tap';
import { PlatformClient } from '../../../api/sdk/platform-client.ts';
import { CustodyApiError } from '../../../api/sdk/transport.ts';
import { SdkError } from '../../../api/sdk/sdk-error.ts';
import { paymentsApp } from '../payments/payments-app.ts';

// The app is built, listens and is closed by a test of its own, not at the top level: the file shares its
// process with others (test/support/units.ts).
t.test('the platform API through PlatformClient, against the app on a loopback port', async (t) => {
  t.setTimeout(120_000);
  const s = await paymentsApp(t);
  await s.app.listen({ host: '127.0.0.1', port: 0 });
  const baseUrl = `http://127.0.0.1:${(s.app.server.address() as { port: number }).port}`;
  const platform = new PlatformClient({ baseUrl, apiKey: s.acme.owner, retry: { attempts: 1 } });

  t.test('webhook endpoints: create (an Idempotency-Key replays), read, change, walk the list, delete', async (t) => {
    const body = { url: 'http://127.0.0.1:9/hook', events: ['webhook.test'], description: 'first' };
    const first = await platform.postWebhookEndpoints({ body, idempotencyKey: 'hook-1' });
    const again = await platform.postWebhookEndpoints({ body, idempotencyKey: 'hook-1' });
    t.equal(again.id, first.id, 'the same key and body answer the first endpoint again');
    t.type(first.secret, 'string', 'the secret, once');
    for (const d of ['second', 'third']) await platform.postWebhookEndpoints({ body: { ...body, description: d } });
    const page = await platform.getWebhookEndpoints({ query: { limit: 2 } });
    t.equal(page.data.length, 2);
    t.equal(page.has_more, true);
    const all = [];
    for await (const e of platform.each('getWebhookEndpoints', { query: { limit: 1 } })) all.push(e.description);
    t.same(all.sort(), ['first', 'second', 'third'], 'each walks every page');
    const id = String(first.id);
    t.equal((await platform.getWebhookEndpointsById({ id })).id, id);
    t.equal((await platform.patchWebhookEndpointsById({ id, body: { description: 'renamed' } })).description, 'renamed');
    t.equal(await platform.deleteWebhookEndpointsById({ id }), undefined, 'a 204 answers nothing');
    const gone = await platform.getWebhookEndpointsById({ id }).catch((e: unknown) => e);
    t.ok(gone instanceof CustodyApiError);
    t.match(gone, { status: 404, code: 'not_found', requestId: /./ });
    t.match(await platform.getWebhookDeliveries({ query: { limit: 5 } }), { data: [], has_more: false });
  });

  t.test('branding: read, a refused value is a 422 naming the field, then set', async (t) => {
    t.type((await platform.getBranding()).resolved, 'object');
    const bad = await platform.putBranding({ body: { primary_color: 'blue-ish' } }).catch((e: unknown) => e);
    t.ok(bad instanceof CustodyApiError, 'a CustodyApiError');
    const e = bad as CustodyApiError;
    t.equal(e.status, 422);
    t.ok(e.requestId, 'with the request id the API logged');
    t.ok(e.fields?.some((f) => f.field.includes('primary_color')), `fields name the value: ${JSON.stringify(e.fields)}`);
    const set = await platform.putBranding({ body: { primary_color: '#112233' } });
    t.match(JSON.stringify(set), /#112233/i);
  });

  t.test('account holders and contacts', async (t) => {
    const h = await platform.postAccountHolders({ body: { type: 'individual', given_name: 'Grace', family_name: 'Hopper' } });
    t.equal((await platform.getAccountHoldersById({ id: String(h.id) })).given_name, 'Grace');
    t.ok((await platform.getAccountHolders({ query: { limit: 100 } })).data.some((x) => x.id === h.id));
    const c = await platform.postContacts({ body: { account_holder_id: h.id, name: 'Bob', email: 'bob@example.com' } });
    t.ok((await platform.getContacts({ query: { account_holder_id: String(h.id) } })).data.some((x) => x.id === c.id));
  });

  t.test('payments: quote, simulate, create, read, cancel, list', async (t) => {
    const alice = await s.holder();
    const bob = await s.holder();
    s.balances.set(alice.wallet.address.toLowerCase(), 10n ** 18n);
    const pay = { source_wallet_id: alice.wallet.id, destination: { account_holder_id: bob.id }, amount: '1000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3' };
    const quote = await platform.postPaymentsQuote({ body: { kind: 'transfer', ...pay } });
    t.type(quote.id, 'string');
    const sim = await platform.postPaymentsSimulate({ body: { ...pay, quote_id: quote.id } });
    t.type(sim, 'object');
    const made = await platform.postPayments({ body: { ...pay, quote_id: quote.id } });
    t.equal(made.status, 'requires_authorization');
    t.equal((await platform.getPaymentsById({ id: String(made.id) })).id, made.id);
    t.match(await platform.postPaymentsByIdCancel({ id: String(made.id) }), { id: made.id, status: /cancel/ });
    t.ok((await platform.getPayments()).data.some((p) => p.id === made.id));
    t.match(await platform.getPaymentsByIdEvents({ id: String(made.id) }), { data: Array });
  });

  t.test('member-auth configuration, funding, escrows, tokenization', async (t) => {
    const o = await platform.postTenantMemberAuthAllowedOrigins({ body: { origin: 'https://app.acme.test' } });
    t.ok((await platform.getTenantMemberAuthAllowedOrigins()).data.some((x) => x.id === o.id));
    await platform.deleteTenantMemberAuthAllowedOriginsById({ id: String(o.id) });
    for (const list of [platform.getFundingRequests(), platform.getOffRampRequests(), platform.getEscrows(), platform.getTokenizationAuthorities(), platform.getTokenizationTokens()]) {
      t.match(await list, { data: Array, has_more: false });
    }
  });

  t.test('a path parameter left out is refused before any request; a bad key is not a workspace key', async (t) => {
    await t.rejects(platform.call('getPaymentsById', {}), { code: 'usage' });
    t.throws(() => new PlatformClient({ baseUrl, apiKey: 'sk_nope' }), SdkError);
    const stranger = new PlatformClient({ baseUrl, apiKey: 'svc_test_nope_nope', retry: { attempts: 1 } });
    await t.rejects(stranger.getBranding(), { status: 401, code: 'unauthorized' });
  });
});
