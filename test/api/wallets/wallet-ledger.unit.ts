// The wallet ledger's rules (api/wallets/wallet-ledger.ts, docs/platform/wallets.md "Ledger"), on a real
// LevelDB store: holds at broadcast, releases with the transfer and the fee paid at final, releases and
// the fee alone for a transaction that reverted on chain, nothing for one that never left; each entry
// written once per (transaction, leg) however often a change is committed, and numbered per wallet
// without gaps or repeats, also under concurrent commits.
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordStore } from '../../../api/store/record-store.ts';
import { WalletLedger, ledgerLegs, type LedgerEntryRecord } from '../../../api/wallets/wallet-ledger.ts';
import type { TransactionRecord, TransactionState } from '../../../api/transactions/records.ts';

const BOB = '0x00000000000000000000000000000000000000b0';

async function ledgerOnDisk(t: Test) {
  const store = await RecordStore.open(mkdtempSync(join(tmpdir(), 'ledger-')));
  t.teardown(() => store.close());
  const ledger = new WalletLedger(store, () => new Date('2030-01-01T00:00:00.000Z'));
  const entries = async (wallet = 'wal_1') => (await store.byIndex<LedgerEntryRecord>('ledger', `wallet/${wallet}/`)).map((e) => [e.sequence, e.kind, e.direction, e.asset, e.amount, e.counterparty]);
  return { store, ledger, entries };
}

function tx(id: string, state: TransactionState, patch: Partial<TransactionRecord> = {}): TransactionRecord {
  return {
    id, org: 'org_1', vault_id: 'vlt_1', wallet_id: 'wal_1', chain: 'evm-local', family: 'evm', state, idempotency_key: id, request_hash: 'h', intent: '00', intent_signature: '00',
    api_key_id: 'key', intent_sha256: '00', transfers: [{ recipient: BOB, asset: 'evm-local:native', amount: '1000' }], tx_hash: '0xabc', reason: null, fee: '500',
    created_at: '2030-01-01T00:00:00.000Z', updated_at: '2030-01-01T00:00:00.000Z', ...patch,
  };
}

/** Commits each step of `states` for transaction `id`, as the worker's transitions do. */
async function walk(ledger: WalletLedger, id: string, states: [TransactionState, Partial<TransactionRecord>?][]) {
  let prev = tx(id, states[0]![0], states[0]![1]);
  for (const [state, patch] of states.slice(1)) {
    const next = tx(id, state, patch);
    await ledger.commit(prev, next, []);
    prev = next;
  }
}

t.test('broadcast holds, final releases them and debits the transfer and the fee paid', async (t) => {
  const { ledger, entries, store } = await ledgerOnDisk(t);
  await walk(ledger, 'txn_1', [['signed'], ['broadcast'], ['confirmed', { block_number: 7, fee_paid: '300' }], ['final', { block_number: 7, fee_paid: '300' }]]);
  t.same(await entries(), [
    [1, 'hold', 'debit', 'evm-local:native', '1000', BOB],
    [2, 'hold', 'debit', 'evm-local:native', '500', null],
    [3, 'hold_release', 'credit', 'evm-local:native', '1000', BOB],
    [4, 'hold_release', 'credit', 'evm-local:native', '500', null],
    [5, 'transfer', 'debit', 'evm-local:native', '1000', BOB],
    [6, 'fee', 'debit', 'evm-local:native', '300', null],
  ], 'the fee debited is the one paid, not the ceiling held');
  const final = (await store.get<LedgerEntryRecord>('ledger', 'led_1_transfer-0'))!;
  t.same([final.transaction_id, final.tx_hash, final.block_number, final.wallet_id], ['txn_1', '0xabc', 7, 'wal_1']);

  // The same change committed again (a restart that processes it once more) writes nothing.
  await ledger.commit(tx('txn_1', 'confirmed', { block_number: 7 }), tx('txn_1', 'final', { block_number: 7, fee_paid: '300' }), []);
  await ledger.commit(tx('txn_1', 'signed'), tx('txn_1', 'broadcast'), []);
  t.equal((await entries()).length, 6, 'no second entry for a (transaction, leg)');
  t.equal(await store.get<number>('ledger_sequences', 'wal_1'), 6, 'no sequence number spent');
});

