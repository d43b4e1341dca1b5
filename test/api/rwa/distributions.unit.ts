// Distributions and corporate actions on one real anvil (docs/platform/rwa.md "Distributions and corporate
// actions"): a bond token and a payout coin deployed through the tokenization API, each with an admin Safe of a
// vault wallet and an outside signer (threshold 1, the outsider signs every operation by EIP-712). The cap table
// is summed from the chain's Transfer logs. A coupon paid exactly at the record block (balances read with viem,
// the remainder left in the Safe, every payout logged once); a crash in the middle of execution resumed by a
// second service over the same store, paying nobody twice; a batch whose operation failed paid once, by its
// replayed SafeTx or, once that is dead, by a new operation; a 2:1 split through the corporate-action state
// machine; a redemption of a paused token (whole holdings moved to the Safe and paid); bad input, other
// tenants and roles refused with nothing changed.
import t from 'tap';
import { createWalletClient, getAddress, http, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { tokenizationApp, type TokenizationApp } from '../tokenization/tokenization-app.ts';
import { builtArtifact } from '../../../api/tokenization/chain/artifacts.ts';
import { packSafeSignatures, safeTxTypedData, type SafeTransaction } from '../../../api/tokenization/chain/safe-transaction.ts';
import { SAFE_ABI } from '../../../api/tokenization/chain/safe-abi.ts';
import { ActionService } from '../../../api/rwa/actions/action-service.ts';
import { CORPORATE_ACTIONS, DISTRIBUTIONS } from '../../../api/rwa/actions/collections.ts';
import type { Actor } from '../../../api/tenancy/audit-log.ts';
import { MemoryTokenLog } from './memory-token-log.ts';
import { TransferLogCapTable } from './transfer-cap-table.ts';
import { anvilAccount } from '../../chains/anvil.ts';

// The app and its anvil are started, and stopped, by a test of its own, not at the top level: the file
// shares its process with others (test/support/units.ts).
t.test('corporate actions and distributions, on the app over one anvil', async (t) => {
  t.setTimeout(600_000);
  const log = new MemoryTokenLog();
  // The app takes the cap table, which reads through the app's chain and tokens once it is built.
  const built: { app?: TokenizationApp } = {};
  const capTable = new TransferLogCapTable(() => ({ client: built.app!.chain.client, tokens: built.app!.tokenization.tokens }));
  const s = await tokenizationApp(t, { rwa: { log, capTable } });
  built.app = s;
  const outsider = anvilAccount(5);
  const [h1, h2, h3, h4] = [anvilAccount(6), anvilAccount(7), anvilAccount(8), anvilAccount(12)];
  const client = s.chain.client;
  const abi = builtArtifact('ManagedERC20').abi;
  const key = (k: string) => ({ 'idempotency-key': k });
  const scope = { tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id };
  let n = 0;

  interface Tok { id: string; address: Hex; safe: Hex; base: string }
  interface Op { id: string; state: string; kind: string; safe_tx: Record<string, string | number> }

  const w1 = await s.vaultWallet(s.acme.org);
  async function deploy(name: string, symbol: string, decimals: number): Promise<Tok> {
    const r = await s.call('POST', '/v1/tokenization/erc20', { chain: 'evm-local', name, symbol, decimals, admin: { owners: [{ wallet_id: w1.wallet.id }, { address: outsider.address }], threshold: 1 } }, undefined, key(`deploy-${symbol}`));
    if (r.statusCode !== 201) throw new Error(r.body);
    await s.tokenization.tokens.settled();
    const tok = (await s.call('GET', `/v1/tokenization/tokens/${r.json().id}`)).json();
    if (tok.status !== 'deployed') throw new Error(`${symbol} is ${tok.status}`);
    return { id: tok.id, address: getAddress(tok.address), safe: getAddress(tok.safe), base: `/v1/tokenization/tokens/${tok.id}` };
  }

  /** The outsider signs operation `opId` of `tok`; the pipeline executes it. */
  async function sign(tok: Tok, opId: string): Promise<Op> {
    const op = (await s.call('GET', `${tok.base}/operations/${opId}`)).json() as Op;
    const x = op.safe_tx;
    const tx: SafeTransaction = { to: getAddress(String(x.to)), value: BigInt(x.value!), data: x.data as Hex, operation: Number(x.operation) as 0 | 1, safeTxGas: BigInt(x.safe_tx_gas!), baseGas: BigInt(x.base_gas!), gasPrice: BigInt(x.gas_price!), gasToken: getAddress(String(x.gas_token)), refundReceiver: getAddress(String(x.refund_receiver)), nonce: BigInt(x.nonce!) };
    const r = await s.call('POST', `${tok.base}/operations/${opId}/signatures`, { owner: outsider.address, signature: await outsider.signTypedData(safeTxTypedData(tok.safe, 31337, tx)) });
    if (r.statusCode !== 200) throw new Error(r.body);
    await s.tokenization.operations.settled();
    return (await s.call('GET', `${tok.base}/operations/${opId}`)).json() as Op;
  }

  async function run(tok: Tok, path: string, body: unknown): Promise<void> {
    const r = await s.call('POST', `${tok.base}/${path}`, body, s.acme.owner, key(`op-${n++}`));
    if (r.statusCode !== 201) throw new Error(r.body);
    const op = await sign(tok, r.json().id);
    if (op.state !== 'confirmed') throw new Error(`${path}: ${JSON.stringify(op)}`);
  }

  const balanceOf = (tok: Tok, a: string) => client.readContract({ address: tok.address, abi, functionName: 'balanceOf', args: [getAddress(a)] }) as Promise<bigint>;
  const transfer = async (tok: Tok, from: typeof h1, to: string, amount: bigint) => {
    const w = createWalletClient({ account: from, chain: foundry, transport: http(s.anvil.url) });
    await client.waitForTransactionReceipt({ hash: await w.writeContract({ address: tok.address, abi, functionName: 'transfer', args: [getAddress(to), amount] }) });
  };
  const safeOpsOf = async (tok: Tok) => (await s.call('GET', `${tok.base}/operations?limit=100`)).json().data as Op[];
  const count = async () => {
    let d = 0;
    for await (const _ of DISTRIBUTIONS.in(s.store).range()) d++;
    let c = 0;
    for await (const _ of CORPORATE_ACTIONS.in(s.store).range()) c++;
    return { distributions: d, actions: c, log: log.entries.length };
  };

  // The bond: 100 / 200 / 33 minted to three holders and 50 to its own Safe; h2 passes 20 to h4 before the record.
  // (Set up before the subtests; a failure throws.)
  const bond = await deploy('Acme Bond', 'ABND', 0);
  const coin = await deploy('Acme Dollar', 'AUSD', 6);
  await run(bond, 'roles/grant', { role: 'MINTER_ROLE', account: bond.safe });
  await run(bond, 'policies', { minter: bond.safe, cap: '1000000000', period_seconds: 86_400 });
  for (const [to, amount] of [[h1.address, '100'], [h2.address, '200'], [h3.address, '33'], [bond.safe, '50']] as const) await run(bond, 'mint', { to, amount });
  await run(coin, 'roles/grant', { role: 'MINTER_ROLE', account: coin.safe });
  await run(coin, 'policies', { minter: coin.safe, cap: '1000000000000', period_seconds: 86_400 });
  await run(coin, 'mint', { to: bond.safe, amount: '1000000' });
  await transfer(bond, h2, h4.address, 20n);
  const recordBlock = await client.getBlockNumber({ cacheTime: 0 });
  // After the record block: does not count.
  await transfer(bond, h1, h4.address, 50n);
  const holders = [h1, h2, h3, h4].map((h) => h.address);
  const coinOf = () => Promise.all([...holders, bond.safe].map((a) => balanceOf(coin, a)));

  t.test('a coupon: paid pro rata at the record block, floor per holder, the remainder left in the Safe, each payout logged once', async (t) => {
    const before = await count();
    const body = { asset: coin.address, amount: '1000', record_block: recordBlock.toString(), batch_size: 2 };
    const base = `/v1/rwa/tokens/${bond.id}/distributions`;
    // Refused, nothing stored or logged.
    const head = await client.getBlockNumber({ cacheTime: 0 });
    for (const [what, b, bearer, status, code] of [
      ['a record block in the future', { ...body, record_block: (head + 100n).toString() }, s.acme.owner, 422, 'validation_failed'],
      ['amount zero', { ...body, amount: '0' }, s.acme.owner, 422, 'validation_failed'],
      ['an asset with no contract', { ...body, asset: '0x000000000000000000000000000000000000dEaD' }, s.acme.owner, 422, 'validation_failed'],
      ['an asset that is no ERC-20', { ...body, asset: bond.safe }, s.acme.owner, 422, 'validation_failed'],
      ['an unknown field', { ...body, to: h1.address }, s.acme.owner, 400, 'invalid_request'],
      ['a developer (no tokenization.manage)', body, s.acme.developer, 403, 'role_denied'],
      ['a viewer', body, s.acme.viewer, 403, 'role_denied'],
      ['another tenant', body, s.globex.owner, 404, 'not_found'],
    ] as [string, unknown, string, number, string][]) {
      const r = await s.call('POST', base, b, bearer, key(`bad-${n++}`));
      t.match([r.statusCode, r.json().code], [status, code], what);
    }
    t.match((await s.call('POST', base, body)).json(), { code: 'invalid_request' }, 'no Idempotency-Key: 400');
    t.same(await count(), before, 'every refusal: nothing stored, nothing logged');

    const created = await s.call('POST', base, body, s.acme.owner, key('coupon-1'));
    t.equal(created.statusCode, 201, created.body);
    const d = created.json();
    // At the record block: h1 100, h2 180, h3 33, h4 20 (the Safe's 50 not counted): supply 333.
    t.match(d, { state: 'pending', amount: '1000', record_block: recordBlock.toString(), plan: { supply: '333', holders: 4, total: '999', remainder: '1' } });
    const expected = new Map([[h1.address, 300n], [h2.address, 540n], [h3.address, 99n], [h4.address, 60n]].map(([a, v]) => [String(a).toLowerCase(), v as bigint]));
    t.same(Object.fromEntries(d.plan.batches.flatMap((b: { entries: { holder: string; amount: string }[] }) => b.entries.map((e) => [e.holder, BigInt(e.amount)]))), Object.fromEntries(expected), 'floor(1000 × units / 333) each');
    t.equal(d.plan.batches.length, 2, 'two batches of two');
    t.equal((await s.call('POST', base, body, s.acme.owner, key('coupon-1'))).json().id, d.id, 'the same key and body: the same distribution');
    t.match((await s.call('POST', base, { ...body, amount: '2000' }, s.acme.owner, key('coupon-1'))).json(), { code: 'idempotency_key_reused' });
    t.match((await s.call('GET', `${base}/${d.id}`, undefined, s.globex.owner)).json(), { code: 'not_found' }, 'another tenant: 404');
    t.match((await s.call('GET', `${base}/${d.id}`, undefined, s.acme.viewer)).json(), { id: d.id }, 'a viewer reads it');

    const coin0 = await coinOf();
    t.match((await s.call('POST', `${base}/${d.id}/execute`, undefined, s.acme.developer)).json(), { code: 'role_denied' });
    const ex = (await s.call('POST', `${base}/${d.id}/execute`)).json();
    t.equal(ex.state, 'executing');
    t.same(ex.plan.batches.map((b: { state: string }) => b.state), ['proposed', 'proposed']);
    t.same(await coinOf(), coin0, 'proposed: nothing paid before the owners sign');
    for (const b of ex.plan.batches) t.match(await sign(bond, b.operation_id), { state: 'confirmed', kind: 'raw_safe_tx' });
    const done = (await s.call('POST', `${base}/${d.id}/execute`)).json();
    t.match(done, { state: 'completed', completed_at: /Z$/ });
    t.same(done.plan.batches.map((b: { state: string; logged: number }) => [b.state, b.logged]), [['confirmed', 2], ['confirmed', 2]]);
    const coin1 = await coinOf();
    t.same(coin1.map((v, i) => v - coin0[i]!), [300n, 540n, 99n, 60n, -999n], 'on chain: each holder its floor, the Safe paid 999 and keeps the remainder of 1');
    t.equal((await s.call('POST', `${base}/${d.id}/execute`)).json().state, 'completed', 'executing again changes nothing');
    t.same(await coinOf(), coin1);

    const payouts = log.of(bond.id, 'payout').filter((e) => e.body.distribution_id === d.id);
    t.same(payouts.map((e) => [e.body.holder, e.body.amount]).sort(), [...expected].map(([a, v]) => [a, v.toString()]).sort(), 'one payout entry per holder, once');
    t.same(log.of(bond.id, 'distribution').filter((e) => e.body.distribution_id === d.id).map((e) => e.body.state), ['pending', 'executing', 'completed']);
    t.match(log.of(bond.id, 'distribution').at(-1)!.body, { remainder: '1', remainder_to: bond.safe.toLowerCase() });
  });

  t.test('a crash in the middle of execution: a second service over the same store resumes and pays nobody twice', async (t) => {
    const base = `/v1/rwa/tokens/${bond.id}/distributions`;
    const d = (await s.call('POST', base, { asset: coin.address, amount: '3330', record_block: recordBlock.toString(), batch_size: 1 }, s.acme.owner, key('coupon-2'))).json();
    t.equal(d.plan.batches.length, 4);
    const actor: Actor = { type: 'api_key', id: 'key_test' };
    const opts = { store: s.store, audit: s.platform.audit, tokenization: s.tokenization, log, capTable, clock: () => s.clock.now() };
    // The first service stops right after batch 1's operation is proposed, before recording it.
    const crashing = new ActionService({ ...opts, fault: (_at, batch) => { if (batch === 1) throw new Error('the process stopped'); } });
    await t.rejects(crashing.executeDistribution(scope, actor, bond.id, d.id), /the process stopped/);
    const stored = (await DISTRIBUTIONS.in(s.store).get(d.id))!;
    t.same(stored.plan.batches.map((b) => b.state), ['proposed', 'planned', 'planned', 'planned'], 'recorded: batch 0 proposed, batch 1 not yet');
    // Meanwhile the owner signs both operations that exist, and the Safe pays them.
    const ops0 = (await safeOpsOf(bond)).filter((o) => o.kind === 'raw_safe_tx' && o.state !== 'confirmed');
    t.equal(ops0.length, 2, 'two operations were proposed before the stop');
    const coin0 = await coinOf();
    for (const o of ops0) t.equal((await sign(bond, o.id)).state, 'confirmed');

    const resumed = new ActionService(opts);
    let r = await resumed.executeDistribution(scope, actor, bond.id, d.id);
    t.same(r.plan.batches.map((b) => b.state), ['confirmed', 'proposed', 'proposed', 'proposed']);
    t.equal(r.plan.batches[1]!.operation_id, ops0.find((o) => o.id !== stored.plan.batches[0]!.operation_id)!.id, 'batch 1 found its operation again: the same Idempotency-Key');
    const ops1 = (await safeOpsOf(bond)).filter((o) => o.kind === 'raw_safe_tx' && o.state !== 'confirmed');
    t.equal(ops1.length, 2, 'only batches 2 and 3 are new operations');
    for (const o of ops1) await sign(bond, o.id);
    r = await resumed.executeDistribution(scope, actor, bond.id, d.id);
    t.equal(r.state, 'completed');
    // 3330 over 333: exactly 10 per unit.
    t.same((await coinOf()).map((v, i) => v - coin0[i]!), [1000n, 1800n, 330n, 200n, -3330n], 'on chain: each paid once, exactly');
    const payouts = log.of(bond.id, 'payout').filter((e) => e.body.distribution_id === d.id);
    t.equal(payouts.length, 4, 'four payout entries');
    t.equal(new Set(payouts.map((e) => e.body.holder)).size, 4, 'one per holder');
    t.equal(r.plan.batches.reduce((k, b) => k + b.failures.length, 0), 0);
  });

  t.test('a batch whose operation failed: paid by it if its signed SafeTx is replayed, proposed again only once it is dead; never twice', async (t) => {
    const base = `/v1/rwa/tokens/${bond.id}/distributions`;
    const wallet = createWalletClient({ account: h3, chain: foundry, transport: http(s.anvil.url) });
    /** Anyone holding a failed operation's owner signatures (they are readable) sends its SafeTx to the Safe. */
    const replay = async (opId: string) => {
      const op = (await s.call('GET', `${bond.base}/operations/${opId}`)).json() as Op & { safe_tx_hash: Hex; signatures: { owner: Hex; signature: Hex }[] };
      const x = op.safe_tx;
      const sigs = await packSafeSignatures(op.safe_tx_hash, op.signatures.map((g) => ({ owner: getAddress(g.owner), signature: g.signature })));
      const hash = await wallet.writeContract({ address: bond.safe, abi: SAFE_ABI, functionName: 'execTransaction', args: [getAddress(String(x.to)), BigInt(x.value!), x.data as Hex, Number(x.operation), BigInt(x.safe_tx_gas!), BigInt(x.base_gas!), BigInt(x.gas_price!), getAddress(String(x.gas_token)), getAddress(String(x.refund_receiver)), sigs], gas: 2_000_000n });
      return client.waitForTransactionReceipt({ hash });
    };
    /** A distribution of more than the Safe holds (a multiple of the 333 units: no remainder); its batch fails. */
    const failing = async (name: string) => {
      const have = await balanceOf(coin, bond.safe);
      const amount = (have / 333n + 1n) * 333n;
      const d = (await s.call('POST', base, { asset: coin.address, amount: amount.toString(), record_block: recordBlock.toString(), batch_size: 10 }, s.acme.owner, key(name))).json();
      const first = (await s.call('POST', `${base}/${d.id}/execute`)).json();
      const coin0 = await coinOf();
      t.match(await sign(bond, first.plan.batches[0].operation_id), { state: 'failed' }, 'the batch\'s operation reverts');
      t.same(await coinOf(), coin0, 'nothing paid');
      await run(coin, 'mint', { to: bond.safe, amount: (amount - have).toString() });
      const waiting = (await s.call('POST', `${base}/${d.id}/execute`)).json();
      t.match(waiting.plan.batches[0], { state: 'proposed', attempt: 0, operation_id: first.plan.batches[0].operation_id, waiting: /can still execute at Safe nonce/ }, 'its SafeTx is still live: not proposed again');
      t.equal((await safeOpsOf(bond)).filter((o) => o.state === 'proposed').length, 0, 'no new operation');
      return { d, amount, opId: first.plan.batches[0].operation_id as string, coin0: await coinOf() };
    };
    const shares = (amount: bigint) => [100n, 180n, 33n, 20n].map((u) => (amount / 333n) * u);

    // The failed SafeTx replayed on chain once the Safe holds enough: the batch is paid by it, and only by it.
    const a = await failing('coupon-3');
    t.equal((await replay(a.opId)).status, 'success');
    const paidA = (await coinOf()).map((v, i) => v - a.coin0[i]!);
    t.same(paidA.slice(0, 4), shares(a.amount), 'the replay paid each holder');
    const doneA = (await s.call('POST', `${base}/${a.d.id}/execute`)).json();
    t.match(doneA, { state: 'completed', plan: { batches: [{ state: 'confirmed', attempt: 0, operation_id: a.opId, waiting: null }] } }, 'recorded as paid by the failed operation\'s SafeTx');
    t.same((await coinOf()).map((v, i) => v - a.coin0[i]!), paidA, 'nothing paid a second time');
    t.equal(log.of(bond.id, 'payout').filter((e) => e.body.distribution_id === a.d.id).length, 4);

    // Ended by another Safe transaction at its nonce (a rejection): then dead, and the batch proposed again.
    const b = await failing('coupon-4');
    await run(bond, 'raw-safe-tx', { to: bond.safe });
    const again = (await s.call('POST', `${base}/${b.d.id}/execute`)).json();
    t.match(again.plan.batches[0], { state: 'proposed', attempt: 1, waiting: null, failures: [{ operation_id: b.opId }] }, 'proposed again as attempt 1');
    t.not(again.plan.batches[0].operation_id, b.opId, 'a new operation');
    t.equal((await replay(b.opId)).status, 'reverted', 'the dead SafeTx no longer executes');
    await sign(bond, again.plan.batches[0].operation_id);
    t.equal((await s.call('POST', `${base}/${b.d.id}/execute`)).json().state, 'completed');
    const paidB = (await coinOf()).map((v, i) => v - b.coin0[i]!);
    t.same(paidB, [...shares(b.amount), -b.amount], 'each holder paid once, by the Safe');
  });

  t.test('a 2:1 split through the corporate-action state machine; refused moves change nothing', async (t) => {
    const base = `/v1/rwa/tokens/${bond.id}/corporate-actions`;
    const record = await client.getBlockNumber({ cacheTime: 0 });
    const units0 = await Promise.all(holders.map((a) => balanceOf(bond, a)));
    const supply0 = await client.readContract({ address: bond.address, abi, functionName: 'totalSupply' }) as bigint;
    const before = await count();
    for (const [what, b, bearer, status, code] of [
      ['an unknown type', { type: 'merger', record_block: '1' }, s.acme.owner, 400, 'invalid_request'],
      ['a reverse ratio', { type: 'split', ratio: '1:2', record_block: '1' }, s.acme.owner, 422, 'validation_failed'],
      ['a ratio of 1:1', { type: 'split', ratio: '3:3', record_block: '1' }, s.acme.owner, 422, 'validation_failed'],
      ['a split with an amount', { type: 'split', ratio: '2:1', amount: '5', record_block: '1' }, s.acme.owner, 422, 'validation_failed'],
      ['a dividend of amount zero', { type: 'dividend', asset: coin.address, amount: '0', record_block: '1' }, s.acme.owner, 422, 'validation_failed'],
      ['a dividend of an unknown asset', { type: 'dividend', asset: '0x000000000000000000000000000000000000dEaD', amount: '5', record_block: '1' }, s.acme.owner, 422, 'validation_failed'],
      ['a developer', { type: 'split', ratio: '2:1', record_block: '1' }, s.acme.developer, 403, 'role_denied'],
      ['another tenant', { type: 'split', ratio: '2:1', record_block: '1' }, s.globex.owner, 404, 'not_found'],
    ] as [string, unknown, string, number, string][]) {
      const r = await s.call('POST', base, b, bearer, key(`bad-ca-${n++}`));
      t.match([r.statusCode, r.json().code], [status, code], what);
    }
    t.same(await count(), before, 'nothing stored or logged');

    const ca = (await s.call('POST', base, { type: 'split', ratio: '2:1', record_block: record.toString() }, s.acme.owner, key('split-1'))).json();
    t.match(ca, { state: 'draft', type: 'split', params: { numerator: '2', denominator: '1' }, plan: null });
    const adv = (to: string, bearer = s.acme.owner) => s.call('POST', `${base}/${ca.id}/advance`, { to }, bearer);
    for (const [to, bearer, status, code] of [['executing', s.acme.owner, 409, 'conflict'], ['completed', s.acme.owner, 409, 'conflict'], ['approved', s.acme.developer, 403, 'role_denied'], ['approved', s.globex.owner, 404, 'not_found']] as const) {
      const r = await adv(to, bearer);
      t.match([r.statusCode, r.json().code], [status, code], `draft → ${to} by ${bearer === s.acme.owner ? 'the owner' : 'another'}: refused`);
    }
    t.equal((await s.call('GET', `${base}/${ca.id}`)).json().state, 'draft', 'still draft');
    t.equal((await adv('approved')).json().state, 'approved');
    const taken = (await adv('record_taken')).json();
    t.match(taken, { state: 'record_taken', plan: { supply: String(units0.reduce((a, b) => a + b, 0n)), total: String(units0.reduce((a, b) => a + b, 0n)), remainder: '0' } });
    const executing = (await adv('executing')).json();
    t.equal(executing.state, 'executing');
    const repeat = (await adv('executing')).json();
    t.same([repeat.state, repeat.plan.batches.map((b: { operation_id: string }) => b.operation_id)], ['executing', executing.plan.batches.map((b: { operation_id: string }) => b.operation_id)], 'executing again: the same operations, nothing new');
    t.match((await adv('cancelled')).json(), { code: 'conflict' }, 'no cancel once executing');
    t.match((await adv('completed')).json(), { code: 'conflict', error: /not confirmed yet/ }, 'not completed before the batches confirm');
    t.same(await Promise.all(holders.map((a) => balanceOf(bond, a))), units0, 'nothing minted before the owners sign');
    for (const b of executing.plan.batches) await sign(bond, b.operation_id);
    const done = (await adv('completed')).json();
    t.equal(done.state, 'completed');
    t.same(done.transitions.map((x: { to: string }) => x.to), ['draft', 'approved', 'record_taken', 'executing', 'completed']);
    t.same(await Promise.all(holders.map((a) => balanceOf(bond, a))), units0.map((u) => u * 2n), 'on chain: every holding doubled');
    t.equal(await balanceOf(bond, bond.safe), 50n, 'the Safe\'s own units are not split');
    t.equal(await client.readContract({ address: bond.address, abi, functionName: 'totalSupply' }), supply0 + units0.reduce((a, b) => a + b, 0n));
    const entries = log.of(bond.id, 'corporate_action').filter((e) => e.body.corporate_action_id === ca.id);
    t.same(entries.map((e) => [e.body.from, e.body.to]), [[null, 'draft'], ['draft', 'approved'], ['approved', 'record_taken'], ['record_taken', 'executing'], ['executing', 'completed']], 'each transition logged once');
    t.equal(log.of(bond.id, 'payout').filter((e) => e.body.corporate_action_id === ca.id).length, 4, 'each mint logged');

    // A record block ahead: the record cannot be taken yet; cancelled before executing.
    const later = (await s.call('POST', base, { type: 'dividend', asset: coin.address, amount: '10', record_block: (record + 1000n).toString() }, s.acme.owner, key('div-later'))).json();
    t.equal(later.state, 'draft');
    t.equal((await s.call('POST', `${base}/${later.id}/advance`, { to: 'approved' })).json().state, 'approved');
    const early = await s.call('POST', `${base}/${later.id}/advance`, { to: 'record_taken' });
    t.match([early.statusCode, early.json().code, early.json().error], [409, 'conflict', /not reached/]);
    t.equal((await s.call('GET', `${base}/${later.id}`)).json().state, 'approved', 'unchanged');
    t.equal((await s.call('POST', `${base}/${later.id}/advance`, { to: 'cancelled' })).json().state, 'cancelled');
    t.match((await s.call('POST', `${base}/${later.id}/advance`, { to: 'approved' })).json(), { code: 'conflict' }, 'cancelled is final');
  });

  t.test('a redemption: every holding moved to the Safe and paid units × price, while paused; a holding changed since the record refused', async (t) => {
    const base = `/v1/rwa/tokens/${bond.id}/corporate-actions`;
    await run(bond, 'roles/grant', { role: 'RECOVERY_ROLE', account: bond.safe });
    await run(bond, 'roles/grant', { role: 'PAUSER_ROLE', account: bond.safe });
    await run(coin, 'mint', { to: bond.safe, amount: '100000' });
    const create = async (k: string) => (await s.call('POST', base, { type: 'redemption', asset: coin.address, price_per_unit: '7', record_block: (await client.getBlockNumber({ cacheTime: 0 })).toString() }, s.acme.owner, key(k))).json();
    const adv = async (id: string, to: string) => s.call('POST', `${base}/${id}/advance`, { to });

    // Not paused: a holder moves units after the record; executing is refused, nothing proposed.
    const stale = await create('redeem-stale');
    await adv(stale.id, 'approved');
    t.equal((await adv(stale.id, 'record_taken')).json().state, 'record_taken');
    await transfer(bond, h1, h4.address, 1n);
    const refused = await adv(stale.id, 'executing');
    t.match([refused.statusCode, refused.json().code, refused.json().error], [409, 'conflict', /pause the token/]);
    t.match((await s.call('GET', `${base}/${stale.id}`)).json(), { state: 'record_taken', plan: { batches: [{ state: 'planned', operation_id: null }] } }, 'unchanged');
    t.equal((await adv(stale.id, 'cancelled')).json().state, 'cancelled');

    await run(bond, 'pause', {});
    const units = await Promise.all(holders.map((a) => balanceOf(bond, a)));
    const safeUnits = await balanceOf(bond, bond.safe);
    const coin0 = await coinOf();
    const ca = await create('redeem-1');
    for (const to of ['approved', 'record_taken']) t.equal((await adv(ca.id, to)).json().state, to);
    const executing = (await adv(ca.id, 'executing')).json();
    for (const b of executing.plan.batches) t.equal((await sign(bond, b.operation_id)).state, 'confirmed');
    t.equal((await adv(ca.id, 'completed')).json().state, 'completed');
    t.same(await Promise.all(holders.map((a) => balanceOf(bond, a))), [0n, 0n, 0n, 0n], 'on chain: every holding redeemed');
    const total = units.reduce((a, b) => a + b, 0n);
    t.equal(await balanceOf(bond, bond.safe), safeUnits + total, 'the units are in the Safe');
    t.same((await coinOf()).map((v, i) => v - coin0[i]!), [...units.map((u) => u * 7n), -total * 7n], 'each holder paid units × 7 by the Safe');
    t.equal(log.of(bond.id, 'payout').filter((e) => e.body.corporate_action_id === ca.id).length, 4);
  });
});
