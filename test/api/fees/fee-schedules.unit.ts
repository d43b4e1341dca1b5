// Fee schedules and the platform fee through the app on a real store (docs/platform/fees.md): create with
// a required Idempotency-Key (replay, reuse with another body), read, list with cursors, the schedule in
// force moving to the newest, refused input (400, 422 naming every field), another tenant's id (404),
// permissions (403 before the body is read), the audit entry, and the platform fee from configuration.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { paymentApp } from '../payments/payment-app.ts';

const USDC = 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3';
const rules = [
  { payment_kind: '*', asset: '*', basis_points: 50, fixed: '0', min: '0', max: null },
  { payment_kind: 'transfer', asset: USDC, basis_points: 25, fixed: '100', min: '1000', max: '1000000' },
];

t.test('create, read, list; the newest schedule is in force and the old ones stay readable', async (t) => {
  const s = await paymentApp(t);
  const key = { 'idempotency-key': 'fs-1' };
  t.same((await s.call('GET', '/v1/fee-schedules')).json(), { data: [], next_cursor: null, has_more: false }, 'none yet');

  const made = await s.call('POST', '/v1/fee-schedules', { name: 'Standard', rules }, s.acme.owner, key);
  t.equal(made.statusCode, 201, made.body);
  const first = made.json();
  t.match(first, { id: /^fsc_[0-9a-f]{26}$/, name: 'Standard', status: 'active', in_force: true, created_at: '2026-03-01T12:00:00.000Z' });
  t.same(first.rules, rules, 'rules as given, amounts as strings');
  t.same(first.collectors, {}, 'no tenant-fee collector named');
  t.same((await s.call('GET', `/v1/fee-schedules/${first.id}`)).json(), first);

  const again = await s.call('POST', '/v1/fee-schedules', { rules, name: 'Standard' }, s.acme.owner, key);
  t.equal(again.statusCode, 201);
  t.equal(again.json().id, first.id, 'the same key and body replay the first answer');
  const reused = await s.call('POST', '/v1/fee-schedules', { name: 'Other', rules }, s.acme.owner, key);
  t.equal(reused.statusCode, 409);
  t.equal(reused.json().code, 'idempotency_key_reused');

  const audit = (await s.platform.audit.list(s.acme.sandbox.id)).filter((e) => e.action === 'fee_schedule.create');
  t.equal(audit.length, 1, 'one audit entry, none for the replay');
  t.match(audit[0], { resource_id: first.id, before: null, after: { id: first.id, rules } });

  s.clock.now += 1000;
  const collector = '0x00000000000000000000000000000000000FEE02';
  const second = (await s.call('POST', '/v1/fee-schedules', { name: 'Cheaper', rules: [rules[0]], collectors: { 'evm-local': collector } }, s.acme.owner, { 'idempotency-key': 'fs-2' })).json();
  t.equal(second.in_force, true);
  t.same(second.collectors, { 'evm-local': collector.toLowerCase() }, 'the collector, lower case');
  const old = (await s.call('GET', `/v1/fee-schedules/${first.id}`)).json();
  t.equal(old.in_force, false, 'the older schedule is no longer in force');
  t.same({ ...old, in_force: true }, first, 'and otherwise unchanged');

  const p1 = (await s.call('GET', '/v1/fee-schedules?limit=1')).json();
  t.same(p1.data.map((x: { id: string }) => x.id), [first.id], 'oldest first');
  t.equal(p1.has_more, true);
  const p2 = (await s.call('GET', `/v1/fee-schedules?limit=1&cursor=${p1.next_cursor}`)).json();
  t.same(p2.data.map((x: { id: string; in_force: boolean }) => [x.id, x.in_force]), [[second.id, true]]);
  t.equal(p2.next_cursor, null);
  t.equal((await s.call('GET', '/v1/fee-schedules?cursor=forged.cursor')).json().code, 'invalid_cursor');
  t.equal((await s.call('GET', '/v1/fee-schedules?limit=101')).statusCode, 400);
});

