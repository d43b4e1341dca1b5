// Shared setup for the payment tests: both APIs over one real LevelDB store, as server.ts builds them, two
// customers (Acme and Globex) made before the app so the configuration can name Acme's workspace as the
// tenant fee collector's, a platform fee and both collectors configured, an injected clock, the payment
// service built from that configuration and handed to the app (so the test drives its sweep), and
// account holders with a linked hosted vault's EVM wallet. The payer's ERC-20 balance is read from a
// chain double unless the test passes real chain backends.
import type { Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { createPlatform } from '../../../api/platform.ts';
import { CustomerLinks } from '../../../api/customers/customer-links.ts';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';
import { createCustomer } from '../../../api/customers/create-customer.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';
import { ACCOUNT_HOLDERS, ACCOUNT_HOLDER_VAULTS, VAULT_ACCOUNT_HOLDERS } from '../../../api/account-holders/collections.ts';
import type { Chains } from '../../../api/transactions/transaction-worker.ts';
import type { EvmChain } from '../../../api/chains/evm/evm-chain.ts';
import { createPayments } from '../../../api/payments/payment-setup.ts';
import type { Funding } from '../../../api/funding/funding-setup.ts';
import { encodeIntent, signIntent } from '../../../core/intents/intent.ts';
import { evmIntentFromFields } from '../../../core/intents/evm-fields.ts';
import { TRANSACTIONS } from '../../../api/transactions/collections.ts';
import { txIndex } from '../../../api/transactions/transaction-service.ts';
import type { TransactionRecord } from '../../../api/transactions/records.ts';
import { WEBHOOK_EVENTS } from '../../../api/webhooks/collections.ts';
import { startProvider } from '../member-auth/oidc-provider-fixture.ts';
import { newExchangeId } from '../member-auth/member-auth-harness.ts';

export const TOKEN = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
export const ASSET = `evm-local:${TOKEN}`;
export const PLATFORM_COLLECTOR = '0x00000000000000000000000000000000000000f1';
export const TENANT_COLLECTOR = '0x00000000000000000000000000000000000000f2';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface PaymentsAppOptions {
  /** Settings beside the data directory and the collectors (e.g. the platform fee); `{ws}` is replaced by Acme's sandbox workspace id. */
  env?: Record<string, string>;
  /** Real chain backends; a double answering `balances` when absent. */
  chains?: Chains;
  /** A funding service to serve (the journey's sandbox rail); built from the configuration when absent. */
  funding?: Funding;
  /** The platform's clock; a manual one when absent. */
  clock?: () => number;
}

export async function paymentsApp(t: Test, opts: PaymentsAppOptions = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'payments-'));
  const store = await RecordStore.open(dir);
  const manual = { now: Date.parse('2030-01-01T12:00:00.000Z') };
  const clock = opts.clock ?? (() => manual.now);
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: 50 } });
  const transactions = new TransactionService({ vaults, hasBackend: () => true });
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects'), clock, webhookAllowedDestinations: ['127.0.0.1'] });
  const links = new CustomerLinks(store);
  const operator = ed25519.utils.randomSecretKey();
  const customer = async (name: string) => {
    const secret = ed25519.utils.randomSecretKey();
    const made = await createCustomer({ store, vaults, tenancy: platform.tenancy, links, environment: 'sandbox' }, { name, publicKey: bytesToHex(ed25519.getPublicKey(secret)), operatorSecretKey: operator });
    const key = async (role: string, workspace = made.sandbox.id) => (await platform.tenancy.createKey(workspace, role, {})).token;
    return { ...made, org: made.organization.id, creds: { keyId: made.apiKeyId, secretKey: secret }, owner: await key('owner'), key };
  };
  const acme = await customer('Acme');
  const globex = await customer('Globex');

  /** The payer balances the chain double answers, by lower-case address. */
  const balances = new Map<string, bigint>();
  const double = { tokenBalance: async (_token: string, address: string) => balances.get(address.toLowerCase()) ?? 0n } as unknown as EvmChain;
  const chains: Chains = opts.chains ?? { evm: (c) => (c === 'evm-local' ? double : undefined), bitcoin: () => undefined };
  const env = Object.fromEntries(Object.entries(opts.env ?? {}).map(([k, v]) => [k, v.replaceAll('{ws}', acme.sandbox.id)]));
  const config = loadApiConfig({
    API_DATA_DIR: dir, API_PLATFORM_FEE_BPS: '10', API_PLATFORM_FEE_FIXED: '5',
    API_PLATFORM_FEE_COLLECTORS: `evm-local=${PLATFORM_COLLECTOR}`, ...env,
  });
  const warnings: object[] = [];
  const payments = createPayments(config, platform, { store, chains, log: { warn: (o: object) => warnings.push(o) } });
  const app = await buildApp({ config, logger: createLogger('api', 'silent'), vaults, transactions, platform, chains, payments, ...(opts.funding ? { funding: opts.funding } : {}) });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });

  const bearer = (method: Method, url: string, body?: unknown, token = acme.owner, headers: Record<string, string> = {}) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });
  /** A vault-API call signed with `who`'s API key, as the SDK signs it. */
  const signed = (method: Method, path: string, body?: unknown, who = acme) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return app.inject({ method, url: path, payload, headers: { host: 'api.test', ...signedHeaders(who.creds, method, `http://api.test${path}`, payload) } });
  };

  /**
   * An active (verified) holder of `who`'s sandbox workspace linked to a BYO member `member`, with a
   * hosted vault of its organization (end-user auth, bound to `subject`) and an evm-local wallet under it,
   * as POST /account-holders/self/wallet-provision leaves them.
   */
  const holder = async (o: { who?: typeof acme; member?: string; subject?: string; secret?: Uint8Array; vault?: VaultRecord } = {}) => {
    const who = o.who ?? acme;
    const made = await bearer('POST', '/v1/account-holders', { type: 'individual', given_name: 'Ada', family_name: 'Lovelace' }, who.owner);
    if (made.statusCode !== 201) throw new Error(made.body);
    const id = made.json().id as string;
    for (const [v, patch] of [[1, { verification_status: 'pending' }], [2, { verification_status: 'verified' }], [3, { status: 'active' }]] as const) {
      const r = await bearer('PATCH', `/v1/account-holders/${id}`, patch, who.owner, { 'if-match': `"${v}"` });
      if (r.statusCode !== 200) throw new Error(r.body);
    }
    const member = o.member ?? `mem_${bytesToHex(secp256k1.utils.randomSecretKey()).slice(0, 26)}`;
    const h = (await ACCOUNT_HOLDERS.in(store).get(id))!;
    await store.batch([ACCOUNT_HOLDERS.putOp(id, { ...h, member_id: member, member_kind: 'byo_oidc' })]);
    let vault = o.vault;
    if (!vault) {
      const secret = o.secret ?? secp256k1.utils.randomSecretKey();
      const v = await vaults.createVault(who.org, { tier: 'hosted', ...(o.subject ? { end_user_subject: o.subject } : {}) });
      vault = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secret, true)), chain_code: bytesToHex(new Uint8Array(32).fill(7)), end_user_auth: true, end_user_subject: o.subject ?? `sub-${id}` };
      await store.batch([vaults.vaultOp(vault)]);
    }
    const { wallet } = await vaults.createWallet(who.org, vault.id, 'evm-local', 0, undefined);
    const now = new Date(clock()).toISOString();
    await store.batch([
      ACCOUNT_HOLDER_VAULTS.putOp(id, { v: 1, account_holder_id: id, tenant: who.tenant.id, workspace: who.sandbox.id, org: who.org, vault_id: vault.id, chains: ['evm-local'], wallets: [{ chain: 'evm-local', wallet_id: wallet.id }], linked_at: now, updated_at: now }),
      VAULT_ACCOUNT_HOLDERS.putOp(vault.id, { v: 1, account_holder_id: id }),
    ]);
    return { id, wallet, vault, member };
  };

  return { dir, store, vaults, transactions, platform, app, clock: manual, config, payments, service: payments.service, acme, globex, bearer, signed, holder, balances, warnings };
}

