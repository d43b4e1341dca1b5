// POST /v1/payments/quote through the app on a real store (docs/platform/fees.md "Quote"): fees from the
// schedule in force and the configured platform fee, the total debit, the compliance checks and their
// status (pass, review, block), the quote kept with the schedule it names even after a newer one, the
// refusals (404 another organization's wallet or another tenant's holder, 409 a decommissioned wallet,
// 422 bad input naming the field, 400 schema, 403 permission), and that a quote writes nothing else.
import t from 'tap';
import { paymentApp } from './payment-app.ts';
import { PAYMENT_QUOTES } from '../../../api/payments/collections.ts';
import { MAX_UINT256 } from '../../../api/fees/base-units.ts';
import { pruneQuotes, QUOTE_RETENTION_MS, QUOTE_TTL_MS } from '../../../api/payments/payment-quotes.ts';

const TOKEN = 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3';
const TO = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const env = { API_PLATFORM_FEE_BPS: '10', API_PLATFORM_FEE_FIXED: '5' };
const schedule = (bps: number) => ({
  name: `bps ${bps}`,
  rules: [
    { payment_kind: '*', asset: '*', basis_points: 100, fixed: '0', min: '0', max: null },
    { payment_kind: 'transfer', asset: TOKEN, basis_points: bps, fixed: '1', min: '50', max: '100000' },
  ],
});

t.test('a quote prices a transfer and names the schedule in force, which a newer schedule does not change', async (t) => {
  const s = await paymentApp(t, env);
  const { wallet } = await s.vaultWallet(s.acme.org);
  const body = { kind: 'transfer', source_wallet_id: wallet.id, destination: { address: TO }, amount: '1000000', asset: TOKEN };
  const auditBefore = (await s.platform.audit.list(s.acme.sandbox.id)).length;

  const none = await s.call('POST', '/v1/payments/quote', body);
  t.equal(none.statusCode, 201, none.body);
  t.match(none.json(), {
    id: /^pqt_[0-9a-f]{26}$/, kind: 'transfer', source_wallet_id: wallet.id, destination: { address: TO }, amount: '1000000', asset: TOKEN,
    // No schedule: the tenant fee is 0. Platform: 5 + floor(1000000 * 10 / 10000) = 1005.
    fees: { tenant: '0', platform: '1005', total: '1005' }, total_debit: '1001005', fee_schedule_id: null,
    compliance: { status: 'pass', checks: [{ name: 'vault_policy', result: 'pass', code: null }, { name: 'total_within_limit', result: 'pass', code: null }] },
    created_at: '2026-03-01T12:00:00.000Z', expires_at: '2026-03-01T12:01:00.000Z',
  });

  const first = (await s.call('POST', '/v1/fee-schedules', schedule(30), s.acme.owner, { 'idempotency-key': 's1' })).json();
  s.clock.now += 5_000;
  const q1 = (await s.call('POST', '/v1/payments/quote', body)).json();
  // The exact rule: 1 + floor(1000000 * 30 / 10000) = 3001, within [50, 100000].
  t.match(q1, { fees: { tenant: '3001', platform: '1005', total: '4006' }, total_debit: '1004006', fee_schedule_id: first.id, expires_at: '2026-03-01T12:01:05.000Z' });
  const native = (await s.call('POST', '/v1/payments/quote', { ...body, asset: 'evm-local:native' })).json();
  t.match(native, { fees: { tenant: '10000' }, fee_schedule_id: first.id }, 'another asset: the * rule, 1%');

  s.clock.now += 1_000;
  const second = (await s.call('POST', '/v1/fee-schedules', schedule(0), s.acme.owner, { 'idempotency-key': 's2' })).json();
  const q2 = (await s.call('POST', '/v1/payments/quote', body)).json();
  t.match(q2, { fees: { tenant: '50' }, fee_schedule_id: second.id }, '0 bps: 1 fixed, raised to the minimum 50');

  const stored = await PAYMENT_QUOTES.in(s.store).get(q1.id);
  t.equal(stored?.fee_schedule_id, first.id, 'the earlier quote still names the schedule its fee came from');
  t.equal(stored?.fees.tenant, '3001');
  t.match(stored, { workspace: s.acme.sandbox.id, platform_fee: { basis_points: 10, fixed: '5' } });
  t.equal((await s.call('GET', `/v1/fee-schedules/${first.id}`)).json().in_force, false, 'and that schedule is still readable');

  t.equal((await s.platform.audit.list(s.acme.sandbox.id)).length, auditBefore + 2, 'only the two schedules were audited, no quote');
});

