// The tokenization journey (issue 39 "Show"; docs/platform/tokenization.md), run by rwa-journey.test.ts on the
// stack it starts (one stack for both journeys), on real processes (coordinator,
// three service nodes, the organization's self node, the API) and a real anvil, the API configured as
// `npm start` configures it. An authority proves control of its address; a 2-of-3 admin Safe owned by three
// of the customer's vault wallets (two hosted ECDSA threshold vaults on the service nodes, the third a self
// vault whose key the customer's own node shares) deploys an ERC-20; MINTER_ROLE and a mint policy, a mint
// under it and one over its cap (refused on chain, decoded), pause, a holder's transfer refused while paused,
// unpause, a gasless transfer relayed for a holder, a role granted and revoked, recovery from a lost address; an ERC-721 and an ERC-1155 deployed and
// minted by their Safes, then by a vault wallet under its own mint policy (policy-mint) and moved by it
// (nft-transfers). Every owner signature is the customer's: a kind-3 intent built and signed with the SDK, posted to
// operations/{opId}/signatures, signed by the vault's nodes. Every state is read on chain with viem; every
// event reaches the customer's webhook receiver exactly once. Then the API is killed in the middle of a
// deployment (its Safe sent, its token not), restarted, and the resumed deployment leaves one token, one
// Safe and nothing else on chain.
import type { Test } from 'tap';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createWalletClient, encodeDeployData, encodeFunctionData, getAddress, getContractAddress, http, keccak256, parseAbiItem, stringToBytes, toHex, zeroHash, type Hex,
} from 'viem';
import { foundry } from 'viem/chains';
import type { OperationView, TokenizationStack, TokenView } from './tokenization-stack.ts';
import { waitUntil } from '../cluster/cluster-harness.ts';
import { mining } from './stack.ts';
import type { Wallet } from '../../api/sdk/client.ts';
import { verifyWebhook, type WebhookEvent } from '../../api/sdk/webhook-receiver.ts';
import { builtArtifact, codeMatches } from '../../api/tokenization/chain/artifacts.ts';
import { infrastructureAddresses } from '../../api/tokenization/chain/safe-infrastructure.ts';
import { encodeMultiSend } from '../../api/tokenization/chain/multisend.ts';
import { DETERMINISTIC_DEPLOYER } from '../../api/tokenization/chain/deterministic-deployer.ts';
import { SAFE_ABI } from '../../api/tokenization/chain/safe-abi.ts';
import { decodeIntent } from '../../core/intents/intent.ts';
import { anvilAccount } from '../chains/anvil.ts';

const issuer = anvilAccount(1);
const holder = anvilAccount(2);
const friend = anvilAccount(3);
const operator = anvilAccount(4);
const replacement = anvilAccount(5);
const MINTER = keccak256(toHex('MINTER_ROLE'));
const PAUSER = keccak256(toHex('PAUSER_ROLE'));
const erc20 = builtArtifact('ManagedERC20').abi;
const erc721 = builtArtifact('ManagedERC721').abi;
const erc1155 = builtArtifact('ManagedERC1155').abi;
const infra = infrastructureAddresses();
const PROXY_CREATION = parseAbiItem('event ProxyCreation(address indexed proxy, address singleton)');

/**
 * The tokenization journey on `s` (started with the organization's self node). Answers the customer's three
 * owner vault wallets (2-of-3 admin of every token here), for the journeys run after it on the same stack.
 */
