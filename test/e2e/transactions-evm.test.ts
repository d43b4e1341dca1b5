// End to end with real processes (coordinator, three service nodes, the organization's self node, the
// API) and a real anvil: the organization rotates its API key, a hosted vault gated by end-user tokens and a self vault, EVM wallets funded from
// anvil, native and ERC-20 transfers sent through the SDK reach `final`, balances move by exactly the
// amount, viem recovers each wallet as the sender; the self vault signs a Safe transaction as an owner
// (intent kind 3) and the signature recovers to its wallet over protocol-kit's SafeTx hash; a BYO OIDC member (a real OpenID provider on loopback)
// approves one transfer of the hosted vault with a fresh proof and the nodes sign it; a Hosted Auth member of the opted-in
// tenant adds a passkey on the Account Center in headless Chromium (virtual authenticator) and approves a transfer of
// its own hosted vault there, and the nodes sign it; then the hosted vault reshares to the self tier while
// transfers keep flowing, keeping its key and addresses; and a killed API resumes its transactions.
import t from 'tap';
import { createRequire } from 'node:module';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { createWalletClient, encodeFunctionData, erc20Abi, getAddress, http, parseEther, recoverAddress, recoverTransactionAddress, zeroAddress, type Abi, type Hex } from 'viem';
import { calculateSafeTransactionHash } from '@safe-global/protocol-kit';
import { foundry } from 'viem/chains';
import { startStack, mining } from './stack.ts';
import { ed25519 } from '@noble/curves/ed25519.js';
import { CustodyClient, type SendEvmParameters, type Transaction, type Wallet } from '../../api/sdk/client.ts';
import { MemberAuthClient } from '../../api/sdk/member-auth-client.ts';
import { startProvider } from '../api/member-auth/oidc-provider-fixture.ts';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { startSmtpSink } from '../support/smtp-sink.ts';
import { pkcePair } from '../api/member-auth/hosted-auth-harness.ts';

const CHROMIUM = '/usr/bin/chromium';

// Real processes on a 2-core machine shared with the rest of the suite: more than tap's default file budget.
t.setTimeout(300_000);

const require = createRequire(import.meta.url);
const token = require('@openzeppelin/contracts-v4/build/contracts/ERC20PresetFixedSupply.json') as { abi: Abi; bytecode: Hex };