t.test('a transaction that reverted on chain releases its holds and pays its fee; one never included only releases', async (t) => {
  const { ledger, entries } = await ledgerOnDisk(t);
  await walk(ledger, 'txn_2', [['signed'], ['broadcast'], ['failed', { block_number: 9, fee_paid: '210', reason: 'reverted' }]]);
  t.same((await entries()).map((e) => e.slice(1, 5)), [
    ['hold', 'debit', 'evm-local:native', '1000'], ['hold', 'debit', 'evm-local:native', '500'],
    ['hold_release', 'credit', 'evm-local:native', '1000'], ['hold_release', 'credit', 'evm-local:native', '500'],
    ['fee', 'debit', 'evm-local:native', '210'],
  ], 'no transfer debit: the transfer did not happen');
  await walk(ledger, 'txn_3', [['signed'], ['broadcast'], ['failed', { reason: 'dropped' }]]);
  t.same((await entries()).slice(5).map((e) => e[1]), ['hold', 'hold', 'hold_release', 'hold_release'], 'holds undone, nothing paid');
});

t.test('nothing for a transaction that never left; no release of a hold never written', async (t) => {
  const { ledger, entries } = await ledgerOnDisk(t);
  await walk(ledger, 'txn_4', [['created'], ['checks'], ['failed', { reason: 'insufficient_funds' }]]);
  await walk(ledger, 'txn_5', [['checks'], ['signed'], ['failed', { reason: 'broadcast_rejected' }]]);
  await walk(ledger, 'txn_6', [['checks'], ['rejected', { reason: 'signers refused' }]]);
  t.same(await entries(), [], 'no money moved');
  // Broadcast before the ledger existed (no holds): its final writes the transfer and the fee only.
  await ledger.commit(tx('txn_7', 'confirmed'), tx('txn_7', 'final', { fee_paid: '42' }), []);
  t.same((await entries()).map((e) => [e[0], e[1], e[4]]), [[1, 'transfer', '1000'], [2, 'fee', '42']]);
  t.same(ledgerLegs(tx('txn_8', 'final'), tx('txn_8', 'final')), [], 'no state change, no legs');
});

t.test('the entries and the change they belong to are one batch; concurrent commits number a wallet\'s entries once each', async (t) => {
  const { ledger, store } = await ledgerOnDisk(t);
  const next = tx('txn_9', 'broadcast');
  await ledger.commit(tx('txn_9', 'signed'), next, [{ type: 'put', collection: 'transactions', id: next.id, value: next }]);
  t.equal((await store.get<TransactionRecord>('transactions', 'txn_9'))?.state, 'broadcast', 'the change itself is stored with its entries');
  await t.rejects(ledger.commit(tx('txn_10', 'signed'), tx('txn_10', 'broadcast'), [{ type: 'put', collection: 'x', id: 'y', value: undefined as never }]), 'a batch that fails');
  t.equal(await store.get('ledger', 'led_10_hold-0'), undefined, 'writes no entry either');

  await Promise.all(Array.from({ length: 20 }, (_, i) => ledger.commit(tx(`txn_c${i}`, 'signed'), tx(`txn_c${i}`, 'broadcast'), [])));
  const all = await store.byIndex<LedgerEntryRecord>('ledger', 'wallet/wal_1/');
  t.same(all.map((e) => e.sequence), Array.from({ length: all.length }, (_, i) => i + 1), 'in index order 1, 2, 3, ... without a gap or a repeat');
  t.equal(all.length, 2 + 40);
});
