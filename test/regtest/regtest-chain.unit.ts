// The local regtest double's block, mempool and UTXO rules (docs/bitcoin-regtest.md), over its HTTP
// API and on its state: double spends, spent outputs, coinbase maturity, dust and relay fee, chained
// mempool spends, mining (proof of work, merkle root, witness commitment), the faucet, and a restart
// from its store.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as bitcoin from 'bitcoinjs-lib';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { COINBASE_MATURITY, RegtestChain, RegtestRejection, dustThreshold, subsidy } from '../../deploy/regtest/regtest-chain.ts';
import { RegtestStore } from '../../deploy/regtest/regtest-store.ts';
import { EsploraServer } from '../../deploy/regtest/esplora-server.ts';
import { EsploraClient, EsploraError } from '../../api/chains/bitcoin/esplora-client.ts';

const net = bitcoin.networks.regtest;

/** A single-key P2WPKH wallet that signs its own spends (BIP-143, low-S DER). */
function wallet(seed: string) {
  const sk = sha256(new TextEncoder().encode(seed));
  const pub = secp256k1.getPublicKey(sk, true);
  const pay = bitcoin.payments.p2wpkh({ pubkey: pub, network: net });
  return {
    address: pay.address!,
    script: pay.output!,
    /** Spends `inputs` (outpoints with values) to `outputs`. */
    spend(inputs: { txid: string; vout: number; value: bigint; sequence?: number }[], outputs: { address: string; value: bigint }[], version = 2): string {
      const tx = new bitcoin.Transaction();
      tx.version = version;
      for (const i of inputs) tx.addInput(Buffer.from(i.txid, 'hex').reverse(), i.vout, i.sequence ?? 0xfffffffd);
      for (const o of outputs) tx.addOutput(bitcoin.address.toOutputScript(o.address, net), o.value);
      const code = bitcoin.payments.p2pkh({ pubkey: pub, network: net }).output!;
      inputs.forEach((i, n) => {
        const digest = tx.hashForWitnessV0(n, code, i.value, bitcoin.Transaction.SIGHASH_ALL);
        const der = secp256k1.sign(digest, sk, { prehash: false, format: 'der' });
        tx.setWitness(n, [new Uint8Array([...der, bitcoin.Transaction.SIGHASH_ALL]), pub]);
      });
      return tx.toHex();
    },
  };
}

const alice = wallet('alice');
const bob = wallet('bob');
const carol = wallet('carol');

async function service(t: { teardown(fn: () => unknown): void }, chain = new RegtestChain().init()) {
  const server = new EsploraServer(chain);
  const client = new EsploraClient(await server.listen(0));
  t.teardown(() => server.close());
  return { chain, server, client };
}

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', body: JSON.stringify(body) });

t.test('an output is spent once: a second spend is a mempool conflict, then missing once mined', async (t) => {
  const { chain, server, client } = await service(t);
  const coin = chain.fund(alice.address, 100_000n);
  const pay = alice.spend([{ ...coin, value: 100_000n }], [{ address: bob.address, value: 90_000n }]);
  const twin = alice.spend([{ ...coin, value: 100_000n }], [{ address: carol.address, value: 90_000n }]);
  const txid = await client.broadcast(pay);
  t.equal(await client.broadcast(pay), txid, 'the same transaction again is answered with its id, as sendrawtransaction does');
  await t.rejects(client.broadcast(twin), /txn-mempool-conflict/, 'a conflicting spend of a mempool input is refused (no replacement)');
  t.same(await client.utxos(alice.address), [], 'the spent output is gone from the address');
  t.same(await client.status(txid), { confirmed: false });
  chain.mine();
  t.match(await client.status(txid), { confirmed: true, block_height: chain.height, block_hash: chain.tip!.hash });
  await t.rejects(client.broadcast(twin), /bad-txns-inputs-missingorspent/, 'after the block: the input is spent');
  const outspend = await (await fetch(`${server.url}/tx/${coin.txid}/outspend/0`)).json();
  t.match(outspend, { spent: true, txid, vin: 0, status: { confirmed: true } });
  t.same(chain.rejected, ['txn-mempool-conflict', 'bad-txns-inputs-missingorspent']);
});

