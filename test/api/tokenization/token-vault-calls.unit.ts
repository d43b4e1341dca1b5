// Calls a vault wallet makes on a token itself (docs/platform/tokenization.md "Calls by a vault wallet"), on
// one real anvil through the API, the vault transaction path and its worker: an ERC-20 minted under the
// minter wallet's own on-chain policy (balance read with viem), a mint over what the policy leaves refused by
// the API with the chain's figures and, sent anyway from the wallet's key, reverted on chain
// MintCapExceeded; a mint that passed the API and then no longer fits fails with the decoded revert; tampered
// intents (another amount, recipient, calldata, value) refused, and an intent altered after it was signed
// refused by the vault transaction path itself; an ERC-721 and an ERC-1155 minted to a vault wallet, then
// built and transferred, ownership and balances read on chain; a transfer while paused refused with nothing
// submitted. Every refusal changes nothing (records and vault transactions counted).
import t from 'tap';
import { encodeFunctionData, getAddress, hexToBytes as viemHexToBytes, keccak256, toHex, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { HDKey } from '@scure/bip32';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { tokenizationApp } from './tokenization-app.ts';
import { builtArtifact } from '../../../api/tokenization/chain/artifacts.ts';
import { failureOf } from '../../../api/tokenization/chain/chain-failure.ts';
import { safeTxTypedData, type SafeTransaction } from '../../../api/tokenization/chain/safe-transaction.ts';
import { decodeIntent, encodeIntent, signIntent, type EvmTransferIntent } from '../../../core/intents/intent.ts';
import { mintCalldata, nftTransferCalldata } from '../../../core/chains/evm/token-call-data.ts';
import { CustodyClient } from '../../../api/sdk/client.ts';
import { TRANSACTIONS } from '../../../api/transactions/collections.ts';
import { waitUntil } from '../../cluster/cluster-harness.ts';
import { anvilAccount } from '../../chains/anvil.ts';

// The app and its anvil are started, and stopped, by a test of its own, not at the top level: the file
// shares its process with others (test/support/units.ts).
t.test('tokens called from vault wallets, on the app over one anvil', async (t) => {
  t.setTimeout(300_000);
  const s = await tokenizationApp(t);
  const outsider = anvilAccount(5);
  const holder = anvilAccount(6);
  const fresh = anvilAccount(8);
  const client = s.chain.client;
  const key = (k: string) => ({ 'idempotency-key': k });
  const sdk = new CustodyClient({ baseUrl: 'http://unused.test', organization: s.acme.org, keyId: s.acme.creds.keyId, secretKey: s.acme.creds.secretKey });

  // The minter and holder: one vault wallet of Acme, funded for gas; the admin Safe: that vault and an outsider, 1 of 2.
  const m = await s.vaultWallet(s.acme.org);
  const minter = getAddress(m.wallet.address);
  await s.anvil.testClient.setBalance({ address: minter, value: 10n ** 20n });
  const admin = { owners: [{ wallet_id: m.wallet.id }, { address: outsider.address }], threshold: 1 };

  interface Op { id: string; kind: string; state: string; via: string; safe_tx: unknown; failure: Record<string, unknown> | null; tx_hash: string | null; vault_call: Record<string, string> | null; safe_tx_hash: string; signatures: unknown[] }
  interface Token { id: string; address: Hex; safe: Hex }

  async function deploy(kind: 'erc20' | 'erc721' | 'erc1155', body: Record<string, unknown>): Promise<Token> {
    const r = await s.call('POST', `/v1/tokenization/${kind}`, { chain: 'evm-local', admin, ...body }, undefined, key(`deploy-${kind}`));
    t.equal(r.statusCode, 201, r.body);
    await s.tokenization.tokens.settled();
    return (await s.call('GET', `/v1/tokenization/tokens/${r.json().id}`)).json();
  }

  let n = 0;
  /** An admin operation of the token's Safe, signed by the outside owner (threshold 1), executed and confirmed. */
  async function adminOp(tok: Token, path: string, body: unknown) {
    const op = (await s.call('POST', `/v1/tokenization/tokens/${tok.id}/${path}`, body, undefined, key(`admin-${n++}`))).json() as Op & { safe_tx: Record<string, string | number> };
    const x = op.safe_tx;
    const tx: SafeTransaction = { to: getAddress(String(x.to)), value: BigInt(x.value!), data: x.data as Hex, operation: Number(x.operation) as 0 | 1, safeTxGas: 0n, baseGas: 0n, gasPrice: 0n, gasToken: getAddress(String(x.gas_token)), refundReceiver: getAddress(String(x.refund_receiver)), nonce: BigInt(x.nonce!) };
    await s.call('POST', `/v1/tokenization/tokens/${tok.id}/operations/${op.id}/signatures`, { owner: outsider.address, signature: await outsider.signTypedData(safeTxTypedData(tok.safe, 31337, tx)) });
    await s.tokenization.operations.settled();
    t.equal((await s.call('GET', `/v1/tokenization/tokens/${tok.id}/operations/${op.id}`)).json().state, 'confirmed', `${path} confirmed`);
  }

  /** A mint policy for the minter wallet (the role, then the policy): two Safe operations. */
  async function minterOf(tok: Token, cap: string) {
    await adminOp(tok, 'roles/grant', { role: 'MINTER_ROLE', account: minter });
    await adminOp(tok, 'policies', { minter, cap, period_seconds: 86_400 });
  }

  /** A nonce of the minter wallet reserved for `idem` (POST /v1/transactions/prepare). */
  const nonceFor = async (idem: string) => BigInt((await s.transactions.prepare(s.acme.org, { wallet_id: m.wallet.id, idempotency_key: idem })).nonce);

  /** Posts a call and waits for it to end; anvil mines a block per look so the vault transaction reaches finality. */
  async function settle(tok: Token, op: Op): Promise<Op> {
    let now = op;
    await waitUntil(async () => {
      await s.anvil.testClient.mine({ blocks: 1 });
      now = (await s.call('GET', `/v1/tokenization/tokens/${tok.id}/operations/${op.id}`, undefined, s.acme.viewer)).json();
      return now.state === 'confirmed' || now.state === 'failed';
    }, 60_000, `call ${op.id} to end`, 200);
    return now;
  }

  async function count(collection: string) {
    let c = 0;
    for await (const _ of s.store.all(collection)) c++;
    return c;
  }
  /** Records of token operations and vault transactions: what a refusal must leave as it was. */
  const footprint = async () => [await count('token_operations'), await count(TRANSACTIONS.name)];

  async function events(type: string, id: string) {
    const out: { data: Record<string, unknown> }[] = [];
    for await (const e of s.store.all<{ type: string; data: Record<string, unknown> }>('webhook_events')) if (e.type === type && e.data.operation_id === id) out.push(e);
    return out;
  }

  /** A kind-1 intent of the minter wallet, signed by Acme's API key: what the SDK builds, with any field changed. */
  function signed(tok: Token, data: Hex, idem: string, nonce: bigint, over: Partial<EvmTransferIntent> = {}) {
    const bytes = encodeIntent({
      kind: 'evm.transfer', organization: s.acme.org, walletId: m.wallet.id, chainId: 31337n, nonce, from: hexToBytes(minter.slice(2)), to: hexToBytes(tok.address.slice(2)),
      asset: { kind: 'native' }, amount: 0n, data: hexToBytes(data.slice(2)), maxFee: 10n ** 16n, idempotencyKey: idem, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600), ...over,
    });
    return { intent: bytesToHex(bytes), intent_signature: bytesToHex(signIntent(bytes, s.acme.creds.secretKey)) };
  }

  t.test('policy-mint on an ERC-20: within the cap on chain, over it refused and reverted, tampered intents refused', async (t) => {
    const tok = await deploy('erc20', { name: 'Acme Points', symbol: 'APT', decimals: 0 });
    const base = `/v1/tokenization/tokens/${tok.id}`;
    const abi = builtArtifact('ManagedERC20').abi;
    const balance = (a: Hex) => client.readContract({ address: tok.address, abi, functionName: 'balanceOf', args: [a] });

    // Without the role the API refuses before anything is submitted.
    let nonce = await nonceFor('pm-early');
    const early = await s.call('POST', `${base}/policy-mint`, { wallet_id: m.wallet.id, to: holder.address, amount: '1', ...signed(tok, mintCalldata('erc20', { to: holder.address, amount: 1n }), 'pm-early', nonce) }, undefined, key('pm-early'));
    t.match([early.statusCode, early.json().code, early.json().error], [422, 'mint_not_allowed', /MINTER_ROLE/], 'no MINTER_ROLE: 422');

    await minterOf(tok, '1000');
    // The SDK builds the intent from the fields; the API answers the record with its vault transaction.
    const prepared = await sdk.preparePolicyMint({ wallet: m.wallet, token: tok.address, kind: 'erc20', to: holder.address, amount: 600n, idempotencyKey: 'pm-600', nonce: await nonceFor('pm-600') });
    const r = await s.call('POST', `${base}/policy-mint`, prepared.body, s.acme.developer, key('pm-600'));
    t.equal(r.statusCode, 201, r.body);
    const op = r.json() as Op;
    t.match(op, { kind: 'policy_mint', state: 'submitted', via: 'vault_transaction', safe_tx: null, signatures: [], module_execution: null, vault_call: { wallet_id: m.wallet.id, from: minter.toLowerCase(), to: tok.address.toLowerCase(), transaction_id: /^txn_/ } });
    t.equal(op.vault_call!.data, mintCalldata('erc20', { to: holder.address, amount: 600n }), 'the calldata signed is the mint of the fields');
    const replay = await s.call('POST', `${base}/policy-mint`, prepared.body, s.acme.developer, key('pm-600'));
    t.equal(replay.json().id, op.id, 'the same Idempotency-Key and body: the same record');
    t.equal((await s.call('POST', `${base}/policy-mint`, { ...prepared.body, amount: '601' }, undefined, key('pm-600'))).json().code, 'idempotency_key_reused');
    const done = await settle(tok, op);
    t.match(done, { state: 'confirmed', tx_hash: /^0x[0-9a-f]{64}$/, failure: null });
    t.equal(await balance(holder.address), 600n, 'on chain: minted by the minter wallet, without the Safe');
    t.same((await client.readContract({ address: tok.address, abi, functionName: 'mintPolicy', args: [minter] }) as bigint[]).slice(2), [600n, 400n], 'on chain: minted 600, 400 left');
    t.equal((await events('tokenization.operation.confirmed', op.id)).length, 1, 'its confirmed event once');
    t.match((await s.call('GET', `${base}/operations?kind=policy_mint`)).json().data, [{ id: op.id, state: 'confirmed' }], 'in the token\'s operations list');
    t.match((await s.call('POST', `${base}/operations/${op.id}/signatures`, { owner: outsider.address, signature: `0x${'11'.repeat(65)}` })).json(), { code: 'conflict' }, 'a call takes no Safe signatures');
    const viaModule = await s.call('POST', `${base}/operations/${op.id}/module-signature`, { wallet_id: m.wallet.id, role_key: 1, intent: '00', intent_signature: '11'.repeat(64) });
    t.match([viaModule.statusCode, viaModule.json().code], [409, 'conflict'], 'a call does not run through the roles module');
    t.match((await s.call('GET', `${base}/operations/${op.id}`)).json(), { state: 'confirmed', module_execution: null, vault_call: { transaction_id: op.vault_call!.transaction_id } }, 'unchanged');

    // Over what the policy leaves: refused with the chain's figures; nothing stored or submitted.
    const before = await footprint();
    nonce = await nonceFor('pm-500');
    const over = await s.call('POST', `${base}/policy-mint`, { wallet_id: m.wallet.id, to: holder.address, amount: '500', ...signed(tok, mintCalldata('erc20', { to: holder.address, amount: 500n }), 'pm-500', nonce) }, undefined, key('pm-500'));
    t.match([over.statusCode, over.json().code, over.json().error], [422, 'mint_cap_exceeded', /minting 500 .* leaves 400 this period \(cap 1000 per 86400 s, minted 600\)/], 'over the cap: 422 with the on-chain figures');

    // Tampered intents: each differs from the fields in one place; refused, nothing submitted.
    const fields = { wallet_id: m.wallet.id, to: holder.address, amount: '10' };
    const good = mintCalldata('erc20', { to: holder.address, amount: 10n });
    const tampered: [string, Hex, Partial<EvmTransferIntent>, RegExp][] = [
      ['another amount', mintCalldata('erc20', { to: holder.address, amount: 11n }), {}, /data/],
      ['another recipient', mintCalldata('erc20', { to: fresh.address, amount: 10n }), {}, /data/],
      ['other calldata', encodeFunctionData({ abi, functionName: 'transfer', args: [fresh.address, 10n] }), {}, /data/],
      ['a value sent', good, { amount: 1n }, /amount/],
      ['another contract', good, { to: hexToBytes(tok.safe.slice(2)) }, /to \(the token/],
      ['another wallet', good, { walletId: 'wal_other' }, /wallet_id/],
    ];
    for (const [what, data, change, field] of tampered) {
      const bad = await s.call('POST', `${base}/policy-mint`, { ...fields, ...signed(tok, data, `pm-bad-${n}`, nonce, change) }, undefined, key(`pm-bad-${n++}`));
      t.match([bad.statusCode, bad.json().code, bad.json().error], [422, 'call_intent_mismatch', field], `${what}: 422 call_intent_mismatch`);
    }
    // The API's comparison bypassed: an intent altered after the customer signed it, straight into the vault
    // transaction path, is refused there (and by every signer node: test/node/intent-authorizer.unit.ts).
    const honest = signed(tok, good, 'pm-altered', nonce);
    const altered = decodeIntent(hexToBytes(honest.intent)) as EvmTransferIntent;
    const forged = encodeIntent({ ...altered, data: hexToBytes(mintCalldata('erc20', { to: fresh.address, amount: 400n }).slice(2)) });
    await t.rejects(s.transactions.submit(s.acme.org, '', { wallet_id: m.wallet.id, intent: bytesToHex(forged), intent_signature: honest.intent_signature, idempotency_key: 'pm-altered' }), { code: 'forbidden', message: /intent signature did not verify/ }, 'altered calldata under the customer\'s signature: refused by the vault path');
    t.same(await footprint(), before, 'the refusals stored and submitted nothing');
    t.equal(await balance(fresh.address), 0n);

    // Sent anyway from the minter's own key (outside the service): the chain reverts it MintCapExceeded.
    const own = privateKeyToAccount(toHex(new HDKey({ privateKey: m.secret, chainCode: new Uint8Array(32).fill(7) }).derive(m.wallet.derivation_path).privateKey!));
    t.equal(own.address, minter, 'the wallet\'s key');
    const data = mintCalldata('erc20', { to: holder.address, amount: 500n });
    const raw = await own.signTransaction({ chainId: 31337, type: 'eip1559', to: tok.address, data, gas: 200_000n, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 1n, nonce: await client.getTransactionCount({ address: minter, blockTag: 'pending' }) });
    const receipt = await client.waitForTransactionReceipt({ hash: await client.sendRawTransaction({ serializedTransaction: raw }) });
    t.equal(receipt.status, 'reverted', 'on chain: reverted');
    const why = await client.call({ account: minter, to: tok.address, data, blockNumber: receipt.blockNumber - 1n }).then(() => undefined, failureOf);
    t.match(why, { kind: 'reverted', errorName: 'MintCapExceeded', reason: /requested=500, remaining=400/ }, 'the token\'s own refusal: MintCapExceeded');
    t.equal(await balance(holder.address), 600n, 'nothing minted');

    // A mint that fit when the API checked it, and no longer does when it is signed: the mint at the next nonce
    // is submitted first and waits for the one before it, which takes the cap.
    const [n1, n2] = [await nonceFor('pm-a'), await nonceFor('pm-b')];
    const b = await s.call('POST', `${base}/policy-mint`, { wallet_id: m.wallet.id, to: holder.address, amount: '300', ...signed(tok, mintCalldata('erc20', { to: holder.address, amount: 300n }), 'pm-b', n2) }, undefined, key('pm-b'));
    const a = await s.call('POST', `${base}/policy-mint`, { wallet_id: m.wallet.id, to: holder.address, amount: '300', ...signed(tok, mintCalldata('erc20', { to: holder.address, amount: 300n }), 'pm-a', n1) }, undefined, key('pm-a'));
    t.same([a.statusCode, b.statusCode], [201, 201], 'both fit when checked');
    t.equal((await settle(tok, a.json())).state, 'confirmed');
    const failed = await settle(tok, b.json());
    t.match(failed, { state: 'failed', failure: { reason: 'revert', error_name: 'MintCapExceeded', message: /requested=300, remaining=100/ } }, 'failed with the decoded revert');
    t.match(await events('tokenization.operation.failed', failed.id), [{ data: { kind: 'policy_mint', reason: 'onchain_revert', error: /MintCapExceeded/ } }], 'its failed event once');
    t.equal(await balance(holder.address), 900n, 'on chain: only the first of the two');
  });

  t.test('ERC-721 and ERC-1155: minted to a vault wallet, built and transferred; a transfer while paused refused', async (t) => {
    const nft = await deploy('erc721', { name: 'Acme Deeds', symbol: 'ADEED', base_uri: 'https://acme.test/deeds/' });
    const multi = await deploy('erc1155', { uri: 'https://acme.test/items/{id}.json' });
    const abi721 = builtArtifact('ManagedERC721').abi;
    const abi1155 = builtArtifact('ManagedERC1155').abi;
    await minterOf(nft, '10');
    await t.rejects(sdk.policyMintIntent({ wallet: m.wallet, token: nft.address, kind: 'erc721', to: '0x12', tokenId: 1n, idempotencyKey: 'sdk-bad', nonce: 0n }), { code: 'bad_intent' }, 'the SDK refuses a malformed recipient');
    await t.rejects(sdk.nftTransferIntent({ wallet: m.wallet, token: nft.address, kind: 'erc1155', to: fresh.address, tokenId: 1n, idempotencyKey: 'sdk-bad', nonce: 0n }), { code: 'bad_intent' }, 'an ERC-1155 transfer needs its amount');
    await minterOf(multi, '100');

    const mint = async (tok: Token, fields: { to: string; token_id: string; amount?: string; data?: string }, kind: 'erc721' | 'erc1155', idem: string) => {
      const p = await sdk.preparePolicyMint({ wallet: m.wallet, token: tok.address, kind, to: fields.to, tokenId: BigInt(fields.token_id), ...(fields.amount ? { amount: BigInt(fields.amount) } : {}), ...(fields.data ? { data: fields.data } : {}), idempotencyKey: idem, nonce: await nonceFor(idem) });
      t.same(p.body, { wallet_id: m.wallet.id, ...fields, intent: p.body.intent, intent_signature: p.body.intent_signature }, 'the SDK\'s body: the fields and the signed intent');
      const r = await s.call('POST', `/v1/tokenization/tokens/${tok.id}/policy-mint`, p.body, undefined, key(idem));
      t.equal(r.statusCode, 201, r.body);
      t.equal((await settle(tok, r.json())).state, 'confirmed');
    };
    await mint(nft, { to: minter, token_id: '7' }, 'erc721', 'mint-721');
    t.equal(await client.readContract({ address: nft.address, abi: abi721, functionName: 'ownerOf', args: [7n] }), minter, 'on chain: id 7 minted to the vault wallet');
    await mint(multi, { to: minter, token_id: '3', amount: '10', data: '0x' }, 'erc1155', 'mint-1155');
    t.equal(await client.readContract({ address: multi.address, abi: abi1155, functionName: 'balanceOf', args: [minter, 3n] }), 10n, 'on chain: 10 of id 3');

    /** Builds, signs the intent the build answers (with the customer's nonce, fee ceiling, key and expiry) and posts it. */
    const transfer = async (tok: Token, body: { to: string; token_id: string; amount?: string }, idem: string) => {
      const built = await s.call('POST', `/v1/tokenization/tokens/${tok.id}/nft-transfers/build`, { wallet_id: m.wallet.id, ...body }, s.acme.developer);
      t.equal(built.statusCode, 200, built.body);
      const f = built.json().intent as Record<'organization' | 'wallet_id' | 'chain_id' | 'from' | 'to' | 'amount' | 'data', string>;
      const [nonce, notAfter] = [await nonceFor(idem), BigInt(Math.floor(Date.now() / 1000) + 3600)];
      const bytes = encodeIntent({
        kind: 'evm.transfer', organization: String(f.organization), walletId: String(f.wallet_id), chainId: BigInt(f.chain_id), nonce, from: viemHexToBytes(f.from as Hex), to: viemHexToBytes(f.to as Hex),
        asset: { kind: 'native' }, amount: BigInt(f.amount), data: viemHexToBytes(f.data as Hex), maxFee: 10n ** 16n, idempotencyKey: idem, notAfter,
      });
      const kind = tok === nft ? 'erc721' : 'erc1155';
      const bySdk = await sdk.nftTransferIntent({ wallet: m.wallet, token: tok.address, kind, to: body.to, tokenId: BigInt(body.token_id), ...(body.amount ? { amount: BigInt(body.amount) } : {}), idempotencyKey: idem, nonce, notAfter });
      t.equal(bytesToHex(bySdk), bytesToHex(bytes), 'the SDK builds the same intent from the fields');
      const r = await s.call('POST', `/v1/tokenization/tokens/${tok.id}/nft-transfers`, { wallet_id: m.wallet.id, ...body, intent: bytesToHex(bytes), intent_signature: bytesToHex(signIntent(bytes, s.acme.creds.secretKey)) }, s.acme.developer, key(idem));
      return { built: built.json(), r };
    };

    // ERC-721: the build answers exactly safeTransferFrom(wallet, to, 7) on the token; the transfer moves it.
    const one = await transfer(nft, { to: fresh.address, token_id: '7' }, 'move-721');
    t.same(one.built, {
      wallet_id: m.wallet.id, to: fresh.address.toLowerCase(), token_id: '7', amount: null,
      intent: { kind: 'evm.transfer', organization: s.acme.org, wallet_id: m.wallet.id, chain_id: 31337, from: minter.toLowerCase(), to: nft.address.toLowerCase(), asset: 'native', amount: '0', data: nftTransferCalldata('erc721', { from: minter, to: fresh.address, tokenId: 7n }) },
    }, 'build: the intent fields to sign');
    t.equal(one.r.statusCode, 201, one.r.body);
    t.match(one.r.json(), { kind: 'nft_transfer', via: 'vault_transaction', state: 'submitted' });
    t.equal((await settle(nft, one.r.json())).state, 'confirmed');
    t.equal(await client.readContract({ address: nft.address, abi: abi721, functionName: 'ownerOf', args: [7n] }), fresh.address, 'on chain: id 7 moved');
    const gone = await s.call('POST', `/v1/tokenization/tokens/${nft.id}/nft-transfers/build`, { wallet_id: m.wallet.id, to: holder.address, token_id: '7' });
    t.match([gone.statusCode, gone.json().code], [422, 'not_token_holder'], 'an id the wallet no longer owns');

    // ERC-1155 while paused: the build and the transfer are refused with the token's error, nothing submitted.
    await adminOp(multi, 'pause', {});
    const before = await footprint();
    const move = { wallet_id: m.wallet.id, to: fresh.address, token_id: '3', amount: '4' };
    const pausedBuild = await s.call('POST', `/v1/tokenization/tokens/${multi.id}/nft-transfers/build`, move);
    t.match([pausedBuild.statusCode, pausedBuild.json().code, pausedBuild.json().error], [422, 'token_call_reverted', /EnforcedPause/], 'build while paused: 422 with the decoded error');
    const intent = signed(multi, nftTransferCalldata('erc1155', { from: minter, to: fresh.address, tokenId: 3n, amount: 4n }), 'move-paused', await nonceFor('move-paused'));
    const paused = await s.call('POST', `/v1/tokenization/tokens/${multi.id}/nft-transfers`, { ...move, ...intent }, undefined, key('move-paused'));
    t.match([paused.statusCode, paused.json().code, paused.json().error], [422, 'token_call_reverted', /EnforcedPause.*nothing was submitted/], 'transfer while paused, customer-signed: 422 EnforcedPause');
    t.same(await footprint(), before, 'nothing stored, no vault transaction');
    await adminOp(multi, 'unpause', {});
    const four = await transfer(multi, { to: fresh.address, token_id: '3', amount: '4' }, 'move-1155');
    t.equal(four.r.statusCode, 201, four.r.body);
    t.equal((await settle(multi, four.r.json())).state, 'confirmed');
    t.same([await client.readContract({ address: multi.address, abi: abi1155, functionName: 'balanceOf', args: [minter, 3n] }), await client.readContract({ address: multi.address, abi: abi1155, functionName: 'balanceOf', args: [fresh.address, 3n] })], [6n, 4n], 'on chain: 4 of id 3 moved');
    // A stop between submitting the intent and recording it: the vault transaction ran; the retry records it
    // without asking the chain again (the id has moved), and nothing moves twice.
    const lastOne = { wallet_id: m.wallet.id, to: fresh.address, token_id: '3', amount: '1' };
    const early = signed(multi, nftTransferCalldata('erc1155', { from: minter, to: fresh.address, tokenId: 3n, amount: 1n }), 'move-once', await nonceFor('move-once'));
    const ran = await s.transactions.submit(s.acme.org, '', { wallet_id: m.wallet.id, ...early, idempotency_key: 'move-once' });
    await waitUntil(async () => {
      await s.anvil.testClient.mine({ blocks: 1 });
      return (await s.transactions.get(s.acme.org, ran.tx.id)).state === 'final';
    }, 60_000, 'the vault transaction to be final', 200);
    const recorded = await s.call('POST', `/v1/tokenization/tokens/${multi.id}/nft-transfers`, { ...lastOne, ...early }, undefined, key('move-once'));
    t.equal(recorded.statusCode, 201, recorded.body);
    t.equal(recorded.json().vault_call.transaction_id, ran.tx.id, 'the record names the vault transaction that ran');
    t.equal((await settle(multi, recorded.json())).state, 'confirmed');
    t.same([await client.readContract({ address: multi.address, abi: abi1155, functionName: 'balanceOf', args: [minter, 3n] }), await client.readContract({ address: multi.address, abi: abi1155, functionName: 'balanceOf', args: [fresh.address, 3n] })], [5n, 5n], 'on chain: moved once');
    const tooMany = await s.call('POST', `/v1/tokenization/tokens/${multi.id}/nft-transfers/build`, { wallet_id: m.wallet.id, to: holder.address, token_id: '3', amount: '7' });
    t.match([tooMany.statusCode, tooMany.json().error], [422, /holds 5 of id 3/], 'more than the wallet holds');

    // Refusals of form, kind, permission, tenancy and state: nothing stored or submitted.
    const erc20 = (await s.call('GET', '/v1/tokenization/tokens?kind=erc20')).json().data[0] as Token;
    const stale = await s.call('POST', `/v1/tokenization/tokens/${multi.id}/nft-transfers`, { wallet_id: m.wallet.id, to: fresh.address, token_id: '3', amount: '1', ...signed(multi, nftTransferCalldata('erc1155', { from: minter, to: fresh.address, tokenId: 3n, amount: 2n }), 'x', 0n) }, undefined, key('stale'));
    t.match([stale.statusCode, stale.json().code], [422, 'call_intent_mismatch'], 'an intent for another amount than the fields');
    const funds = await client.getBalance({ address: s.chain.sender.address });
    await s.anvil.testClient.setBalance({ address: s.chain.sender.address, value: 0n });
    const undeployed = await s.call('POST', '/v1/tokenization/erc721', { chain: 'evm-local', admin, name: 'Stuck', symbol: 'STK' }, undefined, key('stuck'));
    await s.tokenization.tokens.settled();
    await s.anvil.testClient.setBalance({ address: s.chain.sender.address, value: funds });
    t.equal((await s.call('GET', `/v1/tokenization/tokens/${undeployed.json().id}`)).json().status, 'failed_resumable');
    const cases: [string, string, string, unknown, string, Record<string, string>, number, string][] = [
      ['ERC-20 has no NFT transfers', erc20.id, 'nft-transfers/build', { wallet_id: m.wallet.id, to: fresh.address, token_id: '1' }, s.acme.owner, {}, 422, 'validation_failed'],
      ['amount on an ERC-721', nft.id, 'nft-transfers/build', { wallet_id: m.wallet.id, to: fresh.address, token_id: '7', amount: '1' }, s.acme.owner, {}, 422, 'validation_failed'],
      ['no amount on an ERC-1155', multi.id, 'nft-transfers/build', { wallet_id: m.wallet.id, to: fresh.address, token_id: '3' }, s.acme.owner, {}, 422, 'validation_failed'],
      ['another organization\'s wallet', multi.id, 'nft-transfers/build', { wallet_id: 'wal_nope', to: fresh.address, token_id: '3', amount: '1' }, s.acme.owner, {}, 422, 'validation_failed'],
      ['a token id that is not a number', nft.id, 'nft-transfers/build', { wallet_id: m.wallet.id, to: fresh.address, token_id: 'x' }, s.acme.owner, {}, 400, 'invalid_request'],
      ['a token not deployed', undeployed.json().id, 'nft-transfers/build', { wallet_id: m.wallet.id, to: fresh.address, token_id: '1' }, s.acme.owner, {}, 409, 'conflict'],
      ['a viewer builds', nft.id, 'nft-transfers/build', { wallet_id: m.wallet.id, to: fresh.address, token_id: '7' }, s.acme.viewer, {}, 403, 'role_denied'],
      ['a viewer mints', multi.id, 'policy-mint', { wallet_id: m.wallet.id, to: fresh.address, token_id: '3', amount: '1', ...signed(multi, '0x', 'v', 0n) }, s.acme.viewer, key('v1'), 403, 'role_denied'],
      ['a viewer transfers', multi.id, 'nft-transfers', { wallet_id: m.wallet.id, to: fresh.address, token_id: '3', amount: '1', ...signed(multi, '0x', 'v', 0n) }, s.acme.viewer, key('v2'), 403, 'role_denied'],
      ['another workspace\'s token', multi.id, 'nft-transfers/build', { wallet_id: m.wallet.id, to: fresh.address, token_id: '3', amount: '1' }, s.globex.owner, {}, 404, 'not_found'],
      ['another workspace mints', multi.id, 'policy-mint', { wallet_id: m.wallet.id, to: fresh.address, token_id: '3', amount: '1', ...signed(multi, '0x', 'g', 0n) }, s.globex.owner, key('g1'), 404, 'not_found'],
      ['no Idempotency-Key', multi.id, 'nft-transfers', { wallet_id: m.wallet.id, to: fresh.address, token_id: '3', amount: '1', ...signed(multi, '0x', 'k', 0n) }, s.acme.owner, {}, 400, 'invalid_request'],
      ['a mint on a token not deployed', undeployed.json().id, 'policy-mint', { wallet_id: m.wallet.id, to: fresh.address, token_id: '1', ...signed(multi, '0x', 'u', 0n) }, s.acme.owner, key('u1'), 409, 'conflict'],
      ['an intent that does not parse', multi.id, 'policy-mint', { wallet_id: m.wallet.id, to: fresh.address, token_id: '3', amount: '1', intent: 'abcd', intent_signature: '00'.repeat(64) }, s.acme.owner, key('p1'), 422, 'validation_failed'],
    ];
    const mark = await footprint();
    for (const [what, tokenId, path, body, token, headers, status, code] of cases) {
      const r = await s.call('POST', `/v1/tokenization/tokens/${tokenId}/${path}`, body, token, headers);
      t.match([r.statusCode, r.json().code], [status, code], what);
    }
    t.same(await footprint(), mark, 'the refusals stored and submitted nothing');
    const role = keccak256(toHex('MINTER_ROLE'));
    t.equal(await client.readContract({ address: nft.address, abi: abi721, functionName: 'hasRole', args: [role, minter] }), true, 'the minter kept its role throughout');
  });
});