export type PaymentsApp = Awaited<ReturnType<typeof paymentsApp>>;

/** A payment as the API answers it (the fields these tests read). */
export interface Payment { id: string; status: string; member_action_id: string | null; transfers: { role: string; to: string; amount: string; idempotency_key: string }[]; payer: { wallet_id: string; address: string }; transactions: { role: string; transaction_id: string }[]; failure_reason: string | null }

/**
 * A BYO member signed in at a real OpenID provider (oidc-provider-fixture.ts), with the organization's
 * end-user auth registered to it; `ada`, the member's holder (hosted vault bound to `alice`, the payer),
 * `bob` another holder; a fee schedule; and helpers that make a payment, build its intents as the
 * customer's backend does, approve them as one batch member action and submit each intent.
 */
export async function withMember(t: Test, s: PaymentsApp, skewMs: () => number = () => 0, o: { token?: string; secret?: Uint8Array; amount?: bigint } = {}) {
  const op = await startProvider(t);
  const put = await s.bearer('PUT', '/v1/tenant/member-auth/application', { issuer: op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp' });
  if (put.statusCode !== 201) throw new Error(put.body);
  const pk = put.json().publishable_key as string;
  const eua = await s.signed('PUT', '/v1/config/end-user-auth', { jwks: { keys: [op.publicJwk] }, audience: 'bff-client' });
  if (eua.statusCode !== 200) throw new Error(eua.body);
  const bff = (method: 'GET' | 'POST', url: string, body: unknown, session?: string) => s.bearer(method, url, body, s.acme.owner, { 'x-svc-publishable-key': pk, ...(session ? { 'x-member-session-id': session } : {}) });
  const signIn = async (sub: string) => {
    const c = await bff('POST', '/v1/member-auth/proof/challenges', {});
    const idToken = await op.signIn({ sub, nonce: c.json().nonce, maxAge: 300 });
    const r = await bff('POST', '/v1/member-auth/proof/exchange', { exchange_id: newExchangeId(), id_token: idToken });
    if (r.statusCode !== 201) throw new Error(r.body);
    const session = r.json().session_id as string;
    return { session, member: (await bff('GET', '/v1/member-auth/session', undefined, session)).json().member.id as string };
  };
  const alice = await signIn('alice');
  const ada = await s.holder({ member: alice.member, subject: 'alice', ...(o.secret ? { secret: o.secret } : {}) });
  const bob = await s.holder();
  const token = o.token ?? TOKEN;
  s.balances.set(ada.wallet.address.toLowerCase(), 10n ** 12n);
  const fs = await s.bearer('POST', '/v1/fee-schedules', { name: 'Standard', rules: [{ payment_kind: '*', asset: '*', basis_points: 30, fixed: '1', min: '0', max: null }], collectors: { 'evm-local': TENANT_COLLECTOR } }, s.acme.owner, { 'idempotency-key': 'fs' });
  if (fs.statusCode !== 201) throw new Error(fs.body);
  let n = 0;
  const pay = async (): Promise<Payment> => {
    const r = await s.bearer('POST', '/v1/payments', { source_wallet_id: ada.wallet.id, destination: { account_holder_id: bob.id }, amount: (o.amount ?? 1_000_000n).toString(), asset: `evm-local:${token}` }, s.acme.owner, { 'idempotency-key': `p-${++n}` });
    if (r.statusCode !== 201) throw new Error(r.body);
    return r.json() as Payment;
  };
  /** The customer's backend builds and signs one intent per transfer, as next_action says. */
  // One nonce per idempotency key, as POST /v1/transactions/prepare would reserve them.
  const nonces = new Map<string, bigint>();
  const nonceOf = (key: string) => nonces.get(key) ?? nonces.set(key, BigInt(nonces.size)).get(key)!;
  const intentsOf = (p: Payment, over: (i: number) => Partial<Parameters<typeof evmIntentFromFields>[0]> = () => ({})) => p.transfers.map((x, i) => {
    const bytes = encodeIntent(evmIntentFromFields({
      organization: s.acme.org, walletId: p.payer.wallet_id, chainId: 31337n, nonce: nonceOf(x.idempotency_key), from: p.payer.address, to: x.to, amount: x.amount, asset: token,
      idempotencyKey: x.idempotency_key, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600), ...over(i),
    }));
    return { bytes, b64: Buffer.from(bytes).toString('base64'), hex: bytesToHex(bytes), key: x.idempotency_key, sig: bytesToHex(signIntent(bytes, s.acme.creds.secretKey)) };
  });
  type Intent = ReturnType<typeof intentsOf>[number];
  const begin = (p: Payment, intents: Intent[], session = alice.session, purposeId = p.id) =>
    bff('POST', '/v1/member-actions', { kind: 'transaction.sign_batch', wallet_id: p.payer.wallet_id, intents: intents.map((i) => i.b64), purpose: { type: 'payment', id: purposeId } }, session);
  const approve = async (p: Payment, intents = intentsOf(p)) => {
    const b = await begin(p, intents);
    if (b.statusCode !== 201) throw new Error(b.body);
    // A fresh proof by the platform's clock (which a test may move forward).
    const at = Math.floor((Date.now() + skewMs()) / 1000);
    const idToken = await op.mint({ sub: 'alice', nonce: b.json().proof.nonce, auth_time: at, iat: at, exp: at + 600 });
    const c = await bff('POST', '/v1/member-actions/external/complete', { action_id: b.json().id, id_token: idToken }, alice.session);
    if (c.statusCode !== 200) throw new Error(c.body);
    return { actionId: b.json().id as string, signing: c.json().signing_session.id as string, intents };
  };
  const submit = (i: Intent, signing: string) => s.signed('POST', '/v1/transactions', { wallet_id: ada.wallet.id, intent: i.hex, idempotency_key: i.key, intent_signature: i.sig, member_signing_session: signing });
  /** The transaction as the worker leaves it once it ends. */
  const end = async (id: string, state: TransactionRecord['state'], reason: string | null = null) => {
    const tx = (await TRANSACTIONS.in(s.store).get(id))!;
    const next = { ...tx, state, reason, tx_hash: `0x${id.slice(4).padEnd(64, '0')}`, updated_at: new Date().toISOString() };
    await s.store.batch([TRANSACTIONS.putOp(id, next, { index: txIndex(next) })]);
  };
  const get = async (id: string) => (await s.bearer('GET', `/v1/payments/${id}`)).json() as Payment;
  const history = async (id: string) => ((await s.bearer('GET', `/v1/payments/${id}/events`)).json().data as { to_status: string; reason: string | null }[]).map((e) => [e.to_status, e.reason]);
  const hooks = async (type: string) => {
    const out: Record<string, unknown>[] = [];
    for await (const e of WEBHOOK_EVENTS.in(s.store).all()) if (e.type === type) out.push(e.data);
    return out;
  };
  return { ...s, op, bff, signIn, alice, ada, bob, pay, intentsOf, begin, approve, submit, end, get, history, hooks };
}
