// Escrows through the API against a real chain (docs/platform/escrows.md): creation answers the exact
// calls of the payer's wallet; the chain drives the states at finality (funded, released, refunded), the
// ledger follows the money into and out of the escrow account and agrees with the contract; cancel
// checks readiness; another workspace's escrow is unknown; roles; bad input changes nothing.
import t from 'tap';
import { decodeFunctionData, encodeFunctionData, erc20Abi, getAddress, type Hex } from 'viem';
import { escrowApp, UNIT, type EscrowApp } from './escrow-app.ts';
import { ESCROWS, ESCROW_EVENTS } from '../../../api/escrow/collections.ts';
import { escrowAccount } from '../../../api/escrow/escrow-service.ts';
import { onchainEscrowId, TOKEN_ESCROW_ABI } from '../../../api/escrow/token-escrow.ts';
import { holderStablecoin } from '../../../api/ledger/platform-ledger.ts';

const DAY = 86_400_000;
const iso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

async function parties(s: EscrowApp, coins = 500n * UNIT) {
  return { payer: await s.holder(s.acme, coins), payee: await s.holder(s.acme) };
}

function body(p: Awaited<ReturnType<typeof parties>>, s: EscrowApp, over: Record<string, unknown> = {}) {
  return { payer_account_holder_id: p.payer.id, payer_wallet_id: p.payer.wallet.id, payee_account_holder_id: p.payee.id, amount: (100n * UNIT).toString(), refundable_after: iso(s.clock.now() + 7 * DAY), ...over };
}

async function create(s: EscrowApp, b: Record<string, unknown>, key = `k-${Math.random()}`) {
  const r = await s.bearer('POST', '/v1/escrows', b, s.acme.owner, { 'idempotency-key': key });
  if (r.statusCode !== 201) throw new Error(r.body);
  return r.json();
}

async function events(s: EscrowApp, type: string) {
  const out: { data: Record<string, unknown> }[] = [];
  for await (const e of s.store.all<{ type: string; data: Record<string, unknown> }>('webhook_events')) if (e.type === type) out.push(e);
  return out;
}

async function count(s: EscrowApp, collection: string) {
  let n = 0;
  for await (const _ of s.store.all(collection)) n++;
  return n;
}

t.test('create answers awaiting_funding with the escrow\'s on-chain id and the exact calls; the key replays it', async (t) => {
  const s = await escrowApp(t);
  const p = await parties(s);
  const b = body(p, s, { description: 'order 42' });
  const r = await s.bearer('POST', '/v1/escrows', b, s.acme.owner, { 'idempotency-key': 'create-1' });
  t.equal(r.statusCode, 201, r.body);
  const e = r.json();
  t.match(e, {
    id: /^esc_[0-9a-f]{26}$/, status: 'awaiting_funding', chain: 'evm-local', contract: s.contract, asset: `evm-local:${s.token}`, token: s.token,
    payer_account_holder_id: p.payer.id, payer_wallet_id: p.payer.wallet.id, payer_address: p.payer.address.toLowerCase(),
    payee_account_holder_id: p.payee.id, payee_wallet_id: p.payee.wallet.id, payee_address: p.payee.address.toLowerCase(),
    amount: (100n * UNIT).toString(), refundable_after: new Date(b.refundable_after).toISOString(), description: 'order 42',
    deposit_tx_hash: null, settlement_tx_hash: null, refunded_by: null, funded_at: null, completed_at: null,
  });
  t.equal(e.escrow_id, onchainEscrowId(e.id), 'the contract\'s id is derived from the escrow id');
  t.equal(Date.parse(e.funding_deadline) - Date.parse(e.created_at), 3_600_000, 'funding deadline: the configured window');
  t.notOk('tenant' in e || 'org' in e || 'from_block' in e, 'no internal fields');

  const [approve, deposit] = e.calls.funding as { function: string; to: Hex; value: string; data: Hex }[];
  t.match(approve, { function: 'approve', to: s.token, value: '0' });
  t.same(decodeFunctionData({ abi: erc20Abi, data: approve!.data }), { functionName: 'approve', args: [getAddress(s.contract), 100n * UNIT] }, 'approve the contract for exactly the amount');
  t.match(deposit, { function: 'deposit', to: s.contract, value: '0' });
  t.same(decodeFunctionData({ abi: TOKEN_ESCROW_ABI, data: deposit!.data }), { functionName: 'deposit', args: [e.escrow_id, getAddress(s.token), getAddress(p.payee.address), 100n * UNIT, BigInt(Date.parse(b.refundable_after) / 1000)] }, 'deposit(id, token, payee, amount, refundableAfter)');
  t.same(decodeFunctionData({ abi: TOKEN_ESCROW_ABI, data: e.calls.release.data }), { functionName: 'release', args: [e.escrow_id] });

  const again = await s.bearer('POST', '/v1/escrows', b, s.acme.owner, { 'idempotency-key': 'create-1' });
  t.equal(again.statusCode, 201);
  t.equal(again.json().id, e.id, 'the same key and body: the same escrow');
  const other = await s.bearer('POST', '/v1/escrows', { ...b, amount: '5' }, s.acme.owner, { 'idempotency-key': 'create-1' });
  t.match([other.statusCode, other.json().code], [409, 'idempotency_key_reused']);
  t.equal(await count(s, 'escrows'), 1, 'one escrow');

  t.equal((await events(s, 'escrow.created')).length, 0, 'the creation is the caller\'s answer: no webhook event (docs/platform/events.md)');
  const audit = [];
  for await (const a of s.store.all<{ action: string; resource_id: string }>('audit_log')) if (a.action === 'escrow.create') audit.push(a.resource_id);
  t.same(audit, [e.id], 'audited');
});

