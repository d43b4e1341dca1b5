// The funding and off-ramp state machines (docs/platform/funding.md "States"), at the service level over a
// real store, the sandbox rail on a manual clock and an issuer double: each transition of the tables,
// a rail failure, a rail return, a duplicate settlement callback, a concurrent duplicate transition, the
// ledger entries each money-moving transition writes (once), and the events.
import t, { type Test } from 'tap';
import { fundingApp, BURN, type FundingApp } from './funding-app.ts';
import { FUNDING_TRANSITIONS, OFF_RAMP_TRANSITIONS } from '../../../api/funding/funding-states.ts';
import { holderFiat, holderStablecoin, issuerReserve, issuerSupply, railClearing, railInFlight, fiatAsset } from '../../../api/ledger/platform-ledger.ts';
import { FUNDING_REQUESTS, OFF_RAMP_REQUESTS } from '../../../api/funding/collections.ts';
import type { TransactionRecord } from '../../../api/transactions/records.ts';
import { txIndex } from '../../../api/transactions/transaction-service.ts';
import { TRANSACTIONS } from '../../../api/transactions/collections.ts';
import { SANDBOX_MAGIC_AMOUNTS, SandboxRail } from '../../../api/rails/sandbox-rail.ts';
import { UNITS_PER_CENT } from '../../../api/funding/stablecoin-issuer.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { eventType } from '../../../api/webhooks/event-catalog.ts';

/** An emitted event carries exactly the fields its catalog example lists. */
const shapedLikeCatalog = (t: Test, type: string, data: Record<string, unknown>) =>
  t.same(Object.keys(data).sort(), Object.keys(eventType(type)!.example_payload).sort(), `${type}: the catalog's fields`);

const SETTLE = 60_000;