t.test('checks on account holders: block, review, and the destination holder\'s wallet', async (t) => {
  const s = await paymentApp(t);
  const src = await s.vaultWallet(s.acme.org);
  const quote = (destination: unknown, wallet = src.wallet.id, amount = '1000') =>
    s.call('POST', '/v1/payments/quote', { kind: 'transfer', source_wallet_id: wallet, destination, amount, asset: 'evm-local:native' });
  const checks = (r: { json(): { compliance: { checks: { name: string; result: string; code: string | null }[] } } }) =>
    Object.fromEntries(r.json().compliance.checks.map((c) => [c.name, c.code ?? c.result]));

  const alice = await s.holder('active');
  const aliceW = await s.vaultWallet(s.acme.org);
  await s.link(alice, s.acme, aliceW.vault, aliceW.wallet);
  const ok = await quote({ account_holder_id: alice });
  t.equal(ok.statusCode, 201, ok.body);
  t.same(ok.json().destination, { account_holder_id: alice, wallet_id: aliceW.wallet.id, address: aliceW.wallet.address }, 'the holder\'s wallet on the chain');
  t.equal(ok.json().compliance.status, 'pass');
  t.same(checks(ok), { destination_holder_active: 'pass', destination_holder_verification: 'pass', destination_holder_wallet: 'pass', vault_policy: 'pass', total_within_limit: 'pass' });

  const bob = await s.holder('suspended');
  const bobW = await s.vaultWallet(s.acme.org);
  await s.link(bob, s.acme, bobW.vault, bobW.wallet);
  const blocked = await quote({ account_holder_id: bob });
  t.equal(blocked.statusCode, 201, 'an inactive destination holder is quoted, blocked');
  t.equal(blocked.json().compliance.status, 'block');
  t.equal(checks(blocked).destination_holder_active, 'account_holder_not_active');

  const pending = await s.holder('pending_verification');
  const p = await quote({ account_holder_id: pending });
  t.equal(p.json().compliance.status, 'block');
  t.same(checks(p), { destination_holder_active: 'account_holder_not_active', destination_holder_verification: 'verification_not_current', destination_holder_wallet: 'destination_no_wallet', vault_policy: 'pass', total_within_limit: 'pass' });
  t.same(p.json().destination, { account_holder_id: pending, wallet_id: null, address: null });

  const carol = await s.holder('active');
  const c = await quote({ account_holder_id: carol });
  t.equal(c.json().compliance.status, 'block', 'an active holder without a wallet on the chain');
  t.equal(checks(c).destination_holder_wallet, 'destination_no_wallet');

  await s.patchHolder(alice, { verification_status: 'expired' });
  const review = await quote({ account_holder_id: alice });
  t.equal(review.json().compliance.status, 'review', 'active, but its verification lapsed: review');
  t.equal(checks(review).destination_holder_verification, 'verification_not_current');

  const fromBob = await quote({ address: TO }, bobW.wallet.id);
  t.equal(fromBob.json().compliance.status, 'block', 'the source wallet\'s holder is suspended');
  t.equal(checks(fromBob).source_holder_active, 'account_holder_not_active');
  await s.patchHolder(bob, { status: 'active' });
  t.equal((await quote({ address: TO }, bobW.wallet.id)).json().compliance.status, 'pass', 'active again');

  const globexHolder = await s.holder('active', s.globex.owner);
  const foreign = await quote({ account_holder_id: globexHolder });
  t.equal(foreign.statusCode, 404, 'another tenant\'s holder');
  t.equal(foreign.json().code, 'not_found');
  t.equal((await quote({ account_holder_id: 'ah_00000000000000000000000000' })).statusCode, 404);
});

