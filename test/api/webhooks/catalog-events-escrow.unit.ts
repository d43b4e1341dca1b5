// The escrow rows of the catalog-events test (catalog-events.unit.ts; the receipt check is
// catalog-receipt.ts): the escrow app's real anvil with the stablecoin and the escrow contract, a holder's
// calls sent as its wallet would send them, one endpoint registered through the API for every catalog
// name at a loopback receiver. The rows here are exactly ELSEWHERE's names for this file.
import t from 'tap';
import { escrowApp, UNIT } from '../escrow/escrow-app.ts';
import { receiver, type Received } from '../setup-platform.ts';
import { EVENT_TYPES } from '../../../api/webhooks/event-catalog.ts';
import { verifyWebhook } from '../../../api/sdk/webhook-receiver.ts';
import { elsewhereIn, receives } from './catalog-receipt.ts';

const DAY = 86_400_000;
const iso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

t.test('escrow catalog events are received, signed, at a registered endpoint', async (t) => {
  const s = await escrowApp(t, { loopbackWebhooks: true });
  const rx = await receiver(t);
  const created = await s.bearer('POST', '/v1/webhook-endpoints', { url: rx.url, events: EVENT_TYPES.map((e) => e.name) });
  t.equal(created.statusCode, 201, created.body);
  const ep = created.json() as { secret: string };
  let n = 0;
  const escrow = async () => {
    const payer = await s.holder(s.acme, 500n * UNIT);
    const payee = await s.holder(s.acme);
    const r = await s.bearer('POST', '/v1/escrows', { payer_account_holder_id: payer.id, payer_wallet_id: payer.wallet.id, payee_account_holder_id: payee.id, amount: (100n * UNIT).toString(), refundable_after: iso(s.clock.now() + 7 * DAY) }, s.acme.owner, { 'idempotency-key': `e-${++n}` });
    if (r.statusCode !== 201) throw new Error(r.body);
    const e = r.json();
    return { payer, payee, e, want: (status: string) => ({ escrow_id: e.id, status, amount: e.amount, asset: e.asset, payer_account_holder_id: payer.id, payee_account_holder_id: payee.id }) };
  };

  const rows: Record<string, () => Promise<Record<string, unknown>>> = {
    'escrow.released': async () => {
      const { payer, e, want } = await escrow();
      const [approve, deposit] = e.calls.funding;
      await s.send(payer.address, approve);
      await s.send(payer.address, deposit);
      await s.mine();
      await s.service.runDue();
      await s.send(payer.address, e.calls.release);
      await s.mine();
      await s.service.runDue();
      return want('released');
    },
    'escrow.cancelled': async () => {
      const { e, want } = await escrow();
      const r = await s.bearer('POST', `/v1/escrows/${e.id}/cancel`, undefined, s.acme.owner, { 'idempotency-key': `c-${e.id}` });
      if (r.statusCode !== 200) throw new Error(r.body);
      return want('canceled');
    },
  };
  const verified = (g: Received) => verifyWebhook(g.headers, Buffer.from(g.body, 'utf8'), { secrets: [ep.secret], publicKey: s.platform.keys.webhookPublicKey, nowMs: s.clock.now() });
  for (const e of EVENT_TYPES) if (rows[e.name]) await receives(t, e, rx, rows[e.name]!, () => s.platform.deliveries.runDue(), verified);
  t.same(Object.keys(rows).sort(), elsewhereIn('test/api/webhooks/catalog-events-escrow.unit.ts'), 'exactly the rows the catalog test counts on');
});