t.test('Idempotency-Key is required to create; refused input changes nothing', async (t) => {
  const s = await paymentApp(t);
  const none = await s.call('POST', '/v1/fee-schedules', { name: 'Standard', rules });
  t.equal(none.statusCode, 400);
  t.equal(none.json().code, 'invalid_request');
  t.match(none.json().error, /Idempotency-Key is required/);
  t.equal((await s.call('POST', '/v1/fee-schedules', { name: 'Standard', rules }, s.acme.owner, { 'idempotency-key': 'bad key' })).statusCode, 400, 'a malformed key');

  const post = (body: unknown, k = 'k') => s.call('POST', '/v1/fee-schedules', body, s.acme.owner, { 'idempotency-key': k });
  const r422 = await post({
    name: 'Bad <b>',
    rules: [
      { payment_kind: 'refund', asset: 'usdc', basis_points: 10_001, fixed: '007', min: '10', max: '9' },
      { payment_kind: 'transfer', asset: 'bitcoin-regtest:0x5fbdb2315678afecb367f032d93f642f64180aa3', basis_points: 1, fixed: '0', min: '0', max: null },
      { payment_kind: 'transfer', asset: 'nochain:native', basis_points: 1, fixed: '0', min: '0', max: null },
    ],
  }, 'k422');
  t.equal(r422.statusCode, 422, r422.body);
  t.equal(r422.json().code, 'validation_failed');
  t.same(r422.json().fields.map((f: { field: string }) => f.field), ['name', 'rules[0].payment_kind', 'rules[0].asset', 'rules[0].basis_points', 'rules[0].fixed', 'rules[0].max', 'rules[1].asset', 'rules[2].asset'], 'every field at once, in body order');
  const chains = await post({ name: 'Chains', rules: [rules[1], { ...rules[1], asset: 'bitcoin-regtest:0x5fbdb2315678afecb367f032d93f642f64180aa3' }, { ...rules[1], asset: 'nochain:native' }] }, 'kc');
  t.same(chains.json().fields.map((f: { field: string }) => f.field), ['rules[1].asset', 'rules[2].asset'], 'a Bitcoin token and an unknown chain');
  const collectors = await post({ name: 'C', rules, collectors: { 'bitcoin-regtest': '0x00000000000000000000000000000000000fee01', 'evm-local': '0x0000000000000000000000000000000000000000', 'ethereum-sepolia': '0x12', nochain: '0x00000000000000000000000000000000000fee01' } }, 'kcol');
  t.equal(collectors.statusCode, 422, collectors.body);
  t.same(collectors.json().fields.map((f: { field: string }) => f.field), ['collectors.bitcoin-regtest', 'collectors.evm-local', 'collectors.ethereum-sepolia', 'collectors.nochain'], 'a Bitcoin chain, the zero address, a short address, an unknown chain');
  const tie = await post({ name: 'Tie', rules: [{ ...rules[0], payment_kind: 'transfer' }, { ...rules[0], asset: USDC }] }, 'kt');
  t.equal(tie.statusCode, 422);
  t.same(tie.json().fields.map((f: { field: string }) => f.field), ['rules[1]'], 'two rules equally specific for one payment');

  const bad400: unknown[] = [
    { name: 'X', rules: [{ ...rules[0], basis_points: '50' }] },
    { name: 'X', rules: [{ ...rules[0], fixed: 5 }] },
    { name: 'X', rules: [{ ...rules[0], note: 'x' }] },
    { name: 'X', rules: [] },
    { name: 'X', rules: Array.from({ length: 51 }, () => rules[0]) },
    { name: 'X', rules, status: 'active' },
    { name: 'X', rules, collectors: ['0x00000000000000000000000000000000000fee01'] },
    { name: 'X', rules, collectors: { 'evm-local': 5 } },
    { rules },
  ];
  for (const [i, body] of bad400.entries()) t.equal((await post(body, `b${i}`)).statusCode, 400, JSON.stringify(body).slice(0, 80));
  t.equal((await post({ name: 'X', rules: [{ ...rules[0], basis_points: 1.5 }] }, 'frac')).statusCode, 400, 'a fractional basis point is not an integer');
  t.same((await s.call('GET', '/v1/fee-schedules')).json().data, [], 'nothing was created');
  t.same((await s.platform.audit.list(s.acme.sandbox.id)).filter((e) => e.action === 'fee_schedule.create'), []);
});

