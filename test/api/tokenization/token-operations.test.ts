// Token operations through the API on one real anvil (docs/platform/tokenization.md "Operations"): an ERC-20
// whose admin is a 2-of-3 Safe of two of the customer's vault wallets and an outside signer; every privileged
// call an operation signed by owners (a vault through its customer-signed kind-3 intent on the vault
// transaction path, or a vault transaction named by id; the outsider by EIP-712) and executed by the service.
// Shown on chain with viem: a role granted, a mint policy, a mint by the two vaults, an over-cap mint failing
// with the decoded revert (which frees its nonce: the later pause moves down and is signed again), a refused
// transfer while paused, unpause, recover, a role revoked; each operation's event emitted once; an intent over
// another operation's SafeTx refused; the reads from the chain; bad input changes nothing.
import t from 'tap';
import { createWalletClient, getAddress, http, keccak256, toHex, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { mnemonicToAccount } from 'viem/accounts';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { tokenizationApp } from './tokenization-app.ts';
import { builtArtifact } from '../../../api/tokenization/chain/artifacts.ts';
import { safeTxTypedData, type SafeTransaction } from '../../../api/tokenization/chain/safe-transaction.ts';
import { encodeIntent, signIntent } from '../../../core/intents/intent.ts';
import { eventType } from '../../../api/webhooks/event-catalog.ts';
import { waitUntil } from '../../cluster/cluster-harness.ts';
import { OPERATIONS } from '../../../api/tokenization/collections.ts';
import type { OperationRecord } from '../../../api/tokenization/records.ts';

t.setTimeout(300_000);
const s = await tokenizationApp(t);
const account = (i: number) => mnemonicToAccount('test test test test test test test test test test test junk', { addressIndex: i });
const outsider = account(5);
const holder = account(6);
const fresh = account(8);
const client = s.chain.client;
const abi = builtArtifact('ManagedERC20').abi;
const key = (k: string) => ({ 'idempotency-key': k });
const MINTER = keccak256(toHex('MINTER_ROLE'));

async function events(type: string) {
  const out: { data: Record<string, unknown> }[] = [];
  for await (const e of s.store.all<{ type: string; data: Record<string, unknown> }>('webhook_events')) if (e.type === type) out.push(e);
  return out;
}

interface Op { id: string; state: string; safe_tx: Record<string, string | number>; safe_tx_hash: string; safe_nonce: string; signatures: unknown[]; reproposals: number; failure: unknown; pending_intents: Record<string, string | number>[] }

t.test('operations: proposed, signed by vault intents and an outside owner, executed, confirmed or failed, in Safe nonce order', async (t) => {
  const w1 = await s.vaultWallet(s.acme.org);
  const w2 = await s.vaultWallet(s.acme.org);
  const admin = { owners: [{ wallet_id: w1.wallet.id }, { wallet_id: w2.wallet.id }, { address: outsider.address }], threshold: 2 };
  const deployed = await s.call('POST', '/v1/tokenization/erc20', { chain: 'evm-local', name: 'Acme Note', symbol: 'ANOTE', decimals: 0, admin }, undefined, key('tok'));
  t.equal(deployed.statusCode, 201, deployed.body);
  await s.tokenization.tokens.settled();
  const tok = (await s.call('GET', `/v1/tokenization/tokens/${deployed.json().id}`)).json();
  t.equal(tok.status, 'deployed');
  const base = `/v1/tokenization/tokens/${tok.id}`;
  const balance = (a: string) => client.readContract({ address: tok.address, abi, functionName: 'balanceOf', args: [getAddress(a)] });
  const opsCount = async () => (await s.call('GET', `${base}/operations?limit=100`)).json().data.length;

  const getOp = async (id: string): Promise<Op> => (await s.call('GET', `${base}/operations/${id}`, undefined, s.acme.viewer)).json();
  const intentFor = (op: Op, walletId: string, idem: string) => {
    const f = op.pending_intents.find((p) => p.wallet_id === walletId) as unknown as Record<'organization' | 'chain_id' | 'owner' | 'safe' | 'to' | 'value' | 'data' | 'operation' | 'safe_tx_gas' | 'base_gas' | 'gas_price' | 'gas_token' | 'refund_receiver' | 'safe_nonce', string>;
    const b = (h: string | number) => hexToBytes(String(h).slice(2));
    const bytes = encodeIntent({
      kind: 'evm.safe_tx', organization: String(f.organization), walletId, chainId: BigInt(f.chain_id), owner: b(f.owner), safe: b(f.safe), to: b(f.to), value: BigInt(f.value), data: b(f.data),
      operation: Number(f.operation) as 0 | 1, safeTxGas: BigInt(f.safe_tx_gas), baseGas: BigInt(f.base_gas), gasPrice: BigInt(f.gas_price), gasToken: b(f.gas_token), refundReceiver: b(f.refund_receiver),
      safeNonce: BigInt(f.safe_nonce), idempotencyKey: idem, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
    });
    return { wallet_id: walletId, intent: bytesToHex(bytes), intent_signature: bytesToHex(signIntent(bytes, s.acme.creds.secretKey)) };
  };
  const outsideSig = async (op: Op) => {
    const x = op.safe_tx;
    const tx: SafeTransaction = { to: getAddress(String(x.to)), value: BigInt(x.value!), data: x.data as Hex, operation: Number(x.operation) as 0 | 1, safeTxGas: BigInt(x.safe_tx_gas!), baseGas: BigInt(x.base_gas!), gasPrice: BigInt(x.gas_price!), gasToken: getAddress(String(x.gas_token)), refundReceiver: getAddress(String(x.refund_receiver)), nonce: BigInt(x.nonce!) };
    return { owner: outsider.address, signature: await outsider.signTypedData(safeTxTypedData(getAddress(tok.safe), 31337, tx)) };
  };
  let n = 0;
  const sign = async (op: Op, who: 'w1' | 'w2' | 'out') => {
    const body = who === 'out' ? await outsideSig(op) : intentFor(op, (who === 'w1' ? w1 : w2).wallet.id, `sig-${n++}`);
    const r = await s.call('POST', `${base}/operations/${op.id}/signatures`, body);
    t.equal(r.statusCode, 200, r.body);
    return r.json() as Op;
  };
  const propose = async (path: string, body: unknown, token = s.acme.owner) => {
    const r = await s.call('POST', `${base}/${path}`, body, token, key(`op-${n++}`));
    t.equal(r.statusCode, 201, r.body);
    return r.json() as Op;
  };
  const run = async (path: string, body: unknown, signers: ('w1' | 'w2' | 'out')[]) => {
    let op = await propose(path, body);
    for (const who of signers) op = await sign(op, who);
    t.equal(op.state, 'ready');
    await s.tokenization.operations.settled();
    return getOp(op.id);
  };

  // A role, proposed and shown with what each owner vault must sign.
  const grant = await propose('roles/grant', { role: 'MINTER_ROLE', account: tok.safe });
  t.match(grant, { state: 'proposed', safe_nonce: '0', threshold: 2, signatures: [], safe_tx: { to: tok.address, value: '0', operation: 0, nonce: '0' } });
  t.same(grant.pending_intents.map((p) => p.wallet_id), [w1.wallet.id, w2.wallet.id], 'both owner vaults are asked for a kind-3 intent');
  const replay = await s.call('POST', `${base}/roles/grant`, { role: 'MINTER_ROLE', account: tok.safe }, s.acme.owner, key('op-0'));
  t.equal(replay.json().id, grant.id, 'the same Idempotency-Key and body: the same operation');
  let g = await sign(grant, 'w1');
  t.match(g, { state: 'collecting_signatures', signatures: [{ owner: w1.wallet.address.toLowerCase(), how: 'vault_intent', wallet_id: w1.wallet.id }] });
  const again = await s.call('POST', `${base}/operations/${grant.id}/signatures`, intentFor(grant, w1.wallet.id, 'sig-0'));
  t.equal(again.json().signatures.length, 1, 'the same owner\'s intent again changes nothing');
  g = await sign(g, 'out');
  t.equal(g.state, 'ready');
  await s.tokenization.operations.settled();
  g = await getOp(grant.id);
  t.match(g, { state: 'confirmed', tx_hash: /^0x[0-9a-f]{64}$/, failure: null });
  t.equal(await client.readContract({ address: tok.address, abi, functionName: 'hasRole', args: [MINTER, getAddress(tok.safe)] }), true, 'on chain: the Safe is a minter');

  // A mint policy, then a mint signed by the two vault owners alone.
  t.equal((await run('policies', { minter: tok.safe, cap: '1000', period_seconds: 86_400 }, ['w2', 'out'])).state, 'confirmed');
  const mint = await run('mint', { to: holder.address, amount: '600' }, ['w1', 'w2']);
  t.match(mint, { state: 'confirmed', signatures: [{ how: 'vault_intent' }, { how: 'vault_intent' }] });
  t.equal(await balance(holder.address), 600n, 'on chain: minted by a Safe of vault wallets');

  // An over-cap mint at nonce 3 and a pause at nonce 4; the pause is signed first and waits its turn.
  const over = await propose('mint', { to: holder.address, amount: '500' });
  let pause = await propose('pause', {});
  t.same([over.safe_nonce, pause.safe_nonce], ['3', '4'], 'one open operation per Safe nonce, in order');
  // An intent over the pause's SafeTx is refused for the over-cap mint, which is unchanged.
  const wrong = await s.call('POST', `${base}/operations/${over.id}/signatures`, intentFor(pause, w1.wallet.id, 'wrong-op'));
  t.match([wrong.statusCode, wrong.json().code], [422, 'safe_tx_mismatch'], 'another operation\'s SafeTx: 422');
  t.same((await getOp(over.id)).signatures, [], 'nothing changed');
  pause = await sign(await sign(pause, 'w1'), 'out');
  await s.tokenization.operations.settled();
  t.equal((await getOp(pause.id)).state, 'ready', 'nonce 4 waits for nonce 3');
  await sign(await sign(over, 'w2'), 'out');
  await s.tokenization.operations.settled();
  const failed = await getOp(over.id);
  t.match(failed, { state: 'failed', failure: { reason: 'revert', error_name: 'MintCapExceeded', message: /MintCapExceeded\(minter=.*requested=500, remaining=400\)/ } }, 'failed with the decoded revert');
  t.equal(await balance(holder.address), 600n, 'nothing minted');
  pause = await getOp(pause.id);
  t.match(pause, { state: 'proposed', safe_nonce: '3', reproposals: 1, signatures: [] }, 'the later operation moved to the freed nonce, to be signed again');
  t.match((await s.call('POST', `${base}/operations/${failed.id}/signatures`, await outsideSig(failed))).json(), { code: 'conflict' }, 'a failed operation takes no signatures');
  pause = await sign(await sign(pause, 'w2'), 'out');
  await s.tokenization.operations.settled();
  t.equal((await getOp(pause.id)).state, 'confirmed');
  t.equal(await client.readContract({ address: tok.address, abi, functionName: 'paused' }), true, 'on chain: paused');
  const wallet = createWalletClient({ account: holder, chain: foundry, transport: http(s.anvil.url) });
  await t.rejects(client.simulateContract({ account: holder, address: tok.address, abi, functionName: 'transfer', args: [fresh.address, 1n] }), /EnforcedPause/, 'a transfer while paused is refused');

  // Unpause, signed by a vault transaction named by id and the outsider.
  let unpause = await propose('unpause', {});
  const submitted = await s.transactions.submit(s.acme.org, s.acme.creds.keyId, { ...intentFor(unpause, w1.wallet.id, 'unpause-by-id'), idempotency_key: 'unpause-by-id' });
  await waitUntil(async () => (await s.transactions.get(s.acme.org, submitted.tx.id)).state === 'signed', 30_000, 'the vault transaction to be signed', 20);
  const byId = await s.call('POST', `${base}/operations/${unpause.id}/signatures`, { transaction_id: submitted.tx.id });
  t.equal(byId.statusCode, 200, byId.body);
  t.match(byId.json().signatures, [{ how: 'vault_transaction', transaction_id: submitted.tx.id }]);
  unpause = await sign(byId.json(), 'out');
  await s.tokenization.operations.settled();
  t.equal((await getOp(unpause.id)).state, 'confirmed');
  await client.waitForTransactionReceipt({ hash: await wallet.writeContract({ address: tok.address, abi, functionName: 'transfer', args: [fresh.address, 100n] }) });
  t.equal(await balance(fresh.address), 100n, 'on chain: transfers again after unpause');

  // Recover the holder's balance to a new address; revoke the Safe's minter role.
  t.equal((await run('recover', { lost: holder.address, to: account(7).address }, ['w1', 'out'])).state, 'confirmed');
  t.same([await balance(holder.address), await balance(account(7).address)], [0n, 500n], 'on chain: recovered');
  // Mint to the Safe and burn part of what it holds; remove its mint policy.
  t.equal((await run('mint', { to: tok.safe, amount: '50' }, ['w1', 'out'])).state, 'confirmed');
  t.equal((await run('burn', { amount: '20' }, ['w2', 'out'])).state, 'confirmed');
  t.equal(await balance(tok.safe), 30n, 'on chain: burned from the Safe\'s holding');
  t.equal((await run('policies/revoke', { minter: tok.safe }, ['w1', 'out'])).state, 'confirmed');
  t.match(await client.readContract({ address: tok.address, abi, functionName: 'mintPolicy', args: [getAddress(tok.safe)] }), [0n, 0n], 'on chain: no policy');
  t.equal((await run('roles/revoke', { role: 'MINTER_ROLE', account: tok.safe }, ['w2', 'out'])).state, 'confirmed');
  t.equal(await client.readContract({ address: tok.address, abi, functionName: 'hasRole', args: [MINTER, getAddress(tok.safe)] }), false, 'on chain: revoked');

  // The access list, the treasury switch and the access-registry hook.
  const accessOf = (a: string) => client.readContract({ address: tok.address, abi, functionName: 'accessOf', args: [getAddress(a)] });
  t.equal((await run('access-list/add', { accounts: [fresh.address], list: 'deny' }, ['w1', 'out'])).state, 'confirmed');
  t.equal(await accessOf(fresh.address), 2, 'on chain: denied');
  t.equal((await run('access-list/remove', { accounts: [fresh.address] }, ['w2', 'out'])).state, 'confirmed');
  t.equal(await accessOf(fresh.address), 0, 'on chain: off the list');
  t.equal((await run('treasury-enable', { treasury: account(7).address }, ['w1', 'out'])).state, 'confirmed');
  t.same((await s.call('GET', `${base}/treasury-status`)).json(), { token_id: tok.id, enabled: true, treasury: account(7).address.toLowerCase() }, 'treasury-status from the chain');
  t.equal((await run('treasury-disable', {}, ['w2', 'out'])).state, 'confirmed');
  const registry = account(11).address;
  t.equal((await run('access-registry', { registry }, ['w1', 'out'])).state, 'confirmed');
  t.equal((await s.call('GET', `${base}/contracts`)).json().access_registry, registry.toLowerCase(), 'contracts shows the registry on chain');
  t.equal((await run('access-registry/disable', {}, ['w2', 'out'])).state, 'confirmed');

  // Each operation's event once.
  const confirmed = await events('tokenization.operation.confirmed');
  const all = (await s.call('GET', `${base}/operations?limit=100`)).json().data as (Op & { kind: string })[];
  t.equal(confirmed.length, all.filter((o) => o.state === 'confirmed').length);
  t.same(new Set(confirmed.map((e) => e.data.operation_id)).size, confirmed.length, 'one confirmed event per operation');
  t.same(confirmed.map((e) => e.data.kind), ['grant_role', 'set_mint_policy', 'mint', 'pause', 'unpause', 'recover', 'mint', 'burn', 'revoke_mint_policy', 'revoke_role',
    'access_list_add', 'access_list_remove', 'enable_treasury', 'disable_treasury', 'set_access_registry', 'disable_access_registry']);
  const failedEvents = await events('tokenization.operation.failed');
  t.equal(failedEvents.length, 1, 'one failed event');
  t.match(failedEvents[0]!.data, { operation_id: over.id, kind: 'mint', reason: 'onchain_revert', error: /MintCapExceeded/ });
  t.same(Object.keys(failedEvents[0]!.data).sort(), Object.keys(eventType('tokenization.operation.failed')!.example_payload).sort(), 'shaped as the catalog says');
  t.same(Object.keys(confirmed[0]!.data).sort(), Object.keys(eventType('tokenization.operation.confirmed')!.example_payload).sort());
  t.match((await s.call('GET', `${base}/operations?state=failed`)).json().data, [{ id: over.id }]);
  t.equal((await s.call('GET', `${base}/operations?kind=mint`)).json().data.length, 3);
  const page = (await s.call('GET', `${base}/operations?limit=3`)).json();
  t.match(page, { has_more: true });
  t.equal((await s.call('GET', `${base}/operations?limit=100&cursor=${page.next_cursor}`)).json().data.length, all.length - 3);

  // Reads from the chain.
  t.same((await s.call('GET', `${base}/read?function=balanceOf&args=${encodeURIComponent(JSON.stringify([fresh.address]))}`, undefined, s.acme.viewer)).json(), { function: 'balanceOf(address)', result: '100' });
  t.same((await s.call('GET', `${base}/read?function=hasRole&args=${encodeURIComponent(JSON.stringify([MINTER, tok.safe]))}`)).json().result, false);
  for (const [what, q] of [['not a view function', 'function=mint&args=[]'], ['unknown function', 'function=nope'], ['bad address', `function=balanceOf&args=${encodeURIComponent('["0x12"]')}`], ['wrong count', 'function=balanceOf&args=[]'], ['not JSON', 'function=balanceOf&args=x']] as const) {
    const r = await s.call('GET', `${base}/read?${q}`);
    t.match([r.statusCode, r.json().code], [422, 'validation_failed'], what);
  }
  t.same((await s.call('GET', `${base}/treasury-status`)).json(), { token_id: tok.id, enabled: false, treasury: account(7).address.toLowerCase() }, 'disabled; the last treasury kept on chain');
  const contracts = (await s.call('GET', `${base}/contracts`)).json();
  t.match(contracts, { token: { address: tok.address, deployed: true }, safe: { address: tok.safe, deployed: true, threshold: 2, nonce: '16' }, forwarder: { address: tok.forwarder, deployed: true }, access_registry: null });
  t.same(contracts.safe.owners, [w1.wallet.address, w2.wallet.address, outsider.address].map((a) => a.toLowerCase()));

  // Refusals: their status and code, nothing stored, nothing on chain.
  const before = await opsCount();
  const refused: [string, string, unknown, string, number, string][] = [
    ['amount not a number', 'mint', { to: holder.address, amount: 'abc' }, s.acme.owner, 400, 'invalid_request'],
    ['amount 0', 'mint', { to: holder.address, amount: '0' }, s.acme.owner, 422, 'validation_failed'],
    ['a field of another kind', 'mint', { to: holder.address, amount: '1', token_id: '1' }, s.acme.owner, 422, 'validation_failed'],
    ['amount above uint256', 'mint', { to: holder.address, amount: (1n << 256n).toString() }, s.acme.owner, 422, 'validation_failed'],
    ['unknown role', 'roles/grant', { role: 'KING_ROLE', account: holder.address }, s.acme.owner, 400, 'invalid_request'],
    ['zero address', 'roles/grant', { role: 'PAUSER_ROLE', account: `0x${'00'.repeat(20)}` }, s.acme.owner, 422, 'validation_failed'],
    ['delegatecall elsewhere', 'raw-safe-tx', { to: tok.address, operation: 1 }, s.acme.owner, 422, 'validation_failed'],
    ['developer pauses', 'pause', {}, s.acme.developer, 403, 'role_denied'],
    ['viewer mints', 'mint', { to: holder.address, amount: '1' }, s.acme.viewer, 403, 'role_denied'],
  ];
  for (const [what, path, body, token, status, code] of refused) {
    const r = await s.call('POST', `${base}/${path}`, body, token, key(`bad-${n++}`));
    t.match([r.statusCode, r.json().code], [status, code], what);
  }
  t.equal((await s.call('POST', `${base}/pause`, {}, s.acme.owner)).json().code, 'invalid_request', 'no Idempotency-Key: 400');
  t.equal((await s.call('POST', `${base}/pause`, {}, s.globex.owner, key('g'))).statusCode, 404, 'another workspace\'s token: 404');
  t.equal((await s.call('GET', `${base}/operations/${grant.id}`, undefined, s.globex.owner)).statusCode, 404);
  t.equal(await opsCount(), before, 'the refusals stored nothing');
  const raw = await propose('raw-safe-tx', { to: tok.address, data: '0x8456cb59' });
  t.match(raw, { state: 'proposed', safe_nonce: '16', safe_tx: { data: '0x8456cb59' } }, 'a raw Safe transaction is an operation too');
  const stranger = account(4);
  const notOwner = await s.call('POST', `${base}/operations/${raw.id}/signatures`, { owner: stranger.address, signature: await stranger.signTypedData(safeTxTypedData(getAddress(tok.safe), 31337, { to: getAddress(tok.address), value: 0n, data: '0x8456cb59', operation: 0, safeTxGas: 0n, baseGas: 0n, gasPrice: 0n, gasToken: `0x${'00'.repeat(20)}`, refundReceiver: `0x${'00'.repeat(20)}`, nonce: 16n })) });
  t.match([notOwner.statusCode, notOwner.json().code], [422, 'validation_failed'], 'not an owner');
  const forged = await s.call('POST', `${base}/operations/${raw.id}/signatures`, { owner: outsider.address, signature: (await outsideSig(grant)).signature });
  t.match([forged.statusCode, forged.json().code], [422, 'safe_signature_invalid'], 'a signature over another SafeTx');
  t.same((await getOp(raw.id)).signatures, [], 'unchanged');

  // The service deployer cannot pay: an engine error, told apart from a revert; nothing on chain.
  const deployer = s.chain.sender.address;
  const funds = await client.getBalance({ address: deployer });
  await s.anvil.testClient.setBalance({ address: deployer, value: 0n });
  await sign(await sign(raw, 'w1'), 'out');
  await s.tokenization.operations.settled();
  await s.anvil.testClient.setBalance({ address: deployer, value: funds });
  t.match(await getOp(raw.id), { state: 'failed', failure: { reason: 'engine', error_name: null } }, 'failed: engine');
  t.equal(await client.readContract({ address: tok.address, abi, functionName: 'paused' }), false, 'not paused');
  const engineEvents = (await events('tokenization.operation.failed')).filter((e) => e.data.operation_id === raw.id);
  t.match(engineEvents, [{ data: { kind: 'raw_safe_tx', reason: 'engine_error' } }], 'its failed event once, reason engine_error');

  // Deprecation last (movements stop), at the nonce the engine failure freed.
  const dep = await run('deprecate', { successor: account(7).address }, ['w1', 'out']);
  t.match(dep, { state: 'confirmed', safe_nonce: '16' });
  t.equal(await client.readContract({ address: tok.address, abi, functionName: 'successor' }), account(7).address, 'on chain: deprecated');

  // A process that stopped after recording an operation ready, before executing it: the next start runs it.
  let left = await sign(await propose('pause', {}), 'w2');
  const outSig = await outsideSig(left);
  const stored = (await OPERATIONS.in(s.store).get(left.id)) as OperationRecord;
  const leftReady = { ...stored, state: 'ready' as const, signatures: [...stored.signatures, { owner: outsider.address.toLowerCase(), how: 'eip712' as const, wallet_id: null, transaction_id: null, signature: outSig.signature, at: new Date().toISOString() }] };
  await s.store.batch([OPERATIONS.putOp(left.id, leftReady, { index: [`${tok.id}\x00all\x00${left.id}`, `safe\x00${tok.safe}\x00${left.id}`] })]);
  await s.tokenization.operations.resumeAll();
  await s.tokenization.operations.settled();
  left = await getOp(left.id);
  t.equal(left.state, 'confirmed', 'resumed at start and confirmed');
  t.equal(await client.readContract({ address: tok.address, abi, functionName: 'paused' }), true);
});