t.test('the source wallet: 404 another organization\'s or unknown, 409 decommissioned', async (t) => {
  const s = await paymentApp(t);
  const mine = await s.vaultWallet(s.acme.org);
  const theirs = await s.vaultWallet(s.globex.org);
  const quote = (wallet: string) => s.call('POST', '/v1/payments/quote', { kind: 'transfer', source_wallet_id: wallet, destination: { address: TO }, amount: '1', asset: 'evm-local:native' });
  t.equal((await quote(theirs.wallet.id)).statusCode, 404);
  t.equal((await quote(theirs.wallet.id)).json().code, 'not_found');
  t.equal((await quote('wal_nope')).statusCode, 404);
  const owner = s.acme.owner;
  const dec = await s.call('POST', `/v1/wallets/${mine.wallet.id}/decommission`, undefined, owner);
  t.equal(dec.statusCode, 200, dec.body);
  const r = await quote(mine.wallet.id);
  t.equal(r.statusCode, 409);
  t.equal(r.json().code, 'wallet_decommissioned');
});

t.test('refused input: 422 naming the field, 400 for the schema; nothing is stored', async (t) => {
  const s = await paymentApp(t);
  const { wallet } = await s.vaultWallet(s.acme.org);
  const btc = await s.vaultWallet(s.acme.org, 'bitcoin-regtest');
  const base = { kind: 'transfer', source_wallet_id: wallet.id, destination: { address: TO }, amount: '1000', asset: 'evm-local:native' };
  const q = (body: unknown) => s.call('POST', '/v1/payments/quote', body);
  const fields = async (body: unknown) => {
    const r = await q(body);
    t.equal(r.statusCode, 422, r.body);
    t.equal(r.json().code, 'validation_failed');
    return r.json().fields.map((f: { field: string }) => f.field);
  };
  t.same(await fields({ ...base, kind: 'escrow' }), ['kind'], 'only transfers for now');
  t.same(await fields({ ...base, kind: 'payment_request', amount: '0', asset: 'native' }), ['kind', 'amount', 'asset'], 'every field at once');
  t.same(await fields({ ...base, amount: '0100' }), ['amount']);
  t.same(await fields({ ...base, amount: (MAX_UINT256 + 1n).toString() }), ['amount'], 'over 2^256 - 1');
  t.same(await fields({ ...base, asset: 'ethereum-sepolia:native' }), ['asset'], 'another chain\'s asset');
  t.same(await fields({ ...base, source_wallet_id: btc.wallet.id, asset: 'bitcoin-regtest:0x5fbdb2315678afecb367f032d93f642f64180aa3' }), ['asset'], 'Bitcoin has no tokens');
  t.same(await fields({ ...base, destination: { address: '0x70997970c51812dc3a010c7d01b50e0d17dc79c' } }), ['destination.address'], 'short');
  t.same(await fields({ ...base, destination: { address: '0x70997970C51812dc3A010C7d01b50e0d17dc79c8' } }), ['destination.address'], 'bad checksum');
  t.same(await fields({ ...base, destination: { address: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080' } }), ['destination.address'], 'a Bitcoin address for an EVM wallet');
  t.same(await fields({ ...base, source_wallet_id: btc.wallet.id, asset: 'bitcoin-regtest:native', destination: { address: TO } }), ['destination.address'], 'an EVM address for a Bitcoin wallet');
  const okBtc = await q({ ...base, source_wallet_id: btc.wallet.id, asset: 'bitcoin-regtest:native', destination: { address: btc.wallet.address } });
  t.equal(okBtc.statusCode, 201, 'a regtest address for a regtest wallet');
  t.equal((await q({ ...base, destination: { address: TO.toLowerCase() } })).statusCode, 201, 'all lower case: no checksum to check');

  const bad400: unknown[] = [
    { ...base, amount: 1000 },
    { ...base, kind: 'refund' },
    { ...base, destination: { address: TO, account_holder_id: 'ah_x' } },
    { ...base, destination: {} },
    { ...base, fee: '0' },
    { ...base, source_wallet_id: undefined },
  ];
  for (const body of bad400) t.equal((await q(body)).statusCode, 400, JSON.stringify(body).slice(0, 120));
  t.equal(await PAYMENT_QUOTES.in(s.store).count(), 2, 'only the two accepted quotes were stored');
});

t.test('limits: the vault policy\'s cap on the whole debit, and the uint256 limit', async (t) => {
  const s = await paymentApp(t, { API_PLATFORM_FEE_BPS: '0', API_PLATFORM_FEE_FIXED: '1' });
  const capped = await s.vaultWallet(s.acme.org, 'evm-local', { per_transaction_cap: { 'evm-local:native': '1000' } });
  const q = (wallet: string, amount: string, address = TO) => s.call('POST', '/v1/payments/quote', { kind: 'transfer', source_wallet_id: wallet, destination: { address }, amount, asset: 'evm-local:native' });
  const under = await q(capped.wallet.id, '999');
  t.equal(under.json().compliance.status, 'pass', '999 + fee 1 = the cap');
  const over = await q(capped.wallet.id, '1000');
  t.equal(over.json().compliance.status, 'block', '1000 + fee 1 is over the cap');
  t.same(over.json().compliance.checks.find((c: { name: string }) => c.name === 'vault_policy'), { name: 'vault_policy', result: 'fail', code: 'cap_exceeded' });

  const listed = await s.vaultWallet(s.acme.org, 'evm-local', { recipient_denylist: [TO.toLowerCase()] });
  t.equal((await q(listed.wallet.id, '5')).json().compliance.checks.find((c: { name: string }) => c.name === 'vault_policy').code, 'policy_forbidden', 'a denied recipient');

  const { wallet } = await s.vaultWallet(s.acme.org);
  const max = await q(wallet.id, MAX_UINT256.toString());
  t.equal(max.statusCode, 201);
  t.match(max.json(), { total_debit: (MAX_UINT256 + 1n).toString(), compliance: { status: 'block' } }, 'the fee takes the debit past 2^256 - 1');
  t.same(max.json().compliance.checks.find((c: { name: string }) => c.name === 'total_within_limit'), { name: 'total_within_limit', result: 'fail', code: 'payment_limit_exceeded' });
  t.equal((await q(wallet.id, (MAX_UINT256 - 1n).toString())).json().compliance.status, 'pass', 'exactly 2^256 - 1');
});

t.test('permissions: payment.read quotes; 403 before the body is read', async (t) => {
  const s = await paymentApp(t);
  const { wallet } = await s.vaultWallet(s.acme.org);
  const body = { kind: 'transfer', source_wallet_id: wallet.id, destination: { address: TO }, amount: '1', asset: 'evm-local:native' };
  t.equal((await s.call('POST', '/v1/payments/quote', body, await s.acme.key('viewer'))).statusCode, 201, 'a viewer may quote');
  t.equal((await s.call('POST', '/v1/payments/quote', body, await s.acme.key('developer'))).statusCode, 201);
  const brand = await s.acme.key('brand_manager');
  const denied = await s.call('POST', '/v1/payments/quote', 'not json', brand);
  t.equal(denied.statusCode, 403);
  t.equal(denied.json().code, 'role_denied');
  t.equal((await s.call('POST', '/v1/payments/quote', body, await s.acme.key('member_auth'))).statusCode, 403);
  t.equal((await s.call('POST', '/v1/payments/quote', body, s.globex.owner)).statusCode, 404, 'Globex cannot quote Acme\'s wallet');
});

t.test('expired quotes are deleted a day after they expire, oldest first, and fresh ones kept', async (t) => {
  const s = await paymentApp(t);
  const src = await s.vaultWallet(s.acme.org);
  const quote = async () => {
    const r = await s.call('POST', '/v1/payments/quote', { kind: 'transfer', source_wallet_id: src.wallet.id, destination: { address: '0x00000000000000000000000000000000000000b0' }, amount: '1000', asset: 'evm-local:native' });
    t.equal(r.statusCode, 201, r.body);
    return r.json().id as string;
  };
  const old = [await quote(), await quote()];
  t.equal(await pruneQuotes(s.store, s.clock.now), 0, 'nothing is due while they are fresh');
  s.clock.now += QUOTE_TTL_MS + QUOTE_RETENTION_MS + 1;
  const fresh = await quote();
  t.equal(await pruneQuotes(s.store, s.clock.now, 1), 1, 'at most the batch per run');
  t.equal(await pruneQuotes(s.store, s.clock.now), 1, 'then the rest that is due');
  for (const id of old) t.equal(await PAYMENT_QUOTES.in(s.store).get(id), undefined, `${id} deleted`);
  t.ok(await PAYMENT_QUOTES.in(s.store).get(fresh), 'the fresh quote is kept');
  t.equal(await pruneQuotes(s.store, s.clock.now), 0);
});
