// The funding, off-ramp and gateway rows of the catalog-events test (catalog-events.unit.ts; the receipt check is
// catalog-receipt.ts): the funding app's sandbox rail on a manual clock and its issuer double (a mint
// reported final when told; an off-ramp's burn transfer seeded as the transaction worker leaves it once final,
// with its Transfer log on the double) and a reference gateway on loopback, one endpoint registered through the API for every catalog name at a
// loopback receiver. The rows here are exactly ELSEWHERE's names for this file.
import t from 'tap';
import { fundingApp, BURN } from '../funding/funding-app.ts';
import { receiver, type Received } from '../setup-platform.ts';
import { EVENT_TYPES } from '../../../api/webhooks/event-catalog.ts';
import { verifyWebhook } from '../../../api/sdk/webhook-receiver.ts';
import { FUNDING_REQUESTS } from '../../../api/funding/collections.ts';
import { UNITS_PER_CENT } from '../../../api/funding/stablecoin-issuer.ts';
import { elsewhereIn, receives } from './catalog-receipt.ts';
import { ReferenceGateway } from '../gateways/reference-gateway.ts';
import { TRANSACTIONS } from '../../../api/transactions/collections.ts';
import { txIndex } from '../../../api/transactions/transaction-service.ts';
import type { TransactionRecord } from '../../../api/transactions/records.ts';

const SETTLE = 60_000;

t.test('funding, off-ramp and gateway catalog events are received, signed, at a registered endpoint', async (t) => {
  const s = await fundingApp(t, { settleMs: SETTLE, loopbackWebhooks: true, gateways: { timeoutMs: 2000, callbackWaitMs: 4000 } });
  const rx = await receiver(t);
  const created = await s.bearer('POST', '/v1/webhook-endpoints', { url: rx.url, events: EVENT_TYPES.map((e) => e.name) });
  t.equal(created.statusCode, 201, created.body);
  const ep = created.json() as { secret: string };
  let n = 0;
  const ok = async (r: Promise<{ statusCode: number; body: string }>, status: number) => {
    const got = await r;
    if (got.statusCode !== status) throw new Error(`${got.statusCode}: ${got.body}`);
    return JSON.parse(got.body) as Record<string, unknown> & { id: string };
  };
  const fund = async (cents: string) => {
    const h = await s.holder();
    const r = await ok(s.bearer('POST', '/v1/funding-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, fiat_amount: cents, currency: 'USD' }, s.acme.owner, { 'idempotency-key': `f-${++n}` }), 201);
    return { h, r };
  };

  const rows: Record<string, () => Promise<Record<string, unknown>>> = {
    'funding_request.completed': async () => {
      const { h, r } = await fund('12345');
      s.clock.advance(SETTLE);
      await s.rail.runDue();
      const minting = (await FUNDING_REQUESTS.in(s.store).get(r.id))!;
      s.issuer.status.set(minting.mint!.tx_hash, { state: 'final', block_number: 9 });
      await s.service.runDue();
      return { funding_request_id: r.id, account_holder_id: h.id, status: 'completed', fiat_amount: '12345', currency: 'USD', stablecoin_amount: (12345n * UNITS_PER_CENT).toString() };
    },
    'funding_request.failed': async () => {
      // The sandbox rail refuses this amount at submission (account_invalid).
      const { h, r } = await fund('100004');
      return { funding_request_id: r.id, account_holder_id: h.id, status: 'failed', reason: 'account_invalid', fiat_amount: '100004', currency: 'USD' };
    },
    'off_ramp_request.completed': async () => {
      const h = await s.holder();
      const units = (2600n * UNITS_PER_CENT).toString();
      const r = await ok(s.bearer('POST', '/v1/off-ramp-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, stablecoin_amount: units, currency: 'USD' }, s.acme.owner, { 'idempotency-key': `o-${++n}` }), 201);
      s.clock.advance(1000);
      // The holder's transfer to the burn address as the transaction worker leaves it once final, and its
      // final Transfer log on the issuer double's chain.
      const at = new Date(s.clock.now()).toISOString();
      const tx = {
        id: `txn_${s.clock.now().toString(16).padStart(12, '0')}00000000000000`, org: h.wallet.org, vault_id: h.vault.id, wallet_id: h.wallet.id, chain: 'evm-local', family: 'evm', state: 'final',
        idempotency_key: `burn-${r.id}`, request_hash: 'x', intent: '', intent_signature: '', api_key_id: 'key_x', intent_sha256: 'x',
        transfers: [{ recipient: BURN, asset: r.asset as string, amount: units }], tx_hash: `0x${s.clock.now().toString(16).padStart(64, '0')}`, reason: null, fee: '1', created_at: at, updated_at: at,
      } as TransactionRecord;
      await s.store.batch([TRANSACTIONS.putOp(tx.id, tx, { index: txIndex(tx) })]);
      s.issuer.transfers.set(tx.tx_hash!, [{ from: h.wallet.address.toLowerCase(), to: BURN, value: BigInt(units), token: (r.asset as string).split(':')[1]!, block_number: 7 }]);
      await s.service.runDue();
      s.clock.advance(SETTLE);
      await s.rail.runDue();
      return { off_ramp_request_id: r.id, account_holder_id: h.id, status: 'completed', fiat_amount: '2600', currency: 'USD', stablecoin_amount: units, asset: r.asset };
    },
    'off_ramp_request.failed': async () => {
      const h = await s.holder();
      const r = await ok(s.bearer('POST', '/v1/off-ramp-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, stablecoin_amount: (2500n * UNITS_PER_CENT).toString(), currency: 'USD' }, s.acme.owner, { 'idempotency-key': `o-${++n}` }), 201);
      // No transfer within the window: expired.
      s.clock.advance(3_600_000);
      await s.service.runDue();
      return { off_ramp_request_id: r.id, account_holder_id: h.id, status: 'expired', reason: 'no_transfer', fiat_amount: '2500', currency: 'USD' };
    },
    'integration_gateway.status_changed': async () => {
      const gw = await new ReferenceGateway().start();
      t.teardown(() => gw.stop());
      const g = await ok(s.bearer('POST', '/v1/integration-gateways', { name: 'Core bank', base_url: gw.url, callback_public_key: gw.callbackPublicKey }, s.acme.owner, { 'idempotency-key': 'gw' }), 201);
      await ok(s.bearer('POST', `/v1/integration-gateways/${g.id}/status`, { status: 'disabled' }), 200);
      return { gateway_id: g.id, status: 'disabled' };
    },
  };
  const verified = (g: Received) => verifyWebhook(g.headers, Buffer.from(g.body, 'utf8'), { secrets: [ep.secret], publicKey: s.platform.keys.webhookPublicKey, nowMs: s.clock.now() });
  for (const e of EVENT_TYPES) if (rows[e.name]) await receives(t, e, rx, rows[e.name]!, () => s.platform.deliveries.runDue(), verified);
  t.same(Object.keys(rows).sort(), elsewhereIn('test/api/webhooks/catalog-events-funding.unit.ts'), 'exactly the rows the catalog test counts on');
});