t.test('bad input is refused with its status and code and changes nothing', async (t) => {
  const s = await escrowApp(t);
  const p = await parties(s);
  const stranger = await s.holder(s.globex);
  const pending = await s.bearer('POST', '/v1/account-holders', { type: 'individual', given_name: 'Pat', family_name: 'Pending' });
  const cases: [string, Record<string, unknown>, number, string][] = [
    ['amount 0', body(p, s, { amount: '0' }), 400, 'invalid_request'],
    ['amount with a fraction', body(p, s, { amount: '1.5' }), 400, 'invalid_request'],
    ['amount as a number', body(p, s, { amount: 100 }), 400, 'invalid_request'],
    ['an unknown field', body(p, s, { fee: '1' }), 400, 'invalid_request'],
    ['refundable_after not a date-time', body(p, s, { refundable_after: 'tomorrow' }), 400, 'invalid_request'],
    ['refundable_after in the past', body(p, s, { refundable_after: iso(s.clock.now() - DAY) }), 422, 'validation_failed'],
    ['refundable_after beyond a year', body(p, s, { refundable_after: iso(s.clock.now() + 400 * DAY) }), 422, 'validation_failed'],
    ['payer = payee', body(p, s, { payee_account_holder_id: p.payer.id }), 422, 'validation_failed'],
    ['a payee of another workspace', body(p, s, { payee_account_holder_id: stranger.id }), 422, 'validation_failed'],
    ['a payer wallet that is not the payer\'s', body(p, s, { payer_wallet_id: p.payee.wallet.id }), 422, 'validation_failed'],
    ['a payee wallet that is not the payee\'s', body(p, s, { payee_wallet_id: p.payer.wallet.id }), 422, 'validation_failed'],
    ['a payee not active', body(p, s, { payee_account_holder_id: pending.json().id }), 409, 'account_holder_not_active'],
  ];
  for (const [i, [what, b, status, code]] of cases.entries()) {
    const r = await s.bearer('POST', '/v1/escrows', b, s.acme.owner, { 'idempotency-key': `bad-${i}` });
    t.match([r.statusCode, r.json().code], [status, code], what);
  }
  const noKey = await s.bearer('POST', '/v1/escrows', body(p, s));
  t.match([noKey.statusCode, noKey.json().code], [400, 'invalid_request'], 'Idempotency-Key required');
  t.equal(await count(s, 'escrows'), 0, 'nothing stored');
  t.equal(await count(s, 'escrow_events'), 0);
  t.equal((await events(s, 'escrow.created')).length, 0, 'no event');
});

