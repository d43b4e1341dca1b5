// Operations through the token's roles module (docs/platform/tokenization.md "Module for module-signature"),
// through the API on one real anvil: the Zodiac Roles Modifier v1.1.0 deployed from the npm release's init
// code, enabled on a 2-of-2 admin Safe (a vault owner and an outside owner) and configured by Safe operations
// (a member vault wallet gets role 1, scoped to `pause()` on the token); a proposed `pause` is then executed by
// the member's own customer-signed kind-1 intent calling execTransactionWithRole, with no Safe signature, and
// the operation after it moves to the freed Safe nonce and still executes with the Safe's signatures.
// Refused, with nothing changed: an intent over another call, a call outside the role's scope or with a role
// the member lacks (the module's decoded error), the module not enabled yet, an operation already at the
// Safe's threshold, the wrong permission or workspace; and the module refuses the out-of-scope call on chain
// when it is sent anyway.
import t from 'tap';
import { createWalletClient, encodeFunctionData, getAddress, http, parseEther, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { tokenizationApp } from './tokenization-app.ts';
import { builtArtifact } from '../../../api/tokenization/chain/artifacts.ts';
import { safeTxTypedData, type SafeTransaction } from '../../../api/tokenization/chain/safe-transaction.ts';
import { SAFE_ABI } from '../../../api/tokenization/chain/safe-abi.ts';
import { execWithRoleData, rolesModifierAddress } from '../../../api/tokenization/chain/roles-module.ts';
import { failureOf } from '../../../api/tokenization/chain/chain-failure.ts';
import { encodeIntent, signIntent } from '../../../core/intents/intent.ts';
import { TRANSACTIONS } from '../../../api/transactions/collections.ts';
import { OPERATIONS } from '../../../api/tokenization/collections.ts';
import { anvilAccount } from '../../chains/anvil.ts';

// The app and its anvil are started, and stopped, by a test of its own, not at the top level: the file
// shares its process with others (test/support/units.ts).
t.test('the Zodiac Roles module, on the app over one anvil', async (t) => {
  t.setTimeout(300_000);
  const s = await tokenizationApp(t);
  const outsider = anvilAccount(5);
  const client = s.chain.client;
  const abi = builtArtifact('ManagedERC20').abi;
  const key = (k: string) => ({ 'idempotency-key': k });

  interface Op { id: string; state: string; kind: string; safe_tx: Record<string, string | number>; safe_nonce: string; reproposals: number; tx_hash: string | null; module_execution: Record<string, unknown> | null; pending_intents: Record<string, string | number>[]; failure: unknown }

  t.test('module-signature: a role member executes a scoped operation through the Zodiac Roles modifier, the next one still through the Safe', async (t) => {
    const w1 = await s.vaultWallet(s.acme.org);
    const member = await s.vaultWallet(s.acme.org);
    const deployed = await s.call('POST', '/v1/tokenization/erc20', { chain: 'evm-local', name: 'Acme Mod', symbol: 'AMOD', decimals: 0, admin: { owners: [{ wallet_id: w1.wallet.id }, { address: outsider.address }], threshold: 2 } }, undefined, key('tok'));
    t.equal(deployed.statusCode, 201, deployed.body);
    await s.tokenization.tokens.settled();
    const tok = (await s.call('GET', `/v1/tokenization/tokens/${deployed.json().id}`)).json();
    t.equal(tok.status, 'deployed');
    const base = `/v1/tokenization/tokens/${tok.id}`;
    const modifier = rolesModifierAddress(tok.id, getAddress(tok.safe));
    const getOp = async (id: string): Promise<Op> => (await s.call('GET', `${base}/operations/${id}`)).json();
    const paused = () => client.readContract({ address: tok.address, abi, functionName: 'paused' });
    const safeNonce = () => client.readContract({ address: tok.safe, abi: SAFE_ABI, functionName: 'nonce' });

    let n = 0;
    const ownerIntent = (op: Op) => {
      const f = op.pending_intents[0] as Record<string, string>;
      const b = (h: string | number) => hexToBytes(String(h).slice(2));
      const bytes = encodeIntent({
        kind: 'evm.safe_tx', organization: f.organization!, walletId: w1.wallet.id, chainId: BigInt(f.chain_id!), owner: b(f.owner!), safe: b(f.safe!), to: b(f.to!), value: BigInt(f.value!), data: b(f.data!),
        operation: Number(f.operation) as 0 | 1, safeTxGas: BigInt(f.safe_tx_gas!), baseGas: BigInt(f.base_gas!), gasPrice: BigInt(f.gas_price!), gasToken: b(f.gas_token!), refundReceiver: b(f.refund_receiver!),
        safeNonce: BigInt(f.safe_nonce!), idempotencyKey: `sig-${n++}`, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
      });
      return { wallet_id: w1.wallet.id, intent: bytesToHex(bytes), intent_signature: bytesToHex(signIntent(bytes, s.acme.creds.secretKey)) };
    };
    const outsideSig = async (op: Op) => {
      const x = op.safe_tx;
      const tx: SafeTransaction = { to: getAddress(String(x.to)), value: BigInt(x.value!), data: x.data as Hex, operation: Number(x.operation) as 0 | 1, safeTxGas: 0n, baseGas: 0n, gasPrice: 0n, gasToken: getAddress(String(x.gas_token)), refundReceiver: getAddress(String(x.refund_receiver)), nonce: BigInt(x.nonce!) };
      return { owner: outsider.address, signature: await outsider.signTypedData(safeTxTypedData(getAddress(tok.safe), 31337, tx)) };
    };
    const propose = async (path: string, body: unknown) => {
      const r = await s.call('POST', `${base}/${path}`, body, s.acme.owner, key(`op-${n++}`));
      t.equal(r.statusCode, 201, r.body);
      return r.json() as Op;
    };
    /** Both owners sign; the service executes it through the Safe. */
    const signAndRun = async (op: Op) => {
      for (const body of [ownerIntent(op), await outsideSig(op)]) {
        const r = await s.call('POST', `${base}/operations/${op.id}/signatures`, body);
        t.equal(r.statusCode, 200, r.body);
      }
      await s.tokenization.operations.settled();
      return getOp(op.id);
    };
    /** The member wallet's kind-1 intent: its own transaction to the modifier with `data`. */
    const memberIntent = async (data: Hex, idem: string, to: Hex = modifier) => {
      const nonce = BigInt(await client.getTransactionCount({ address: member.wallet.address as Hex, blockTag: 'pending' }));
      const bytes = encodeIntent({
        kind: 'evm.transfer', organization: s.acme.org, walletId: member.wallet.id, chainId: 31337n, nonce, from: hexToBytes(member.wallet.address.slice(2)), to: hexToBytes(to.slice(2)),
        asset: { kind: 'native' }, amount: 0n, data: hexToBytes(data.slice(2)), maxFee: parseEther('0.01'), idempotencyKey: idem, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
      });
      return { intent: bytesToHex(bytes), intent_signature: bytesToHex(signIntent(bytes, s.acme.creds.secretKey)) };
    };
    const callOf = (op: Op) => ({ to: getAddress(String(op.safe_tx.to)), value: BigInt(op.safe_tx.value!), data: op.safe_tx.data as Hex, operation: Number(op.safe_tx.operation) as 0 | 1 });
    const moduleSig = (op: Op, body: Record<string, unknown>, token = s.acme.owner) => s.call('POST', `${base}/operations/${op.id}/module-signature`, body, token);

    t.match((await s.call('GET', `${base}/contracts`)).json().roles_module, { address: modifier.toLowerCase(), deployed: false, enabled: false }, 'no module before it is enabled');

    // Enable the module: the modifier is deployed when proposed, then enabled by the Safe's own transaction.
    let enable = await propose('raw-safe-tx', { roles_module: { action: 'enable' } });
    t.match(enable, { kind: 'enable_roles_module', safe_nonce: '0', safe_tx: { to: tok.safe } });
    t.match((await s.call('GET', `${base}/contracts`)).json().roles_module, { deployed: true, enabled: false }, 'the modifier is deployed, not yet enabled');
    const early = await moduleSig(enable, { wallet_id: member.wallet.id, role_key: 1, ...(await memberIntent(execWithRoleData(callOf(enable), 1), 'early')) });
    t.match([early.statusCode, early.json().code, early.json().error], [409, 'conflict', /not enabled/], 'module-signature before the module is enabled: 409');
    enable = await signAndRun(enable);
    t.equal(enable.state, 'confirmed');
    t.equal(await client.readContract({ address: tok.safe, abi: SAFE_ABI, functionName: 'isModuleEnabled', args: [modifier] }), true, 'on chain: the Safe has the modifier as its module');
    t.match((await s.call('GET', `${base}/contracts`)).json().roles_module, { deployed: true, enabled: true });

    // Configure: role 1 to the member wallet, scoped to pause() on this token; bad configurations refused.
    for (const [what, body, status] of [
      ['a view function', { action: 'allow_functions', role_key: 1, functions: ['balanceOf'] }, 422],
      ['an unknown function', { action: 'allow_functions', role_key: 1, functions: ['selfdestruct'] }, 422],
      ['no member', { action: 'assign_role', role_key: 1 }, 422],
      ['a field of another action', { action: 'enable', role_key: 1 }, 422],
      ['an unknown action', { action: 'grant_everything' }, 400],
    ] as const) {
      const r = await s.call('POST', `${base}/raw-safe-tx`, { roles_module: body }, s.acme.owner, key(`bad-${n++}`));
      t.equal(r.statusCode, status, `${what}: ${r.body}`);
    }
    t.equal((await s.call('POST', `${base}/raw-safe-tx`, { roles_module: { action: 'enable' } }, s.acme.developer, key(`dev-${n++}`))).json().code, 'role_denied', 'configuring the module is tokenization.manage');
    t.equal((await signAndRun(await propose('raw-safe-tx', { roles_module: { action: 'assign_role', role_key: 1, member: member.wallet.address } }))).state, 'confirmed');
    const scoped = await signAndRun(await propose('raw-safe-tx', { roles_module: { action: 'allow_functions', role_key: 1, functions: ['pause'] } }));
    t.match(scoped, { state: 'confirmed', kind: 'roles_allow_functions', safe_tx: { operation: 1 } }, 'scopeTarget and scopeAllowFunction in one MultiSendCallOnly batch');

    // A pause at nonce 3 and a role grant after it at nonce 4, both proposed.
    const pause = await propose('pause', {});
    const grant = await propose('roles/grant', { role: 'PAUSER_ROLE', account: outsider.address });
    t.same([pause.safe_nonce, grant.safe_nonce], ['3', '4']);
    await s.anvil.testClient.setBalance({ address: member.wallet.address as Hex, value: parseEther('1') });

    // Refusals: nothing submitted, nothing changed.
    const unpauseData = encodeFunctionData({ abi, functionName: 'unpause' });
    const pauseCall = execWithRoleData(callOf(pause), 1);
    const refusals: [string, Op, Record<string, unknown>, string, number, string, RegExp?][] = [
      ['an intent over another call (unpause)', pause, { wallet_id: member.wallet.id, role_key: 1, ...(await memberIntent(execWithRoleData({ ...callOf(pause), data: unpauseData }, 1), 'r1')) }, s.acme.owner, 422, 'module_call_mismatch'],
      ['an intent naming another role than the body', pause, { wallet_id: member.wallet.id, role_key: 2, ...(await memberIntent(pauseCall, 'r2')) }, s.acme.owner, 422, 'module_call_mismatch'],
      ['an intent to another contract', pause, { wallet_id: member.wallet.id, role_key: 1, ...(await memberIntent(pauseCall, 'r3', tok.safe)) }, s.acme.owner, 422, 'module_call_mismatch'],
      ['a call outside the role\'s scope (grantRole)', grant, { wallet_id: member.wallet.id, role_key: 1, ...(await memberIntent(execWithRoleData(callOf(grant), 1), 'r4')) }, s.acme.owner, 422, 'module_call_refused', /FunctionNotAllowed/],
      ['a role the member does not hold', pause, { wallet_id: member.wallet.id, role_key: 2, ...(await memberIntent(execWithRoleData(callOf(pause), 2), 'r5')) }, s.acme.owner, 422, 'module_call_refused', /NoMembership/],
      ['another wallet than the intent\'s', pause, { wallet_id: w1.wallet.id, role_key: 1, ...(await memberIntent(pauseCall, 'r6')) }, s.acme.owner, 422, 'module_call_mismatch'],
      ['a viewer', pause, { wallet_id: member.wallet.id, role_key: 1, ...(await memberIntent(pauseCall, 'r7')) }, s.acme.viewer, 403, 'role_denied'],
      ['another workspace', pause, { wallet_id: member.wallet.id, role_key: 1, ...(await memberIntent(pauseCall, 'r8')) }, s.globex.owner, 404, 'not_found'],
    ];
    for (const [what, op, body, token, status, code, message] of refusals) {
      const r = await moduleSig(op, body, token);
      t.match([r.statusCode, r.json().code], [status, code], what);
      if (message) t.match(r.json().error, message, `${what}: the module's error`);
    }
    // A refused member intent lets go the nonce its key reserved (SDK prepareNonce): the wallet's next
    // transaction does not wait on it.
    const held = await s.transactions.prepare(s.acme.org, { wallet_id: member.wallet.id, idempotency_key: 'held' });
    t.ok(await s.transactions.nonces.byIdempotencyKey(s.acme.org, 'held'), 'a nonce reserved for the member\'s intent');
    const heldRefusal = await moduleSig(pause, { wallet_id: member.wallet.id, role_key: 2, ...(await memberIntent(pauseCall, 'held')) });
    t.match([heldRefusal.statusCode, heldRefusal.json().code], [422, 'module_call_mismatch']);
    t.equal(await s.transactions.nonces.byIdempotencyKey(s.acme.org, 'held'), undefined, `the refusal let nonce ${held.nonce} go`);
    const bogus = await s.call('POST', `${base}/operations/op_${'0'.repeat(26)}/module-signature`, { wallet_id: member.wallet.id, role_key: 1, ...(await memberIntent(pauseCall, 'r9')) });
    t.equal(bogus.statusCode, 404, 'an unknown operation');
    t.match(await getOp(pause.id), { state: 'proposed', safe_nonce: '3', module_execution: null });
    t.match(await getOp(grant.id), { state: 'proposed', safe_nonce: '4', reproposals: 0 });
    t.equal((await TRANSACTIONS.in(s.store).byIndex(`wallet/${member.wallet.id}/`)).length, 0, 'no vault transaction of the member was submitted');

    // The member executes the pause through the module: no Safe signature, the Safe's nonce unused.
    const good = { wallet_id: member.wallet.id, role_key: 1, ...(await memberIntent(pauseCall, 'pause-by-member')) };
    const sub = await moduleSig(pause, good, s.acme.developer);
    t.equal(sub.statusCode, 200, sub.body);
    t.match(sub.json(), { state: 'submitted', via: 'safe', vault_call: null, module_execution: { module: modifier.toLowerCase(), role_key: 1, member: member.wallet.address.toLowerCase(), wallet_id: member.wallet.id, transaction_id: /^txn_/ }, pending_intents: [] });
    t.match(await getOp(grant.id), { state: 'proposed', safe_nonce: '3', reproposals: 1 }, 'the later operation moved to the freed nonce');
    const retry = await moduleSig(pause, good);
    t.match([retry.statusCode, retry.json().module_execution.transaction_id], [200, sub.json().module_execution.transaction_id], 'the same submission again: the same execution');
    t.equal((await s.call('POST', `${base}/operations/${pause.id}/signatures`, await outsideSig(pause))).json().code, 'conflict', 'a submitted operation takes no Safe signature');
    await s.tokenization.operations.settled();
    const done = await getOp(pause.id);
    t.match(done, { state: 'confirmed', tx_hash: /^0x[0-9a-f]{64}$/, failure: null });
    const receipt = await client.getTransactionReceipt({ hash: done.tx_hash as Hex });
    t.same([receipt.from.toLowerCase(), receipt.to?.toLowerCase()], [member.wallet.address.toLowerCase(), modifier.toLowerCase()], 'on chain: the member\'s own transaction to the modifier');
    t.equal(await paused(), true, 'on chain: paused through the module');
    t.equal(await safeNonce(), 3n, 'the Safe\'s nonce was not used');
    const again = await moduleSig(done, { wallet_id: member.wallet.id, role_key: 1, ...(await memberIntent(pauseCall, 'pause-twice')) });
    t.match([again.statusCode, again.json().code], [409, 'conflict'], 'a confirmed operation: 409');
    const confirmed = [];
    for await (const e of s.store.all<{ type: string; data: Record<string, unknown> }>('webhook_events')) if (e.type === 'tokenization.operation.confirmed' && e.data.operation_id === pause.id) confirmed.push(e);
    t.match(confirmed, [{ data: { kind: 'pause', tx_hash: done.tx_hash } }], 'its confirmed event once');

    // Forced on chain: the member sends the out-of-scope call itself; the modifier refuses it.
    await s.anvil.testClient.impersonateAccount({ address: member.wallet.address as Hex });
    const forced = createWalletClient({ chain: foundry, transport: http(s.anvil.url) });
    const unpauseCall = execWithRoleData({ ...callOf(pause), data: unpauseData }, 1);
    const hash = await forced.sendTransaction({ account: member.wallet.address as Hex, to: modifier, data: unpauseCall, gas: 300_000n });
    t.equal((await client.waitForTransactionReceipt({ hash })).status, 'reverted', 'on chain: reverted');
    await s.anvil.testClient.stopImpersonatingAccount({ address: member.wallet.address as Hex });
    const why = await client.call({ account: member.wallet.address as Hex, to: modifier, data: unpauseCall }).then(() => undefined, (e: unknown) => failureOf(e));
    t.match(why, { kind: 'reverted', errorName: 'FunctionNotAllowed' }, 'by the module: FunctionNotAllowed');
    t.equal(await paused(), true, 'still paused');

    // The next Safe operation, at the freed nonce, executes with the Safe's signatures.
    const next = await signAndRun(await getOp(grant.id));
    t.match(next, { state: 'confirmed', safe_nonce: '3' });
    t.equal(await safeNonce(), 4n);

    // An operation already at the Safe's threshold is not taken by the module: its collected signatures could run it again.
    const unpause = await propose('unpause', {});
    const stored = (await OPERATIONS.in(s.store).get(unpause.id))!;
    await s.store.batch([OPERATIONS.putOp(unpause.id, { ...stored, state: 'ready' as const }, { index: [`${tok.id}\x00all\x00${unpause.id}`, `safe\x00${tok.safe}\x00${unpause.id}`] })]);
    const ready = await moduleSig(unpause, { wallet_id: member.wallet.id, role_key: 1, ...(await memberIntent(execWithRoleData(callOf(unpause), 1), 'on-ready')) });
    t.match([ready.statusCode, ready.json().code, ready.json().error], [409, 'conflict', /ready/], 'a ready operation: 409');
    t.match(await getOp(unpause.id), { state: 'ready', module_execution: null }, 'unchanged');
  });
});
