// Every catalog event, triggered through the API and received at a real webhook endpoint
// (docs/platform/events.md): an endpoint registered through POST /v1/webhook-endpoints for all 47 names
// by each customer whose events the rows make (Acme, and Globex for the vault rows), both pointing at one
// loopback HTTP receiver; one row per catalog name with the API calls that make the event.
// Each received delivery verifies with the SDK's verifier, its type is the row's name, its data has
// exactly the fields the catalog's example lists, with the row's values, and a sensitive event's data
// only the fields of its allow-list (SENSITIVE_FIELDS), each an id, an enum or a number. The test walks
// the catalog, not a list of its own: a name with no row fails, unless its row is in another area's file
// (ELSEWHERE, catalog-receipt.ts, which that file checks: an area's in-process app, or a file that already
// runs the signer nodes and a chain). A vault's key is made here as key generation would leave it; the
// operator's freeze goes through the operator API, served with an operator secret.
import t from 'tap';
import { paymentsApp, withMember, ASSET, type Payment } from '../payments/payments-app.ts';
import { receiver, type Received } from '../setup-platform.ts';
import { EVENT_TYPES, SENSITIVE_FIELDS, sensitiveDataAllowed } from '../../../api/webhooks/event-catalog.ts';
import { ELSEWHERE, receives } from './catalog-receipt.ts';
import { verifyWebhook } from '../../../api/sdk/webhook-receiver.ts';
import { totp } from '../../../api/tenancy/totp.ts';
import { EventRelay } from '../../../api/customers/event-relay.ts';
import { CustomerLinks } from '../../../api/customers/customer-links.ts';
import { createLogger } from '../../../common/logger.ts';
import { COMPLIANCE_CASES } from '../../../api/payments/collections.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { CustodyClient } from '../../../api/sdk/client.ts';
import { VAULTS } from '../../../api/vaults/collections.ts';
import { injectFetch } from '../../support/inject-fetch.ts';

const people = ['alice', 'bob', 'carol'].map((id) => ({ id, secretKey: ed25519.utils.randomSecretKey() }));
const approvers = people.map((p) => ({ id: p.id, public_key: bytesToHex(ed25519.getPublicKey(p.secretKey)) }));
const NATIVE = 'eip155:31337:native';
const BOB = '0x00000000000000000000000000000000000000b0';

type Data = Record<string, unknown>;
interface Row {
  /** The API calls that make the event; returns the values its data must carry. */
  trigger: () => Promise<Data>;
}