t.test('the chain drives it: funded at finality, then released; the ledger follows and agrees with the contract', async (t) => {
  const s = await escrowApp(t);
  const hook = await s.bearer('POST', '/v1/webhook-endpoints', { url: 'https://example.com/hook', events: ['escrow.released', 'escrow.cancelled'] });
  t.equal(hook.statusCode, 201, hook.body);
  const p = await parties(s);
  const e = await create(s, body(p, s));
  const [approve, deposit] = e.calls.funding;

  await s.send(p.payer.address, approve);
  await s.service.runDue();
  t.equal((await ESCROWS.in(s.store).get(e.id))!.status, 'awaiting_funding', 'an approval is not a deposit');
  const dep = await s.send(p.payer.address, deposit);
  t.equal(await s.balance(s.contract), 100n * UNIT, 'the contract holds the amount');
  await s.service.runDue();
  t.equal((await ESCROWS.in(s.store).get(e.id))!.status, 'awaiting_funding', 'not final yet (finality depth 2)');
  const early = await s.bearer('POST', `/v1/escrows/${e.id}/cancel`, undefined, s.acme.owner, { 'idempotency-key': 'c-early' });
  t.match([early.statusCode, early.json().code], [409, 'invalid_transition'], 'a deposit on chain, not final yet: no cancel');
  t.match(early.json().error, /refund/);

  await s.mine();
  await s.service.runDue();
  const funded = (await s.bearer('GET', `/v1/escrows/${e.id}`)).json();
  t.match(funded, { status: 'funded', deposit_tx_hash: dep.transactionHash, deposit_block: Number(dep.blockNumber) });
  t.ok(funded.funded_at);
  t.equal(await s.ledger.balance(escrowAccount(e.id, e.asset), e.asset), 100n * UNIT, 'the escrow account holds it');
  t.equal(await s.ledger.balance(holderStablecoin(p.payer.id, e.asset), e.asset), -(100n * UNIT), 'out of the payer\'s stablecoin');
  t.same((await s.service.reconcile({ tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id })).differences, [], 'the ledger agrees with the contract');

  const cancel = await s.bearer('POST', `/v1/escrows/${e.id}/cancel`, undefined, s.acme.owner, { 'idempotency-key': 'c-1' });
  t.match([cancel.statusCode, cancel.json().code], [409, 'invalid_transition'], 'a funded escrow cannot be canceled');
  t.match(cancel.json().error, new RegExp(`refunds it on chain \\(refund\\(${e.payer_address}, ${e.escrow_id}\\)`), 'the answer names what must happen instead');
  t.equal((await ESCROWS.in(s.store).get(e.id))!.status, 'funded', 'unchanged');

  const rel = await s.send(p.payer.address, e.calls.release);
  await s.mine();
  await Promise.all([s.service.runDue(), s.service.runDue()]);
  const released = (await s.bearer('GET', `/v1/escrows/${e.id}`)).json();
  t.match(released, { status: 'released', settlement_tx_hash: rel.transactionHash, settlement_block: Number(rel.blockNumber), refunded_by: null });
  t.ok(released.completed_at);
  t.equal(await s.balance(p.payee.address), 100n * UNIT, 'the payee holds it on chain');
  t.equal(await s.ledger.balance(escrowAccount(e.id, e.asset), e.asset), 0n, 'the escrow account is empty');
  t.equal(await s.ledger.balance(holderStablecoin(p.payee.id, e.asset), e.asset), 100n * UNIT, 'the payee\'s stablecoin');
  t.same((await s.service.reconcile({ tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id })).differences, []);
  const entries = [];
  for await (const x of s.store.all<{ id: string }>('platform_ledger_entries')) entries.push(x.id);
  t.same(entries.sort(), [`ple_${e.id}/awaiting_funding-funded`, `ple_${e.id}/funded-released`].sort(), 'one entry per money move, even with sweeps racing');
  t.same((await events(s, 'escrow.released')).map((x) => x.data), [{ escrow_id: e.id, status: 'released', amount: e.amount, asset: e.asset, payer_account_holder_id: p.payer.id, payee_account_holder_id: p.payee.id }], 'escrow.released once');

  const history = (await s.bearer('GET', `/v1/escrows/${e.id}/events`)).json();
  t.same(history.data.map((x: { type: string }) => x.type), ['created', 'funded', 'released'], 'the history');
  t.match(history.data[1], { status: 'funded', tx_hash: dep.transactionHash, block_number: Number(dep.blockNumber), actor: { type: 'system', id: 'escrow' } });
  t.match(history.data[0], { status: 'awaiting_funding', actor: { type: 'api_key' } });
  t.equal(history.has_more, false);
  const late = await s.bearer('POST', `/v1/escrows/${e.id}/cancel`, undefined, s.acme.owner, { 'idempotency-key': 'c-2' });
  t.match([late.statusCode, late.json().code], [409, 'invalid_transition'], 'nor a released one');
});

