// The tokenization API's authorities and deployments on one real anvil (docs/platform/tokenization.md):
// roles; an authority proves an EOA by EIP-191 and a Safe by ERC-1271 (viem against the chain), one
// challenge one use, expiring; control Safes deployed or registered after reading owners and threshold; an
// ERC-20, ERC-721 and ERC-1155 deployed to the addresses answered before anything was sent, governed by a
// 2-of-3 Safe of the customer's vault wallets and an outside signer, checked on chain; a deployment that
// fails (the deployer cannot pay) is failed_resumable and resumes without deploying anything twice;
// another workspace's records are 404; bad input gets its status and code and changes nothing.
import t from 'tap';
import { getAddress, hashMessage, type Address, type Hex } from 'viem';
import { tokenizationApp } from './tokenization-app.ts';
import { builtArtifact, codeMatches } from '../../../api/tokenization/chain/artifacts.ts';
import { SAFE_ABI } from '../../../api/tokenization/chain/safe-abi.ts';
import { createSafe, safeSaltNonce } from '../../../api/tokenization/chain/safe-proxy.ts';
import { infrastructureAddresses } from '../../../api/tokenization/chain/safe-infrastructure.ts';
import { eventType } from '../../../api/webhooks/event-catalog.ts';
import { anvilAccount } from '../../chains/anvil.ts';