t.test('every catalog event is emitted through the API and received, signed, at a registered endpoint', async (t) => {
  const operatorToken = randomBytes(24).toString('hex');
  const operatorFile = join(mkdtempSync(join(tmpdir(), 'operator-')), 'operator-token');
  writeFileSync(operatorFile, operatorToken, { mode: 0o600 });
  const s = await paymentsApp(t, { clock: () => Date.now(), env: { API_OPERATOR_TOKEN_FILE: operatorFile } });
  const m = await withMember(t, s);
  const rx = await receiver(t);
  const failing = await receiver(t, () => 400);
  const names = EVENT_TYPES.map((e) => e.name);
  const created = await s.bearer('POST', '/v1/webhook-endpoints', { url: rx.url, events: names });
  t.equal(created.statusCode, 201, created.body);
  const ep = created.json() as { id: string; secret: string };
  const secrets = [ep.secret];
  const relay = new EventRelay({ store: s.store, links: new CustomerLinks(s.store), deliveries: s.platform.deliveries, log: createLogger('relay', 'silent'), audit: s.platform.audit });

  const ok = async (r: Promise<{ statusCode: number; body: string }>, status: number) => {
    const got = await r;
    if (got.statusCode !== status) throw new Error(`${got.statusCode}: ${got.body}`);
    return JSON.parse(got.body) as Data & { id: string };
  };
  const patchHolder = async (id: string, patch: Data) => {
    const cur = await ok(s.bearer('GET', `/v1/account-holders/${id}`), 200);
    return ok(s.bearer('PATCH', `/v1/account-holders/${id}`, patch, s.acme.owner, { 'if-match': `"${cur.version as number}"` }), 200);
  };
  const newHolder = () => ok(s.bearer('POST', '/v1/account-holders', { type: 'individual', given_name: 'Grace', family_name: 'Hopper' }), 201);
  /** Approves a payment as one batch, submits every transfer, ends each transaction as `end` says, and sweeps. */
  const settle = async (p: Payment, end: (i: number) => ['final'] | ['failed', string]) => {
    const a = await m.approve(p);
    for (const i of a.intents) await ok(m.submit(i, a.signing), 202);
    await s.service.runDue();
    const sub = await m.get(p.id);
    for (const [i, x] of sub.transactions.entries()) await m.end(x.transaction_id, ...(end(i) as [ 'final' ]));
    await s.service.runDue();
    await s.service.runDue();
  };
  /** A payee whose verification lapsed: a payment to it asks for review. */
  const lapsedPayee = async () => {
    const h = await s.holder();
    await patchHolder(h.id, { verification_status: 'expired' });
    return h;
  };
  let n = 0;
  const reviewedPayment = async () => {
    const payee = await lapsedPayee();
    return ok(s.bearer('POST', '/v1/payments', { source_wallet_id: m.ada.wallet.id, destination: { account_holder_id: payee.id }, amount: '1000000', asset: ASSET, accept_review: true }, s.acme.owner, { 'idempotency-key': `rv-${++n}` }), 201);
  };
  /** A pending request from Bob to Ada (the payer with a balance and a member). */
  const request = () => ok(s.bearer('POST', '/v1/payment-requests', { requester_account_holder_id: m.bob.id, payer_account_holder_id: m.ada.id, amount: '2500000', asset: ASSET }, s.acme.owner, { 'idempotency-key': `pr-${++n}` }), 201);
  const requestData = (id: string, status: string) => ({ payment_request_id: id, status, requester_account_holder_id: m.bob.id, payer_account_holder_id: m.ada.id, amount: '2500000', asset: ASSET });
  // The vault rows are Globex's, which registers no end-user auth (Acme's hosted vaults would need an
  // end-user token per transaction): its own endpoint, in its linked workspace, at the same receiver.
  const globexEndpoint = await ok(s.bearer('POST', '/v1/webhook-endpoints', { url: rx.url, events: names }, s.globex.owner), 201);
  secrets.push(globexEndpoint.secret as string);
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: s.globex.org, keyId: s.globex.creds.keyId, secretKey: s.globex.creds.secretKey, fetch: injectFetch(s.app) });
  /** A vault made through the API, with the key its generation would leave, and an evm-local wallet. */
  const activeVault = async () => {
    const made = await client.createVault({ tier: 'hosted' });
    const v = (await VAULTS.in(s.store).get(made.id))!;
    await s.store.batch([s.vaults.vaultOp({ ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)) })]);
    return { vault: made, wallet: await client.createWallet(made.id, { chain: 'evm-local' }) };
  };
  const operator = (verb: 'freeze' | 'unfreeze', vaultId: string) => ok(s.app.inject({ method: 'POST', url: `/operator/v1/vaults/${vaultId}/${verb}`, headers: { authorization: `Bearer ${operatorToken}` } }), 200);
  /** A vault whose policy (version 1) asks two of three approvers for a transfer above 100 wei. */
  const governed = async () => {
    const g = await activeVault();
    await client.putPolicy(g.vault.id, { format: 1, version: 1, vault_id: g.vault.id, change_delay_seconds: 3600, approvers, quorums: [{ k: 2, approvers: people.map((p) => p.id), when: { above: { [NATIVE]: '100' } } }] });
    return g;
  };
  const awaiting = async (g: Awaited<ReturnType<typeof governed>>) => {
    const tx = await client.sendEvm({ wallet: g.wallet, to: BOB, amount: 500n, idempotencyKey: `gov-${++n}`, nonce: BigInt(n) });
    if (tx.state !== 'awaiting_approval') throw new Error(`${tx.state}: ${tx.reason ?? ''}`);
    return tx;
  };
  const caseOf = async (paymentId: string) => (await COMPLIANCE_CASES.in(s.store).byIndex(`payment\x00${paymentId}`))[0]!;

  const rows: Record<string, Row> = {
    'webhook.test': { trigger: async () => {
      await ok(s.bearer('POST', `/v1/webhook-endpoints/${ep.id}/test`), 200);
      return { endpoint_id: ep.id };
    } },
    'webhook.endpoint.disabled': { trigger: async () => {
      const other = await ok(s.bearer('POST', '/v1/webhook-endpoints', { url: failing.url, events: ['webhook.test'] }), 201);
      await ok(s.bearer('PATCH', `/v1/webhook-endpoints/${other.id}`, { enabled: false }), 200);
      return { endpoint_id: other.id, enabled: false, reason: 'requested' };
    } },
    'webhook.delivery.dead_lettered': { trigger: async () => {
      // An endpoint answering 400 (a permanent 4xx) for the holders it is sent: its delivery is dead-lettered.
      const other = await ok(s.bearer('POST', '/v1/webhook-endpoints', { url: failing.url, events: ['account_holder.created'] }), 201);
      await newHolder();
      await s.platform.deliveries.runDue();
      await ok(s.bearer('PATCH', `/v1/webhook-endpoints/${other.id}`, { events: ['webhook.test'] }), 200);
      return { endpoint_id: other.id, attempt_count: 1 };
    } },
    'webhook.secret.rotated': { trigger: async () => {
      const key = await s.platform.tenancy.createKey(s.acme.sandbox.id, 'owner', { mfa: true });
      const action = `rotate_secret:${ep.id}`;
      const v = await ok(s.bearer('POST', '/v1/mfa/verifications', { code: totp(Buffer.from(key.totpSecret!, 'hex'), Date.now() / 1000), action }, key.token), 201);
      const r = await ok(s.bearer('POST', `/v1/webhook-endpoints/${ep.id}/rotate`, { overlap_sec: 3600 }, key.token, { 'svc-mfa-token': v.mfa_token as string }), 200);
      secrets.push(r.secret as string);
      return { endpoint_id: ep.id };
    } },
    'account_holder.created': { trigger: async () => {
      const h = await newHolder();
      return { account_holder_id: h.id, status: 'pending_verification', verification_status: 'unverified', version: 1 };
    } },
    'account_holder.updated': { trigger: async () => {
      const h = await newHolder();
      await patchHolder(h.id, { given_name: 'Ada' });
      return { account_holder_id: h.id, version: 2 };
    } },
    'verification.holder.verified': { trigger: async () => {
      const h = await newHolder();
      await patchHolder(h.id, { verification_status: 'pending' });
      await patchHolder(h.id, { verification_status: 'verified' });
      return { account_holder_id: h.id, status: 'verified' };
    } },
    'verification.holder.rejected': { trigger: async () => {
      const h = await newHolder();
      await patchHolder(h.id, { verification_status: 'pending' });
      await patchHolder(h.id, { verification_status: 'rejected' });
      return { account_holder_id: h.id, status: 'rejected' };
    } },
    'verification.holder.expired': { trigger: async () => {
      const h = await s.holder();
      await patchHolder(h.id, { verification_status: 'expired' });
      return { account_holder_id: h.id, status: 'expired' };
    } },
    'account_holder.consent.accepted': { trigger: async () => {
      await ok(s.bearer('PUT', '/v1/branding', { terms_url: 'https://acme.test/terms/v1', privacy_url: 'https://acme.test/privacy/v1' }), 200);
      const policies = (await ok(s.bearer('GET', '/v1/tenant/policies'), 200)).data as { policy: string; version: string }[];
      // A member signed in at the provider, linked to a new holder through the API.
      const carol = await m.signIn('carol');
      const h = await ok(s.bearer('POST', '/v1/account-holders', { type: 'individual', given_name: 'Carol', family_name: 'Shaw', member_id: carol.member }), 201);
      const c = await ok(m.bff('POST', '/v1/account-holders/self/consents', { accepted: policies.map(({ policy, version }) => ({ policy, version })) }, carol.session), 201);
      return { account_holder_id: h.id, consent_id: c.id };
    } },
    'payment.created': { trigger: async () => {
      const p = await m.pay();
      return { payment_id: p.id, status: 'requires_authorization', account_holder_id: m.ada.id, amount: '1000000', asset: ASSET };
    } },
    'payment.cancelled': { trigger: async () => {
      const p = await m.pay();
      await ok(s.bearer('POST', `/v1/payments/${p.id}/cancel`), 200);
      return { payment_id: p.id, status: 'canceled', account_holder_id: m.ada.id };
    } },
    'payment.confirmed': { trigger: async () => {
      const p = await m.pay();
      await settle(p, () => ['final']);
      return { payment_id: p.id, status: 'confirmed', account_holder_id: m.ada.id, amount: '1000000', asset: ASSET };
    } },
    'payment.failed': { trigger: async () => {
      const p = await m.pay();
      await settle(p, (i) => (i === 0 ? ['failed', 'dropped: nonce used'] : ['final']));
      return { payment_id: p.id, status: 'failed', account_holder_id: m.ada.id, reason: 'transaction_dropped' };
    } },
    'compliance.case.opened': { trigger: async () => {
      const p = await reviewedPayment();
      const c = await caseOf(p.id);
      return { case_id: c.id, case_type: 'manual_review', state: 'open', account_holder_id: m.ada.id, payment_id: p.id };
    } },
    'compliance.case.resolved': { trigger: async () => {
      const p = await reviewedPayment();
      await ok(s.bearer('POST', `/v1/payments/${p.id}/cancel`), 200);
      const c = await caseOf(p.id);
      return { case_id: c.id, case_type: 'manual_review', state: 'closed', account_holder_id: m.ada.id, payment_id: p.id };
    } },
    'payment_request.created': { trigger: async () => requestData((await request()).id, 'pending') },
    'payment_request.approved': { trigger: async () => {
      const pr = await request();
      const a = await ok(s.bearer('POST', `/v1/payment-requests/${pr.id}/approve`, { source_wallet_id: m.ada.wallet.id }, s.acme.owner, { 'idempotency-key': `ap-${pr.id}` }), 200);
      return { ...requestData(pr.id, 'approved'), payment_id: a.payment_id };
    } },
    'payment_request.declined': { trigger: async () => {
      const pr = await request();
      await ok(s.bearer('POST', `/v1/payment-requests/${pr.id}/decline`, { reason: 'incorrect_amount' }), 200);
      return { ...requestData(pr.id, 'declined'), reason: 'incorrect_amount' };
    } },
    'payment_request.cancelled': { trigger: async () => {
      const pr = await request();
      await ok(s.bearer('POST', `/v1/payment-requests/${pr.id}/cancel`), 200);
      return requestData(pr.id, 'canceled');
    } },
    'payment_request.reminded': { trigger: async () => {
      const pr = await request();
      await ok(s.bearer('POST', `/v1/payment-requests/${pr.id}/remind`), 200);
      return { ...requestData(pr.id, 'pending'), reminder_count: 1 };
    } },
    'vault.created': { trigger: async () => {
      const v = await ok(s.signed('POST', '/v1/vaults', { tier: 'hosted' }), 202);
      await relay.runOnce();
      return { vault_id: v.id, tier: 'hosted', state: 'creating', status: 'creating' };
    } },
    'vault.frozen': { trigger: async () => {
      const { vault } = await activeVault();
      await operator('freeze', vault.id);
      await relay.runOnce();
      return { vault_id: vault.id, state: 'frozen', status: 'frozen' };
    } },
    'vault.unfrozen': { trigger: async () => {
      const { vault } = await activeVault();
      await operator('freeze', vault.id);
      await operator('unfreeze', vault.id);
      await relay.runOnce();
      return { vault_id: vault.id, state: 'active', status: 'active' };
    } },
    'vault.policy.changed': { trigger: async () => {
      const { vault } = await governed();
      await relay.runOnce();
      return { vault_id: vault.id, version: 1 };
    } },
    'transaction.approval_required': { trigger: async () => {
      const g = await governed();
      const tx = await awaiting(g);
      await relay.runOnce();
      return { transaction_id: tx.id, vault_id: g.vault.id, state: 'awaiting_approval', status: 'awaiting_approval', policy_version: 1, approvals_missing: 2 };
    } },
    'transaction.failed': { trigger: async () => {
      // An approver rejects a transaction waiting for approvals: it ends `rejected`, delivered as the
      // catalog's failure with its enumerated reason.
      const g = await governed();
      const tx = await awaiting(g);
      await client.approveTransaction(tx.id, people[2]!, { reject: true });
      await relay.runOnce();
      return { transaction_id: tx.id, vault_id: g.vault.id, state: 'rejected', status: 'rejected', reason: 'rejected_by_approver' };
    } },
    'vault.wallet.created': { trigger: async () => {
      const w = await ok(s.signed('POST', `/v1/vaults/${m.ada.vault.id}/wallets`, { chain: 'evm-local', account_index: 7 }), 201);
      await relay.runOnce();
      return { vault_id: m.ada.vault.id, wallet_id: w.id, chain: 'evm-local' };
    } },
  };

  const verified = (g: Received) => verifyWebhook(g.headers, Buffer.from(g.body, 'utf8'), { secrets, publicKey: s.platform.keys.webhookPublicKey, nowMs: Date.now() });
  const deliver = () => s.platform.deliveries.runDue();

  for (const e of EVENT_TYPES) {
    const row = rows[e.name];
    if (row) await receives(t, e, rx, row.trigger, deliver, verified);
    else if (ELSEWHERE[e.name]) t.pass(`${e.name}: its row is in ${ELSEWHERE[e.name]}`);
    else t.fail(`${e.name}: a catalog event with no row`);
  }
  t.same(Object.keys(rows).filter((name) => !names.includes(name)), [], 'every row names a catalog event');
  t.same(Object.keys(ELSEWHERE).filter((name) => rows[name] || !names.includes(name)), [], 'a row elsewhere is not also here, and names a catalog event');
});

t.test('every sensitive catalog event has an allow-list that covers its example, and nothing else has one', async (t) => {
  for (const e of EVENT_TYPES) {
    if (e.sensitive) t.ok(SENSITIVE_FIELDS[e.name] && Object.keys(e.example_payload).every((k) => SENSITIVE_FIELDS[e.name]!.includes(k)), e.name);
    else t.notOk(SENSITIVE_FIELDS[e.name], `${e.name} is not sensitive`);
  }
  t.notOk(sensitiveDataAllowed({ case_id: 'cas_1', case_type: 'manual_review', state: 'closed', closed_reason: 'approved' }, 'compliance.case.resolved'), 'the closed reason is refused even as an enum');
  t.ok(sensitiveDataAllowed({ case_id: 'cas_1', case_type: 'manual_review', state: 'closed' }, 'compliance.case.resolved'));
});
