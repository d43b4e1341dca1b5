// A payment end to end with real processes (coordinator, three service nodes, the API) and a real anvil
// (docs/platform/payments.md): two BYO OIDC members sign in at a real OpenID provider through the BFF's
// exchange, their account holders get hosted-vault wallets (wallet-provision on the member's session),
// Alice is funded through the sandbox rail (the issuer mints the stablecoin), pays Bob; her backend builds
// one intent per transfer (the principal, the tenant's fee and the platform's), she approves them as one batch member
// action, each intent goes through POST /v1/transactions with the signing session and the nodes sign it;
// the payment confirms on the chain, a customer webhook endpoint receives payment.confirmed, and the
// operator's reconciliation (GET /operator/v1/workspaces/{id}/reconciliation, `npm run admin -- ledger
// reconcile`) finds the platform ledger and the chain in agreement.
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { erc20Abi, type Hex } from 'viem';
import { startStack, mining } from './stack.ts';
import { waitUntil } from '../cluster/cluster-harness.ts';
import { startProvider } from '../api/member-auth/oidc-provider-fixture.ts';
import type { Wallet } from '../../api/sdk/client.ts';
import { MemberAuthClient } from '../../api/sdk/member-auth-client.ts';
import { evmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { deployStablecoin } from '../../api/funding/deploy-stablecoin.ts';
import { UNITS_PER_CENT } from '../../api/funding/stablecoin-issuer.ts';
import type { ReconcileReturnType } from '../../api/ledger/reconciliation.ts';

t.setTimeout(300_000);

// anvil's second dev account: the stablecoin's issuer, never a customer's key.
const ISSUER_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as Hex;
const COLLECTOR = '0x00000000000000000000000000000000000000f1' as Hex;
const TENANT_COLLECTOR = '0x00000000000000000000000000000000000000f2' as Hex;
const OPERATOR_TOKEN = 'journey-operator-secret-0123456789abcdef';

t.test('a member is funded, pays another holder with one batch approval, the payment confirms on chain; webhook and ledger agree', async (t) => {
  let token = '' as Hex;
  const stack = await startStack({
    anvil: true, bearerKey: true,
    apiEnv: async (anvil, cluster) => {
      token = await deployStablecoin(evmNetwork('evm-local')!, anvil!.url, ISSUER_KEY);
      const keyFile = join(cluster.dir, 'issuer.key');
      writeFileSync(keyFile, ISSUER_KEY, { mode: 0o600 });
      const tokenFile = join(cluster.dir, 'operator-token');
      writeFileSync(tokenFile, OPERATOR_TOKEN, { mode: 0o600 });
      return {
        API_OPERATOR_TOKEN_FILE: tokenFile,
        API_FUNDING_RAIL: 'sandbox', API_SANDBOX_RAIL_SETTLE_MS: '300', API_FUNDING_STABLECOINS: `evm-local=${token}`, API_FUNDING_ISSUER_KEY_FILE: keyFile,
        API_PLATFORM_FEE_BPS: '10', API_PLATFORM_FEE_FIXED: '5', API_PLATFORM_FEE_COLLECTORS: `evm-local=${COLLECTOR}`, API_PAYMENT_SWEEP_MS: '500',
        API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1',
      };
    },
  });
  t.teardown(() => stack.stop());
  const anvil = stack.anvil!;
  const mine = () => anvil.testClient.mine({ blocks: 1 });
  const client = stack.client;
  const asset = `evm-local:${token}`;
  const platform = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(`${stack.base}${path}`, { method, headers: { authorization: `Bearer ${stack.bearer!}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    return { status: r.status, json: (await r.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };

  // The customer's webhook endpoint.
  const received: { type: string; data: Record<string, unknown> }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => { body += c.toString(); });
    req.on('end', () => { received.push(JSON.parse(body)); res.writeHead(200).end(); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  t.equal((await platform('POST', '/v1/webhook-endpoints', { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, events: ['payment.confirmed'] })).status, 201);

  // Member auth: the BYO application, the organization's end-user auth, and two members signed in.
  const op = await startProvider(t);
  await client.setEndUserAuth({ jwks: { keys: [op.publicJwk] }, audience: 'bff-client' });
  const put = await platform('PUT', '/v1/tenant/member-auth/application', { issuer: op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp' });
  t.equal(put.status, 201);
  const pk = put.json.publishable_key as string;
  const members = new MemberAuthClient({ baseUrl: stack.base, apiKey: stack.bearer!, publishableKey: pk });
  const signIn = async (sub: string, n: number) => {
    const session = (await members.exchange(`journey-exchange-${n}`, await op.signIn({ sub, nonce: (await members.createChallenge()).nonce, maxAge: 300 }))).grant.session_id;
    return { session, member: (await members.getSession(session)).member.id };
  };
  const [alice, bob] = [await signIn('alice', 1), await signIn('bob', 2)];

  // Their account holders, verified, and a hosted vault each bound to the member, linked by wallet-provision.
  const vaults = await Promise.all(['alice', 'bob'].map((sub) => client.createVault({ tier: 'hosted', name: sub, end_user_subject: sub })));
  await Promise.all(vaults.map((v) => client.waitForVault(v.id, undefined, { timeoutMs: 120_000 })));
  const holderOf = async (m: { session: string; member: string }, vaultId: string, name: string): Promise<{ id: string; wallet: Wallet }> => {
    const made = await platform('POST', '/v1/account-holders', { type: 'individual', given_name: name, family_name: 'Member', member_id: m.member });
    t.equal(made.status, 201, JSON.stringify(made.json));
    const id = made.json.id as string;
    for (const [v, patch] of [[1, { verification_status: 'pending' }], [2, { verification_status: 'verified' }], [3, { status: 'active' }]] as const) {
      t.equal((await platform('PATCH', `/v1/account-holders/${id}`, patch, { 'if-match': `"${v}"` })).status, 200);
    }
    const prov = await platform('POST', '/v1/account-holders/self/wallet-provision', { vault_id: vaultId, chains: ['evm-local'] }, { 'x-svc-publishable-key': pk, 'x-member-session-id': m.session });
    t.equal(prov.status < 300, true, JSON.stringify(prov.json));
    const walletId = (prov.json.wallets as { wallet_id: string }[])[0]!.wallet_id;
    return { id, wallet: await client.getWallet(walletId) };
  };
  const ada = await holderOf(alice, vaults[0]!.id, 'Alice');
  const bo = await holderOf(bob, vaults[1]!.id, 'Bob');
  await anvil.testClient.setBalance({ address: ada.wallet.address as Hex, value: 10n ** 18n });
  const balanceOf = (a: string) => anvil.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [a as Hex] });

  // Funding through the sandbox rail: USD 100.00, minted to Alice's wallet.
  const f = await platform('POST', '/v1/funding-requests', { account_holder_id: ada.id, wallet_id: ada.wallet.id, fiat_amount: '10000', currency: 'USD' }, { 'idempotency-key': 'journey-fund' });
  t.equal(f.status, 201, JSON.stringify(f.json));
  await mining(mine, waitUntil(async () => (await platform('GET', `/v1/funding-requests/${f.json.id}`)).json.status === 'completed', 60_000, 'the funding', 300));
  const funded = 10000n * UNITS_PER_CENT;
  t.equal(await balanceOf(ada.wallet.address), funded);

  // The tenant's fee: 50 bps, paid to the collector its schedule names. Fees are a commercial decision,
  // an admin's (a developer key may not set them): the operator makes the workspace an admin key.
  const adminKey = await (await fetch(`${stack.base}/operator/v1/workspaces/${stack.sandbox}/keys`, {
    method: 'POST', headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ role: 'admin' }),
  })).json() as { bearer_token: string };
  const schedule = await platform('POST', '/v1/fee-schedules', { name: 'Standard', rules: [{ payment_kind: '*', asset: '*', basis_points: 50, fixed: '0', min: '0', max: null }], collectors: { 'evm-local': TENANT_COLLECTOR } }, { 'idempotency-key': 'journey-fees', authorization: `Bearer ${adminKey.bearer_token}` });
  t.equal(schedule.status, 201, JSON.stringify(schedule.json));

  // The payment: USD 25.00 to Bob, with the tenant's fee and the platform's.
  const amount = 2500n * UNITS_PER_CENT;
  const created = await platform('POST', '/v1/payments', { source_wallet_id: ada.wallet.id, destination: { account_holder_id: bo.id }, amount: amount.toString(), asset }, { 'idempotency-key': 'journey-pay' });
  t.equal(created.status, 201, JSON.stringify(created.json));
  const p = created.json as { id: string; transfers: { role: string; to: string; amount: string; idempotency_key: string }[] };
  const tenantFee = amount * 50n / 10000n;
  const platformFee = amount * 10n / 10000n + 5n;
  const fee = tenantFee + platformFee;
  t.same(p.transfers.map((x) => [x.role, x.to, x.amount]), [
    ['principal', bo.wallet.address.toLowerCase(), amount.toString()], ['tenant_fee', TENANT_COLLECTOR, tenantFee.toString()], ['platform_fee', COLLECTOR, platformFee.toString()],
  ], 'the principal and both fees, each a transfer on chain');

  // Alice's backend builds the intents; Alice approves them at once; each is submitted with the session.
  const notAfter = BigInt(Math.floor(Date.now() / 1000) + 3600);
  const params = p.transfers.map((x) => ({ wallet: ada.wallet, to: x.to as Hex, amount: BigInt(x.amount), asset: token, idempotencyKey: x.idempotency_key, notAfter }));
  const action = await members.beginBatchMemberAction(alice.session, { walletId: ada.wallet.id, intents: await Promise.all(params.map((x) => client.evmIntent(x))), purpose: { type: 'payment', id: p.id } });
  t.equal((await platform('GET', `/v1/payments/${p.id}`)).json.status, 'authorizing');
  const proof = await op.signIn({ sub: 'alice', nonce: action.proof.nonce, maxAge: action.proof.max_age ?? 300 });
  const approved = await members.completeMemberAction(alice.session, action.id, proof);
  const txs = [];
  for (const x of params) txs.push(await client.sendEvm({ ...x, memberSigningSession: approved.signing_session.id }));
  await mining(mine, Promise.all(txs.map((x) => client.waitForTransaction(x.id, ['final'], { timeoutMs: 120_000 }))));
  await mining(mine, waitUntil(async () => (await platform('GET', `/v1/payments/${p.id}`)).json.status === 'confirmed', 60_000, 'the payment to confirm', 300));

  t.equal(await balanceOf(ada.wallet.address), funded - amount - fee, 'Alice paid the amount and both fees');
  t.equal(await balanceOf(bo.wallet.address), amount, 'Bob received the amount');
  t.equal(await balanceOf(COLLECTOR), platformFee, 'the platform\'s collector received its fee');
  t.equal(await balanceOf(TENANT_COLLECTOR), tenantFee, 'the tenant\'s collector received its fee');
  await waitUntil(() => received.some((e) => e.type === 'payment.confirmed'), 30_000, 'payment.confirmed at the endpoint', 200);
  t.match(received.find((e) => e.type === 'payment.confirmed')!.data, { payment_id: p.id, status: 'confirmed', amount: amount.toString(), asset });
  const flows = await platform('GET', `/v1/transactions?kind=payment&account_holder_id=${bo.id}`);
  t.match(flows.json.data, [{ id: p.id, kind: 'payment', direction: 'in', status: 'confirmed' }], 'in Bob\'s payment flows');

  // The operator's reconciliation: every holder's stablecoin ledger balance against the chain.
  const rec = (await (await fetch(`${stack.base}/operator/v1/workspaces/${stack.sandbox}/reconciliation`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })).json()) as ReconcileReturnType;
  const line = (holder: string) => rec.lines.find((l) => l.account_holder_id === holder);
  t.match(line(ada.id), { asset, ledger_balance: (funded - amount - fee).toString(), chain_balance: (funded - amount - fee).toString(), difference: '0' }, 'Alice: ledger and chain agree');
  t.match(line(bo.id), { asset, ledger_balance: amount.toString(), chain_balance: amount.toString(), difference: '0' }, 'Bob: ledger and chain agree');
  t.same(rec.differences, [], 'reconciliation: no difference');
});