async function fund(s: FundingApp, cents: string, key = `k-${cents}-${Math.random()}`) {
  const h = await s.holder();
  const r = await s.bearer('POST', '/v1/funding-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, fiat_amount: cents, currency: 'USD' }, s.acme.owner, { 'idempotency-key': key });
  if (r.statusCode !== 201) throw new Error(r.body);
  return { h, id: r.json().id as string, body: r.json() };
}
const stored = async (s: FundingApp, id: string) => (await FUNDING_REQUESTS.in(s.store).get(id))!;
async function events(s: FundingApp, type: string) {
  const out: { data: Record<string, unknown> }[] = [];
  for await (const e of s.store.all<{ type: string; data: Record<string, unknown> }>('webhook_events')) if (e.type === type) out.push(e);
  return out;
}

t.test('the transition tables, spelled out', async (t) => {
  t.same(FUNDING_TRANSITIONS, {
    pending: ['fiat_settling', 'failed'], fiat_settling: ['minting', 'failed', 'returned'], minting: ['completed', 'failed'], completed: [], failed: [], returned: [],
  });
  t.same(OFF_RAMP_TRANSITIONS, {
    awaiting_transfer: ['transfer_confirmed', 'expired'], transfer_confirmed: ['payout_pending', 'failed'], payout_pending: ['completed', 'failed', 'returned'],
    completed: [], failed: [], returned: [], expired: [],
  });
});

t.test('the sandbox rail: refuses production, settles only when its clock says so, dedupes by reference', async (t) => {
  const s = await fundingApp(t, { settleMs: SETTLE });
  t.throws(() => new SandboxRail({ store: s.store, environment: 'production', settleMs: 1 }), { code: 'sandbox_only' });
  const a = await s.rail.submitPull({ reference: 'ref-1', amount: 500n, currency: 'USD' });
  const again = await s.rail.submitPull({ reference: 'ref-1', amount: 999n, currency: 'USD' });
  t.equal(again.id, a.id, 'one transfer per reference');
  t.equal(again.amount, 500n, 'a resubmission changes nothing');
  t.equal(a.status, 'pending');
  const told: string[] = [];
  s.rail.onSettlement(async (x) => {
    told.push(`${x.reference}:${x.status}`);
  });
  t.equal(await s.rail.runDue(), 0, 'nothing is due before its time');
  s.clock.advance(SETTLE);
  t.equal(await s.rail.runDue(), 1);
  t.equal((await s.rail.transfer(a.id))!.status, 'settled');
  t.equal(await s.rail.runDue(), 0, 'told once when the listeners succeed');
  t.ok(told.includes('ref-1:settled'));
  const refused = await s.rail.submitPush({ reference: 'ref-2', amount: 100004n, currency: 'USD' });
  t.same([refused.status, refused.reason], ['failed', 'account_invalid'], 'a magic amount is refused at submission');
  await t.rejects(s.rail.submitPull({ reference: 'ref-3', amount: 1n, currency: 'EUR' }), { code: 'invalid_request' });
  t.ok(Object.keys(SANDBOX_MAGIC_AMOUNTS).length >= 4);
});

t.test('funding: pending -> fiat_settling -> minting -> completed, with its ledger entries and one event', async (t) => {
  const s = await fundingApp(t, { settleMs: SETTLE });
  const hook = await s.bearer('POST', '/v1/webhook-endpoints', { url: 'https://example.com/hook', events: ['funding_request.completed', 'funding_request.failed'] });
  t.equal(hook.statusCode, 201, hook.body);
  const { h, id, body } = await fund(s, '12345');
  t.equal(body.status, 'fiat_settling', 'submitted to the rail at once');
  t.equal(body.stablecoin_amount, (12345n * UNITS_PER_CENT).toString(), '18 decimals: cents x 10^16');
  t.match(body.rail_transfer_id, /^srt_/);
  s.clock.advance(SETTLE);
  await s.rail.runDue();
  let r = await stored(s, id);
  t.equal(r.status, 'minting', 'the settlement callback moved it on');
  t.equal(s.issuer.mints.length, 1, 'the mint is signed once');
  t.same(s.issuer.mints[0], { to: h.wallet.address, amount: 12345n * UNITS_PER_CENT, tx_hash: r.mint!.tx_hash });
  t.equal(await s.ledger.balance(holderFiat(h.id, 'USD'), fiatAsset('USD')), 12345n, 'the settled fiat is the holder\'s');
  // A broadcast that fails leaves the request for the next sweep, logged by id and code only.
  s.issuer.broadcastError = new CustodyError('rpc_error', `node at 10.0.0.7 did not answer for ${h.wallet.address}`);
  await s.service.runDue();
  t.equal((await stored(s, id)).status, 'minting', 'still minting');
  t.same(s.warnings, [{ funding_request_id: id, category: 'rpc_error' }], 'the sweep logs the request and the error code, not its message');
  s.issuer.broadcastError = undefined;
  // Swept again while the mint is pending: the same signed bytes are broadcast, nothing is signed again.
  await s.service.runDue();
  await s.service.runDue();
  t.equal(s.issuer.mints.length, 1);
  t.ok(s.issuer.broadcasts >= 2, 'rebroadcast the stored mint');
  s.issuer.status.set(r.mint!.tx_hash, { state: 'final', block_number: 9 });
  await s.service.runDue();
  r = await stored(s, id);
  t.equal(r.status, 'completed');
  t.equal(r.mint!.block_number, 9);
  t.equal(await s.ledger.balance(holderFiat(h.id, 'USD'), fiatAsset('USD')), 0n, 'the fiat went to the reserve');
  t.equal(await s.ledger.balance(issuerReserve('USD'), fiatAsset('USD')), 12345n);
  t.equal(await s.ledger.balance(holderStablecoin(h.id, r.asset), r.asset), 12345n * UNITS_PER_CENT, 'the minted units are the holder\'s');
  t.equal(await s.ledger.balance(issuerSupply(r.asset), r.asset), -(12345n * UNITS_PER_CENT));
  t.equal(await s.ledger.balance(railClearing('sandbox', 'USD'), fiatAsset('USD')), -12345n);
  const done = await events(s, 'funding_request.completed');
  t.equal(done.length, 1);
  t.same(done[0]!.data, { funding_request_id: id, account_holder_id: h.id, status: 'completed', fiat_amount: '12345', currency: 'USD', stablecoin_amount: (12345n * UNITS_PER_CENT).toString(), asset: r.asset });
  shapedLikeCatalog(t, 'funding_request.completed', done[0]!.data);
  const deliveries = (await s.bearer('GET', '/v1/webhook-deliveries')).json().data as { id: string; event_type: string }[];
  t.same(deliveries.map((d) => d.event_type), ['funding_request.completed'], 'queued for the subscribed endpoint, in the batch of the transition');
  t.same((await s.bearer('GET', `/v1/webhook-deliveries/${deliveries[0]!.id}`)).json().payload.data, done[0]!.data);
  await s.service.runDue();
  await s.service.advanceFunding(id);
  t.equal((await events(s, 'funding_request.completed')).length, 1, 'a final request changes no more');
});

t.test('funding: a rail failure, a return before minting, a refusal at submission, a reverted mint', async (t) => {
  const s = await fundingApp(t, { settleMs: SETTLE });
  const failed = await fund(s, '100001');
  const returned = await fund(s, '100003');
  const refused = await fund(s, '100004');
  t.same([refused.body.status, refused.body.failure_reason], ['failed', 'account_invalid'], 'refused at submission: failed at once');
  s.clock.advance(SETTLE);
  await s.rail.runDue();
  const f = await stored(s, failed.id);
  t.same([f.status, f.failure_reason], ['failed', 'insufficient_funds']);
  const rt = await stored(s, returned.id);
  t.same([rt.status, rt.return_reason, rt.mint], ['returned', 'unauthorized_debit', null], 'returned before minting: nothing minted');
  t.equal(s.issuer.mints.length, 0);
  for (const x of [failed, returned, refused]) t.equal(await s.ledger.balance(holderFiat(x.h.id, 'USD'), fiatAsset('USD')), 0n, 'no money moved');
  const ev = await events(s, 'funding_request.failed');
  t.same(ev.map((e) => [e.data.status, e.data.reason]).sort(), [['failed', 'account_invalid'], ['failed', 'insufficient_funds'], ['returned', 'unauthorized_debit']]);
  for (const e of ev) shapedLikeCatalog(t, 'funding_request.failed', e.data);

  const reverted = await fund(s, '777');
  s.clock.advance(SETTLE);
  await s.rail.runDue();
  const m = await stored(s, reverted.id);
  s.issuer.status.set(m.mint!.tx_hash, { state: 'reverted', block_number: 3 });
  await s.service.runDue();
  const after = await stored(s, reverted.id);
  t.same([after.status, after.failure_reason], ['failed', 'mint_reverted']);
  t.equal(await s.ledger.balance(holderFiat(reverted.h.id, 'USD'), fiatAsset('USD')), 777n, 'the settled fiat stays the holder\'s (owed back)');
});

t.test('funding: a duplicate settlement callback and a concurrent duplicate transition change nothing twice', async (t) => {
  const s = await fundingApp(t, { settleMs: SETTLE });
  const { h, id } = await fund(s, '5000');
  const transfer = (await s.rail.transfer((await stored(s, id)).rail_transfer_id!))!;
  const settled = { ...transfer, status: 'settled' as const, resolved_at: s.clock.now() };
  // The rail's callback delivered three times at once, and once more later.
  await Promise.all([s.service.onRailTransfer(settled, 'sandbox'), s.service.onRailTransfer(settled, 'sandbox'), s.service.onRailTransfer(settled, 'sandbox')]);
  await s.service.onRailTransfer(settled, 'sandbox');
  const r = await stored(s, id);
  t.equal(r.status, 'minting');
  t.equal(s.issuer.mints.length, 1, 'one mint signed');
  const entries = await s.ledger.entriesOf(holderFiat(h.id, 'USD'));
  t.equal(entries.length, 1, 'one ledger entry for the settlement');
  t.equal(entries[0]!.id, `ple_${id}/fiat_settling-minting`, 'keyed by its source');
  t.equal(await s.ledger.balance(holderFiat(h.id, 'USD'), fiatAsset('USD')), 5000n);
  // Two sweeps race the completion.
  s.issuer.status.set(r.mint!.tx_hash, { state: 'final', block_number: 4 });
  await Promise.all([s.service.advanceFunding(id), s.service.advanceFunding(id), s.service.runDue()]);
  t.equal((await stored(s, id)).status, 'completed');
  t.equal((await events(s, 'funding_request.completed')).length, 1, 'one event');
  t.equal(await s.ledger.balance(holderStablecoin(h.id, r.asset), r.asset), 5000n * UNITS_PER_CENT, 'credited once');
  // A late failure callback for a completed request: nothing.
  await s.service.onRailTransfer({ ...transfer, status: 'failed', reason: 'insufficient_funds' }, 'sandbox');
  t.equal((await stored(s, id)).status, 'completed');
});

t.test('recovery: a submission that failed is made by the sweep; a callback whose listener failed is told again', async (t) => {
  const s = await fundingApp(t, { settleMs: SETTLE });
  const submit = s.rail.submitPull.bind(s.rail);
  let down = true;
  s.rail.submitPull = async (req) => {
    if (down) throw new Error('the rail did not answer');
    return submit(req);
  };
  const { id, body } = await fund(s, '4200');
  t.equal(body.status, 'pending', 'stored, not submitted');
  down = false;
  await s.service.runDue();
  t.equal((await stored(s, id)).status, 'fiat_settling', 'the sweep submitted it');
  let fail = true;
  s.rail.onSettlement(async () => {
    if (fail) throw new Error('listener down');
  });
  s.clock.advance(SETTLE);
  t.equal(await s.rail.runDue(), 0, 'not told: a listener failed');
  fail = false;
  t.equal(await s.rail.runDue(), 1, 'told again');
  t.equal((await stored(s, id)).status, 'minting');
  t.equal(s.issuer.mints.length, 1, 'the settlement, told twice, minted once');
});

t.test('the ledger: idempotent by source, append-only, balanced', async (t) => {
  const s = await fundingApp(t);
  const scope = { tenant: 'tnt_x', workspace: 'wsp_x' };
  const postings = [{ debit: 'rail/sandbox/clearing/USD', credit: 'holder/ah_x/fiat/USD', asset: 'fiat:USD', amount: 250n }];
  const ops = await s.ledger.entryOps(scope, 'src-1', 'fnd_x', postings);
  t.equal(ops.length, 1);
  await s.store.batch(ops);
  t.same(await s.ledger.entryOps(scope, 'src-1', 'fnd_x', [{ ...postings[0]!, amount: 999n }]), [], 'a source writes once, whatever it says the second time');
  t.equal(await s.ledger.balance('holder/ah_x/fiat/USD', 'fiat:USD'), 250n);
  t.equal(await s.ledger.balance('rail/sandbox/clearing/USD', 'fiat:USD'), -250n, 'every entry balances');
  await t.rejects(s.ledger.entryOps(scope, 'src-2', 'fnd_x', [{ ...postings[0]!, amount: 0n }]), /positive/);
  await t.rejects(s.ledger.entryOps(scope, 'src-3', 'fnd_x', [{ ...postings[0]!, credit: postings[0]!.debit }]), /itself/);
  t.same(await s.ledger.accounts('wsp_x', 'holder/'), ['holder/ah_x/fiat/USD']);
});

/** A final vault-API transaction of the holder's wallet paying `amount` to the burn address, as the worker leaves it. */
async function burnTransfer(s: FundingApp, h: Awaited<ReturnType<FundingApp['holder']>>, amount: string, asset: string, at: number) {
  const created = new Date(at).toISOString();
  const tx = {
    id: `txn_${at.toString(16).padStart(12, '0')}${Math.random().toString(16).slice(2, 16).padEnd(14, '0')}`, org: h.wallet.org, vault_id: h.vault.id, wallet_id: h.wallet.id, chain: 'evm-local', family: 'evm', state: 'final',
    idempotency_key: `burn-${at}`, request_hash: 'x', intent: '', intent_signature: '', api_key_id: 'key_x', intent_sha256: 'x',
    transfers: [{ recipient: BURN, asset, amount }], tx_hash: `0x${at.toString(16).padStart(64, '0')}`, reason: null, fee: '1', created_at: created, updated_at: created,
  } as TransactionRecord;
  await s.store.batch([TRANSACTIONS.putOp(tx.id, tx, { index: txIndex(tx) })]);
  return tx;
}

t.test('off-ramp: awaiting_transfer -> transfer_confirmed -> payout_pending -> completed; only the exact, final, on-chain transfer counts', async (t) => {
  const s = await fundingApp(t, { settleMs: SETTLE });
  const h = await s.holder();
  const units = (2500n * UNITS_PER_CENT).toString();
  const made = await s.bearer('POST', '/v1/off-ramp-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, stablecoin_amount: units, currency: 'USD' }, s.acme.owner, { 'idempotency-key': 'ofr-1' });
  t.equal(made.statusCode, 201, made.body);
  const id = made.json().id as string;
  t.same([made.json().status, made.json().fiat_amount, made.json().burn_address], ['awaiting_transfer', '2500', BURN]);
  const asset = made.json().asset as string;
  s.clock.advance(1000);
  // Not enough: a transfer of another amount; then the right one, whose Transfer log is not on chain yet.
  await burnTransfer(s, h, (2499n * UNITS_PER_CENT).toString(), asset, s.clock.now());
  const tx = await burnTransfer(s, h, units, asset, s.clock.now() + 1);
  await s.service.advanceOffRamp(id);
  t.equal((await OFF_RAMP_REQUESTS.in(s.store).get(id))!.status, 'awaiting_transfer', 'a recorded transfer without its final on-chain log does not count');
  s.issuer.transfers.set(tx.tx_hash!, [{ from: h.wallet.address.toLowerCase(), to: BURN, value: BigInt(units), token: asset.split(':')[1]!, block_number: 7 }]);
  await Promise.all([s.service.advanceOffRamp(id), s.service.advanceOffRamp(id)]);
  let r = (await OFF_RAMP_REQUESTS.in(s.store).get(id))!;
  t.equal(r.status, 'payout_pending', 'confirmed and paid out at once');
  t.same([r.transaction_id, r.tx_hash, r.block_number], [tx.id, tx.tx_hash, 7]);
  t.equal(await s.ledger.balance(holderStablecoin(h.id, asset), asset), -BigInt(units), 'the units left the holder');
  t.equal(await s.ledger.balance(railInFlight('sandbox', 'USD'), fiatAsset('USD')), 2500n, 'the fiat is in flight');
  // Another off-ramp of the same amount cannot claim the same transfer.
  const second = await s.bearer('POST', '/v1/off-ramp-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, stablecoin_amount: units, currency: 'USD' }, s.acme.owner, { 'idempotency-key': 'ofr-2' });
  await s.service.advanceOffRamp(second.json().id);
  t.equal((await OFF_RAMP_REQUESTS.in(s.store).get(second.json().id))!.status, 'awaiting_transfer', 'one transfer pays one request');
  s.clock.advance(SETTLE);
  await s.rail.runDue();
  r = (await OFF_RAMP_REQUESTS.in(s.store).get(id))!;
  t.equal(r.status, 'completed');
  t.equal(await s.ledger.balance(railInFlight('sandbox', 'USD'), fiatAsset('USD')), 0n);
  t.equal(await s.ledger.balance(holderFiat(h.id, 'USD'), fiatAsset('USD')), 0n, 'paid out');
  const completed = await events(s, 'off_ramp_request.completed');
  t.equal(completed.length, 1);
  shapedLikeCatalog(t, 'off_ramp_request.completed', completed[0]!.data);
  // No transfer within the window: expired.
  s.clock.advance(3_600_000);
  await s.service.runDue();
  t.equal((await OFF_RAMP_REQUESTS.in(s.store).get(second.json().id))!.status, 'expired');
  const expired = await events(s, 'off_ramp_request.failed');
  t.same(expired.map((e) => [e.data.status, e.data.reason]), [['expired', 'no_transfer']]);
  shapedLikeCatalog(t, 'off_ramp_request.failed', expired[0]!.data);
});

t.test('off-ramp: a payout that fails, one that is returned, and one refused at submission give the fiat back to the holder', async (t) => {
  const s = await fundingApp(t, { settleMs: SETTLE });
  const h = await s.holder();
  const asset = s.issuer.asset;
  const out: Record<string, string> = {};
  for (const cents of ['100001', '100003', '100004']) {
    const units = (BigInt(cents) * UNITS_PER_CENT).toString();
    const made = await s.bearer('POST', '/v1/off-ramp-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, stablecoin_amount: units, currency: 'USD' }, s.acme.owner, { 'idempotency-key': `o-${cents}` });
    s.clock.advance(10);
    const tx = await burnTransfer(s, h, units, asset, s.clock.now());
    s.issuer.transfers.set(tx.tx_hash!, [{ from: h.wallet.address.toLowerCase(), to: BURN, value: BigInt(units), token: '', block_number: 7 }]);
    await s.service.advanceOffRamp(made.json().id);
    out[cents] = made.json().id;
  }
  t.same([(await OFF_RAMP_REQUESTS.in(s.store).get(out['100004']!))!.status, (await OFF_RAMP_REQUESTS.in(s.store).get(out['100004']!))!.failure_reason], ['failed', 'account_invalid']);
  s.clock.advance(SETTLE);
  await s.rail.runDue();
  const failed = (await OFF_RAMP_REQUESTS.in(s.store).get(out['100001']!))!;
  const returned = (await OFF_RAMP_REQUESTS.in(s.store).get(out['100003']!))!;
  t.same([failed.status, failed.failure_reason], ['failed', 'insufficient_funds']);
  t.same([returned.status, returned.return_reason], ['returned', 'account_closed']);
  t.equal(await s.ledger.balance(holderFiat(h.id, 'USD'), fiatAsset('USD')), 100001n + 100003n + 100004n, 'the redeemed fiat is the holder\'s again, owed by the platform');
  t.equal(await s.ledger.balance(railInFlight('sandbox', 'USD'), fiatAsset('USD')), 0n);
});
