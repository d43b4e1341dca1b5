// End to end with real processes and the Esplora regtest double (which checks every input with
// bitcore-lib's script interpreter before accepting a transaction): a P2WPKH (threshold ECDSA) and a P2TR
// key-path (FROST) spend sent through the SDK reach `final`; then a compromised API that alters what
// is signed after the intent was verified is refused by the nodes.
// Run on a stack started with `esplora: true` (governance.test.ts starts one for several journeys).
import type { Test } from 'tap';
import * as bitcoin from 'bitcoinjs-lib';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { mining, type Stack } from './stack.ts';
import { connectCoordinator } from '../../api/coordinator/coordinator-client.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { Scheme } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import { buildSpend } from '../../api/chains/bitcoin/build-spend.ts';
import { decodeIntent, type BtcTransferIntent } from '../../core/intents/intent.ts';

const p2wpkh = () => bitcoin.payments.p2wpkh({ pubkey: secp256k1.getPublicKey(secp256k1.utils.randomSecretKey()), network: bitcoin.networks.regtest }).address!;
const RECIPIENT = p2wpkh();
const ATTACKER = p2wpkh();

/** The Bitcoin journey on `stack`, whose organization has set no policy yet. */
export async function bitcoinJourney(t: Test, stack: Stack): Promise<void> {
  const { client } = stack;
  const esplora = stack.esplora!;
  const vault = await client.waitForVault((await client.createVault({ tier: 'hosted', name: 'btc' })).id);
  const segwit = await client.createWallet(vault.id, { chain: 'bitcoin-regtest' });
  const taproot = await client.createWallet(vault.id, { chain: 'bitcoin-regtest', address_type: 'p2tr' });
  t.match(segwit.address, /^bcrt1q/);
  t.match(taproot.address, /^bcrt1p/);
  esplora.fund(segwit.address, 200_000n);
  esplora.fund(taproot.address, 150_000n);
  esplora.fund(taproot.address, 60_000n);

  const paid = (txid: string, address: string) => {
    const tx = bitcoin.Transaction.fromHex(esplora.txs.get(txid)!.hex);
    const script = bitcoin.address.toOutputScript(address, bitcoin.networks.regtest);
    return tx.outs.filter((o) => Buffer.from(o.script).equals(Buffer.from(script))).reduce((a, o) => a + BigInt(o.value), 0n);
  };

  for (const [wallet, amount, key] of [[segwit, 120_000n, 'btc-segwit-1'], [taproot, 180_000n, 'btc-taproot-1']] as const) {
    const sent = await client.sendBitcoin({ wallet, outputs: [{ address: RECIPIENT, amount }], maxFeeRate: 20n, maxFee: 20_000n, idempotencyKey: key });
    t.ok(['created', 'checks'].includes(sent.state), '202 in an early state');
    const done = await mining(() => void esplora.mine(1), client.waitForTransaction(sent.id, ['final'], { timeoutMs: 90_000 }), 500);
    t.equal(done.state, 'final', `${wallet.address_type} spend final (${done.reason ?? ''})`);
    t.ok(esplora.txs.has(done.tx_hash!), 'the double accepted it after checking every input with the script interpreter');
    t.equal(paid(done.tx_hash!, RECIPIENT), amount, 'the recipient is paid exactly');
    const fee = BigInt(done.fee!);
    t.ok(fee > 0n && fee <= 20_000n, `fee ${fee} within the ceiling`);
  }
  t.same(esplora.rejected, [], 'the double refused nothing');

  // A compromised API: it holds a genuine signed intent but asks the nodes to sign a transaction that
  // pays someone else. The nodes recompute the sighash from the intent and refuse.
  esplora.fund(segwit.address, 90_000n);
  const utxos = (await (await fetch(`${esplora.url}/address/${segwit.address}/utxo`)).json() as { txid: string; vout: number; value: number; status: { confirmed: boolean } }[])
    .map((u) => ({ ...u, value: BigInt(u.value) }));
  // A P2WPKH intent names its inputs with their amounts.
  const inputs = utxos.map((u) => ({ txid: hexToBytes(u.txid), vout: u.vout, amount: u.value }));
  const intentBytes = client.bitcoinIntent({ wallet: segwit, outputs: [{ address: RECIPIENT, amount: 10_000n }], maxFeeRate: 20n, maxFee: 20_000n, inputs, idempotencyKey: 'btc-evil' });
  const intent = decodeIntent(intentBytes) as BtcTransferIntent;
  const honest = buildSpend(intent, utxos, 5n);
  const evil = buildSpend({ ...intent, outputs: [{ address: ATTACKER, amount: 10_000n }] }, utxos, 5n);
  const coordinator = connectCoordinator({ address: `127.0.0.1:${stack.cluster.coordinatorPort}` });
  t.teardown(() => coordinator.close());
  const path = segwit.derivation_path.split('/').slice(1).map(Number);
  const authorization = { intent: intentBytes, intentSignature: hexToBytes(client.signIntent(intentBytes)), apiKeyId: stack.apiKeyId };
  const ask = (template: Uint8Array, digests: Uint8Array[]) =>
    coordinator.sign({ vaultId: vault.id, path, scheme: Scheme.ECDSA, digests, authorization: { ...authorization, template } }, { deadline: Date.now() + 60_000 });
  await t.rejects(ask(honest.template, evil.digests), { constructor: CustodyError, code: 'digest_mismatch', kind: 'refused' }, 'digests of another transaction than the template: refused');
  await t.rejects(ask(evil.template, evil.digests), { constructor: CustodyError, code: 'wrong_outputs', kind: 'refused' }, 'a template that pays another recipient than the intent: refused');
  const ok = await ask(honest.template, honest.digests);
  t.equal(ok.signatures.length, honest.digests.length, 'the honest template signs, so the refusals were about the alteration');
  t.equal(bytesToHex(ok.publicKey).length, 66);
}