t.test('refunds: by the payee at any time, by the payer from refundable_after on', async (t) => {
  const s = await escrowApp(t);
  const p = await parties(s);
  const a = await create(s, body(p, s));
  const b = await create(s, body(p, s, { amount: (50n * UNIT).toString() }));
  for (const e of [a, b]) for (const c of e.calls.funding) await s.send(p.payer.address, c);
  await s.mine();
  await s.service.runDue();
  t.same([(await ESCROWS.in(s.store).get(a.id))!.status, (await ESCROWS.in(s.store).get(b.id))!.status], ['funded', 'funded']);

  await s.send(p.payee.address, { to: s.contract, data: refundData(p.payer.address, a.escrow_id) });
  await s.anvil.testClient.setNextBlockTimestamp({ timestamp: BigInt(Date.parse(b.refundable_after) / 1000) });
  await s.send(p.payer.address, { to: s.contract, data: refundData(p.payer.address, b.escrow_id) });
  await s.mine();
  await s.service.runDue();
  t.match((await s.bearer('GET', `/v1/escrows/${a.id}`)).json(), { status: 'refunded', refunded_by: 'payee' });
  t.match((await s.bearer('GET', `/v1/escrows/${b.id}`)).json(), { status: 'refunded', refunded_by: 'payer' });
  t.equal(await s.balance(p.payer.address), 500n * UNIT, 'all back with the payer');
  t.equal(await s.ledger.balance(holderStablecoin(p.payer.id, a.asset), a.asset), 0n, 'out and back on the ledger');
  t.same((await s.service.reconcile({ tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id })).differences, []);
  t.same((await events(s, 'escrow.cancelled')).map((x) => x.data.status).sort(), ['refunded', 'refunded'], 'escrow.cancelled with status refunded');
});

function refundData(payer: string, id: string): Hex {
  return encodeFunctionData({ abi: TOKEN_ESCROW_ABI, functionName: 'refund', args: [payer as Hex, id as Hex] });
}

