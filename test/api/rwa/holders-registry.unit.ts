// RWA holders on one real anvil (docs/platform/rwa.md "Holders, eligibility, lockups and the cap table"): an
// ERC-20 whose admin Safe is 1-of-2 (a vault wallet and an outside signer, who signs every operation here);
// holders made eligible (and one not) through the API, each change a Safe operation on the token's access
// registry, deployed by the service and attached with the token's set-access-registry operation. Shown with
// viem: a transfer to the ineligible holder reverts on chain, a lockup blocks a transfer until its time (anvil
// time travel), the registry refuses any caller but the Safe, and the cap table at two blocks equals the
// balances read from the chain at those blocks. Every change appended to the token's log; the same state again,
// bad input, another workspace and a missing permission change nothing.
import t from 'tap';
import { createWalletClient, getAddress, http, type Address, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { tokenizationApp } from '../tokenization/tokenization-app.ts';
import { builtArtifact } from '../../../api/tokenization/chain/artifacts.ts';
import { safeTxTypedData, type SafeTransaction } from '../../../api/tokenization/chain/safe-transaction.ts';
import { ELIGIBILITY, LOCKUPS } from '../../../api/rwa/holders/holders-service.ts';
import { MemoryTokenLog } from './memory-token-log.ts';
import { operationChainChecker } from '../../../api/rwa/log/operation-provenance.ts';
import type { ProvenanceContext } from '../../../api/rwa/log/provenance.ts';
import { anvilAccount } from '../../chains/anvil.ts';

// The app and its anvil are started, and stopped, by a test of its own, not at the top level: the file
// shares its process with others (test/support/units.ts).
t.test('holders and the access registry, on the app over one anvil', async (t) => {
  t.setTimeout(300_000);
  const log = new MemoryTokenLog();
  const s = await tokenizationApp(t, { rwaTokenLog: log });
  const outsider = anvilAccount(5);
  const alice = anvilAccount(6);
  const bob = anvilAccount(7); // never made eligible
  const carol = anvilAccount(8);
  const client = s.chain.client;
  const registryAbi = builtArtifact('AccessRegistry').abi;
  // The token's ABI with the registry's errors, so a refusal by the registry decodes.
  const abi = [...builtArtifact('ManagedERC20').abi, ...registryAbi.filter((x) => x.type === 'error')];
  let n = 0;
  const key = () => ({ 'idempotency-key': `k-${n++}` });
  const rpc = (method: string, params: unknown[] = []) => client.request({ method: method as never, params: params as never });
  const records = async <T>(c: { name: string }) => {
    const out: T[] = [];
    for await (const r of s.store.range<T>(c.name)) out.push(r);
    return out;
  };

  t.test('eligibility and lockups through the access registry; the cap table from the Transfer history', async (t) => {
    const w = await s.vaultWallet(s.acme.org);
    const deployed = await s.call('POST', '/v1/tokenization/erc20', { chain: 'evm-local', name: 'Acme Fund', symbol: 'AFND', decimals: 0, admin: { owners: [{ wallet_id: w.wallet.id }, { address: outsider.address }], threshold: 1 } }, undefined, key());
    t.equal(deployed.statusCode, 201, deployed.body);
    await s.tokenization.tokens.settled();
    const tok = (await s.call('GET', `/v1/tokenization/tokens/${deployed.json().id}`)).json();
    t.equal(tok.status, 'deployed');
    const token = getAddress(tok.address);
    const base = `/v1/tokenization/tokens/${tok.id}`;
    const rwa = `/v1/rwa/tokens/${tok.id}`;
    const balance = (a: Address, blockNumber?: bigint) => client.readContract({ address: token, abi, functionName: 'balanceOf', args: [a], ...(blockNumber !== undefined ? { blockNumber } : {}) }) as Promise<bigint>;

    /** Signs an operation with the outside owner (the threshold is 1) and waits for its execution. */
    const execute = async (opId: string) => {
      const op = (await s.call('GET', `${base}/operations/${opId}`)).json();
      const x = op.safe_tx;
      const tx: SafeTransaction = { to: getAddress(x.to), value: BigInt(x.value), data: x.data as Hex, operation: x.operation, safeTxGas: BigInt(x.safe_tx_gas), baseGas: BigInt(x.base_gas), gasPrice: BigInt(x.gas_price), gasToken: getAddress(x.gas_token), refundReceiver: getAddress(x.refund_receiver), nonce: BigInt(x.nonce) };
      const r = await s.call('POST', `${base}/operations/${opId}/signatures`, { owner: outsider.address, signature: await outsider.signTypedData(safeTxTypedData(getAddress(tok.safe), 31337, tx)) });
      t.equal(r.statusCode, 200, r.body);
      await s.tokenization.operations.settled();
      const done = (await s.call('GET', `${base}/operations/${opId}`)).json();
      t.equal(done.state, 'confirmed', `operation ${done.kind} confirmed ${JSON.stringify(done.failure)}`);
      return done;
    };
    const propose = async (path: string, body: unknown) => {
      const r = await s.call('POST', `${base}/${path}`, body, s.acme.owner, key());
      t.equal(r.statusCode, 201, r.body);
      return execute(r.json().id);
    };

    // The Safe mints to Alice before any registry: block b1.
    await propose('roles/grant', { role: 'MINTER_ROLE', account: tok.safe });
    await propose('policies', { minter: tok.safe, cap: '1000000', period_seconds: 86_400 });
    const minted = await propose('mint', { to: alice.address, amount: '100' });
    const b1 = (await client.getTransactionReceipt({ hash: minted.tx_hash })).blockNumber;

    // Alice and Carol eligible (globally), Bob explicitly not.
    const put = (ref: string, body: unknown, token = s.acme.owner) => s.call('PUT', `/v1/rwa/holders/${ref}/eligibility`, body, token);
    const aliceE = await put(alice.address, { verified: true, jurisdiction: 276, category: 2, expires_at: null });
    t.equal(aliceE.statusCode, 200, aliceE.body);
    t.match(aliceE.json(), { holder_ref: alice.address.toLowerCase(), addresses: [alice.address.toLowerCase()], verified: true, jurisdiction: 276, category: 2, expires_at: null, revision: 1, changed: true, operations: [{ token_id: tok.id }] });
    const registry = getAddress((await s.call('GET', `${rwa}/eligibility/${alice.address}`)).json().registry.address);
    t.match((await s.call('GET', `${rwa}/eligibility/${alice.address}`, undefined, s.acme.viewer)).json(), {
      registry: { deployed: true, attached: false }, desired: { eligibility: { verified: true, revision: 1 } }, addresses: [{ eligibility_status: 'pending', on_chain: { eligibility: { verified: false } } }],
    }, 'desired, deployed, not yet on chain: pending');
    t.equal(await client.readContract({ address: registry, abi: registryAbi, functionName: 'admin' }), getAddress(tok.safe), 'the registry\'s admin is the token\'s admin Safe');
    await execute(aliceE.json().operations[0].operation_id);
    t.match((await s.call('GET', `${rwa}/eligibility/${alice.address}`)).json(), { addresses: [{ eligibility_status: 'applied', lockup_status: 'none', on_chain: { eligibility: { verified: true, jurisdiction: 276, category: 2, expires_at: null, eligible_now: true }, locked_until: 0 } }] }, 'read back from the chain: applied');

    const again = await put(alice.address, { verified: true, jurisdiction: 276, category: 2 });
    t.match(again.json(), { changed: false, revision: 1, operations: aliceE.json().operations }, 'the same state again: nothing proposed');
    for (const [who, verified] of [[carol, true], [bob, false]] as const) {
      const r = await put(who.address, { verified, jurisdiction: 840, category: 1, expires_at: null });
      t.equal(r.statusCode, 200, r.body);
      await execute(r.json().operations[0].operation_id);
    }
    t.same(log.of(tok.id, 'eligibility').map((e) => [e.kind, e.body.holder_ref, e.body.verified]), [['eligibility', alice.address.toLowerCase(), true], ['eligibility', carol.address.toLowerCase(), true], ['eligibility', bob.address.toLowerCase(), false]], 'each change appended once to the token\'s log');
    t.match(log.of(tok.id, 'eligibility')[0]!.body, { scope: 'global', addresses: [alice.address.toLowerCase()], operation_id: aliceE.json().operations[0].operation_id, revision: 1 });

    // Only the Safe changes the registry.
    await t.rejects(client.simulateContract({ account: alice.address, address: registry, abi: registryAbi, functionName: 'setEligibility', args: [[bob.address], { verified: true, jurisdiction: 0, category: 0, expiresAt: 0n }] }), /NotAdmin/, 'anyone else: NotAdmin');

    // Attached with the token's own operation: now the chain refuses Bob.
    await propose('access-registry', { registry });
    t.match((await s.call('GET', `${rwa}/eligibility/${bob.address}`)).json(), { registry: { attached: true }, addresses: [{ eligibility_status: 'applied', on_chain: { eligibility: { verified: false, eligible_now: false } } }] });
    const wallet = (a: typeof alice) => createWalletClient({ account: a, chain: foundry, transport: http(s.anvil.url) });
    await t.rejects(client.simulateContract({ account: alice.address, address: token, abi, functionName: 'transfer', args: [bob.address, 10n] }), /HolderNotEligible/, 'a transfer to the ineligible holder: HolderNotEligible');
    const refused = await wallet(alice).writeContract({ address: token, abi, functionName: 'transfer', args: [bob.address, 10n], gas: 200_000n });
    t.equal((await client.waitForTransactionReceipt({ hash: refused })).status, 'reverted', 'sent anyway: reverted on chain');
    const sent = await wallet(alice).writeContract({ address: token, abi, functionName: 'transfer', args: [carol.address, 30n] });
    const b2 = (await client.waitForTransactionReceipt({ hash: sent })).blockNumber;
    t.same([await balance(alice.address), await balance(carol.address), await balance(bob.address)], [70n, 30n, 0n], 'the eligible holder received');

    // A lockup of Alice on this token until an hour from the chain's now.
    const now = (await client.getBlock()).timestamp;
    const until = Number(now) + 3600;
    const lock = await s.call('PUT', `${rwa}/lockups/${alice.address}`, { until });
    t.equal(lock.statusCode, 200, lock.body);
    t.match(lock.json(), { token_id: tok.id, until, revision: 1, changed: true });
    t.match((await s.call('GET', `${rwa}/eligibility/${alice.address}`)).json(), { desired: { lockup: { until } }, addresses: [{ lockup_status: 'pending' }] });
    await execute(lock.json().operation_id);
    t.match((await s.call('GET', `${rwa}/eligibility/${alice.address}`)).json(), { addresses: [{ lockup_status: 'applied', on_chain: { locked_until: until } }] });
    t.match(log.of(tok.id, 'lockup').at(-1), { kind: 'lockup', body: { holder_ref: alice.address.toLowerCase(), until, operation_id: lock.json().operation_id } });
    // Every confirmed operation of the token is an `operation` entry: its transaction and what the chain shows for it.
    const confirmedOps = ((await s.call('GET', `${base}/operations?state=confirmed&limit=100`)).json().data as { id: string; safe_tx_hash: string; tx_hash: string; safe_nonce: string }[]);
    t.ok(confirmedOps.length >= 4, 'the registry, eligibility and lockup operations');
    t.same(log.of(tok.id, 'operation').map((e) => e.body).sort((x, y) => String(x.operation_id).localeCompare(String(y.operation_id))),
      confirmedOps.map((o) => ({ operation_id: o.id, kind: (o as unknown as { kind: string }).kind, tx_hash: o.tx_hash, chain_id: 31337, via: 'safe', safe: tok.safe.toLowerCase(), safe_tx_hash: o.safe_tx_hash, safe_nonce: o.safe_nonce })).sort((x, y) => x.operation_id.localeCompare(y.operation_id)), 'one entry per confirmed operation');
    // provenance/verify's chain check: each entry against its receipt, and every confirmed operation in the log.
    const checker = operationChainChecker(s.tokenization);
    const scope = { tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id };
    const asLogged = (entries: { kind: string; body: Record<string, unknown> }[]) => ({ scope, tokenId: tok.id, records: [], witnesses: [], cosignatures: [], entries: entries.map((e, index) => ({ v: 1, token: tok.id, index, kind: e.kind, time: '', body: e.body })) }) as unknown as ProvenanceContext;
    const opEntries = log.of(tok.id, 'operation');
    const good = await checker.check(asLogged(opEntries));
    t.same([good.problems, good.checked], [[], opEntries.length * 2], 'every entry matches its receipt; every confirmed operation is logged');
    const other = opEntries[1]!.body;
    const forged = [
      { ...opEntries[0]!, body: { ...opEntries[0]!.body, tx_hash: other.tx_hash } },
      { ...opEntries[1]!, body: { ...other, safe_tx_hash: `0x${'ab'.repeat(32)}` } },
      { ...opEntries[2]!, body: { ...opEntries[2]!.body, tx_hash: `0x${'cd'.repeat(32)}` } },
    ];
    const bad = await checker.check(asLogged(forged));
    t.match(bad.problems, [
      { index: 0, kind: 'operation', detail: /shows no execution of SafeTx/ },
      { index: 1, kind: 'operation', detail: /shows no execution of SafeTx 0xabab/ },
      { index: 2, kind: 'operation', detail: /is not on chain/ },
      ...opEntries.slice(3).map(() => ({ detail: /is confirmed on chain by .* and not in the log/ })),
    ], 'an entry naming another transaction, another SafeTx or none is named by index; an operation left out is named');
    await t.rejects(client.simulateContract({ account: alice.address, address: token, abi, functionName: 'transfer', args: [carol.address, 5n] }), /HolderLocked/, 'locked: the transfer reverts');
    await rpc('evm_increaseTime', [3601]);
    await rpc('evm_mine');
    const later = await wallet(alice).writeContract({ address: token, abi, functionName: 'transfer', args: [carol.address, 5n] });
    t.equal((await client.waitForTransactionReceipt({ hash: later })).status, 'success', 'after the lockup\'s time: the transfer goes through');

    // The cap table at two blocks equals the chain's balances there (finality depth 2 on evm-local: mine past it).
    await rpc('anvil_mine', ['0x2']);
    for (const b of [b1, b2]) {
      const table = await s.call('GET', `${rwa}/cap-table?block=${b}`, undefined, s.acme.viewer);
      t.equal(table.statusCode, 200, table.body);
      const expected = new Map<string, bigint>();
      for (const a of [alice, bob, carol, { address: tok.safe as Address }]) {
        const v = await balance(getAddress(a.address), b);
        if (v > 0n) expected.set(a.address.toLowerCase(), v);
      }
      t.same(new Map(table.json().entries.map((e: { address: string; balance: string }) => [e.address, BigInt(e.balance)])), expected, `block ${b}: the cap table is the chain's balances`);
      t.equal(BigInt(table.json().total), await client.readContract({ address: token, abi, functionName: 'totalSupply', blockNumber: b }) as bigint, `block ${b}: its total is the supply`);
    }
    t.match((await s.call('GET', `${rwa}/cap-table?block=${b2}`)).json(), { holders: 2, entries: [{ address: alice.address.toLowerCase(), balance: '70', share_ppm: 700_000 }, { address: carol.address.toLowerCase(), balance: '30', share_ppm: 300_000 }] });
    const latest = (await s.call('GET', `${rwa}/holders`)).json();
    t.same(latest.data, [{ address: alice.address.toLowerCase(), balance: '65' }, { address: carol.address.toLowerCase(), balance: '35' }].sort((a, b) => (a.address < b.address ? -1 : 1)), 'holders at the latest confirmed block');
    t.equal(BigInt(latest.block), (await client.getBlockNumber()) - 2n, 'the latest block the finality depth below the head');
    const head = await client.getBlockNumber();
    t.match((await s.call('GET', `${rwa}/holders?block=${head}`)).json(), { code: 'conflict' }, 'a block not yet final: 409');
    t.match((await s.call('GET', `${rwa}/holders?block=${head + 100n}`)).json(), { code: 'validation_failed' }, 'a block the chain has not reached: 422');
    t.match((await s.call('GET', `${rwa}/holders?token_id=1`)).json(), { code: 'validation_failed' }, 'token_id on an ERC-20: 422');
    // The cap table source other parts read.
    const source = await s.call('GET', `${rwa}/cap-table?block=${b2}`);
    t.equal(source.statusCode, 200);

    // Bad input, another workspace, a missing permission: nothing changes.
    const before = { entries: log.entries.length, eligibility: (await records(ELIGIBILITY)).length, lockups: (await records(LOCKUPS)).length, ops: (await s.call('GET', `${base}/operations?limit=100`)).json().data.length };
    const refusals: [string, string, unknown, string, number, string][] = [
      ['PUT', `/v1/rwa/holders/not-a-ref/eligibility`, { verified: true, jurisdiction: 1, category: 1 }, s.acme.owner, 422, 'validation_failed'],
      ['PUT', `/v1/rwa/holders/0x0000000000000000000000000000000000000000/eligibility`, { verified: true, jurisdiction: 1, category: 1 }, s.acme.owner, 422, 'validation_failed'],
      ['PUT', `/v1/rwa/holders/${bob.address}/eligibility`, { verified: true, jurisdiction: 70_000, category: 1 }, s.acme.owner, 400, 'invalid_request'],
      ['PUT', `/v1/rwa/holders/ah_00000000000000000000000000/eligibility`, { verified: true, jurisdiction: 1, category: 1 }, s.acme.owner, 404, 'not_found'],
      ['PUT', `/v1/rwa/holders/${bob.address}/eligibility`, { verified: true, jurisdiction: 1, category: 1 }, s.acme.viewer, 403, 'role_denied'],
      ['PUT', `${rwa}/lockups/${bob.address}`, { until: -1 }, s.acme.owner, 400, 'invalid_request'],
      ['PUT', `${rwa}/lockups/${bob.address}`, { until: 1 }, s.acme.viewer, 403, 'role_denied'],
      ['PUT', `${rwa}/lockups/${bob.address}`, { until: 1 }, s.globex.owner, 404, 'not_found'],
      ['GET', `${rwa}/eligibility/${bob.address}`, undefined, s.globex.owner, 404, 'not_found'],
      ['GET', `${rwa}/cap-table`, undefined, s.globex.owner, 404, 'not_found'],
      ['GET', `${rwa}/holders`, undefined, s.globex.viewer, 404, 'not_found'],
    ];
    for (const [method, url, body, who, status, code] of refusals) {
      const r = await s.call(method as 'PUT', url, body, who);
      t.match([r.statusCode, r.json().code], [status, code], `${method} ${url}: ${status} ${code}`);
    }
    t.same({ entries: log.entries.length, eligibility: (await records(ELIGIBILITY)).length, lockups: (await records(LOCKUPS)).length, ops: (await s.call('GET', `${base}/operations?limit=100`)).json().data.length }, before, 'nothing recorded, logged or proposed');
  });
});
