// Which transactions found on chain count as a btc.transfer intent's own (docs/transactions.md "Adopted
// transactions"): exactly its inputs, every output it names, anything else back to the wallet, the fee
// within its ceiling. Each way another transaction could pass itself off as the intent's is refused.
import t from 'tap';
import * as bitcoin from 'bitcoinjs-lib';
import { hexToBytes } from '@noble/hashes/utils.js';
import { notIntentSpend, spendFee, spentOutpoints } from '../../api/chains/bitcoin/intent-spend.ts';
import type { BtcTransferIntent } from '../../core/intents/intent.ts';

const net = bitcoin.networks.regtest;
const own = bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(1), network: net }).address!;
const dest = bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(3), network: net }).address!;
const stranger = bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(9), network: net }).address!;
const A = 'aa'.repeat(32);
const B = 'bb'.repeat(32);

const intent: BtcTransferIntent = {
  kind: 'btc.transfer', organization: 'org', walletId: 'w', network: 'regtest', from: own, outputs: [{ address: dest, amount: 70_000n }],
  maxFeeRate: 10n, maxFee: 2_000n, inputs: [{ txid: hexToBytes(A), vout: 0, amount: 50_000n }, { txid: hexToBytes(B), vout: 1, amount: 30_000n }], idempotencyKey: 'k', notAfter: 0n,
};

function tx(inputs: [string, number][], outputs: [string, bigint][]): bitcoin.Transaction {
  const x = new bitcoin.Transaction();
  x.version = 2;
  for (const [txid, vout] of inputs) x.addInput(hexToBytes(txid).reverse(), vout, 0xfffffffd);
  for (const [address, value] of outputs) x.addOutput(bitcoin.address.toOutputScript(address, net), value);
  return x;
}

const VALUES = [50_000n, 30_000n];

t.test('another signing of the intent: its inputs in any order, the output, change back, any fee within the ceiling', async (t) => {
  const cheap = tx([[A, 0], [B, 1]], [[dest, 70_000n], [own, 9_500n]]);
  t.equal(notIntentSpend(intent, cheap, VALUES), undefined);
  t.equal(spendFee(cheap, VALUES), 500n);
  t.same(spentOutpoints(cheap), [`${A}:0`, `${B}:1`], 'outpoints in display order');
  const dearer = tx([[B, 1], [A, 0]], [[own, 8_200n], [dest, 70_000n]]);
  t.equal(notIntentSpend(intent, dearer, [30_000n, 50_000n]), undefined, 'inputs and outputs in another order');
  t.equal(notIntentSpend({ ...intent, maxFee: 10_000n }, tx([[A, 0], [B, 1]], [[dest, 70_000n]]), VALUES), undefined, 'no change: the rest is the fee, within a higher ceiling');
});

t.test('what is not the intent\'s transaction', async (t) => {
  const cases: [string, bitcoin.Transaction, bigint[], RegExp][] = [
    ['one input of the two', tx([[A, 0]], [[dest, 49_000n]]), [50_000n], /spends .* the intent names/],
    ['an input the intent does not name', tx([[A, 0], [B, 2]], [[dest, 70_000n], [own, 9_500n]]), VALUES, /the intent names/],
    ['an input spent twice', tx([[A, 0], [A, 0]], [[dest, 70_000n]]), VALUES, /the intent names/],
    ['another amount to the recipient', tx([[A, 0], [B, 1]], [[dest, 69_000n], [own, 10_500n]]), VALUES, /does not pay 70000 sat to/],
    ['the amount to another address', tx([[A, 0], [B, 1]], [[stranger, 70_000n], [own, 9_500n]]), VALUES, /does not pay 70000 sat to/],
    ['the change to a stranger', tx([[A, 0], [B, 1]], [[dest, 70_000n], [stranger, 9_500n]]), VALUES, /an output the intent does not name/],
    ['a fee over the ceiling', tx([[A, 0], [B, 1]], [[dest, 70_000n], [own, 7_000n]]), VALUES, /fee 3000 sat exceeds the intent's 2000/],
    ['outputs beyond the inputs', tx([[A, 0], [B, 1]], [[dest, 70_000n], [own, 20_000n]]), VALUES, /outputs exceed its inputs/],
  ];
  for (const [what, x, values, why] of cases) t.match(notIntentSpend(intent, x, values), why, what);
});
