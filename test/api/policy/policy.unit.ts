// Vault policies (api/policy/policy.ts): every rule of checkPolicy, the rolling window's boundaries,
// several assets in one transaction, and EVM recipients compared without regard to case.
import t from 'tap';
import { checkPolicy, normalizeRecipient, type Policy, type Transfer, type WindowSpend } from '../../../api/policy/policy.ts';

const NATIVE = 'evm-local:native';
const TOKEN = 'evm-local:0x1111111111111111111111111111111111111111';
const BTC = 'bitcoin-regtest:native';
const ALICE = '0x00000000000000000000000000000000000000aa';
const BOB = '0x00000000000000000000000000000000000000bb';
const MALLORY = '0x000000000000000000000000000000000000dEaD';
const NOW = 1_800_000_000_000;
const HOUR = 3600;

const send = (recipient: string, amount: bigint, asset = NATIVE): Transfer => ({ recipient, asset, amount });
const spent = (amount: bigint, secondsAgo: number, asset = NATIVE): WindowSpend => ({ asset, amount, at: NOW - secondsAgo * 1000 });
// The kind a policy refusal carries; the API edge answers it 403 (core/errors/http-status.ts).
const forbidden = (message: RegExp) => ({ kind: 'refused', code: 'forbidden', message });
const capExceeded = (message: RegExp) => ({ kind: 'refused', code: 'cap_exceeded', message });

t.test('no policy, or an empty one, allows anything', async (t) => {
  t.doesNotThrow(() => checkPolicy(null, [send(MALLORY, 10n ** 30n)], [spent(10n ** 30n, 1)], NOW));
  t.doesNotThrow(() => checkPolicy({}, [send(MALLORY, 10n ** 30n)], [], NOW));
});

t.test('per-transaction cap: equal passes, one over is 403 cap_exceeded naming amount and cap', async (t) => {
  const p: Policy = { per_transaction_cap: { [NATIVE]: '1000' } };
  t.doesNotThrow(() => checkPolicy(p, [send(ALICE, 1000n)], [], NOW));
  t.throws(() => checkPolicy(p, [send(ALICE, 1001n)], [], NOW), capExceeded(/amount 1001 of evm-local:native is over the per-transaction cap of 1000/));
  t.doesNotThrow(() => checkPolicy(p, [send(ALICE, 10n ** 20n, TOKEN)], [], NOW), 'a cap binds only its own asset');
  t.doesNotThrow(() => checkPolicy(p, [send(ALICE, 0n)], [], NOW), 'zero is under any cap');
});

t.test('per-transaction cap sums the transfers of one asset (several Bitcoin outputs)', async (t) => {
  const p: Policy = { per_transaction_cap: { [BTC]: '5000' } };
  t.doesNotThrow(() => checkPolicy(p, [send('bcrt1qa', 2500n, BTC), send('bcrt1qb', 2500n, BTC)], [], NOW));
  t.throws(() => checkPolicy(p, [send('bcrt1qa', 2500n, BTC), send('bcrt1qb', 2501n, BTC)], [], NOW), capExceeded(/amount 5001 of bitcoin-regtest:native/));
});

t.test('per-transaction caps of several assets are each checked', async (t) => {
  const p: Policy = { per_transaction_cap: { [NATIVE]: '10', [TOKEN]: '20' } };
  t.doesNotThrow(() => checkPolicy(p, [send(ALICE, 10n), send(BOB, 20n, TOKEN)], [], NOW));
  t.throws(() => checkPolicy(p, [send(ALICE, 10n), send(BOB, 21n, TOKEN)], [], NOW), capExceeded(/of evm-local:0x1111111111111111111111111111111111111111 is over the per-transaction cap of 20/));
});

t.test('rolling window: spends so far plus this one up to the cap pass; one unit more is 403 naming the limit', async (t) => {
  const p: Policy = { rolling_window: { seconds: HOUR, caps: { [NATIVE]: '1500' } } };
  const window = [spent(500n, 10), spent(400n, HOUR - 1)];
  t.doesNotThrow(() => checkPolicy(p, [send(ALICE, 600n)], window, NOW));
  t.throws(() => checkPolicy(p, [send(ALICE, 601n)], window, NOW), forbidden(/amount 601 of evm-local:native is over the spend limit: 900 already spent of 1500 per 3600 s/));
  t.throws(() => checkPolicy(p, [send(ALICE, 1501n)], [], NOW), forbidden(/0 already spent of 1500/), 'one transaction alone over the window cap');
});

t.test('rolling window boundary: a spend exactly `seconds` old has left the window, one millisecond younger has not', async (t) => {
  const p: Policy = { rolling_window: { seconds: HOUR, caps: { [NATIVE]: '1000' } } };
  const atEdge: WindowSpend = { asset: NATIVE, amount: 1000n, at: NOW - HOUR * 1000 };
  const inside: WindowSpend = { asset: NATIVE, amount: 1000n, at: NOW - HOUR * 1000 + 1 };
  t.doesNotThrow(() => checkPolicy(p, [send(ALICE, 1000n)], [atEdge], NOW));
  t.throws(() => checkPolicy(p, [send(ALICE, 1n)], [inside], NOW), forbidden(/1000 already spent of 1000/));
  t.doesNotThrow(() => checkPolicy(p, [send(ALICE, 1000n)], [spent(1000n, 2 * HOUR)], NOW), 'older spends do not count');
});