t.test('cancel: only while awaiting funding; once; concurrent cancels, one wins; expiry', async (t) => {
  const s = await escrowApp(t);
  const p = await parties(s);
  const a = await create(s, body(p, s));
  const r = await s.bearer('POST', `/v1/escrows/${a.id}/cancel`, undefined, s.acme.owner, { 'idempotency-key': 'cancel-a' });
  t.equal(r.statusCode, 200, r.body);
  t.match(r.json(), { id: a.id, status: 'canceled' });
  t.ok(r.json().completed_at);
  const replay = await s.bearer('POST', `/v1/escrows/${a.id}/cancel`, undefined, s.acme.owner, { 'idempotency-key': 'cancel-a' });
  t.match([replay.statusCode, replay.json().status], [200, 'canceled'], 'the same key replays');
  const again = await s.bearer('POST', `/v1/escrows/${a.id}/cancel`, undefined, s.acme.owner, { 'idempotency-key': 'cancel-a2' });
  t.match([again.statusCode, again.json().code], [409, 'invalid_transition'], 'a second cancel under another key');
  const noKey = await s.bearer('POST', `/v1/escrows/${a.id}/cancel`);
  t.match([noKey.statusCode, noKey.json().code], [400, 'invalid_request']);
  t.same((await events(s, 'escrow.cancelled')).map((x) => x.data.status), ['canceled']);
  const audited = [];
  for await (const x of s.store.all<{ action: string; resource_id: string; before: unknown; after: unknown }>('audit_log')) if (x.action === 'escrow.cancel') audited.push(x);
  t.match(audited, [{ resource_id: a.id, before: { status: 'awaiting_funding' }, after: { status: 'canceled' } }], 'the cancel is audited once');

  const b = await create(s, body(p, s));
  const race = await Promise.all(['x', 'y', 'z'].map((k) => s.bearer('POST', `/v1/escrows/${b.id}/cancel`, undefined, s.acme.owner, { 'idempotency-key': `race-${k}` })));
  t.same(race.map((x) => x.statusCode).sort(), [200, 409, 409], 'one cancel wins');
  t.same(race.filter((x) => x.statusCode === 409).map((x) => x.json().code), ['invalid_transition', 'invalid_transition'], 'the others get a clean 409');
  t.equal((await s.bearer('GET', `/v1/escrows/${b.id}/events`)).json().data.filter((x: { type: string }) => x.type === 'canceled').length, 1, 'canceled once');

  // The sweep racing a cancel: either the cancel wins, or the escrow was already funded and the cancel is 409.
  const c = await create(s, body(p, s));
  const d = await create(s, body(p, s));
  s.clock.advance(3_600_000);
  await s.service.runDue();
  t.match((await s.bearer('GET', `/v1/escrows/${c.id}`)).json(), { status: 'expired' }, 'not funded by its deadline');
  t.match((await s.bearer('GET', `/v1/escrows/${d.id}`)).json(), { status: 'expired' });
  const late = await s.bearer('POST', `/v1/escrows/${c.id}/cancel`, undefined, s.acme.owner, { 'idempotency-key': 'cancel-c' });
  t.match([late.statusCode, late.json().code], [409, 'invalid_transition'], 'an expired escrow is not canceled');
  t.same((await events(s, 'escrow.cancelled')).map((x) => x.data.status).sort(), ['canceled', 'canceled', 'expired', 'expired']);
  t.equal(await count(s, 'platform_ledger_entries'), 0, 'no money moved: no ledger entry');
});

t.test('an escrow whose deposit is submitted is not canceled or expired under it', async (t) => {
  const s = await escrowApp(t);
  const p = await parties(s);
  const e = await create(s, body(p, s));
  for (const c of e.calls.funding) await s.send(p.payer.address, c);
  s.clock.advance(3_600_000);
  await s.service.runDue();
  t.equal((await ESCROWS.in(s.store).get(e.id))!.status, 'awaiting_funding', 'past the deadline, but a deposit waits for finality: no expiry');
  await s.mine();
  await s.service.runDue();
  t.equal((await ESCROWS.in(s.store).get(e.id))!.status, 'funded');
});

t.test('a deposit under the escrow\'s id with other terms is not its funding', async (t) => {
  const s = await escrowApp(t);
  const p = await parties(s);
  const e = await create(s, body(p, s));
  // The payer approves and deposits under the same id, but a smaller amount.
  const other = await create(s, body(p, s, { amount: (1n * UNIT).toString() }));
  const [approve] = other.calls.funding;
  await s.send(p.payer.address, approve);
  const deposit = encodeFunctionData({ abi: TOKEN_ESCROW_ABI, functionName: 'deposit', args: [e.escrow_id, s.token, p.payee.address, 1n * UNIT, BigInt(Date.parse(e.refundable_after) / 1000)] });
  await s.send(p.payer.address, { to: s.contract, data: deposit });
  await s.mine();
  await s.service.runDue();
  t.equal((await ESCROWS.in(s.store).get(e.id))!.status, 'awaiting_funding', 'the terms differ: not funded');
  t.equal(await count(s, 'platform_ledger_entries'), 0);
});

