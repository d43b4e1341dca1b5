// Token operations through the API on one real anvil (docs/platform/tokenization.md "Operations"): an ERC-20
// whose admin is a 2-of-3 Safe of two of the customer's vault wallets and an outside signer; every privileged
// call an operation signed by owners (a vault through its customer-signed kind-3 intent on the vault
// transaction path, or a vault transaction named by id; the outsider by EIP-712) and executed by the service.
// Shown on chain with viem: a role granted, a mint policy, a mint by the two vaults, an over-cap mint failing
// with the decoded revert (which frees its nonce: the later pause moves down and is signed again), a refused
// transfer while paused, unpause, recover, a role revoked; each operation's event emitted once, and the token
// catalog events received, signed, at an endpoint registered through the API (catalog-receipt.ts); an intent over
// another operation's SafeTx refused; the reads from the chain; bad input changes nothing.
// On the same chain, gasless transfers (docs/platform/tokenization.md "Gasless transfers"): a holder with no ETH
// signs the ERC-2771 request the API builds, the relayer sends it and pays, its cost recorded from the receipt;
// a replay refused by the API and, sent directly, by the forwarder; an altered request refused by both; the
// token's own refusals decoded; the tenant's cap met by relays racing each other, a period later free again.
import t from 'tap';
import { createWalletClient, encodeFunctionData, parseAbi, zeroAddress, getAddress, hashTypedData, http, keccak256, toHex, type Address, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { DEPLOYER_KEY, tokenizationApp } from './tokenization-app.ts';
import { builtArtifact } from '../../../api/tokenization/chain/artifacts.ts';
import { packSafeSignatures, safeTxTypedData, type SafeTransaction } from '../../../api/tokenization/chain/safe-transaction.ts';
import { encodeIntent, signIntent } from '../../../core/intents/intent.ts';
import { eventType } from '../../../api/webhooks/event-catalog.ts';
import { waitUntil } from '../../cluster/cluster-harness.ts';
import { OPERATIONS, RELAYS } from '../../../api/tokenization/collections.ts';
import type { OperationRecord, RelayRecord } from '../../../api/tokenization/records.ts';
import { receiver, type Received } from '../setup-platform.ts';
import { verifyWebhook } from '../../../api/sdk/webhook-receiver.ts';
import { elsewhereIn, received } from '../webhooks/catalog-receipt.ts';
import { relayIndexOf } from '../../../api/tokenization/gasless-service.ts';
import { forwarderAbi } from '../../../api/tokenization/chain/forward-request.ts';
import { createTokenization } from '../../../api/tokenization/tokenization-setup.ts';
import { tokenChain } from '../../../api/tokenization/token-chain.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { evmNetwork } from '../../../core/chains/evm/evm-networks.ts';
import { httpStatusOfCode } from '../../../core/errors/http-status.ts';
import type { CustodyError } from '../../../core/errors/custody-error.ts';
import { anvilAccount } from '../../chains/anvil.ts';

// The app and its anvil are started, and stopped, by a test of its own, not at the top level: the file
// shares its process with others (test/support/units.ts).
t.test('token operations and gasless transfers, on the app over one anvil', async (t) => {
  t.setTimeout(300_000);
  const s = await tokenizationApp(t, {}, { loopbackWebhooks: true });
  const safeAbi = parseAbi(['function execTransaction(address to, uint256 value, bytes data, uint8 operation, uint256 safeTxGas, uint256 baseGas, uint256 gasPrice, address gasToken, address refundReceiver, bytes signatures) payable returns (bool)']);
  const outsider = anvilAccount(5);
  const holder = anvilAccount(6);
  const fresh = anvilAccount(8);
  const client = s.chain.client;
  const abi = builtArtifact('ManagedERC20').abi;
  const key = (k: string) => ({ 'idempotency-key': k });
  const MINTER = keccak256(toHex('MINTER_ROLE'));

  async function events(type: string) {
    const out: { data: Record<string, unknown> }[] = [];
    for await (const e of s.store.all<{ type: string; data: Record<string, unknown> }>('webhook_events')) if (e.type === type) out.push(e);
    return out;
  }

  interface Op { id: string; kind: string; state: string; safe_tx: Record<string, string | number>; safe_tx_hash: string; safe_nonce: string; signatures: unknown[]; reproposals: number; failure: unknown; pending_intents: Record<string, string | number>[] }

  t.test('operations: proposed, signed by vault intents and an outside owner, executed, confirmed or failed, in Safe nonce order', async (t) => {
    const w1 = await s.vaultWallet(s.acme.org);
    const w2 = await s.vaultWallet(s.acme.org);
    const admin = { owners: [{ wallet_id: w1.wallet.id }, { wallet_id: w2.wallet.id }, { address: outsider.address }], threshold: 2 };
    // The token catalog events' rows (catalog-events.unit.ts, ELSEWHERE): received at an endpoint registered through the API.
    const rx = await receiver(t);
    const endpoint = await s.call('POST', '/v1/webhook-endpoints', { url: rx.url, events: ['token.deployed', 'tokenization.operation.confirmed', 'tokenization.operation.failed'] });
    t.equal(endpoint.statusCode, 201, endpoint.body);
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
    // The pause already has its threshold of signatures at nonce 4: it stays there (moved down and executed at 3,
    // its signatures over nonce 4 would execute the pause a second time once the Safe reached 4). A rejection is
    // proposed at the freed nonce instead.
    pause = await getOp(pause.id);
    t.match(pause, { state: 'ready', safe_nonce: '4', reproposals: 0, signatures: [{}, {}] }, 'the signed later operation keeps its nonce and its signatures');
    const rejection = ((await s.call('GET', `${base}/operations?kind=nonce_rejection`)).json().data as Op[])[0]!;
    t.match(rejection, { state: 'proposed', safe_nonce: '3', params: { freed_by: over.id }, safe_tx: { to: tok.safe, value: '0', data: '0x', operation: 0 } }, 'a rejection holds the freed nonce');
    t.match((await s.call('POST', `${base}/operations/${failed.id}/signatures`, await outsideSig(failed))).json(), { code: 'conflict' }, 'a failed operation takes no signatures');
    await sign(await sign(rejection, 'w2'), 'out');
    await s.tokenization.operations.settled();
    t.match([(await getOp(rejection.id)).state, (await getOp(pause.id)).state], ['confirmed', 'confirmed'], 'the rejection executed at 3, then the pause at 4');
    // Every signature set the service ever held for these operations is spent: none executes again.
    for (const op of [failed, pause]) {
      const x = op.safe_tx;
      const sigs = await packSafeSignatures(op.safe_tx_hash as Hex, (op.signatures as { owner: Address; signature: Hex }[]).map((g) => ({ owner: g.owner, signature: g.signature })));
      const replay = client.simulateContract({ account: anvilAccount(8), address: tok.safe, abi: safeAbi, functionName: 'execTransaction', args: [getAddress(String(x.to)), BigInt(x.value!), x.data as Hex, Number(x.operation), 0n, 0n, 0n, getAddress(String(x.gas_token)), getAddress(String(x.refund_receiver)), sigs] });
      await t.rejects(replay, /GS026|GS013|GS025/, `${op.kind}'s signatures at nonce ${x.nonce} no longer execute`);
    }
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
    t.equal((await run('recover', { lost: holder.address, to: anvilAccount(7).address }, ['w1', 'out'])).state, 'confirmed');
    t.same([await balance(holder.address), await balance(anvilAccount(7).address)], [0n, 500n], 'on chain: recovered');
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
    t.equal((await run('treasury-enable', { treasury: anvilAccount(7).address }, ['w1', 'out'])).state, 'confirmed');
    t.same((await s.call('GET', `${base}/treasury-status`)).json(), { token_id: tok.id, enabled: true, treasury: anvilAccount(7).address.toLowerCase() }, 'treasury-status from the chain');
    t.equal((await run('treasury-disable', {}, ['w2', 'out'])).state, 'confirmed');
    const registry = anvilAccount(11).address;
    t.equal((await run('access-registry', { registry }, ['w1', 'out'])).state, 'confirmed');
    t.equal((await s.call('GET', `${base}/contracts`)).json().access_registry, registry.toLowerCase(), 'contracts shows the registry on chain');
    t.equal((await run('access-registry/disable', {}, ['w2', 'out'])).state, 'confirmed');

    // Each operation's event once.
    const confirmed = await events('tokenization.operation.confirmed');
    const all = (await s.call('GET', `${base}/operations?limit=100`)).json().data as (Op & { kind: string })[];
    t.equal(confirmed.length, all.filter((o) => o.state === 'confirmed').length);
    t.same(new Set(confirmed.map((e) => e.data.operation_id)).size, confirmed.length, 'one confirmed event per operation');
    t.same(confirmed.map((e) => e.data.kind), ['grant_role', 'set_mint_policy', 'mint', 'nonce_rejection', 'pause', 'unpause', 'recover', 'mint', 'burn', 'revoke_mint_policy', 'revoke_role',
      'access_list_add', 'access_list_remove', 'enable_treasury', 'disable_treasury', 'set_access_registry', 'disable_access_registry']);
    const failedEvents = await events('tokenization.operation.failed');
    t.equal(failedEvents.length, 1, 'one failed event');
    t.match(failedEvents[0]!.data, { operation_id: over.id, kind: 'mint', reason: 'onchain_revert', error: /MintCapExceeded/ });
    t.same(Object.keys(failedEvents[0]!.data).sort(), Object.keys(eventType('tokenization.operation.failed')!.example_payload).sort(), 'shaped as the catalog says');
    t.same(Object.keys(confirmed[0]!.data).sort(), Object.keys(eventType('tokenization.operation.confirmed')!.example_payload).sort());
    t.match((await s.call('GET', `${base}/operations?state=failed`)).json().data, [{ id: over.id }]);
    await s.platform.deliveries.runDue();
    const verified = (g: Received) => verifyWebhook(g.headers, Buffer.from(g.body, 'utf8'), { secrets: [endpoint.json().secret as string], publicKey: s.platform.keys.webhookPublicKey, nowMs: s.clock.now() });
    const rows = {
      'token.deployed': { token_id: tok.id, standard: 'erc20', chain: 'evm-local' },
      'tokenization.operation.confirmed': { token_id: tok.id, operation_id: grant.id, kind: 'grant_role' },
      'tokenization.operation.failed': { token_id: tok.id, operation_id: over.id, kind: 'mint', reason: 'onchain_revert' },
    };
    for (const [name, want] of Object.entries(rows)) await received(t, name, rx, want, verified);
    t.same(Object.keys(rows).sort(), elsewhereIn('test/api/tokenization/token-operations.unit.ts'), 'exactly the rows the catalog test counts on');
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
    t.same((await s.call('GET', `${base}/treasury-status`)).json(), { token_id: tok.id, enabled: false, treasury: anvilAccount(7).address.toLowerCase() }, 'disabled; the last treasury kept on chain');
    const contracts = (await s.call('GET', `${base}/contracts`)).json();
    t.match(contracts, { token: { address: tok.address, deployed: true }, safe: { address: tok.safe, deployed: true, threshold: 2, nonce: '17' }, forwarder: { address: tok.forwarder, deployed: true }, access_registry: null });
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
    t.match(raw, { state: 'proposed', safe_nonce: '17', safe_tx: { data: '0x8456cb59' } }, 'a raw Safe transaction is an operation too');
    const stranger = anvilAccount(4);
    const notOwner = await s.call('POST', `${base}/operations/${raw.id}/signatures`, { owner: stranger.address, signature: await stranger.signTypedData(safeTxTypedData(getAddress(tok.safe), 31337, { to: getAddress(tok.address), value: 0n, data: '0x8456cb59', operation: 0, safeTxGas: 0n, baseGas: 0n, gasPrice: 0n, gasToken: `0x${'00'.repeat(20)}`, refundReceiver: `0x${'00'.repeat(20)}`, nonce: 17n })) });
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
    const dep = await run('deprecate', { successor: anvilAccount(7).address }, ['w1', 'out']);
    t.match(dep, { state: 'confirmed', safe_nonce: '17' });
    t.equal(await client.readContract({ address: tok.address, abi, functionName: 'successor' }), anvilAccount(7).address, 'on chain: deprecated');

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

    // A Safe transaction executed outside the service at an open operation's nonce: that operation fails, and the
    // one after it keeps its nonce and its signature (the Safe's next nonce now) and executes there.
    const taken = await propose('unpause', {});
    let next = await sign(await propose('raw-safe-tx', { to: tok.address, data: '0x3f4ba83a' }), 'w1');
    const elsewhere = { ...taken, pending_intents: taken.pending_intents.map((p) => ({ ...p, to: tok.safe, data: '0x' })) };
    const own = await s.transactions.submit(s.acme.org, s.acme.creds.keyId, { ...intentFor(elsewhere, w2.wallet.id, 'elsewhere'), idempotency_key: 'elsewhere' });
    await waitUntil(async () => (await s.transactions.get(s.acme.org, own.tx.id)).state === 'signed', 30_000, 'the vault transaction to be signed', 20);
    const selfCall: SafeTransaction = { to: getAddress(tok.safe), value: 0n, data: '0x', operation: 0, safeTxGas: 0n, baseGas: 0n, gasPrice: 0n, gasToken: zeroAddress, refundReceiver: zeroAddress, nonce: BigInt(taken.safe_nonce) };
    const selfHash = hashTypedData(safeTxTypedData(getAddress(tok.safe), 31337, selfCall));
    const packed = await packSafeSignatures(selfHash, [
      { owner: getAddress(w2.wallet.address), signature: (await s.transactions.get(s.acme.org, own.tx.id)).signature as Hex },
      { owner: outsider.address, signature: await outsider.signTypedData(safeTxTypedData(getAddress(tok.safe), 31337, selfCall)) },
    ]);
    const outside = createWalletClient({ account: anvilAccount(8), chain: foundry, transport: http(s.anvil.url) });
    await client.waitForTransactionReceipt({ hash: await outside.writeContract({ address: tok.safe, abi: safeAbi, functionName: 'execTransaction', args: [selfCall.to, 0n, '0x', 0, 0n, 0n, 0n, zeroAddress, zeroAddress, packed] }) });
    await sign(await sign(taken, 'w1'), 'out');
    await s.tokenization.operations.settled();
    t.match(await getOp(taken.id), { state: 'failed', failure: { reason: 'engine', message: /was used by another transaction/ } }, 'its nonce used elsewhere: failed');
    next = await getOp(next.id);
    t.match(next, { state: 'collecting_signatures', safe_nonce: String(BigInt(taken.safe_nonce) + 1n), reproposals: 0, signatures: [{ how: 'vault_intent' }] }, 'the next operation did not move: its nonce is the Safe\'s next');
    await sign(next, 'out');
    await s.tokenization.operations.settled();
    t.equal((await getOp(next.id)).state, 'confirmed', 'and executes there');
    t.equal(await client.readContract({ address: tok.address, abi, functionName: 'paused' }), false, 'on chain: unpaused by it');
  });

  t.test('gasless transfers: the holder signs the built request, the relayer sends and pays, metered and capped per tenant', async (t) => {
    // Base fee 0 from here on: a relay's worst case and cost are gas × the priority fee, the same for every
    // relay of one kind, so the cap below is met exactly.
    await s.anvil.testClient.setNextBlockBaseFeePerGas({ baseFeePerGas: 0n });
    await s.anvil.testClient.mine({ blocks: 1 });
    const relayer = s.chain.relayer!.address;
    const fwdAbi = forwarderAbi();
    const funded = createWalletClient({ account: anvilAccount(2), chain: foundry, transport: http(s.anvil.url) });
    let n = 0;
    const relays = () => s.store.count('token_relays');
    const relayerNonce = () => client.getTransactionCount({ address: relayer, blockTag: 'pending' });

    /** A token of `org` whose 1-of-2 admin Safe the outsider signs for alone; `holders` get `mint` each. */
    const token = async (kind: 'erc20' | 'erc721' | 'erc1155', org: string, bearer: string, holders: [string, Record<string, string>][]) => {
      const w = await s.vaultWallet(org);
      const body = { chain: 'evm-local', admin: { owners: [{ wallet_id: w.wallet.id }, { address: outsider.address }], threshold: 1 }, ...(kind === 'erc1155' ? { uri: 'ipfs://x/{id}' } : { name: `G ${kind}`, symbol: 'GLS' }), ...(kind === 'erc20' ? { decimals: 0 } : {}) };
      const made = await s.call('POST', `/v1/tokenization/${kind}`, body, bearer, key(`g-tok-${n++}`));
      t.equal(made.statusCode, 201, made.body);
      await s.tokenization.tokens.settled();
      const tok = (await s.call('GET', `/v1/tokenization/tokens/${made.json().id}`, undefined, bearer)).json();
      t.equal(tok.status, 'deployed');
      const op = async (path: string, b: unknown) => {
        const p = (await s.call('POST', `/v1/tokenization/tokens/${tok.id}/${path}`, b, bearer, key(`g-op-${n++}`))).json() as Op;
        const x = p.safe_tx;
        const tx: SafeTransaction = { to: getAddress(String(x.to)), value: 0n, data: x.data as Hex, operation: 0, safeTxGas: 0n, baseGas: 0n, gasPrice: 0n, gasToken: getAddress(String(x.gas_token)), refundReceiver: getAddress(String(x.refund_receiver)), nonce: BigInt(x.nonce!) };
        const signed = await s.call('POST', `/v1/tokenization/tokens/${tok.id}/operations/${p.id}/signatures`, { owner: outsider.address, signature: await outsider.signTypedData(safeTxTypedData(getAddress(tok.safe), 31337, tx)) }, bearer);
        t.equal(signed.json().state, 'ready', signed.body);
        await s.tokenization.operations.settled();
      };
      await op('roles/grant', { role: 'MINTER_ROLE', account: tok.safe });
      await op('policies', { minter: tok.safe, cap: (1n << 255n).toString(), period_seconds: 86_400 });
      for (const [to, amounts] of holders) await op('mint', { to, ...amounts });
      return { ...tok, base: `/v1/tokenization/tokens/${tok.id}`, op } as { id: string; address: Address; forwarder: Address; safe: string; base: string; op: typeof op };
    };
    const fwdNonce = (tok: { forwarder: Address }, a: string) => client.readContract({ address: tok.forwarder, abi: fwdAbi, functionName: 'nonces', args: [getAddress(a)] }) as Promise<bigint>;
    const build = async (tok: { base: string }, body: Record<string, unknown>, bearer = s.acme.developer) => {
      const r = await s.call('POST', `${tok.base}/gasless/transfer-request`, body, bearer);
      t.equal(r.statusCode, 200, r.body);
      return r.json();
    };
    const signed = async (who: ReturnType<typeof privateKeyToAccount>, built: { typed_data: Record<string, unknown> }) => ({ request: built.typed_data.message as Record<string, unknown>, signature: await who.signTypedData(built.typed_data as never) });
    const relay = (tok: { base: string }, body: unknown, k: string, bearer = s.acme.developer) => s.call('POST', `${tok.base}/gasless/relay`, body, bearer, key(k));

    // Holders own no ETH: they only sign.
    const holder = privateKeyToAccount(generatePrivateKey());
    const to = privateKeyToAccount(generatePrivateKey()).address;
    const batch = Array.from({ length: 4 }, () => privateKeyToAccount(generatePrivateKey()));
    const erc20 = await token('erc20', s.acme.org, s.acme.owner, [[holder.address, { amount: '1000' }], ...batch.map((b) => [b.address, { amount: '10' }] as [string, Record<string, string>])]);
    const balance20 = (a: string) => client.readContract({ address: erc20.address, abi, functionName: 'balanceOf', args: [getAddress(a)] });

    // Built: the complete typed data at the holder's forwarder nonce, and its hash.
    const built = await build(erc20, { from: holder.address, to, amount: '100' });
    t.match(built, {
      token_id: erc20.id, chain: 'evm-local', chain_id: 31337, forwarder: erc20.forwarder, relayer: relayer.toLowerCase(), transfer: { function: 'transfer(address,uint256)', from: holder.address.toLowerCase(), to: to.toLowerCase(), amount: '100', token_id: null },
      typed_data: { domain: { name: 'TokenForwarder', version: '1', chainId: 31337, verifyingContract: getAddress(erc20.forwarder) }, primaryType: 'ForwardRequest', message: { from: holder.address, to: getAddress(erc20.address), value: '0', nonce: '0', gas: /^[1-9][0-9]*000$/ } },
    });
    t.equal(built.hash, hashTypedData(built.typed_data), 'the hash is the typed data\'s');
    const first = await signed(holder, built);
    const eth0 = await client.getBalance({ address: relayer });
    const r1 = await relay(erc20, first, 'relay-1');
    t.equal(r1.statusCode, 201, r1.body);
    const rec = r1.json();
    t.match(rec, { id: /^rly_[0-9a-f]{26}$/, state: 'confirmed', failure: null, tx_hash: /^0x[0-9a-f]{64}$/, request: { from: holder.address.toLowerCase(), nonce: '0' }, transfer: { amount: '100' } });
    const receipt = await client.getTransactionReceipt({ hash: rec.tx_hash });
    t.same([rec.gas_used, rec.effective_gas_price, rec.cost_wei], [receipt.gasUsed.toString(), receipt.effectiveGasPrice.toString(), (receipt.gasUsed * receipt.effectiveGasPrice).toString()], 'the record shows the receipt\'s cost');
    t.equal(receipt.from.toLowerCase(), relayer.toLowerCase(), 'sent by the relayer');
    t.equal(eth0 - (await client.getBalance({ address: relayer })), BigInt(rec.cost_wei), 'the relayer paid exactly the recorded cost');
    t.ok(BigInt(rec.reserved_wei) >= BigInt(rec.cost_wei) && BigInt(rec.reserved_wei) === BigInt(rec.gas_limit) * BigInt(rec.max_fee_per_gas), 'reserved: gas limit × max fee, at least the cost');
    t.same([await balance20(holder.address), await balance20(to)], [900n, 100n], 'on chain: moved from the holder');
    t.equal(await client.getBalance({ address: holder.address }), 0n, 'the holder has and paid no ETH');
    t.equal(await fwdNonce(erc20, holder.address), 1n, 'the forwarder used the holder\'s nonce');
    t.equal((await relay(erc20, first, 'relay-1')).json().id, rec.id, 'the same Idempotency-Key and body: the same relay');
    t.match((await relay(erc20, { ...first, signature: `0x${'11'.repeat(65)}` }, 'relay-1')).json(), { code: 'idempotency_key_reused' });

    // A replay: refused by the API, and by the forwarder on chain when sent to it directly.
    const count0 = await relays();
    const rn0 = await relayerNonce();
    const replay = await relay(erc20, first, 'relay-replay');
    t.match([replay.statusCode, replay.json().code], [409, 'forward_request_used'], 'the API refuses a replay');
    const q = first.request as { from: Address; to: Address; value: string; gas: string; deadline: number; data: Hex };
    const direct = { from: q.from, to: q.to, value: 0n, gas: BigInt(q.gas), deadline: q.deadline, data: q.data, signature: first.signature };
    await t.rejects(client.simulateContract({ account: anvilAccount(2), address: erc20.forwarder, abi: fwdAbi, functionName: 'execute', args: [direct] }), /ERC2771ForwarderInvalidSigner/, 'the forwarder refuses it: its nonce is used');
    const forced = await funded.writeContract({ address: erc20.forwarder, abi: fwdAbi, functionName: 'execute', args: [direct], gas: 300_000n });
    t.equal((await client.waitForTransactionReceipt({ hash: forced })).status, 'reverted', 'sent anyway: reverted on chain');
    t.same([await balance20(holder.address), await balance20(to), await fwdNonce(erc20, holder.address)], [900n, 100n, 1n], 'nothing moved twice');

    // Altered after signing: refused by the API and by the forwarder.
    const second = await signed(holder, await build(erc20, { from: holder.address, to, amount: '50' }));
    const dataOf = (amount: bigint) => encodeFunctionData({ abi, functionName: 'transfer', args: [to, amount] });
    const altered: [string, Record<string, unknown>, number, string][] = [
      ['amount raised', { data: dataOf(500n) }, 422, 'forward_signature_invalid'],
      ['recipient changed', { data: encodeFunctionData({ abi, functionName: 'transfer', args: [anvilAccount(2).address, 50n] }) }, 422, 'forward_signature_invalid'],
      ['gas changed', { gas: String(BigInt(String(second.request.gas)) + 1000n) }, 422, 'forward_signature_invalid'],
      ['deadline moved', { deadline: Number(second.request.deadline) + 60 }, 422, 'forward_signature_invalid'],
      ['another holder named', { from: batch[0]!.address, data: dataOf(50n) }, 422, 'forward_signature_invalid'],
      ['another contract', { to: erc20.forwarder }, 422, 'validation_failed'],
      ['a value', { value: '1' }, 422, 'validation_failed'],
      ['an approval', { data: encodeFunctionData({ abi, functionName: 'approve', args: [anvilAccount(2).address, 1000n] }) }, 422, 'validation_failed'],
      ['expired', { deadline: Math.floor(s.clock.now() / 1000) - 1 }, 422, 'validation_failed'],
      ['beyond 24 hours', { deadline: Math.floor(s.clock.now() / 1000) + 86_401 }, 422, 'validation_failed'],
      ['a later nonce', { nonce: '2' }, 422, 'forward_signature_invalid'],
    ];
    for (const [what, change, status, code] of altered) {
      const r = await relay(erc20, { ...second, request: { ...second.request, ...change } }, `alt-${n++}`);
      t.match([r.statusCode, r.json().code], [status, code], `${what}: ${status} ${code}`);
    }
    const both = await relay(erc20, { ...second, request: { ...second.request, to: erc20.forwarder, value: '1' } }, `alt-${n++}`);
    t.same(both.json().fields.map((f: { field: string }) => f.field), ['request.to', 'request.value'], 'every rejected field named');
    const tampered = { ...direct, data: dataOf(500n), deadline: Number(second.request.deadline), gas: BigInt(String(second.request.gas)), signature: second.signature };
    await t.rejects(client.simulateContract({ account: anvilAccount(2), address: erc20.forwarder, abi: fwdAbi, functionName: 'execute', args: [tampered] }), /ERC2771ForwarderInvalidSigner/, 'the forwarder refuses the altered request');

    // Schema, roles, tenants, and a token not deployed: refused before anything else.
    for (const [what, body, bearer, status, code] of [
      ['no signature', { request: second.request }, s.acme.developer, 400, 'invalid_request'],
      ['a short signature', { ...second, signature: '0x12' }, s.acme.developer, 400, 'invalid_request'],
      ['an unknown field', { ...second, extra: 1 }, s.acme.developer, 400, 'invalid_request'],
      ['gas not a decimal', { ...second, request: { ...second.request, gas: '0x10' } }, s.acme.developer, 400, 'invalid_request'],
      ['a viewer', second, s.acme.viewer, 403, 'role_denied'],
      ['another tenant', second, s.globex.owner, 404, 'not_found'],
    ] as [string, unknown, string, number, string][]) {
      const r = await relay(erc20, body, `bad-${n++}`, bearer);
      t.match([r.statusCode, r.json().code], [status, code], what);
    }
    t.match((await s.call('POST', `${erc20.base}/gasless/relay`, second, s.acme.developer)).json(), { code: 'invalid_request' }, 'no Idempotency-Key: 400');
    for (const [what, body, bearer, status, code] of [
      ['ERC-20 with a token id', { from: holder.address, to, amount: '1', token_id: '1' }, s.acme.developer, 422, 'validation_failed'],
      ['to oneself', { from: holder.address, to: holder.address, amount: '1' }, s.acme.developer, 422, 'validation_failed'],
      ['gas over the bound', { from: holder.address, to, amount: '1', gas: 5_000_000 }, s.acme.developer, 422, 'validation_failed'],
      ['a deadline past', { from: holder.address, to, amount: '1', deadline: 1 }, s.acme.developer, 422, 'validation_failed'],
      ['more than the holder has', { from: holder.address, to, amount: '100000' }, s.acme.developer, 422, 'gasless_would_revert'],
      ['a bad address', { from: '0x12', to, amount: '1' }, s.acme.developer, 400, 'invalid_request'],
      ['a viewer', { from: holder.address, to, amount: '1' }, s.acme.viewer, 403, 'role_denied'],
      ['another tenant', { from: holder.address, to, amount: '1' }, s.globex.owner, 404, 'not_found'],
    ] as [string, unknown, string, number, string][]) {
      const r = await s.call('POST', `${erc20.base}/gasless/transfer-request`, body, bearer);
      t.match([r.statusCode, r.json().code], [status, code], `transfer-request, ${what}`);
    }
    const funds = await client.getBalance({ address: s.chain.sender.address });
    await s.anvil.testClient.setBalance({ address: s.chain.sender.address, value: 0n });
    const undeployed = await s.call('POST', '/v1/tokenization/erc20', { chain: 'evm-local', name: 'Stuck', symbol: 'STK', admin: { owners: [{ wallet_id: (await s.vaultWallet(s.acme.org)).wallet.id }], threshold: 1 } }, s.acme.owner, key('g-stuck'));
    await s.tokenization.tokens.settled();
    await s.anvil.testClient.setBalance({ address: s.chain.sender.address, value: funds });
    t.equal((await s.call('GET', `/v1/tokenization/tokens/${undeployed.json().id}`)).json().status, 'failed_resumable');
    const stuck = { base: `/v1/tokenization/tokens/${undeployed.json().id}` };
    t.match((await s.call('POST', `${stuck.base}/gasless/transfer-request`, { from: holder.address, to, amount: '1' }, s.acme.developer)).json(), { code: 'conflict' }, 'a token not deployed: 409');
    t.equal((await relay(stuck, { ...second, request: { ...second.request, to: undeployed.json().address } }, `bad-${n++}`)).statusCode, 409);

    // The token would refuse: a balance it does not have, a pause. 422 with the token's error, nothing sent.
    const tooMuch = await signed(holder, await build(erc20, { from: holder.address, to, amount: '5000', gas: 100_000 }));
    const broke = await relay(erc20, tooMuch, `refuse-${n++}`);
    t.match([broke.statusCode, broke.json().code, broke.json().error], [422, 'gasless_would_revert', /ERC20InsufficientBalance/], 'a balance the holder lacks: the token\'s error');
    await erc20.op('pause', {});
    const paused = await relay(erc20, second, `refuse-${n++}`);
    t.match([paused.statusCode, paused.json().code, paused.json().error], [422, 'gasless_would_revert', /EnforcedPause/], 'paused: the token\'s error');
    await erc20.op('unpause', {});
    t.same([await relays(), await relayerNonce(), await fwdNonce(erc20, holder.address), await balance20(holder.address)], [count0, rn0, 1n, 900n], 'every refusal: no relay recorded, nothing sent, the nonce unchanged');

    // Gasless off: no relayer key, a 422 naming the setting.
    const off = createTokenization(loadApiConfig({ API_DATA_DIR: s.dir }), s.platform, { chains: new Map([['evm-local', tokenChain(evmNetwork('evm-local')!, s.anvil.url, DEPLOYER_KEY)]]) });
    const scope = { tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id };
    const offErr = await off.gasless.transferRequest(scope, erc20.id, { from: holder.address, to, amount: '1' }).catch((e: CustodyError) => e);
    t.match(offErr, { code: 'gasless_unavailable', message: /API_TOKENIZATION_RELAYER_KEY_FILE/ });
    t.equal(httpStatusOfCode('gasless_unavailable'), 422);
    t.match(await off.gasless.relay(scope, { type: 'api_key', id: 'k' } as never, erc20.id, second as never, 'off').catch((e: CustodyError) => e), { code: 'gasless_unavailable' });

    // The altered request's original goes through.
    const ok2 = await relay(erc20, second, `relay-${n++}`);
    t.match(ok2.json(), { state: 'confirmed', request: { nonce: '1' } });
    t.same([await balance20(holder.address), await balance20(to)], [850n, 150n]);

    // ERC-721 and ERC-1155: the holder's safeTransferFrom, relayed.
    const erc721 = await token('erc721', s.acme.org, s.acme.owner, [[holder.address, { token_id: '7' }]]);
    const nft = await relay(erc721, await signed(holder, await build(erc721, { from: holder.address, to, token_id: '7' })), `relay-${n++}`);
    t.match(nft.json(), { state: 'confirmed', transfer: { function: 'safeTransferFrom(address,address,uint256)', token_id: '7', amount: null } });
    t.equal(await client.readContract({ address: erc721.address, abi: builtArtifact('ManagedERC721').abi, functionName: 'ownerOf', args: [7n] }), to, 'on chain: the NFT moved');
    const erc1155 = await token('erc1155', s.acme.org, s.acme.owner, [[holder.address, { token_id: '3', amount: '10' }]]);
    t.match((await s.call('POST', `${erc1155.base}/gasless/transfer-request`, { from: holder.address, to, token_id: '3' }, s.acme.developer)).json(), { code: 'validation_failed', fields: [{ field: 'amount' }] });
    const multi = await relay(erc1155, await signed(holder, await build(erc1155, { from: holder.address, to, token_id: '3', amount: '4' })), `relay-${n++}`);
    t.match(multi.json(), { state: 'confirmed', transfer: { token_id: '3', amount: '4' } });
    const b1155 = (a: string) => client.readContract({ address: erc1155.address, abi: builtArtifact('ManagedERC1155').abi, functionName: 'balanceOf', args: [getAddress(a), 3n] });
    t.same([await b1155(holder.address), await b1155(to)], [6n, 4n], 'on chain: the ERC-1155 units moved');

    // The cap. A new rolling period (the clock a window on); a prior spend of the tenant leaves 2.2 times one
    // relay's worst case; four relays race: two fit, two are refused with nothing sent (the actual cost of a
    // relay being well above half its worst case, what the first two free does not let a third in).
    s.clock.advance(86_400_000 + 1000);
    const budget = () => s.tokenization.gasless.budget(s.acme.tenant.id, 'evm-local');
    t.equal((await budget()).used, 0n, 'the earlier relays are out of the period');
    const requests = await Promise.all(batch.map(async (b) => signed(b, await build(erc20, { from: b.address, to: privateKeyToAccount(generatePrivateKey()).address, amount: '4' }))));
    const worst = BigInt(rec.reserved_wei);
    t.ok(BigInt(rec.cost_wei) * 10n > worst * 6n, `a relay costs above 0.6 of its worst case (${rec.cost_wei} of ${worst})`);
    const cap = (await budget()).cap;
    const filler = { ...rec, id: 'rly_prior', tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id, chain: 'evm-local', forwarder: erc20.forwarder, request: { ...rec.request, from: '0x000000000000000000000000000000000000dead' }, raw_tx: '0x', relayer_nonce: 0,
      state: 'confirmed', cost_wei: (cap - (worst * 11n) / 5n).toString(), created_at: new Date(s.clock.now()).toISOString(), v: 1 } as RelayRecord;
    await s.store.batch([RELAYS.putOp(filler.id, filler, { index: relayIndexOf(filler) })]);
    t.equal((await budget()).remaining, (worst * 11n) / 5n);
    const countB = await relays();
    const rnB = await relayerNonce();
    const raced = await Promise.all(requests.map((body, i) => relay(erc20, body, `race-${i}`)));
    const passed = raced.filter((r) => r.statusCode === 201);
    const refused = raced.filter((r) => r.statusCode !== 201);
    t.equal(passed.length, 2, 'two fit');
    t.same(passed.map((r) => r.json().state), ['confirmed', 'confirmed']);
    t.equal(refused.length, 2, 'two do not');
    for (const r of refused) t.match([r.statusCode, r.json().code, r.json().error], [429, 'relay_budget_exceeded', /wei of the tenant's .* wei cap remain/]);
    t.same([await relays(), await relayerNonce()], [countB + 2, rnB + 2], 'only the two that fit were recorded and sent');
    const used = await budget();
    t.ok(used.used <= cap, `within the cap: ${used.used} of ${cap}`);
    for (const [i, r] of raced.entries()) {
      const b = batch[i]!;
      t.same([await fwdNonce(erc20, b.address), await balance20(b.address)], r.statusCode === 201 ? [1n, 6n] : [0n, 10n], `holder ${i}: ${r.statusCode === 201 ? 'moved' : 'untouched'}`);
    }
    // Over the cap, sequentially too; another tenant's budget is its own.
    const left = raced.findIndex((r) => r.statusCode !== 201);
    const again = await relay(erc20, requests[left]!, `race-again-${n++}`);
    t.match([again.statusCode, again.json().code], [429, 'relay_budget_exceeded'], 'still over the cap: nothing sent');
    t.same([await relays(), await relayerNonce(), await fwdNonce(erc20, batch[left]!.address)], [countB + 2, rnB + 2, 0n]);
    const gHolder = privateKeyToAccount(generatePrivateKey());
    const globexToken = await token('erc20', s.globex.org, s.globex.owner, [[gHolder.address, { amount: '5' }]]);
    const gRelay = await relay(globexToken, await signed(gHolder, await build(globexToken, { from: gHolder.address, to, amount: '5' }, s.globex.developer)), 'globex-1', s.globex.developer);
    t.match([gRelay.statusCode, gRelay.json().state], [201, 'confirmed'], 'another tenant relays within its own cap');
    // The period rolls on: the spend drops out and the refused holder's transfer passes (built again: a day later
    // the first request is past its deadline).
    s.clock.advance(86_400_000 + 1000);
    t.match((await relay(erc20, requests[left]!, `race-late-${n++}`)).json(), { code: 'validation_failed', fields: [{ field: 'request.deadline' }] }, 'the old request expired');
    const later = await relay(erc20, await signed(batch[left]!, await build(erc20, { from: batch[left]!.address, to, amount: '4' })), `race-later-${n++}`);
    t.match([later.statusCode, later.json().state], [201, 'confirmed'], 'a period later it fits');

    // Not mined within the wait: answered `sent`, then followed to its receipt; the event says so.
    await s.anvil.testClient.setAutomine(false);
    const slowBody = await signed(holder, await build(erc20, { from: holder.address, to, amount: '1' }));
    const slow = await relay(erc20, slowBody, 'slow');
    t.match(slow.json(), { state: 'sent', cost_wei: null, gas_used: null });
    t.equal((await budget()).used >= BigInt(slow.json().reserved_wei), true, 'its reservation counts while sent');
    await s.anvil.testClient.mine({ blocks: 1 });
    await s.anvil.testClient.setAutomine(true);
    await waitUntil(async () => (await RELAYS.in(s.store).get(slow.json().id))!.state !== 'sent', 30_000, 'the relay to be followed to its receipt', 20);
    t.match((await relay(erc20, slowBody, 'slow')).json(), { id: slow.json().id, state: 'confirmed', cost_wei: /^[1-9][0-9]*$/ }, 'the same key answers it as it is now');

    // One event per relay that reached the chain, shaped as the catalog says.
    const gaslessEvents = (await events('tokenization.operation.confirmed')).filter((e) => e.data.kind === 'gasless_transfer');
    const confirmedRelays: string[] = [];
    for await (const r of s.store.all<RelayRecord>('token_relays')) if (r.state === 'confirmed' && r.id !== 'rly_prior') confirmedRelays.push(r.id);
    t.same(gaslessEvents.map((e) => e.data.operation_id).sort(), confirmedRelays.sort(), 'one confirmed event per confirmed relay');
    t.match(gaslessEvents.find((e) => e.data.operation_id === rec.id)!.data, { token_id: erc20.id, operation_id: rec.id, kind: 'gasless_transfer', tx_hash: rec.tx_hash });
    t.same(Object.keys(gaslessEvents[0]!.data).sort(), Object.keys(eventType('tokenization.operation.confirmed')!.example_payload).sort());
  });
});