t.test('tenancy and permissions', async (t) => {
  const s = await paymentApp(t);
  const mine = (await s.call('POST', '/v1/fee-schedules', { name: 'Acme', rules }, s.acme.owner, { 'idempotency-key': 'a' })).json();
  const theirs = (await s.call('POST', '/v1/fee-schedules', { name: 'Globex', rules }, s.globex.owner, { 'idempotency-key': 'a' })).json();
  t.not(mine.id, theirs.id, 'keys are per workspace');
  const foreign = await s.call('GET', `/v1/fee-schedules/${theirs.id}`);
  t.equal(foreign.statusCode, 404);
  t.equal(foreign.json().code, 'not_found');
  t.equal((await s.call('GET', '/v1/fee-schedules/fsc_nope')).statusCode, 404);
  t.same((await s.call('GET', '/v1/fee-schedules')).json().data.map((x: { id: string }) => x.id), [mine.id], 'a list shows the workspace\'s own only');

  const viewer = await s.acme.key('viewer');
  const developer = await s.acme.key('developer');
  const brand = await s.acme.key('brand_manager');
  for (const [token, who] of [[viewer, 'viewer'], [developer, 'developer']] as const) {
    const denied = await s.call('POST', '/v1/fee-schedules', { name: 'Mine', rules }, token, { 'idempotency-key': 'v' });
    t.equal(denied.statusCode, 403, `${who} cannot create`);
    t.equal(denied.json().code, 'role_denied');
    t.equal((await s.call('GET', `/v1/fee-schedules/${mine.id}`, undefined, token)).statusCode, 200, `${who} reads`);
    t.equal((await s.call('GET', '/v1/fee-schedules/platform-fee', undefined, token)).statusCode, 200);
  }
  t.equal((await s.call('POST', '/v1/fee-schedules', 'not json at all', viewer)).statusCode, 403, 'denied before the body is read');
  t.equal((await s.call('GET', '/v1/fee-schedules', undefined, brand)).statusCode, 403, 'brand_manager cannot read fees');
  t.equal((await s.call('GET', '/v1/fee-schedules', undefined, 'svc_test_nope')).statusCode, 401);
  t.equal((await s.call('GET', '/v1/fee-schedules')).json().data.length, 1, 'nothing created by the refusals');

  // The tenant's production workspace is another workspace: its own schedules, and signed changes.
  const live = (await s.platform.tenancy.createKey(s.acme.production.id, 'owner', { signingPublicKey: bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())) })).token;
  t.equal((await s.call('GET', `/v1/fee-schedules/${mine.id}`, undefined, live)).statusCode, 404, 'a sandbox schedule is not production\'s');
  const unsigned = await s.call('POST', '/v1/fee-schedules', { name: 'Live', rules }, live, { 'idempotency-key': 'l' });
  t.equal(unsigned.statusCode, 401);
  t.equal(unsigned.json().code, 'signature_required');
});

t.test('the platform fee comes from the configuration and is read-only', async (t) => {
  const dflt = await paymentApp(t);
  t.same((await dflt.call('GET', '/v1/fee-schedules/platform-fee')).json(), { basis_points: 0, fixed: '0', min: '0', max: null, asset: '*' }, 'none by default');
  const s = await paymentApp(t, { API_PLATFORM_FEE_BPS: '15', API_PLATFORM_FEE_FIXED: '250' });
  t.same((await s.call('GET', '/v1/fee-schedules/platform-fee')).json(), { basis_points: 15, fixed: '250', min: '0', max: null, asset: '*' });
  t.equal((await s.call('POST', '/v1/fee-schedules/platform-fee', {})).statusCode, 404, 'no write');
});