t.test('EVM: hosted and self vaults send native and ERC-20 transfers to final on anvil; reshare hosted -> self while sending', async (t) => {
  // The API reaches the OpenID provider fixture on loopback (discovery, JWKS) through its SSRF-safe client.
  if (!existsSync(CHROMIUM)) return t.fail(`${CHROMIUM} is missing: run node deploy/test/ensure-chromium.mjs (npm test does)`);
  // Served as http://localhost:<port>: the Account Center's origin, a secure context, and its host the passkeys' RP ID.
  const smtp = await startSmtpSink(t);
  const stack = await startStack({
    selfNode: true, anvil: true, bearerKey: true, localhost: true,
    apiEnv: { API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1', API_SMTP_URL: smtp.url, API_SMTP_FROM: 'auth@platform.test' },
  });
  t.teardown(() => stack.stop());
  const platform = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(`${stack.base}${path}`, { method, headers: { authorization: `Bearer ${stack.bearer!}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    return { status: r.status, json: (await r.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const { anvil } = stack;
  const chain = anvil!;

  // Rotation, first half: register a second key; it signs requests and intents from now on, and the
  // nodes learn it from the organization's trust log, not from the operator.
  const secondSecret = ed25519.utils.randomSecretKey();
  const second = await stack.client.registerApiKey({ public_key: bytesToHex(ed25519.getPublicKey(secondSecret)), label: 'rotated' });
  const client = new CustodyClient({ baseUrl: stack.base, organization: stack.organization, keyId: second.id, secretKey: secondSecret });
  await stack.client.revokeApiKey(stack.apiKeyId);
  await t.rejects(stack.client.listApiKeys(), { status: 401, code: 'unauthorized' }, 'the revoked first key stops authenticating at once');

  // Hosted-tier end-user auth: the customer's identity provider keys and audience. The OpenID provider's
  // JWKS is registered too, and the audience is its OIDC client id, so its ID tokens can authorize member
  // actions (docs/end-user-auth.md "Member-action proofs").
  const op = await startProvider(t);
  const idp = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(idp.publicKey)), kid: 'idp-1', alg: 'ES256' };
  // The tenant opts in to Account Center passkeys (docs/end-user-auth.md "Account Center passkeys"): its
  // customer-signed registration names the service's key for the organization and the Account Center's origin.
  const acKey = await platform('GET', '/v1/tenant/member-auth/account-center-key');
  t.equal(acKey.json.account_center.origin, stack.base, 'the Account Center is this API\'s public origin');
  t.match(await client.setEndUserAuth({ jwks: { keys: [jwk, op.publicJwk] }, audience: 'bff-client', account_center: acKey.json.account_center }), { status: 'registered', audience: 'bff-client', key_count: 2, account_center: true });
  // Its Hosted application (the developer key is the BFF's), with the opt-in on; the sandbox demo member signs in.
  // The application's origin is a real local listener on an ephemeral port: Chromium refuses to navigate to
  // the ports it deems unsafe (9, 25, ...), however the test intercepts the request.
  const appServer = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>'));
  await new Promise<void>((resolve) => appServer.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => appServer.close(() => resolve())));
  const appOrigin = `http://127.0.0.1:${(appServer.address() as AddressInfo).port}`;
  const callback = `${appOrigin}/callback`;
  t.equal((await platform('POST', '/v1/tenant/member-auth/allowed-origins', { origin: appOrigin })).status, 201);
  t.equal((await platform('POST', '/v1/tenant/member-auth/redirect-urls', { url: callback })).status, 201);
  const hostedApp = (await platform('POST', '/v1/tenant/member-auth/applications/hosted', { enrollment: 'invite_only', origin: appOrigin, result_callback_url: callback, bff_key_id: stack.bearerKeyId! })).json;
  t.match(await platform('PATCH', `/v1/tenant/member-auth/applications/${hostedApp.id as string}`, { account_center_passkeys: true }), { status: 200, json: { hosted: { account_center_passkeys: true } } });
  const bffHeaders = (session?: string): Record<string, string> => ({ 'x-svc-publishable-key': hostedApp.publishable_key as string, ...(session ? { 'x-member-session-id': session } : {}) });
  const demo = (await platform('POST', '/v1/member-auth/hosted/authorizations/sandbox-demo', {}, bffHeaders())).json as { session_id: string; member: { id: string } };
  const demoEmail = ((await platform('GET', `/v1/tenant/member-auth/applications/${hostedApp.id as string}/members`)).json.data as { id: string; email: string }[]).find((m) => m.id === demo.member.id)!.email;
  const tokenFor = (intent: Uint8Array, sub = 'user-42') =>
    new SignJWT({ intent_sha256: bytesToHex(sha256(intent)) }).setProtectedHeader({ alg: 'ES256', kid: 'idp-1' }).setSubject(sub)
      .setAudience('bff-client').setIssuedAt().setExpirationTime('5m').sign(idp.privateKey);

  const hosted = await client.createVault({ tier: 'hosted', name: 'embedded', end_user_subject: 'user-42' });
  const self = await client.createVault({ tier: 'self', name: 'treasury' });
  // The hosted member's own hosted vault, bound to its hosted subject.
  const memberVault = await client.createVault({ tier: 'hosted', name: 'member', end_user_subject: demo.member.id });
  t.equal(hosted.state, 'creating');
  const [h, s, mv] = await Promise.all([client.waitForVault(hosted.id), client.waitForVault(self.id), client.waitForVault(memberVault.id)]);
  t.equal(h.end_user_auth, true, 'hosted vault created after end-user auth needs tokens');
  const hw = await client.createWallet(h.id, { chain: 'evm-local' });
  const sw = await client.createWallet(s.id, { chain: 'evm-local' });
  const mw = await client.createWallet(mv.id, { chain: 'evm-local' });
  // Funded from anvil's first dev account (unlocked on the node), by ordinary transfers.
  const deployer = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266' as Hex;
  const wallet = createWalletClient({ chain: foundry, transport: http(chain.url), account: deployer });
  for (const w of [hw, sw, mw]) {
    const hash = await wallet.sendTransaction({ to: w.address as Hex, value: parseEther('10') });
    await chain.publicClient.waitForTransactionReceipt({ hash });
    t.equal(await chain.publicClient.getBalance({ address: w.address as Hex }), parseEther('10'), 'wallet funded from an anvil account');
  }

  // An ERC-20 whose whole supply belongs to the self vault's wallet.
  const deployHash = await wallet.deployContract({ abi: token.abi, bytecode: token.bytecode, args: ['Test Dollar', 'TUSD', 1_000_000n * 10n ** 18n, sw.address as Hex] });
  const contract = (await chain.publicClient.waitForTransactionReceipt({ hash: deployHash })).contractAddress!;

  const alice = '0x00000000000000000000000000000000000a11ce' as Hex;
  const bob = '0x0000000000000000000000000000000000000b0b' as Hex;
  const mine = () => chain.testClient.mine({ blocks: 1 });

  /** Sends through the SDK and follows the transaction to `final`, checking the lifecycle. */
  const send = async (c: CustodyClient, p: SendEvmParameters, hostedVault: boolean): Promise<Transaction> => {
    const intent = await c.evmIntent(p);
    const accepted = await c.sendEvm({ ...p, ...(hostedVault ? { endUserToken: await tokenFor(intent) } : {}) });
    t.ok(['created', 'checks'].includes(accepted.state), `202 in an early state (${accepted.state})`);
    return mining(mine, c.waitForTransaction(accepted.id, ['final'], { timeoutMs: 90_000 }));
  };
  const recovered = async (hash: string) => {
    const raw = await chain.publicClient.request({ method: 'eth_getRawTransactionByHash' as never, params: [hash] as never }) as Hex;
    return (await recoverTransactionAddress({ serializedTransaction: raw as `0x02${string}` })).toLowerCase();
  };

  // Native from the hosted vault, with the end user's token.
  const before = await chain.publicClient.getBalance({ address: alice });
  const native = await send(client, { wallet: hw, to: alice, amount: parseEther('1.25'), idempotencyKey: 'native-1' }, true);
  t.equal(native.state, 'final', `native transfer final (${native.reason ?? ''})`);
  t.equal(await chain.publicClient.getBalance({ address: alice }) - before, parseEther('1.25'), 'recipient credited exactly');
  t.equal(await recovered(native.tx_hash!), hw.address.toLowerCase(), 'viem recovers the hosted wallet as the sender');
  t.ok(native.confirmations! >= 2, 'final after the finality depth');

  // Without a token, or with another user's token, the hosted vault refuses.
  const noToken = client.sendEvm({ wallet: hw, to: alice, amount: 1n, idempotencyKey: 'native-no-token' });
  await t.rejects(noToken, { status: 403, code: 'forbidden' }, 'hosted vault needs the end-user token');
  const p2 = { wallet: hw, to: alice, amount: 1n, idempotencyKey: 'native-wrong-user' };
  await t.rejects(client.sendEvm({ ...p2, endUserToken: await tokenFor(await client.evmIntent(p2), 'user-99') }), { status: 403, code: 'forbidden' }, 'another user\'s token is refused');

  // A member action (docs/platform/member-actions.md): the BYO OIDC member user-42 signs in at the
  // provider through the BFF's exchange, approves one exact transfer of the hosted vault with a fresh ID
  // token whose nonce commits to it, and the transaction submitted with the signing session is signed
  // by the nodes, each checking the proof against the organization's registration.
  const put = await fetch(`${stack.base}/v1/tenant/member-auth/application`, {
    method: 'PUT', headers: { authorization: `Bearer ${stack.bearer!}`, 'content-type': 'application/json' },
    body: JSON.stringify({ issuer: op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp' }),
  });
  t.equal(put.status, 201, 'the BYO OIDC application is registered');
  const members = new MemberAuthClient({ baseUrl: stack.base, apiKey: stack.bearer!, publishableKey: ((await put.json()) as { publishable_key: string }).publishable_key });
  const session = (await members.exchange('e2e-member-exchange-1', await op.signIn({ sub: 'user-42', nonce: (await members.createChallenge()).nonce, maxAge: 300 }))).grant.session_id;
  const mp = { wallet: hw, to: alice, amount: 4242n, idempotencyKey: 'member-action-1', notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600) };
  const action = await members.beginMemberAction(session, { walletId: hw.id, intent: await client.evmIntent(mp) });
  const proof = await op.signIn({ sub: 'user-42', nonce: action.proof.nonce, maxAge: action.proof.max_age });
  const approved = await members.completeMemberAction(session, action.id, proof);
  const aliceBefore = await chain.publicClient.getBalance({ address: alice });
  const byMember = await client.sendEvm({ ...mp, memberSigningSession: approved.signing_session.id });
  const memberTx = await mining(mine, client.waitForTransaction(byMember.id, ['final'], { timeoutMs: 90_000 }));
  t.equal(memberTx.state, 'final', `the member-approved transfer is final (${memberTx.reason ?? ''})`);
  t.equal(await chain.publicClient.getBalance({ address: alice }) - aliceBefore, 4242n, 'exactly the approved amount');
  t.equal(await recovered(memberTx.tx_hash!), hw.address.toLowerCase(), 'signed by the hosted wallet\'s key');
  await t.rejects(client.sendEvm({ ...mp, idempotencyKey: 'member-action-2', memberSigningSession: approved.signing_session.id }), { status: 409, code: 'signing_session_used' }, 'the signing session served once');
  for (const p of stack.cluster.procs) t.notOk(p.raw.some((l) => l.includes(proof.split('.')[2]!)), `${p.name} logged no part of the member's proof`);

  // Account Center passkeys (docs/platform/account-center.md "Passkeys"), in headless Chromium with a
  // virtual authenticator: the hosted member signs in on the Account Center, adds a passkey (a
  // @simplewebauthn registration; the service signs its member credential under the organization's
  // Account Center key), then approves one transfer of its hosted vault on an approval visit; the BFF
  // takes the answer from the exchange to passkey/complete and the nodes sign the transfer.
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  // The application's return URL, answered in the browser: nothing of the customer's runs here.
  await page.route(`${appOrigin}/**`, (r) => r.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>app</title>' }));
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', { options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true } });
  const handoff = async (extra: Record<string, string> = {}) => {
    const pkce = pkcePair();
    const r = await platform('POST', '/v1/account-center/handoffs', { return_url: callback, state: 'ac-state', code_challenge: pkce.challenge, ...extra }, bffHeaders(demo.session_id));
    t.equal(r.status, 201, JSON.stringify(r.json));
    return { url: r.json.handoff_url as string, pkce };
  };
  const exchange = async (pkce: { verifier: string }) => {
    await page.waitForURL(`${callback}?**`);
    const back = new URL(page.url());
    t.equal(back.searchParams.get('state'), 'ac-state');
    return (await platform('POST', '/v1/account-center/handoffs/exchange', { code: back.searchParams.get('code'), code_verifier: pkce.verifier, return_url: callback }, bffHeaders(demo.session_id))).json;
  };
  const cspOf = async (click: string, url: string) => {
    const [res] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'GET' && r.url().startsWith(url)), page.click(click)]);
    return res.headers()['content-security-policy']!;
  };

  const enrol = await handoff();
  t.ok(enrol.url.startsWith(`${stack.base}/v1/account-center/hac_`), 'the Account Center page on this API\'s origin');
  await page.goto(enrol.url);
  await page.fill('#email', demoEmail);
  await page.click('#submit');
  await page.fill('#code', await smtp.nextCode(demoEmail));
  const accountCsp = await cspOf('#submit', enrol.url);
  t.notMatch(accountCsp, /script-src/, 'the account page allows no script');
  t.equal(await page.textContent('#passkey-count'), 'Passkeys: 0', 'the opt-in holds: the page offers a passkey');
  const setupCsp = await cspOf('#passkey-add', enrol.url);
  t.match(setupCsp, /(^|; )script-src 'nonce-[A-Za-z0-9+/=]+'; require-trusted-types-for 'script'; trusted-types 'none';/, 'the passkey step allows its one script by nonce');
  t.notMatch(setupCsp, /unsafe|script-src[^;]*(https?:|'self'|\*)/, 'no inline or eval, no origin-wide source');
  t.match(await page.getAttribute('script', 'integrity'), /^sha256-/, 'and pins its digest');
  await page.click('#passkey-start');
  await page.waitForSelector('#passkey-count');
  t.equal(await page.textContent('#passkey-count'), 'Passkeys: 1', 'Chromium\'s passkey is enrolled');
  const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
  t.match(credentials, [{ rpId: 'localhost', isResidentCredential: true }], 'for the Account Center\'s host as RP ID');
  await page.click('#finish');
  const enrolled = await exchange(enrol.pkce);
  t.match(enrolled, { member_id: demo.member.id, changes: ['passkey_enrolled'], factors: [{ type: 'passkey', credential_id: /^[A-Za-z0-9_-]+$/ }], approval: null }, 'the BFF learns a passkey was added');

  // The approval: the BFF begins the member action, then an approval visit on the Account Center.
  const hostedMembers = new MemberAuthClient({ baseUrl: stack.base, apiKey: stack.bearer!, publishableKey: hostedApp.publishable_key as string });
  const ap = { wallet: mw, to: alice, amount: 31_337n, idempotencyKey: 'account-center-passkey-1', notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600) };
  const memberAction = await hostedMembers.beginMemberAction(demo.session_id, { walletId: mw.id, intent: await client.evmIntent(ap) });
  const visit = await handoff({ member_action_id: memberAction.id });
  await page.goto(visit.url);
  const shown = (await page.textContent('#action-lines'))!;
  t.ok(shown.includes('Send 31337 wei') && shown.includes(`to ${alice}`) && shown.includes(`from ${mw.address.toLowerCase()}`), `the page shows what is approved: ${shown}`);
  await page.click('#passkey-start');
  const approvedHere = await exchange(visit.pkce);
  t.match(approvedHere, { changes: ['member_action_approved'], approval: { action_id: memberAction.id, credential: /^ey/, assertion: { id: enrolled.factors[0].credential_id } } });
  const completed = await platform('POST', '/v1/member-actions/passkey/complete', { action_id: memberAction.id, credential: approvedHere.approval.credential, assertion: approvedHere.approval.assertion }, bffHeaders(demo.session_id));
  t.equal(completed.status, 200, JSON.stringify(completed.json));
  const aliceAt = await chain.publicClient.getBalance({ address: alice });
  const byPasskey = await client.sendEvm({ ...ap, memberSigningSession: completed.json.signing_session.id as string });
  const passkeyTx = await mining(mine, client.waitForTransaction(byPasskey.id, ['final'], { timeoutMs: 90_000 }));
  t.equal(passkeyTx.state, 'final', `the transfer approved on the Account Center is final (${passkeyTx.reason ?? ''})`);
  t.equal(await chain.publicClient.getBalance({ address: alice }) - aliceAt, 31_337n, 'exactly the approved amount');
  t.equal(await recovered(passkeyTx.tx_hash!), mw.address.toLowerCase(), 'signed by the member\'s hosted wallet');

  // ERC-20 from the self vault.
  const erc20Before = await chain.publicClient.readContract({ address: contract, abi: erc20Abi, functionName: 'balanceOf', args: [bob] });
  const erc20 = await send(client, { wallet: sw, to: bob, amount: 12_345n, asset: contract, idempotencyKey: 'erc20-1' }, false);
  t.equal(erc20.state, 'final', `ERC-20 transfer final (${erc20.reason ?? ''})`);
  t.equal(await chain.publicClient.readContract({ address: contract, abi: erc20Abi, functionName: 'balanceOf', args: [bob] }) - erc20Before, 12_345n, 'token balance moved by exactly the amount');
  t.equal(await recovered(erc20.tx_hash!), sw.address.toLowerCase(), 'viem recovers the self wallet as the sender');

  // Same idempotency key and body: the same transaction; another body: 409.
  const replay = await client.sendEvm({ wallet: sw, to: bob, amount: 12_345n, asset: contract, idempotencyKey: 'erc20-1' });
  t.equal(replay.id, erc20.id, 'an idempotent retry returns the same transaction');
  await t.rejects(client.sendEvm({ wallet: sw, to: bob, amount: 1n, asset: contract, idempotencyKey: 'erc20-1' }), { status: 409, code: 'conflict' });

  // A Safe owner signature by the self vault's wallet (intent kind 3): the service node and the
  // organization's self node each compute the SafeTx digest from the intent; the transaction ends
  // `signed` with r || s || v, which recovers to the wallet over protocol-kit's SafeTx hash.
  const safeParams = { wallet: sw, safe: '0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a', to: contract, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [bob, 1n] }), safeNonce: 0n, idempotencyKey: 'safe-owner-1' };
  const owned = await client.signSafeTx(safeParams);
  const ownerSig = await client.safeTxSignature(owned.id, { timeoutMs: 90_000 });
  const theirs = calculateSafeTransactionHash(getAddress(safeParams.safe), {
    to: getAddress(contract), value: '0', data: safeParams.data, operation: 0, safeTxGas: '0', baseGas: '0', gasPrice: '0', gasToken: zeroAddress, refundReceiver: zeroAddress, nonce: 0,
  } as never, '1.4.1', BigInt(chain.publicClient.chain!.id));
  t.equal(ownerSig.safeTxHash, theirs, 'the SafeTx digest is protocol-kit\'s');
  t.equal(await recoverAddress({ hash: theirs as Hex, signature: ownerSig.signature as Hex }), getAddress(sw.address), 'the cluster\'s owner signature recovers to the self wallet');
  t.equal((await client.signSafeTx(safeParams)).signature, ownerSig.signature, 'a retry returns the one stored signature');

  // Reshare the hosted vault to the self tier while transfers keep flowing.
  const ack = await client.reshareVault(h.id, { target_tier: 'self' });
  t.equal(ack.status, 'accepted');
  const flowing: Promise<Transaction>[] = [];
  // The resharing vault's own transfers (old shares sign until the commit) and the other vault's.
  for (let i = 0; i < 3; i++) {
    flowing.push(send(client, { wallet: hw, to: alice, amount: 1000n + BigInt(i), idempotencyKey: `during-reshare-${i}` }, true));
  }
  flowing.push(send(client, { wallet: sw, to: alice, amount: 999n, idempotencyKey: 'during-reshare-self' }, false));
  const during = await Promise.all(flowing);
  t.same(during.map((x) => x.state), ['final', 'final', 'final', 'final'], `transactions kept flowing during the reshare (${during.map((x) => x.reason ?? '').join(' ')})`);
  t.same(new Set(during.slice(0, 3).map((x) => x.nonce)).size, 3, 'concurrent submissions of one wallet took distinct nonces');
  const reshared = await client.waitForVault(h.id, (v) => v.state !== 'resharing', { timeoutMs: 120_000 });
  t.equal(reshared.state, 'active', `reshare settled (${reshared.problem ?? ''})`);
  t.equal(reshared.tier, 'self', 'moved to the self tier');
  t.equal(reshared.rotation, h.rotation + 1, 'rotation counter +1');
  t.equal(reshared.public_key, h.public_key, 'same public key');
  const again: Wallet = await client.createWallet(h.id, { chain: 'evm-local' });
  t.equal(again.address, hw.address, 'same address after the reshare');
  const afterReshare = await send(client, { wallet: hw, to: alice, amount: 777n, idempotencyKey: 'after-reshare' }, false);
  t.equal(afterReshare.state, 'final', `the reshared vault signs (${afterReshare.reason ?? ''})`);
  t.equal(await recovered(afterReshare.tx_hash!), hw.address.toLowerCase());

  // Kill the API right after two submissions and start it again on the same data: both transactions
  // finish, each once, with the next two nonces of the wallet; the chain sees no gap and no repeat.
  const nonceBefore = await chain.publicClient.getTransactionCount({ address: sw.address as Hex });
  const queued = [];
  for (let i = 0; i < 2; i++) queued.push(await client.sendEvm({ wallet: sw, to: bob, amount: 50n + BigInt(i), idempotencyKey: `restart-${i}` }));
  const api = stack.cluster.procs.find((p) => p.name === 'api' && p.running)!;
  await api.kill('SIGKILL');
  await stack.cluster.startApi({ API_CHAIN_BACKENDS: `evm-local=${chain.url}` });
  const resumed = await Promise.all(queued.map((q) => mining(mine, client.waitForTransaction(q.id, ['final'], { timeoutMs: 90_000 }))));
  t.same(resumed.map((r) => r.state), ['final', 'final'], 'both finish after the restart');
  t.same(resumed.map((r) => r.nonce).sort(), [nonceBefore, nonceBefore + 1], 'the next two nonces, each used once');
  t.equal(await chain.publicClient.getTransactionCount({ address: sw.address as Hex }), nonceBefore + 2, 'the chain saw exactly two transactions');
});