t.test('rolling window counts each asset against its own cap; an asset without a window cap is free', async (t) => {
  const p: Policy = { rolling_window: { seconds: HOUR, caps: { [NATIVE]: '100', [TOKEN]: '50' } } };
  const window = [spent(100n, 60, TOKEN), spent(40n, 60)];
  t.doesNotThrow(() => checkPolicy(p, [send(ALICE, 60n)], window, NOW), 'token spends do not count against the native cap');
  t.throws(() => checkPolicy(p, [send(ALICE, 60n), send(ALICE, 1n, TOKEN)], window, NOW), forbidden(/of evm-local:0x1111111111111111111111111111111111111111 is over the spend limit: 100 already spent of 50/));
  t.doesNotThrow(() => checkPolicy(p, [send(ALICE, 10n ** 24n, 'evm-local:0x2222222222222222222222222222222222222222')], window, NOW));
});

t.test('the per-transaction cap is checked before the window', async (t) => {
  const p: Policy = { per_transaction_cap: { [NATIVE]: '10' }, rolling_window: { seconds: HOUR, caps: { [NATIVE]: '5' } } };
  t.throws(() => checkPolicy(p, [send(ALICE, 11n)], [], NOW), capExceeded(/per-transaction cap/));
  t.throws(() => checkPolicy(p, [send(ALICE, 6n)], [], NOW), forbidden(/spend limit/));
});

t.test('deny list: 403 naming the recipient, matched without regard to case for EVM addresses', async (t) => {
  const p: Policy = { recipient_denylist: [MALLORY] };
  t.throws(() => checkPolicy(p, [send(MALLORY.toLowerCase(), 1n)], [], NOW), forbidden(/recipient 0x000000000000000000000000000000000000dead is denied by the vault's policy/));
  t.throws(() => checkPolicy(p, [send('0x000000000000000000000000000000000000DEAD', 1n)], [], NOW), forbidden(/is denied/));
  t.doesNotThrow(() => checkPolicy(p, [send(ALICE, 1n)], [], NOW));
  t.throws(() => checkPolicy(p, [send(ALICE, 1n), send(MALLORY, 1n)], [], NOW), forbidden(/is denied/), 'any transfer to a denied recipient');
});

t.test('allow list: only listed recipients, EVM case-insensitive; the deny list wins over it', async (t) => {
  const p: Policy = { recipient_allowlist: [ALICE.toUpperCase().replace('0X', '0x'), MALLORY], recipient_denylist: [MALLORY] };
  t.doesNotThrow(() => checkPolicy(p, [send(ALICE, 1n)], [], NOW));
  t.throws(() => checkPolicy(p, [send(BOB, 1n)], [], NOW), forbidden(/recipient 0x00000000000000000000000000000000000000bb is not on the vault's allow list/));
  t.throws(() => checkPolicy(p, [send(MALLORY, 1n)], [], NOW), forbidden(/is denied/));
});

t.test('Bitcoin recipients are compared as given', async (t) => {
  const p: Policy = { recipient_allowlist: ['bcrt1qallowed'] };
  t.doesNotThrow(() => checkPolicy(p, [send('bcrt1qallowed', 1n, BTC)], [], NOW));
  t.throws(() => checkPolicy(p, [send('BCRT1QALLOWED', 1n, BTC)], [], NOW), forbidden(/not on the vault's allow list/));
});

t.test('asset allow list: 403 naming the asset; allowed assets pass', async (t) => {
  const p: Policy = { asset_allowlist: [NATIVE] };
  t.doesNotThrow(() => checkPolicy(p, [send(ALICE, 1n)], [], NOW));
  t.throws(() => checkPolicy(p, [send(ALICE, 1n, TOKEN)], [], NOW), forbidden(/asset evm-local:0x1111111111111111111111111111111111111111 is not allowed by the vault's policy/));
  t.throws(() => checkPolicy({ asset_allowlist: [] }, [send(ALICE, 1n)], [], NOW), forbidden(/not allowed/), 'an empty list allows nothing');
});

t.test('recipient and asset rules come before amounts: the reason named is the first rule broken', async (t) => {
  const p: Policy = { per_transaction_cap: { [TOKEN]: '1' }, asset_allowlist: [NATIVE], recipient_denylist: [MALLORY] };
  t.throws(() => checkPolicy(p, [send(MALLORY, 5n, TOKEN)], [], NOW), forbidden(/is denied/));
  t.throws(() => checkPolicy(p, [send(ALICE, 5n, TOKEN)], [], NOW), forbidden(/is not allowed/));
});

t.test('normalizeRecipient lower-cases EVM addresses only', async (t) => {
  t.equal(normalizeRecipient('0xAbCdEf0000000000000000000000000000000001'), '0xabcdef0000000000000000000000000000000001');
  t.equal(normalizeRecipient('tb1qXYZ'), 'tb1qXYZ');
  t.equal(normalizeRecipient('0xABC'), '0xABC', 'not an address: left alone');
});