t.test('mempool outputs can be spent at once; a block takes parent and child in order', async (t) => {
  const { chain, client } = await service(t);
  const coin = chain.fund(alice.address, 50_000n);
  const parent = await client.broadcast(alice.spend([{ ...coin, value: 50_000n }], [{ address: bob.address, value: 49_000n }]));
  const utxo = (await client.utxos(bob.address))[0]!;
  t.match(utxo, { txid: parent, status: { confirmed: false } });
  const child = await client.broadcast(bob.spend([{ txid: parent, vout: 0, value: 49_000n }], [{ address: carol.address, value: 48_000n }]));
  const [hash] = chain.mine();
  t.same(chain.blocks.at(-1)!.txids.slice(1), [parent, child], 'coinbase first, then parent before child');
  const block = bitcoin.Block.fromHex(chain.blocks.at(-1)!.hex);
  t.equal(block.getId(), hash);
  t.ok(block.checkProofOfWork(), 'the header meets regtest proof of work');
  t.ok(block.checkTxRoots(), 'merkle root and BIP-141 witness commitment match the transactions');
  t.equal(block.transactions![0]!.outs[0]!.value, subsidy(chain.height) + 2_000n, 'the coinbase takes the subsidy and both fees');
  const pushed = bitcoin.script.decompile(block.transactions![0]!.ins[0]!.script)![0]!;
  t.equal(typeof pushed === 'number' ? pushed - bitcoin.opcodes.OP_RESERVED! : bitcoin.script.number.decode(Buffer.from(pushed)), chain.height, 'BIP-34 height in the coinbase');
  t.equal(await client.tipHeight(), chain.height);
});

t.test('relay rules: dust, fee below the minimum, outputs above the inputs, a coinbase-shaped transaction, non-final lock time', async (t) => {
  const { chain, client } = await service(t);
  const coin = chain.fund(alice.address, 10_000n);
  const v = { ...coin, value: 10_000n };
  t.equal(dustThreshold(bob.script), 294n, 'P2WPKH dust threshold as Bitcoin Core computes it');
  await t.rejects(client.broadcast(alice.spend([v], [{ address: bob.address, value: 9_000n }, { address: carol.address, value: 293n }])), /"dust"/);
  await t.rejects(client.broadcast(alice.spend([v], [{ address: bob.address, value: 9_950n }])), /min relay fee not met/);
  await t.rejects(client.broadcast(alice.spend([v], [{ address: bob.address, value: 10_001n }])), /bad-txns-in-belowout/);
  await t.rejects(client.broadcast(alice.spend([v, v], [{ address: bob.address, value: 5_000n }])), /bad-txns-inputs-duplicate/);
  const lockedTx = bitcoin.Transaction.fromHex(alice.spend([v], [{ address: bob.address, value: 9_000n }]));
  lockedTx.locktime = chain.height + 5;
  await t.rejects(client.broadcast(lockedTx.toHex()), /non-final/, 'a lock time above the next block (signature aside: finality is checked first)');
  const relative = alice.spend([{ ...v, sequence: 3 }], [{ address: bob.address, value: 9_000n }]);
  await t.rejects(client.broadcast(relative), /non-BIP68-final/, 'BIP-68: an input locked 3 blocks after its confirmation');
  chain.mine(2);
  t.match(await client.broadcast(relative), /^[0-9a-f]{64}$/, 'accepted once the lock has passed');
  const forged = new bitcoin.Transaction();
  forged.addInput(new Uint8Array(32), 0xffffffff, 0xffffffff, Buffer.from('0101', 'hex'));
  forged.addOutput(bob.script, 1_000n);
  await t.rejects(client.broadcast(forged.toHex()), /coinbase/, 'nobody mints through POST /tx');
  await t.rejects(client.broadcast('00'), EsploraError);
});

t.test('block rewards to a miner address mature after 100 blocks', async (t) => {
  const chain = new RegtestChain({ minerAddress: alice.address }).init();
  const [hash] = chain.mine(1);
  const reward = [...chain.coins.values()].find((c) => c.coinbase && c.height === chain.height)!;
  t.equal(chain.blocks.at(-1)!.hash, hash);
  t.equal(reward.value, subsidy(chain.height));
  const spend = alice.spend([{ txid: reward.txid, vout: 0, value: reward.value }], [{ address: bob.address, value: reward.value - 1_000n }]);
  t.throws(() => chain.submit(spend), RegtestRejection);
  t.match(chain.rejected.at(-1), /^bad-txns-premature-spend-of-coinbase/);
  chain.mine(COINBASE_MATURITY - 2);
  t.throws(() => chain.submit(spend), /premature/, 'one block short of maturity');
  chain.mine(1);
  t.match(chain.submit(spend), /^[0-9a-f]{64}$/, 'mature at 100 confirmations');
});