// The app and its anvil are started, and stopped, by a test of its own, not at the top level: the file
// shares its process with others (test/support/units.ts).
t.test('the tokenization API, on the app over one anvil', async (t) => {
  t.setTimeout(300_000);
  const s = await tokenizationApp(t);
  const issuer = anvilAccount(3);
  const stranger = anvilAccount(4);
  const client = s.chain.client;

  async function count(collection: string) {
    let n = 0;
    for await (const _ of s.store.all(collection)) n++;
    return n;
  }
  async function events(type: string) {
    const out: { data: Record<string, unknown> }[] = [];
    for await (const e of s.store.all<{ type: string; data: Record<string, unknown> }>('webhook_events')) if (e.type === type) out.push(e);
    return out;
  }
  const key = (k: string) => ({ 'idempotency-key': k });

  let authorityId = '';

  t.test('authorities: roles, idempotent creation, proofs by EIP-191 and ERC-1271, one-use expiring challenges, control Safes', async (t) => {
    // Roles: a viewer reads, a developer cannot manage authorities.
    t.equal((await s.call('GET', '/v1/tokenization/authorities', undefined, s.acme.viewer)).statusCode, 200);
    for (const token of [s.acme.viewer, s.acme.developer]) {
      const r = await s.call('POST', '/v1/tokenization/authorities', { name: 'x' }, token, key('role'));
      t.match([r.statusCode, r.json().code], [403, 'role_denied']);
    }
    t.match((await s.call('POST', '/v1/tokenization/authorities', { name: 'Acme Issuer' })).json(), { code: 'invalid_request' }, 'Idempotency-Key required');
    t.match((await s.call('POST', '/v1/tokenization/authorities', { name: 'Acme Issuer', extra: 1 }, undefined, key('a-bad'))).statusCode, 400, 'unknown fields refused');
    t.equal(await count('token_authorities'), 0, 'refusals stored nothing');

    const made = await s.call('POST', '/v1/tokenization/authorities', { name: 'Acme Issuer' }, undefined, key('a-1'));
    t.equal(made.statusCode, 201, made.body);
    const a = made.json();
    authorityId = a.id;
    t.match(a, { id: /^tka_[0-9a-f]{26}$/, name: 'Acme Issuer', addresses: [], control_safes: [] });
    t.equal((await s.call('POST', '/v1/tokenization/authorities', { name: 'Acme Issuer' }, undefined, key('a-1'))).json().id, a.id, 'the same key and body: the same authority');
    t.match((await s.call('POST', '/v1/tokenization/authorities', { name: 'Other' }, undefined, key('a-1'))).json(), { code: 'idempotency_key_reused' });
    t.equal(await count('token_authorities'), 1);
    t.equal((await s.call('GET', `/v1/tokenization/authorities/${a.id}`, undefined, s.globex.owner)).statusCode, 404, 'another workspace: 404');
    t.equal((await s.call('GET', `/v1/tokenization/authorities/${a.id}`, undefined, s.acme.viewer)).json().id, a.id);

    // EIP-191: a challenge for the issuer's EOA.
    const challenge = async (address: string, k: string) => {
      const r = await s.call('POST', `/v1/tokenization/authorities/${a.id}/proof-challenge`, { address, chain: 'evm-local' }, undefined, key(k));
      if (r.statusCode !== 201) throw new Error(r.body);
      return r.json() as { challenge_id: string; message: string; expires_at: string };
    };
    t.match((await s.call('POST', `/v1/tokenization/authorities/${a.id}/proof-challenge`, { address: issuer.address, chain: 'evm-nowhere' }, undefined, key('c-bad'))).json(), { code: 'validation_failed' }, 'an unknown chain: 422');
    const c1 = await challenge(issuer.address, 'c-1');
    t.match(c1.message, new RegExp(`authority: ${a.id}[\\s\\S]*address: ${issuer.address}[\\s\\S]*chain: evm-local \\(chain id 31337\\)[\\s\\S]*challenge: ${c1.challenge_id}`), 'the message binds authority, address, chain and challenge');
    const prove = (challengeId: string, signature: Hex) => s.call('POST', `/v1/tokenization/authorities/${a.id}/proof`, { challenge_id: challengeId, signature });

    const wrong = await prove(c1.challenge_id, await stranger.signMessage({ message: c1.message }));
    t.match([wrong.statusCode, wrong.json().code], [422, 'address_proof_invalid'], 'another signer proves nothing');
    t.same((await s.call('GET', `/v1/tokenization/authorities/${a.id}`)).json().addresses, [], 'nothing recorded');
    const ok = await prove(c1.challenge_id, await issuer.signMessage({ message: c1.message }));
    t.equal(ok.statusCode, 200, ok.body);
    t.match(ok.json().addresses, [{ address: issuer.address.toLowerCase(), chain: 'evm-local', kind: 'eoa' }], 'the challenge stayed usable after the wrong proof');
    t.match((await prove(c1.challenge_id, await issuer.signMessage({ message: c1.message }))).json(), { code: 'challenge_used' }, 'one challenge, one use');

    const c2 = await challenge(stranger.address, 'c-2');
    s.clock.advance(601_000);
    const late = await prove(c2.challenge_id, await stranger.signMessage({ message: c2.message }));
    t.match([late.statusCode, late.json().code], [409, 'challenge_expired']);
    t.equal((await s.call('GET', `/v1/tokenization/authorities/${a.id}`)).json().addresses.length, 1, 'the expired proof added nothing');
    t.match((await s.call('POST', '/v1/tokenization/authorities/ZZ/proof', { challenge_id: c2.challenge_id, signature: '0x00' })).statusCode, 404);

    // A control Safe deployed through the chain layer, owned by the proven EOA.
    const refusedSafe = await s.call('POST', '/v1/tokenization/authorities/control-safes', { authority_id: a.id, chain: 'evm-local', owners: [issuer.address, stranger.address], threshold: 1 }, undefined, key('cs-bad'));
    t.match([refusedSafe.statusCode, refusedSafe.json().code], [422, 'validation_failed'], 'an unproven owner is refused');
    const deployed = await s.call('POST', '/v1/tokenization/authorities/control-safes', { authority_id: a.id, chain: 'evm-local', owners: [issuer.address], threshold: 1 }, undefined, key('cs-1'));
    t.equal(deployed.statusCode, 201, deployed.body);
    const safe = deployed.json().control_safes[0] as { address: Address; origin: string; owners: string[]; threshold: number };
    t.match(safe, { origin: 'deployed', owners: [issuer.address.toLowerCase()], threshold: 1 });
    t.same(await client.readContract({ address: safe.address, abi: SAFE_ABI, functionName: 'getOwners' }), [issuer.address], 'on chain: the Safe\'s owners');
    t.equal((await s.call('POST', '/v1/tokenization/authorities/control-safes', { authority_id: a.id, chain: 'evm-local', owners: [issuer.address], threshold: 1 }, undefined, key('cs-1'))).json().control_safes.length, 1, 'a replay deploys nothing more');

    // ERC-1271: the Safe proves control of itself; its owner signs the SafeMessage of the EIP-191 hash.
    const c3 = await challenge(safe.address, 'c-3');
    const safeSig = await issuer.signTypedData({ domain: { chainId: 31337, verifyingContract: safe.address }, types: { SafeMessage: [{ name: 'message', type: 'bytes' }] }, primaryType: 'SafeMessage', message: { message: hashMessage(c3.message) } });
    const byStranger = await stranger.signTypedData({ domain: { chainId: 31337, verifyingContract: safe.address }, types: { SafeMessage: [{ name: 'message', type: 'bytes' }] }, primaryType: 'SafeMessage', message: { message: hashMessage(c3.message) } });
    t.match((await prove(c3.challenge_id, byStranger)).json(), { code: 'address_proof_invalid' }, 'ERC-1271 refuses a non-owner\'s signature');
    const proved = await prove(c3.challenge_id, safeSig);
    t.equal(proved.statusCode, 200, proved.body);
    t.match(proved.json().addresses.find((p: { address: string }) => p.address === safe.address), { kind: 'contract' }, 'a contract account proven by ERC-1271');

    // Register an existing Safe, read on chain.
    const infra = infrastructureAddresses();
    const existing = await createSafe(client, s.chain.sender, { owners: [issuer.address], threshold: 1, saltNonce: safeSaltNonce('existing') }, infra);
    const alien = await createSafe(client, s.chain.sender, { owners: [stranger.address], threshold: 1, saltNonce: safeSaltNonce('alien') }, infra);
    t.match((await s.call('POST', '/v1/tokenization/authorities/control-safes', { authority_id: a.id, chain: 'evm-local', address: alien.address }, undefined, key('cs-alien'))).json(), { code: 'validation_failed', error: /not an address this authority proved/ });
    t.match((await s.call('POST', '/v1/tokenization/authorities/control-safes', { authority_id: a.id, chain: 'evm-local', address: stranger.address }, undefined, key('cs-eoa'))).json(), { code: 'validation_failed', error: /no contract/ });
    const registered = await s.call('POST', '/v1/tokenization/authorities/control-safes', { authority_id: a.id, chain: 'evm-local', address: existing.address }, undefined, key('cs-2'));
    t.equal(registered.statusCode, 201, registered.body);
    t.match(registered.json().control_safes[1], { address: existing.address.toLowerCase(), origin: 'registered', owners: [issuer.address.toLowerCase()], threshold: 1 });
    t.match((await s.call('POST', '/v1/tokenization/authorities/control-safes', { authority_id: a.id, chain: 'evm-local', address: existing.address }, undefined, key('cs-3'))).json(), { code: 'conflict' }, 'registered once');
    t.equal((await s.call('POST', '/v1/tokenization/authorities/control-safes', { authority_id: a.id, chain: 'evm-local', address: existing.address }, s.globex.owner, key('cs-g'))).statusCode, 404, 'another workspace\'s authority: 404');

    // The list, paginated.
    await s.call('POST', '/v1/tokenization/authorities', { name: 'Second' }, undefined, key('a-2'));
    const p1 = (await s.call('GET', '/v1/tokenization/authorities?limit=1')).json();
    t.match(p1, { has_more: true, data: [{ id: a.id }] });
    const p2 = (await s.call('GET', `/v1/tokenization/authorities?limit=1&cursor=${p1.next_cursor}`)).json();
    t.match(p2, { has_more: false, next_cursor: null, data: [{ name: 'Second' }] });
    t.same((await s.call('GET', '/v1/tokenization/authorities', undefined, s.globex.owner)).json().data, [], 'Globex sees none');
  });

  t.test('deploy: addresses known before sending, a 2-of-3 Safe of vault wallets and an outside signer, checked on chain; resumable', async (t) => {
    const w1 = await s.vaultWallet(s.acme.org);
    const w2 = await s.vaultWallet(s.acme.org);
    const outsider = anvilAccount(5).address;
    const foreign = await s.vaultWallet(s.globex.org);
    const admin = { owners: [{ wallet_id: w1.wallet.id }, { wallet_id: w2.wallet.id }, { address: outsider }], threshold: 2 };
    const body = { chain: 'evm-local', name: 'Acme Bond', symbol: 'ABND', decimals: 6, authority_id: authorityId, admin };

    // Refusals first: nothing is stored.
    const refused: [string, string, unknown, string | undefined, number, string][] = [
      ['developer', '/v1/tokenization/erc20', body, s.acme.developer, 403, 'role_denied'],
      ['no key', '/v1/tokenization/erc20', body, undefined, 400, 'invalid_request'],
      ['another org\'s wallet', '/v1/tokenization/erc20', { ...body, admin: { ...admin, owners: [{ wallet_id: foreign.wallet.id }, ...admin.owners] } }, s.acme.owner, 422, 'validation_failed'],
      ['threshold above owners', '/v1/tokenization/erc20', { ...body, admin: { ...admin, threshold: 4 } }, s.acme.owner, 422, 'validation_failed'],
      ['only outside signers', '/v1/tokenization/erc20', { ...body, admin: { owners: [{ address: outsider }], threshold: 1 } }, s.acme.owner, 422, 'validation_failed'],
      ['an owner twice', '/v1/tokenization/erc20', { ...body, admin: { owners: [{ wallet_id: w1.wallet.id }, { address: w1.wallet.address }], threshold: 1 } }, s.acme.owner, 422, 'validation_failed'],
      ['unknown chain', '/v1/tokenization/erc20', { ...body, chain: 'evm-nowhere' }, s.acme.owner, 422, 'validation_failed'],
      ['another workspace\'s authority', '/v1/tokenization/erc20', body, s.globex.owner, 422, 'validation_failed'],
      ['a field of another kind', '/v1/tokenization/erc20', { ...body, uri: 'x' }, s.acme.owner, 400, 'invalid_request'],
      ['erc1155 without uri', '/v1/tokenization/erc1155', { chain: 'evm-local', admin }, s.acme.owner, 400, 'invalid_request'],
    ];
    for (const [what, url, b, token, status, code] of refused) {
      const r = await s.call('POST', url, b, token, what === 'no key' ? {} : key(`bad-${what.replace(/[^a-z0-9]/g, '-')}`));
      t.match([r.statusCode, r.json().code], [status, code], what);
    }
    t.equal(await count('tokens'), 0, 'the refusals stored nothing');

    const r = await s.call('POST', '/v1/tokenization/erc20', body, undefined, key('t-1'));
    t.equal(r.statusCode, 201, r.body);
    const tok = r.json();
    t.match(tok, { id: /^tok_[0-9a-f]{26}$/, kind: 'erc20', status: 'deploying', name: 'Acme Bond', symbol: 'ABND', decimals: 6, authority_id: authorityId, admin: { threshold: 2 } });
    t.same(tok.admin.owners.map((o: { kind: string }) => o.kind), ['vault', 'vault', 'outside']);
    t.equal(tok.address, getAddress(tok.address).toLowerCase());
    const replay = await s.call('POST', '/v1/tokenization/erc20', body, undefined, key('t-1'));
    t.equal(replay.json().id, tok.id, 'the same key and body: the same token');
    t.match((await s.call('POST', '/v1/tokenization/erc20', { ...body, symbol: 'X' }, undefined, key('t-1'))).json(), { code: 'idempotency_key_reused' });
    await s.tokenization.tokens.settled();
    const got = (await s.call('GET', `/v1/tokenization/tokens/${tok.id}`, undefined, s.acme.viewer)).json();
    t.match(got, { status: 'deployed', address: tok.address, safe: tok.safe, failure: null, deploy_attempts: 1 }, 'deployed at the addresses answered before sending');
    t.ok(got.steps.every((x: { status: string }) => x.status === 'done'));
    t.equal((await s.call('GET', `/v1/tokenization/tokens/${tok.id}`, undefined, s.globex.owner)).statusCode, 404, 'another workspace\'s token: 404');

    // On chain: the artifact's code, the Safe its admin with the owners and threshold asked for.
    const abi = builtArtifact('ManagedERC20').abi;
    t.ok(codeMatches(await client.getCode({ address: tok.address }), builtArtifact('ManagedERC20')), 'the token\'s code is the artifact\'s');
    t.equal(await client.readContract({ address: tok.address, abi, functionName: 'hasRole', args: [`0x${'00'.repeat(32)}`, getAddress(tok.safe)] }), true, 'the Safe holds DEFAULT_ADMIN_ROLE');
    t.equal(await client.readContract({ address: tok.address, abi, functionName: 'decimals' }), 6);
    t.same(await client.readContract({ address: tok.safe, abi: SAFE_ABI, functionName: 'getOwners' }), [w1.wallet.address, w2.wallet.address, outsider].map((x) => getAddress(x)));
    t.equal(await client.readContract({ address: tok.safe, abi: SAFE_ABI, functionName: 'getThreshold' }), 2n);
    const deployedEvents = await events('token.deployed');
    t.equal(deployedEvents.length, 1, 'token.deployed once');
    t.same(deployedEvents[0]!.data, { token_id: tok.id, standard: 'erc20', chain: 'evm-local', address: tok.address });
    t.same(Object.keys(deployedEvents[0]!.data).sort(), Object.keys(eventType('token.deployed')!.example_payload).sort(), 'shaped as the catalog says');
    t.match((await s.call('POST', `/v1/tokenization/tokens/${tok.id}/deploy/resume`, undefined, undefined, key('r-0'))).json(), { code: 'conflict' }, 'a deployed token has nothing to resume');

    // ERC-721 and ERC-1155.
    const nft = await s.call('POST', '/v1/tokenization/erc721', { chain: 'evm-local', name: 'Acme Deeds', symbol: 'DEED', base_uri: 'https://acme.example/deeds/', admin }, undefined, key('t-2'));
    t.equal(nft.statusCode, 201, nft.body);
    // The deployer cannot pay: the deployment stops at the first step it must send (the shared infrastructure is already there).
    const deployer = s.chain.sender.address;
    const funds = await client.getBalance({ address: deployer });
    await s.tokenization.tokens.settled();
    await s.anvil.testClient.setBalance({ address: deployer, value: 0n });
    const multi = await s.call('POST', '/v1/tokenization/erc1155', { chain: 'evm-local', uri: 'https://acme.example/{id}.json', admin }, undefined, key('t-3'));
    t.equal(multi.statusCode, 201, multi.body);
    await s.tokenization.tokens.settled();
    const failed = (await s.call('GET', `/v1/tokenization/tokens/${multi.json().id}`)).json();
    t.match(failed, { status: 'failed_resumable', failure: { reason: 'engine', step: 'Safe' } }, 'an engine error, at the Safe step');
    t.match(failed.steps.map((x: { name: string; status: string }) => `${x.name}:${x.status}`), ['DeterministicDeployer:done', 'Safe:done', 'SafeL2:done', 'SafeProxyFactory:done', 'CompatibilityFallbackHandler:done', 'MultiSend:done', 'MultiSendCallOnly:done', 'ERC2771Forwarder:done', 'Safe:sent', 'ManagedERC1155:pending']);
    t.equal(await client.getCode({ address: failed.address }), undefined, 'no token on chain');
    await s.anvil.testClient.setBalance({ address: deployer, value: funds });
    const resumed = await s.call('POST', `/v1/tokenization/tokens/${failed.id}/deploy/resume`, undefined, s.acme.owner, key('r-1'));
    t.match(resumed.json(), { status: 'deploying', deploy_attempts: 2 });
    t.equal((await s.call('POST', `/v1/tokenization/tokens/${failed.id}/deploy/resume`, undefined, s.acme.owner, key('r-1'))).json().id, failed.id, 'a replayed resume answers the token');
    await s.tokenization.tokens.settled();
    const after = (await s.call('GET', `/v1/tokenization/tokens/${failed.id}`)).json();
    t.match(after, { status: 'deployed', failure: null, deploy_attempts: 2, address: failed.address, safe: failed.safe });
    t.ok(codeMatches(await client.getCode({ address: after.address }), builtArtifact('ManagedERC1155')), 'the ERC-1155 is on chain, where it was predicted');
    t.equal(await client.readContract({ address: after.address, abi: builtArtifact('ManagedERC1155').abi, functionName: 'uri', args: [1n] }), 'https://acme.example/{id}.json');
    t.equal((await events('token.deployed')).length, 3, 'one token.deployed per token');

    // The list with filters, paginated; Globex sees none.
    const all = (await s.call('GET', '/v1/tokenization/tokens')).json();
    t.equal(all.data.length, 3);
    t.match((await s.call('GET', '/v1/tokenization/tokens?kind=erc721')).json().data, [{ kind: 'erc721', name: 'Acme Deeds' }]);
    t.equal((await s.call('GET', '/v1/tokenization/tokens?status=failed_resumable')).json().data.length, 0);
    const first = (await s.call('GET', '/v1/tokenization/tokens?limit=2')).json();
    t.match(first, { has_more: true });
    t.equal((await s.call('GET', `/v1/tokenization/tokens?limit=2&cursor=${first.next_cursor}`)).json().data.length, 1);
    t.match((await s.call('GET', `/v1/tokenization/tokens?limit=2&cursor=${first.next_cursor}&kind=erc20`)).json(), { code: 'cursor_filter_mismatch' }, 'a cursor belongs to its filters');
    t.same((await s.call('GET', '/v1/tokenization/tokens', undefined, s.globex.owner)).json().data, []);
    t.match((await s.call('GET', '/v1/tokenization/tokens?kind=erc9999')).statusCode, 400);
  });
});