t.test('another workspace\'s escrow is unknown; roles', async (t) => {
  const s = await escrowApp(t);
  const p = await parties(s);
  const e = await create(s, body(p, s));
  const g = s.globex.owner;
  for (const [m, u] of [['GET', `/v1/escrows/${e.id}`], ['GET', `/v1/escrows/${e.id}/events`], ['POST', `/v1/escrows/${e.id}/cancel`], ['GET', '/v1/escrows/esc_0123456789abcdef0123456789'], ['GET', '/v1/escrows/nope']] as const) {
    const r = await s.bearer(m, u, undefined, g, { 'idempotency-key': 'g' });
    t.match([r.statusCode, r.json().code], [404, 'not_found'], `${m} ${u}`);
  }
  t.same((await s.bearer('GET', '/v1/escrows', undefined, g)).json().data, [], 'Globex lists none of Acme\'s');
  const production = await s.acme.key('owner', s.acme.production.id);
  t.equal((await s.bearer('GET', `/v1/escrows/${e.id}`, undefined, production)).statusCode, 404, 'nor the tenant\'s other environment');
  t.equal((await ESCROWS.in(s.store).get(e.id))!.status, 'awaiting_funding', 'the foreign cancel changed nothing');

  const viewer = await s.acme.key('viewer');
  const brand = await s.acme.key('brand_manager');
  const developer = await s.acme.key('developer');
  t.equal((await s.bearer('GET', `/v1/escrows/${e.id}`, undefined, viewer)).statusCode, 200, 'viewer reads');
  for (const [who, token] of [['viewer', viewer], ['brand_manager', brand]] as const) {
    const c = await s.bearer('POST', '/v1/escrows', body(p, s), token, { 'idempotency-key': `role-${who}` });
    t.match([c.statusCode, c.json().code], [403, 'role_denied'], `${who} cannot create`);
    const x = await s.bearer('POST', `/v1/escrows/${e.id}/cancel`, undefined, token, { 'idempotency-key': `role-${who}` });
    t.match([x.statusCode, x.json().code], [403, 'role_denied'], `${who} cannot cancel`);
  }
  t.match([(await s.bearer('GET', '/v1/escrows', undefined, brand)).statusCode], [403], 'brand_manager cannot read');
  t.equal((await s.bearer('POST', '/v1/escrows', body(p, s), developer, { 'idempotency-key': 'dev' })).statusCode, 201, 'developer creates');
  t.equal(await count(s, 'escrows'), 2);
});

t.test('GET /escrows pages oldest first with filters bound to the cursor', async (t) => {
  const s = await escrowApp(t);
  const p = await parties(s, 1000n * UNIT);
  const q = await parties(s);
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await create(s, body(p, s))).id);
  const theirs = (await create(s, body({ payer: q.payer, payee: p.payer }, s))).id;
  await s.bearer('POST', `/v1/escrows/${ids[1]}/cancel`, undefined, s.acme.owner, { 'idempotency-key': 'x' });
  const first = (await s.bearer('GET', '/v1/escrows?limit=2')).json();
  t.same(first.data.map((e: { id: string }) => e.id), ids.slice(0, 2));
  t.equal(first.has_more, true);
  const second = (await s.bearer('GET', `/v1/escrows?limit=2&cursor=${first.next_cursor}`)).json();
  t.same(second.data.map((e: { id: string }) => e.id), [ids[2], theirs]);
  t.equal(second.has_more, false);
  t.same((await s.bearer('GET', `/v1/escrows?payer_account_holder_id=${p.payer.id}`)).json().data.map((e: { id: string }) => e.id), ids);
  t.same((await s.bearer('GET', `/v1/escrows?payee_account_holder_id=${p.payer.id}`)).json().data.map((e: { id: string }) => e.id), [theirs]);
  t.same((await s.bearer('GET', '/v1/escrows?status=canceled')).json().data.map((e: { id: string }) => e.id), [ids[1]]);
  const mixed = await s.bearer('GET', `/v1/escrows?status=canceled&cursor=${first.next_cursor}`);
  t.equal(mixed.statusCode, 400, 'a cursor of other filters is refused');
  t.equal((await s.bearer('GET', '/v1/escrows?status=open')).statusCode, 400, 'an unknown status');
  t.equal((await ESCROW_EVENTS.in(s.store).byIndex(`escrow/${ids[1]}/`, 10)).length, 2, 'created, canceled');
});