export async function tokenizationJourney(t: Test, s: TokenizationStack): Promise<{ owners: Wallet[] }> {
  const chain = s.anvil!.publicClient;
  const { platform, client } = s;

  // The customer's webhook receiver: every request kept, each verified as the SDK's receiver verifies it.
  const got: { headers: IncomingHttpHeaders; body: string }[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    receiver.closeAllConnections();
    receiver.close(() => r());
  }));
  const endpoint = await platform('POST', '/webhook-endpoints', {
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, events: ['token.deployed', 'tokenization.operation.confirmed', 'tokenization.operation.failed'],
  });
  if (endpoint.status !== 201) throw new Error(`webhook endpoint: ${JSON.stringify(endpoint.json)}`);
  const { public_key: webhookKey } = await (await fetch(`${s.base}/v1/public/webhook-signing-key`)).json() as { public_key: string };
  const received = (): WebhookEvent[] => got.map((g) => {
    const v = verifyWebhook(g.headers, g.body, { secrets: [endpoint.json.secret as string], publicKey: webhookKey });
    if (!v.ok) throw new Error(`a delivery did not verify: ${v.reason}`);
    return v.event;
  });

  // The customer's three owner vaults, made at once: two hosted (2-of-3 on the service nodes), one self
  // (2-of-2 with the customer's own node); an evm-local wallet each.
  const vaults = await Promise.all([
    client.createVault({ tier: 'hosted', name: 'treasury-a' }), client.createVault({ tier: 'hosted', name: 'treasury-b' }), client.createVault({ tier: 'self', name: 'own-node' }),
  ].map(async (made) => client.waitForVault((await made).id, undefined, { timeoutMs: 240_000 })));
  const [a, b, c]: Wallet[] = await Promise.all(vaults.map((v) => client.createWallet(v.id, { chain: 'evm-local' })));
  const owners = [a!, b!, c!];
  const admin = { owners: owners.map((w) => ({ wallet_id: w.id })), threshold: 2 };

  /** What every test below made, for the webhook check at the end. */
  const tokens: string[] = [];
  const operations: OperationView[] = [];
  /** Gasless relays: their outcome events are operation events whose operation_id is the relay's id. */
  const relays: string[] = [];
  let seq = 0;
  const op = async (tokenId: string, path: string, body: unknown, signers: Wallet[]) => {
    const done = await s.operation(tokenId, path, body, signers, `journey-${seq++}`);
    operations.push(done);
    return done;
  };
  const deploy = async (kind: 'erc20' | 'erc721' | 'erc1155', body: Record<string, unknown>, key: string) => {
    const r = await platform('POST', `/tokenization/${kind}`, { chain: 'evm-local', admin, ...body }, { 'idempotency-key': key });
    if (r.status !== 201) throw new Error(`deploying ${kind}: ${JSON.stringify(r.json)}`);
    tokens.push(r.json.id);
    return s.waitToken(r.json.id, (x) => x.status !== 'deploying', `${kind} deployed`);
  };
  /** A vault wallet's own call on a token (policy-mint, nft-transfers), posted as the SDK prepared it; settled. */
  const vaultCall = async (tokenId: string, path: string, prepared: { body: Record<string, unknown> }) => {
    const r = await platform('POST', `/tokenization/tokens/${tokenId}/${path}`, prepared.body, { 'idempotency-key': `journey-${seq++}` });
    if (r.status !== 201) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.json)}`);
    // Its vault transaction must become final: blocks keep coming while it does (anvil mines only on demand).
    const done = await mining(() => s.anvil!.testClient.mine({ blocks: 1 }), s.settled(tokenId, r.json.id as string));
    operations.push(done);
    return done;
  };
  const readSafe = async (safe: Hex) => ({
    owners: (await chain.readContract({ address: safe, abi: SAFE_ABI, functionName: 'getOwners' })).map((o) => o.toLowerCase()),
    threshold: Number(await chain.readContract({ address: safe, abi: SAFE_ABI, functionName: 'getThreshold' })),
  });
  const holderWallet = createWalletClient({ account: holder, chain: foundry, transport: http(s.anvil!.url) });
  let authority = '';

  await t.test('an authority proves control of its address with the challenge it was given (EIP-191)', async (t) => {
    const made = await platform('POST', '/tokenization/authorities', { name: 'Acme Issuer' }, { 'idempotency-key': 'journey-authority' });
    t.equal(made.status, 201);
    authority = made.json.id;
    const challenge = await platform('POST', `/tokenization/authorities/${authority}/proof-challenge`, { address: issuer.address, chain: 'evm-local' }, { 'idempotency-key': 'journey-challenge' });
    t.equal(challenge.status, 201);
    t.match(challenge.json.message, new RegExp(`authority: ${authority}\\naddress: ${issuer.address}\\nchain: evm-local \\(chain id 31337\\)`), 'the message names the authority, the address and the chain');
    const proof = { challenge_id: challenge.json.challenge_id, signature: await issuer.signMessage({ message: challenge.json.message }) };
    const proven = await platform('POST', `/tokenization/authorities/${authority}/proof`, proof);
    t.equal(proven.status, 200, JSON.stringify(proven.json));
    t.match(proven.json.addresses, [{ address: issuer.address.toLowerCase(), chain: 'evm-local', kind: 'eoa' }], 'the address is proven');
    const again = await platform('POST', `/tokenization/authorities/${authority}/proof`, proof);
    t.match([again.status, again.json.code], [409, 'challenge_used'], 'a challenge proves once');
  });

  await t.test('an ERC-20 under a 2-of-3 Safe of the customer\'s vaults: mint under a policy, pause, unpause, roles, recovery', async (t) => {
    const tok = await deploy('erc20', { name: 'Acme Note', symbol: 'ANOTE', decimals: 6, authority_id: authority }, 'journey-erc20');
    t.equal(tok.status, 'deployed', JSON.stringify(tok.failure));
    const at = { address: tok.address, abi: erc20 } as const;

    // What a customer checks with nothing but the artifact and the chain (docs "What a customer checks").
    const initCode = encodeDeployData({ abi: erc20, bytecode: builtArtifact('ManagedERC20').bytecode, args: ['Acme Note', 'ANOTE', 6, getAddress(tok.safe), infra.forwarder] });
    t.equal(getContractAddress({ opcode: 'CREATE2', from: DETERMINISTIC_DEPLOYER, salt: keccak256(stringToBytes(`custody/token/v1:${tok.id}`)), bytecode: initCode }), getAddress(tok.address), 'the address commits to the init code');
    t.ok(codeMatches(await chain.getCode({ address: tok.address }), builtArtifact('ManagedERC20')), 'the code on chain is the committed artifact\'s');
    t.same(await readSafe(tok.safe), { owners: owners.map((w) => w.address.toLowerCase()), threshold: 2 }, 'the admin Safe: the three vault wallets, 2 of 3');
    t.equal(await chain.readContract({ ...at, functionName: 'hasRole', args: [zeroHash, getAddress(tok.safe)] }), true, 'the Safe is the token\'s admin');
    t.equal(await chain.readContract({ ...at, functionName: 'hasRole', args: [zeroHash, s.deployer] }), false, 'the service deployer is not');
    t.same([await chain.readContract({ ...at, functionName: 'symbol' }), await chain.readContract({ ...at, functionName: 'decimals' })], ['ANOTE', 6]);
    const balance = (who: Hex) => chain.readContract({ ...at, functionName: 'balanceOf', args: [who] });

    t.equal((await op(tok.id, 'roles/grant', { role: 'MINTER_ROLE', account: tok.safe }, [a!, b!])).state, 'confirmed');
    t.equal(await chain.readContract({ ...at, functionName: 'hasRole', args: [MINTER, getAddress(tok.safe)] }), true, 'on chain: the Safe is a minter');
    t.equal((await op(tok.id, 'policies', { minter: tok.safe, cap: '1000', period_seconds: 86_400 }, [b!, c!])).state, 'confirmed');
    t.match(await chain.readContract({ ...at, functionName: 'mintPolicy', args: [getAddress(tok.safe)] }), [1000n, 86_400n, 0n, 1000n], 'on chain: 1000 per day');
    const mint = await op(tok.id, 'mint', { to: holder.address, amount: '600' }, [a!, c!]);
    t.match(mint, { state: 'confirmed', signatures: [{ how: 'vault_intent' }, { how: 'vault_intent' }] }, 'minted by the Safe, signed by two owner vaults through their intents');
    t.same(mint.signatures.map((x) => x.wallet_id).sort(), [a!.id, c!.id].sort());
    t.equal(await balance(holder.address), 600n, 'on chain: minted');
    t.match(await chain.readContract({ ...at, functionName: 'mintPolicy', args: [getAddress(tok.safe)] }), [1000n, 86_400n, 600n, 400n], 'on chain: 400 left this period');
    const over = await op(tok.id, 'mint', { to: holder.address, amount: '500' }, [a!, b!]);
    t.match(over, { state: 'failed', failure: { reason: 'revert', error_name: 'MintCapExceeded', message: /requested=500, remaining=400/ } }, 'over the cap: refused on chain, the revert decoded');
    t.equal(await balance(holder.address), 600n, 'on chain: nothing minted');

    t.equal((await op(tok.id, 'pause', {}, [b!, c!])).state, 'confirmed');
    t.equal(await chain.readContract({ ...at, functionName: 'paused' }), true, 'on chain: paused');
    await t.rejects(chain.simulateContract({ account: holder, ...at, functionName: 'transfer', args: [friend.address, 10n] }), /EnforcedPause/, 'a holder\'s transfer would revert EnforcedPause');
    const refused = await chain.waitForTransactionReceipt({ hash: await holderWallet.writeContract({ ...at, functionName: 'transfer', args: [friend.address, 10n], gas: 200_000n }) });
    t.equal(refused.status, 'reverted', 'the holder\'s transfer, sent anyway, is refused on chain');
    t.same([await balance(holder.address), await balance(friend.address)], [600n, 0n], 'nothing moved');
    t.equal((await op(tok.id, 'unpause', {}, [a!, c!])).state, 'confirmed');
    t.equal(await chain.readContract({ ...at, functionName: 'paused' }), false, 'on chain: unpaused');
    const moved = await chain.waitForTransactionReceipt({ hash: await holderWallet.writeContract({ ...at, functionName: 'transfer', args: [friend.address, 100n] }) });
    t.equal(moved.status, 'success');
    t.same([await balance(holder.address), await balance(friend.address)], [500n, 100n], 'on chain: the holder transfers again');
    // A gasless transfer: the friend holds tokens and signs, the service's relayer pays the gas.
    const request = await platform('POST', `/tokenization/tokens/${tok.id}/gasless/transfer-request`, { from: friend.address, to: holder.address, amount: '40' });
    t.equal(request.status, 200, JSON.stringify(request.json));
    const friendEth = await chain.getBalance({ address: friend.address });
    const relayBody = { request: request.json.typed_data.message, signature: await friend.signTypedData(request.json.typed_data) };
    const relayed = await platform('POST', `/tokenization/tokens/${tok.id}/gasless/relay`, relayBody, { 'idempotency-key': 'journey-relay' });
    t.match([relayed.status, relayed.json.state], [201, 'confirmed'], JSON.stringify(relayed.json));
    relays.push(relayed.json.id as string);
    t.same([await balance(holder.address), await balance(friend.address)], [540n, 60n], 'on chain: the friend\'s signed transfer moved 40');
    t.equal(await chain.getBalance({ address: friend.address }), friendEth, 'the holder paid no gas');
    const replayed = await platform('POST', `/tokenization/tokens/${tok.id}/gasless/relay`, relayBody, { 'idempotency-key': 'journey-relay-again' });
    t.match([replayed.status, replayed.json.code], [409, 'forward_request_used'], 'the same signed request relays once');

    t.equal((await op(tok.id, 'roles/grant', { role: 'PAUSER_ROLE', account: operator.address }, [a!, b!])).state, 'confirmed');
    t.equal(await chain.readContract({ ...at, functionName: 'hasRole', args: [PAUSER, operator.address] }), true, 'on chain: granted');
    t.equal((await op(tok.id, 'roles/revoke', { role: 'PAUSER_ROLE', account: operator.address }, [b!, c!])).state, 'confirmed');
    t.equal(await chain.readContract({ ...at, functionName: 'hasRole', args: [PAUSER, operator.address] }), false, 'on chain: revoked');

    // The holder lost its key: everything it held moves to its new address.
    t.equal((await op(tok.id, 'recover', { lost: holder.address, to: replacement.address }, [a!, c!])).state, 'confirmed');
    t.same([await balance(holder.address), await balance(replacement.address), await chain.readContract({ ...at, functionName: 'totalSupply' })], [0n, 540n, 600n], 'on chain: recovered, the supply unchanged');

    const listed = await platform('GET', `/tokenization/tokens/${tok.id}/operations?limit=100`);
    t.same(listed.json.data.map((o: OperationView) => [o.kind, o.state, o.safe_nonce]), [
      ['grant_role', 'confirmed', '0'], ['set_mint_policy', 'confirmed', '1'], ['mint', 'confirmed', '2'], ['mint', 'failed', '3'], ['pause', 'confirmed', '3'],
      ['unpause', 'confirmed', '4'], ['grant_role', 'confirmed', '5'], ['revoke_role', 'confirmed', '6'], ['recover', 'confirmed', '7'],
    ], 'every operation, in Safe nonce order; the failed one freed its nonce');
    t.equal(await chain.readContract({ address: tok.safe, abi: SAFE_ABI, functionName: 'nonce' }), 8n, 'on chain: eight Safe transactions executed');
  });

  await t.test('an ERC-721 and an ERC-1155 under the same owners, minted by their Safes', async (t) => {
    const nft = await deploy('erc721', { name: 'Acme Deed', symbol: 'ADEED', base_uri: 'https://acme.example/deeds/' }, 'journey-erc721');
    const multi = await deploy('erc1155', { uri: 'https://acme.example/items/{id}.json' }, 'journey-erc1155');
    t.same([nft.status, multi.status], ['deployed', 'deployed']);
    // One Safe transaction each, a MultiSendCallOnly batch: the minter role and a mint policy for the Safe.
    // The customer's vault wallet `a` gets the same, so it mints on its own under its policy (policy-mint).
    const setUp = (x: TokenView, abi: typeof erc721 | typeof erc1155, cap: bigint) => ({
      to: infra.multiSendCallOnly, operation: 1, data: encodeMultiSend([getAddress(x.safe), getAddress(a!.address)].flatMap((minter) => [
        { to: x.address, data: encodeFunctionData({ abi, functionName: 'grantRole', args: [MINTER, minter] }) },
        { to: x.address, data: encodeFunctionData({ abi, functionName: 'setMintPolicy', args: [minter, cap, 86_400n] }) },
      ])),
    });
    // A vault wallet's own calls spend its own gas.
    await s.anvil!.testClient.setBalance({ address: getAddress(a!.address), value: 10n ** 20n });

    t.equal((await op(nft.id, 'raw-safe-tx', setUp(nft, erc721, 10n), [a!, b!])).state, 'confirmed');
    t.equal((await op(nft.id, 'mint', { to: holder.address, token_id: '1' }, [b!, c!])).state, 'confirmed');
    t.equal(await chain.readContract({ address: nft.address, abi: erc721, functionName: 'ownerOf', args: [1n] }), holder.address, 'on chain: deed 1 is the holder\'s');
    t.equal(await chain.readContract({ address: nft.address, abi: erc721, functionName: 'tokenURI', args: [1n] }), 'https://acme.example/deeds/1');
    // policy-mint: wallet `a` mints deed 2 to itself with its own customer-signed intent, no Safe quorum.
    const minted = await vaultCall(nft.id, 'policy-mint', await client.preparePolicyMint({ wallet: a!, token: nft.address, kind: 'erc721', to: a!.address, tokenId: 2n, idempotencyKey: 'journey-policy-mint-721' }));
    t.match(minted, { kind: 'policy_mint', via: 'vault_transaction', state: 'confirmed', safe_tx_hash: null }, 'a vault wallet minted under its own policy');
    t.equal(await chain.readContract({ address: nft.address, abi: erc721, functionName: 'ownerOf', args: [2n] }), getAddress(a!.address), 'on chain: deed 2 is the wallet\'s');
    t.match(await chain.readContract({ address: nft.address, abi: erc721, functionName: 'mintPolicy', args: [getAddress(a!.address)] }), [10n, 86_400n, 1n, 9n], 'on chain: counted against the wallet\'s policy');
    // NFT transfer: the build names the intent; the customer signs exactly that and the wallet sends deed 2.
    const built = await platform('POST', `/tokenization/tokens/${nft.id}/nft-transfers/build`, { wallet_id: a!.id, to: friend.address, token_id: '2' });
    t.equal(built.status, 200, JSON.stringify(built.json));
    const deed = await client.prepareNftTransfer({ wallet: a!, token: nft.address, kind: 'erc721', to: friend.address, tokenId: 2n, idempotencyKey: 'journey-nft-721' });
    const signed = decodeIntent(deed.intent);
    t.same(signed.kind === 'evm.transfer' ? [toHex(signed.to), toHex(signed.data), signed.amount] : [], [built.json.intent.to, built.json.intent.data, 0n], 'the customer signs what the build named: the token, safeTransferFrom(wallet, friend, 2), no value');
    t.match(await vaultCall(nft.id, 'nft-transfers', deed), { kind: 'nft_transfer', state: 'confirmed' });
    t.equal(await chain.readContract({ address: nft.address, abi: erc721, functionName: 'ownerOf', args: [2n] }), friend.address, 'on chain: deed 2 moved to its new holder');

    t.equal((await op(multi.id, 'raw-safe-tx', setUp(multi, erc1155, 1000n), [a!, c!])).state, 'confirmed');
    t.equal((await op(multi.id, 'mint', { to: holder.address, token_id: '7', amount: '25' }, [a!, b!])).state, 'confirmed');
    t.equal(await chain.readContract({ address: multi.address, abi: erc1155, functionName: 'balanceOf', args: [holder.address, 7n] }), 25n, 'on chain: 25 of item 7');
    t.match(await chain.readContract({ address: multi.address, abi: erc1155, functionName: 'mintPolicy', args: [getAddress(multi.safe)] }), [1000n, 86_400n, 25n, 975n]);
    t.match(await vaultCall(multi.id, 'policy-mint', await client.preparePolicyMint({ wallet: a!, token: multi.address, kind: 'erc1155', to: a!.address, tokenId: 8n, amount: 5n, idempotencyKey: 'journey-policy-mint-1155' })), { kind: 'policy_mint', state: 'confirmed' });
    t.match(await vaultCall(multi.id, 'nft-transfers', await client.prepareNftTransfer({ wallet: a!, token: multi.address, kind: 'erc1155', to: friend.address, tokenId: 8n, amount: 2n, idempotencyKey: 'journey-nft-1155' })), { kind: 'nft_transfer', state: 'confirmed' });
    const item8 = (who: Hex) => chain.readContract({ address: multi.address, abi: erc1155, functionName: 'balanceOf', args: [who, 8n] });
    t.same([await item8(getAddress(a!.address)), await item8(friend.address)], [3n, 2n], 'on chain: 5 of item 8 minted by the wallet, 2 of them moved');
    for (const x of [nft, multi]) t.same(await readSafe(x.safe), { owners: owners.map((w) => w.address.toLowerCase()), threshold: 2 }, `${x.kind}: the same three vault wallets govern it`);
  });

  await t.test('the API killed mid-deployment (its Safe sent, its token not): restarted and resumed, one token, one Safe, nothing else', async (t) => {
    // Every event so far delivered first, so no delivery is in flight when the API dies.
    await waitUntil(() => received().length >= tokens.length + operations.length, 60_000, 'the deliveries so far', 100);
    const api = s.cluster.procs.filter((p) => p.name === 'api').at(-1)!;
    const anvil = s.anvil!;
    const nonce0 = await chain.getTransactionCount({ address: s.deployer });
    const block0 = await chain.getBlockNumber({ cacheTime: 0 });
    // Blocks only on demand: the Safe's creation waits in the mempool, the API waiting for its receipt.
    await anvil.testClient.setAutomine(false);
    const r = await platform('POST', '/tokenization/erc20', { chain: 'evm-local', admin, name: 'Resumed Note', symbol: 'RNOTE' }, { 'idempotency-key': 'journey-killed' });
    t.equal(r.status, 201);
    const id = r.json.id as string;
    tokens.push(id);
    const planned = r.json as TokenView;
    await waitUntil(async () => (await chain.getTransactionCount({ address: s.deployer, blockTag: 'pending' })) > nonce0, 30_000, 'the first step to be sent', 20);
    const before = await platform('GET', `/tokenization/tokens/${id}`);
    t.same(before.json.steps.slice(-2).map((x: { name: string; status: string }) => [x.name, x.status]), [['Safe', 'sent'], ['ManagedERC20', 'pending']], 'the Safe step was recorded before it was sent');
    t.ok(before.json.steps.slice(0, -2).every((x: { status: string }) => x.status === 'pending'), 'the infrastructure was there already (skipped, never sent)');
    await api.kill('SIGKILL');
    await anvil.testClient.mine({ blocks: 1 });
    await anvil.testClient.setAutomine(true);
    t.not(await chain.getCode({ address: planned.safe }) ?? '0x', '0x', 'the Safe is on chain');
    t.equal(await chain.getCode({ address: planned.address }) ?? '0x', '0x', 'the token is not');
    t.equal(await chain.getTransactionCount({ address: s.deployer }), nonce0 + 1, 'one transaction was sent');

    // A loaded machine has been seen to take over 30 s to bring a restarted API up; it is the restart under test, not its speed.
    const restarted = await s.cluster.startApi(s.apiEnv, 120_000).catch((err: Error) => {
      throw new Error(`${err.message}; the restarted API's last lines:\n${s.cluster.procs.filter((p) => p.name === 'api').at(-1)!.raw.slice(-20).join('\n')}`);
    });
    t.ok(restarted.running, 'the API is back');
    const stale = await platform('GET', `/tokenization/tokens/${id}`);
    t.match(stale.json, { status: 'deploying', deploy_attempts: 1 }, 'after the restart the record shows the interrupted deployment');
    const resumed = await platform('POST', `/tokenization/tokens/${id}/deploy/resume`, undefined, { 'idempotency-key': 'journey-resume' });
    t.equal(resumed.status, 200, JSON.stringify(resumed.json));
    const tok = await s.waitToken(id, (x) => x.status !== 'deploying', 'the resumed deployment');
    t.match(tok, { status: 'deployed', failure: null, address: planned.address, safe: planned.safe }, 'deployed at the planned addresses');
    t.ok(tok.steps.every((x) => x.status === 'done'));

    // On chain: the token and its Safe at the planned addresses, and nothing else from the deployer.
    t.ok(codeMatches(await chain.getCode({ address: tok.address }), builtArtifact('ManagedERC20')), 'the token at its planned address');
    t.equal(await chain.readContract({ address: tok.address, abi: erc20, functionName: 'hasRole', args: [zeroHash, getAddress(tok.safe)] }), true, 'governed by the planned Safe');
    t.same(await readSafe(tok.safe), { owners: owners.map((w) => w.address.toLowerCase()), threshold: 2 });
    t.equal(await chain.getTransactionCount({ address: s.deployer }), nonce0 + 2, 'the deployer sent two transactions in all: the Safe and the token');
    const latest = await chain.getBlockNumber({ cacheTime: 0 }); // viem caches the block number for 4 s otherwise
    const sent = [];
    for (let n = block0 + 1n; n <= latest; n++) {
      for (const x of (await chain.getBlock({ blockNumber: n, includeTransactions: true })).transactions) if (x.from.toLowerCase() === s.deployer.toLowerCase()) sent.push(x.to?.toLowerCase());
    }
    t.same(sent, [infra.proxyFactory.toLowerCase(), DETERMINISTIC_DEPLOYER], 'one Safe creation through the factory, one CREATE2 through the deterministic deployer');
    const created = await chain.getLogs({ address: infra.proxyFactory, event: PROXY_CREATION, fromBlock: block0 + 1n, toBlock: latest });
    t.same(created.map((l) => l.args.proxy), [getAddress(tok.safe)], 'one Safe created, the planned one: none at another salt');
  });

  await t.test('every token and operation event reached the webhook receiver exactly once', async (t) => {
    const all = (await Promise.all(tokens.map(async (id) => (await platform('GET', `/tokenization/tokens/${id}/operations?limit=100`)).json.data as OperationView[]))).flat();
    t.equal(all.length, operations.length, 'the operations the journey made');
    const confirmed = all.filter((o) => o.state === 'confirmed').map((o) => o.id).sort();
    const failed = all.filter((o) => o.state === 'failed').map((o) => o.id).sort();
    t.equal(failed.length, 1, 'one failed: the mint over the cap');
    const expected = tokens.length + confirmed.length + relays.length + failed.length;
    await waitUntil(() => received().length >= expected, 60_000, 'every delivery', 100);
    const events = received();
    t.equal(events.length, expected, `${expected} deliveries: ${tokens.length} tokens, ${confirmed.length} confirmed, ${relays.length} relayed, ${failed.length} failed`);
    t.equal(new Set(events.map((e) => e.id)).size, events.length, 'no event delivered twice (by event id)');
    t.equal(new Set(got.map((g) => g.headers['svc-webhook-delivery-id'])).size, got.length, 'each delivery its own id');
    const ofType = (type: string) => events.filter((e) => e.type === type);
    t.same(ofType('token.deployed').map((e) => e.data.token_id).sort(), [...tokens].sort(), 'token.deployed once per token');
    t.same(ofType('tokenization.operation.confirmed').map((e) => e.data.operation_id).sort(), [...confirmed, ...relays].sort(), 'tokenization.operation.confirmed once per confirmed operation and relay');
    t.same(ofType('tokenization.operation.confirmed').filter((e) => e.data.kind === 'gasless_transfer').map((e) => e.data.operation_id), relays, 'the relay\'s, with its kind');
    t.same(ofType('tokenization.operation.failed').map((e) => e.data.operation_id).sort(), failed, 'tokenization.operation.failed once for the failed one');
    t.match(ofType('tokenization.operation.failed')[0]!.data, { kind: 'mint', reason: 'onchain_revert', error: /MintCapExceeded/ });
    for (const e of ofType('tokenization.operation.confirmed').filter((x) => x.data.kind !== 'gasless_transfer')) {
      const o = all.find((x) => x.id === e.data.operation_id)!;
      if (e.data.tx_hash !== o.tx_hash || e.data.kind !== o.kind || e.data.token_id !== o.token_id) t.fail(`${o.id}: the event says ${JSON.stringify(e.data)}`);
    }
    // The service's own record of the deliveries agrees: one attempt each, delivered.
    const deliveries = (await platform('GET', `/webhook-deliveries?endpoint_id=${endpoint.json.id}&limit=100`)).json.data as { event_id: string; status: string; attempt_count: number }[];
    t.equal(deliveries.length, expected, 'one delivery record per event');
    t.ok(deliveries.every((d) => d.status === 'delivered' && d.attempt_count === 1), 'each delivered at its first attempt');
    t.same(deliveries.map((d) => d.event_id).sort(), events.map((e) => e.id).sort(), 'for exactly the events received');
  });
  return { owners };
}
