// Faults under load on real processes (docs/operations.md "What a fault costs"): a 2-of-3 hosted vault
// sends batches of EVM transfers from four wallets on a real anvil while one part at a time is frozen,
// killed, made to refuse, or (the coordinator) stopped for two minutes. Every transfer of every batch
// ends `final`, each mined once at its own nonce; each batch's time is printed beside the batch without a
// fault, which is what the operations page quotes. Then a key generation cut by a dead node waits and
// completes when the node is back, and an OT setup cut by a node death leaves a vault the two others
// sign with, and the third too once it is back.
import t from 'tap';
import { createWalletClient, http, parseEther, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { cpSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { mining, startStack } from './stack.ts';
import type { Transaction, Wallet } from '../../api/sdk/client.ts';
import type { Proc } from '../cluster/cluster-harness.ts';

// A two-minute coordinator outage is one of the faults; the rest is real processes on two shared cores.
t.setTimeout(900_000);

const WALLETS = 4;
const PER_WALLET = 2;
/** How long the coordinator stays down: twice what used to fail every transfer in flight. */
const OUTAGE_MS = Number(process.env.FAULT_OUTAGE_MS ?? 120_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('a 2-of-3 vault keeps signing through a frozen, a killed and a refusing node and a coordinator down for two minutes', async (t) => {
  const stack = await startStack({ anvil: true });
  t.teardown(() => stack.stop());
  const chain = stack.anvil!;
  const { client, cluster } = stack;
  const mine = () => chain.testClient.mine({ blocks: 1 });
  const node = (name: string): Proc => cluster.procs.find((p) => p.name === name && p.running)!;

  // A copy of node-1 from before the vault existed (its data directory with its anchor, which vouches
  // for it): restored later, node-1 is a node that lost the vault's share and refuses every signing.
  const dirOf = (name: string) => join(cluster.dir, name);
  const anchorOf = (name: string) => join(cluster.dir, `${name}.anchor`);
  await node('node-1').kill('SIGTERM');
  cpSync(dirOf('node-1'), dirOf('node-1.before'), { recursive: true });
  cpSync(anchorOf('node-1'), anchorOf('node-1.before'));
  await cluster.startNode('node-1', stack.nodeEnv);

  const vault = await client.waitForVault((await client.createVault({ tier: 'hosted', name: 'faults' })).id);
  const wallets: Wallet[] = [];
  for (let i = 0; i < WALLETS; i++) wallets.push(await client.createWallet(vault.id, { chain: 'evm-local', account_index: i }));
  t.equal(new Set(wallets.map((w) => w.address)).size, WALLETS, 'four wallets, four addresses');
  const funder = createWalletClient({ chain: foundry, transport: http(chain.url), account: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266' as Hex });
  for (const w of wallets) await chain.publicClient.waitForTransactionReceipt({ hash: await funder.sendTransaction({ to: w.address as Hex, value: parseEther('5') }) });

  const to = '0x0000000000000000000000000000000000fa0175' as Hex;
  const all: Transaction[] = [];
  const figures: string[] = [];
  /** Sends PER_WALLET transfers from every wallet at once, runs `fault` beside them, and waits for every one to end. */
  const batch = async (name: string, fault: () => Promise<void> = async () => {}) => {
    const started = Date.now();
    const sent = await Promise.all(wallets.flatMap((w, i) => Array.from({ length: PER_WALLET }, (_, k) =>
      client.sendEvm({ wallet: w, to, amount: BigInt(1 + all.length + i * PER_WALLET + k), idempotencyKey: `${name.replace(/[^a-z0-9-]+/gi, '-')}-${i}-${k}` }))));
    const faulted = fault();
    const ended = await mining(mine, Promise.all(sent.map((s) => client.waitForTransaction(s.id, ['final', 'failed', 'rejected'], { timeoutMs: OUTAGE_MS + 240_000 }))));
    // Until the last transfer is final, whether or not the fault is still on.
    const s = (Date.now() - started) / 1000;
    await faulted;
    figures.push(`${name}: ${ended.length} transfers in ${s.toFixed(1)} s`);
    t.same(ended.map((x) => x.state), ended.map(() => 'final'), `${name}: every transfer final (${ended.map((x) => x.reason).filter(Boolean).join('; ') || 'no reasons'})`);
    all.push(...ended);
    return s;
  };

  const baseline = await batch('no fault');

  // Frozen 20 s (SIGSTOP): still attached, its stream open; sessions with it end at their round deadline.
  await batch('node-2 frozen for 20 s', async () => {
    const frozen = node('node-2');
    frozen.child.kill('SIGSTOP');
    await sleep(20_000);
    frozen.child.kill('SIGCONT');
  });

  // Killed (SIGKILL) while the batch signs, started again 10 s later on the same data.
  await batch('node-3 killed, back after 10 s', async () => {
    await node('node-3').kill('SIGKILL');
    await sleep(10_000);
    await cluster.startNode('node-3', stack.nodeEnv);
  });

  // A node that refuses every signing: node-1 restored from its copy made before the vault existed
  // (unknown_key). The two others sign every transfer.
  await node('node-1').kill('SIGTERM');
  renameSync(dirOf('node-1'), dirOf('node-1.now'));
  renameSync(anchorOf('node-1'), anchorOf('node-1.now'));
  renameSync(dirOf('node-1.before'), dirOf('node-1'));
  renameSync(anchorOf('node-1.before'), anchorOf('node-1'));
  await cluster.startNode('node-1', stack.nodeEnv);
  const refusing = node('node-1');
  await batch('node-1 refusing every signing');
  const refusals = refusing.raw.filter((l) => l.includes('session refused') && l.includes('unknown_key'));
  t.ok(refusals.length > 0, `node-1 refused ${refusals.length} sessions (unknown_key); the two others signed every transfer`);
  await node('node-1').kill('SIGTERM');
  rmSync(dirOf('node-1'), { recursive: true });
  renameSync(dirOf('node-1.now'), dirOf('node-1'));
  renameSync(anchorOf('node-1.now'), anchorOf('node-1'));
  await cluster.startNode('node-1', stack.nodeEnv);

  // The coordinator stopped for two minutes while the batch waits to be signed: every transfer waits
  // (its intent's not_after is an hour away) and is signed once the coordinator is back.
  await batch(`coordinator down for ${OUTAGE_MS / 1000} s`, async () => {
    await node('coordinator').kill('SIGKILL');
    await sleep(OUTAGE_MS);
    await cluster.startCoordinator({ COORDINATOR_HEARTBEAT_MS: '2000' });
  });

  // Each transfer mined once, at its own nonce: per wallet, nonces 0.. with no gap and no repeat.
  for (const w of wallets) {
    const mineOnly = all.filter((x) => x.wallet_id === w.id);
    t.same(mineOnly.map((x) => x.nonce).sort((a, b) => Number(a) - Number(b)), mineOnly.map((_, i) => i), `wallet ${w.id}: nonces 0 to ${mineOnly.length - 1}, each once`);
    t.equal(await chain.publicClient.getTransactionCount({ address: w.address as Hex }), mineOnly.length, 'the chain counts exactly those');
  }
  t.equal(new Set(all.map((x) => x.tx_hash)).size, all.length, 'no transaction hash twice');

  // A key generation that finds a committee member dead waits (the vault says why) and completes once
  // the member is back: no vault left in creating for good, no vault_exists.
  await node('node-2').kill('SIGKILL');
  const cut = await client.createVault({ tier: 'hosted', name: 'cut' });
  const waiting = await client.waitForVault(cut.id, (v) => /retrying/.test(v.problem ?? '') || v.state !== 'creating', { timeoutMs: 60_000 });
  t.equal(waiting.state, 'creating', `the generation waits for the dead member (${waiting.problem ?? ''})`);
  const dkgStarted = Date.now();
  await cluster.startNode('node-2', stack.nodeEnv);
  const done = await client.waitForVault(cut.id, (v) => v.state !== 'creating', { timeoutMs: 120_000 });
  t.equal(done.state, 'active', `active once the member is back (${done.problem ?? ''})`);
  figures.push(`key generation: active ${((Date.now() - dkgStarted) / 1000).toFixed(1)} s after the dead member was started again`);

  // An OT setup cut by a node death: node-3 is killed the moment the coordinator has the new key, while
  // the setup that follows runs. The vault is active; the two others set their pair up on demand and
  // sign; node-3's pairs are set up when it attaches again, and then it signs too.
  const coordinator = node('coordinator');
  const otCut = await client.createVault({ tier: 'hosted', name: 'ot-cut' });
  await coordinator.waitFor((l) => l.msg === 'vault key generated' && l['vaultId'] === otCut.id, 120_000, 'the key generated');
  await node('node-3').kill('SIGKILL');
  const cutActive = await client.waitForVault(otCut.id, (v) => v.state !== 'creating', { timeoutMs: 120_000 });
  t.equal(cutActive.state, 'active', `the vault is active though its OT setup was cut (${cutActive.problem ?? ''})`);
  const cutWallet = await client.createWallet(otCut.id, { chain: 'evm-local' });
  await chain.publicClient.waitForTransactionReceipt({ hash: await funder.sendTransaction({ to: cutWallet.address as Hex, value: parseEther('1') }) });
  const withTwo = await mining(mine, client.waitForTransaction((await client.sendEvm({ wallet: cutWallet, to, amount: 7n, idempotencyKey: 'ot-cut-1' })).id, ['final', 'failed', 'rejected'], { timeoutMs: 120_000 }));
  t.equal(withTwo.state, 'final', `signed by the two members left (${withTwo.reason ?? ''})`);
  await cluster.startNode('node-3', stack.nodeEnv);
  const ready = await client.waitForVault(otCut.id, (v) => v.signing?.ecdsa === 'ready' && v.signing.missing_pairs.length === 0 && v.signing.detached_members.length === 0, { timeoutMs: 120_000 });
  t.same(ready.signing?.missing_pairs, [], 'node-3\'s pairs were set up when it came back');
  // node-1 stopped: the only subsets left include node-3, so its new pairs are what signs.
  await node('node-1').kill('SIGTERM');
  const withThree = await mining(mine, client.waitForTransaction((await client.sendEvm({ wallet: cutWallet, to, amount: 8n, idempotencyKey: 'ot-cut-2' })).id, ['final', 'failed', 'rejected'], { timeoutMs: 120_000 }));
  t.equal(withThree.state, 'final', `node-3 signs with its new pair (${withThree.reason ?? ''})`);
  await cluster.startNode('node-1', stack.nodeEnv);

  t.comment(`faults under load, ${WALLETS} wallets x ${PER_WALLET} transfers a batch (baseline ${baseline.toFixed(1)} s):\n${figures.join('\n')}`);
});