t.test('faucet, mining and the rest of the Esplora API over HTTP', async (t) => {
  const { chain, server, client } = await service(t);
  const url = server.url;
  const funded = await (await post(`${url}/regtest/fund`, { address: alice.address, sats: '75000' })).json() as { txid: string; status: { confirmed: boolean } };
  t.match(funded, { vout: 0, sats: '75000', status: { confirmed: true, block_height: 1 } });
  const pending = await (await post(`${url}/regtest/fund`, { address: alice.address, sats: 25_000, confirm: false })).json() as { txid: string };
  t.same(await client.status(pending.txid), { confirmed: false });
  t.same(await (await fetch(`${url}/mempool/txids`)).json(), [pending.txid]);
  t.equal((await post(`${url}/regtest/fund`, { address: 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', sats: 1 })).status, 400, 'an address of another network is refused');
  t.equal((await post(`${url}/regtest/fund`, { address: alice.address, sats: 0 })).status, 400);
  const mined = await (await post(`${url}/regtest/mine`, { blocks: 3 })).json() as { height: number; blocks: string[] };
  t.equal(mined.height, 4);
  t.equal(mined.blocks.length, 3);
  t.match(await client.status(pending.txid), { confirmed: true, block_height: 2 });
  t.same(Object.keys(await client.feeEstimates()).includes('6'), true);
  t.equal(await (await fetch(`${url}/blocks/tip/hash`)).text(), chain.tip!.hash);
  t.equal(await (await fetch(`${url}/block-height/2`)).text(), chain.blocks[2]!.hash);
  t.match(await (await fetch(`${url}/block/${chain.blocks[2]!.hash}`)).json(), { height: 2, tx_count: 2, previousblockhash: chain.blocks[1]!.hash });
  t.match(await (await fetch(`${url}/address/${alice.address}`)).json(), { chain_stats: { funded_txo_count: 2, funded_txo_sum: 100_000 } });
  const tx = await (await fetch(`${url}/tx/${funded.txid}`)).json();
  t.match(tx, { txid: funded.txid, vout: [{ scriptpubkey_address: alice.address, scriptpubkey_type: 'v0_p2wpkh', value: 75_000 }], status: { confirmed: true } });
  t.equal((await fetch(`${url}/tx/${'0'.repeat(64)}/status`)).status, 404);
  // A P2TR address, in a process that has set up no ECC library of its own (test/regtest runs alone).
  const taproot = 'bcrt1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqc8gma6';
  t.match(await (await post(`${url}/regtest/fund`, { address: taproot, sats: 1000 })).json(), { sats: '1000', status: { confirmed: true } });
  t.same((await client.utxos(taproot)).map((u) => u.value), [1000n]);
});

t.test('a stored chain comes back after a restart: blocks, UTXOs, and the mempool checked again', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'regtest-store-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = new RegtestStore(dir);
  const first = new RegtestChain({ onChange: store.save });
  store.load(first);
  first.init();
  const coin = first.fund(alice.address, 60_000n);
  const spent = first.submit(alice.spend([{ ...coin, value: 60_000n }], [{ address: bob.address, value: 59_000n }]));
  first.mine();
  const waiting = first.submit(bob.spend([{ txid: spent, vout: 0, value: 59_000n }], [{ address: carol.address, value: 58_000n }]));
  const faucetPending = first.fund(carol.address, 7_000n, { confirm: false });

  const again = new RegtestChain({ onChange: new RegtestStore(dir).save });
  new RegtestStore(dir).load(again);
  t.equal(again.height, first.height);
  t.equal(again.tip!.hash, first.tip!.hash);
  t.same(again.mempool, [waiting, faucetPending.txid], 'the mempool in its order');
  t.same([...again.coins.keys()].sort(), [...first.coins.keys()].sort(), 'the same UTXO set');
  t.throws(() => again.submit(alice.spend([{ ...coin, value: 60_000n }], [{ address: carol.address, value: 59_000n }])), /missingorspent/, 'a spent output stays spent');
  again.mine();
  t.equal(again.txs.get(waiting)!.height, again.height);
});
