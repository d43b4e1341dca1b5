// An account holder's wallets (docs/platform/account-holders.md "Wallets") through both APIs on one real
// store: a BYO OIDC member signed in at a real OpenID provider links a hosted vault the customer created
// for its subject; each refusal changes nothing; Idempotency-Key replays; readiness in each state; the
// holder's wallets on the member's call and the staff route, with tenancy and permissions.
import t from 'tap';
import { walletApp } from '../wallets/wallet-app.ts';
import { startProvider } from '../member-auth/oidc-provider-fixture.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';
import { newId } from '../../../api/vaults/vault-service.ts';
import { ACCOUNT_HOLDER_VAULTS, VAULT_ACCOUNT_HOLDERS } from '../../../api/account-holders/collections.ts';

type W = Awaited<ReturnType<typeof walletApp>>;
const individual = { type: 'individual', given_name: 'Ada', family_name: 'Lovelace' };

async function setup(t: Parameters<typeof walletApp>[0]) {
  const w = await walletApp(t, { platform: { webhookAllowedDestinations: ['127.0.0.1'] } });
  const op = await startProvider(t);
  const put = await w.bearer('PUT', '/v1/tenant/member-auth/application', { issuer: op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp' });
  if (put.statusCode !== 201) throw new Error(put.body);
  const pk = put.json().publishable_key as string;

  /** A member signed in as `sub` (challenge, provider sign-in, exchange), with a holder linked to it. */
  const member = async (sub: string) => {
    const nonce = (await w.bearer('POST', '/v1/member-auth/proof/challenges', {}, w.acme.owner, { 'x-svc-publishable-key': pk })).json().nonce as string;
    const idToken = await op.signIn({ sub, nonce, maxAge: 300 });
    const ex = await w.bearer('POST', '/v1/member-auth/proof/exchange', { exchange_id: `exch-${sub}-${Date.now()}`.padEnd(20, '0'), id_token: idToken }, w.acme.owner, { 'x-svc-publishable-key': pk });
    if (ex.statusCode !== 201) throw new Error(ex.body);
    const headers = { 'x-svc-publishable-key': pk, 'x-member-session-id': ex.json().session_id as string };
    const memberId = ex.json().member.id as string;
    const holder = (await w.bearer('POST', '/v1/account-holders', { ...individual, member_id: memberId })).json().id as string;
    const self = (method: 'GET' | 'POST', path: string, body?: unknown, extra: Record<string, string> = {}) =>
      w.bearer(method, `/v1/account-holders/self/${path}`, body, w.acme.owner, { ...headers, ...extra });
    return { memberId, holder, self };
  };

  /** A vault of `org` as the customer's signed POST /v1/vaults leaves it, then with `patch` applied. */
  // Copies of one active vault per organization under fresh ids: the fixtures stay under the vault quota.
  const base = { [w.acme.org]: (await w.activeVault(w.acme.org)).vault, [w.globex.org]: (await w.activeVault(w.globex.org)).vault };
  const vault = async (patch: Partial<VaultRecord> = {}, org = w.acme.org) => {
    const next: VaultRecord = { ...base[org]!, id: newId('vlt'), end_user_auth: true, end_user_subject: 'alice', ...patch };
    await w.store.batch([w.vaults.vaultOp(next)]);
    return next;
  };
  return { ...w, member, vault };
}

/** What a refusal must leave as it was: the links, the wallets and the audit log. */
async function snapshot(w: W) {
  const out: unknown[] = [];
  for (const c of ['account_holder_vaults', 'vault_account_holders', 'wallets', 'audit_log']) for await (const r of w.store.all(c)) out.push(r);
  return JSON.stringify(out);
}

t.test('provision: refusals change nothing; the happy path derives and links; Idempotency-Key; the wallet lists', async (t) => {
  const w = await setup(t);
  const alice = await w.member('alice');
  t.same((await alice.self('GET', 'wallet-readiness')).json(), { account_holder_id: alice.holder, status: 'not_provisioned', vault_id: null, wallets: [], missing: [] });
  t.same((await alice.self('GET', 'wallets')).json(), { data: [], next_cursor: null, has_more: false });

  const mine = await w.vault();
  const chains = ['evm-local', 'bitcoin-regtest'];
  const refused: [string, unknown, Record<string, string>, number, string][] = [
    ['another customer\'s vault', { vault_id: (await w.vault({}, w.globex.org)).id, chains }, {}, 404, 'not_found'],
    ['no such vault', { vault_id: 'vlt_nope', chains }, {}, 404, 'not_found'],
    ['not hosted', { vault_id: (await w.vault({ tier: 'self' })).id, chains }, {}, 409, 'holder_vault_not_hosted'],
    ['no end-user auth', { vault_id: (await w.vault({ end_user_auth: false })).id, chains }, {}, 409, 'holder_vault_no_end_user_auth'],
    ['another subject', { vault_id: (await w.vault({ end_user_subject: 'bob' })).id, chains }, {}, 409, 'holder_vault_subject_mismatch'],
    ['failed key generation', { vault_id: (await w.vault({ state: 'failed', public_key: null, chain_code: null })).id, chains }, {}, 409, 'holder_vault_failed'],
    ['an unknown chain', { vault_id: mine.id, chains: ['dogecoin'] }, {}, 400, 'invalid_request'],
    ['a production chain', { vault_id: mine.id, chains: ['evm-local', 'ethereum'] }, {}, 400, 'invalid_request'],
    ['a chain twice', { vault_id: mine.id, chains: ['evm-local', 'evm-local'] }, {}, 400, 'invalid_request'],
    ['rule 5: a named end user', { vault_id: mine.id, chains }, { 'x-end-user-id': 'alice' }, 400, 'caller_identity_refused'],
    ['rule 5: a named holder', { vault_id: mine.id, chains, account_holder_id: alice.holder }, {}, 400, 'caller_identity_refused'],
  ];
  const refusedSnapshot = await snapshot(w);
  for (const [why, body, extra, status, code] of refused) {
    const r = await alice.self('POST', 'wallet-provision', body, extra);
    t.equal(r.statusCode, status, `${why}: ${r.body}`);
    t.equal(r.json().code, code, why);
  }
  t.equal(await snapshot(w), refusedSnapshot, 'the refusals changed nothing');
  t.equal((await alice.self('POST', 'wallet-provision', { vault_id: mine.id, chains }, { 'x-member-session-id': `mss_${'A'.repeat(43)}` })).json().code, 'member_session_invalid');

  const ok = await alice.self('POST', 'wallet-provision', { vault_id: mine.id, chains }, { 'idempotency-key': 'p1' });
  t.equal(ok.statusCode, 200, ok.body);
  const ready = ok.json();
  t.match(ready, { account_holder_id: alice.holder, status: 'ready', vault_id: mine.id, missing: [] });
  t.same(ready.wallets.map((x: { chain: string }) => x.chain), chains);
  t.match(ready.wallets[0], { wallet_id: /^wal_/, address: /^0x[0-9a-fA-F]{40}$/ });
  t.match(ready.wallets[1].address, /^bcrt1q/);
  const audit = (await w.platform.audit.list(w.acme.sandbox.id)).filter((e: { action: string }) => e.action === 'account_holder.wallet_provision');
  t.equal(audit.length, 1, 'one audit entry');
  const after = await snapshot(w);
  t.same((await alice.self('POST', 'wallet-provision', { vault_id: mine.id, chains }, { 'idempotency-key': 'p1' })).json(), ready, 'the same key replays');
  t.equal((await alice.self('POST', 'wallet-provision', { vault_id: mine.id, chains: ['evm-local'] }, { 'idempotency-key': 'p1' })).json().code, 'idempotency_key_reused');
  t.same((await alice.self('POST', 'wallet-provision', { vault_id: mine.id, chains: ['evm-local'] })).json(), ready, 'again: idempotent per chain');
  t.equal(await snapshot(w), after, 'a repeat writes nothing');
  t.same((await alice.self('GET', 'wallet-readiness')).json(), ready);
  t.equal((await alice.self('POST', 'wallet-provision', { vault_id: (await w.vault()).id, chains })).json().code, 'holder_vault_taken', 'one vault per holder');

  // The lists: the vault's wallets in the wallet view, on the member's call and the staff route.
  const selfList = (await alice.self('GET', 'wallets?limit=1')).json();
  t.equal(selfList.data.length, 1);
  t.equal(selfList.has_more, true);
  t.same(selfList.data[0], (await w.bearer('GET', `/v1/wallets/${ready.wallets[0].wallet_id}`)).json(), 'the wallet view of GET /wallets/{id}');
  const next = (await alice.self('GET', `wallets?cursor=${encodeURIComponent(selfList.next_cursor)}`)).json();
  t.same(next.data.map((x: { id: string }) => x.id), [ready.wallets[1].wallet_id]);
  const staff = await w.bearer('GET', `/v1/account-holders/${alice.holder}/wallets`);
  t.equal(staff.statusCode, 200, staff.body);
  t.same(staff.json().data.map((x: { id: string }) => x.id), ready.wallets.map((x: { wallet_id: string }) => x.wallet_id));
  t.equal((await w.bearer('GET', `/v1/account-holders/${alice.holder}/wallets`, undefined, await w.acme.key('viewer'))).statusCode, 200, 'a viewer reads them');
  const denied = await w.bearer('GET', `/v1/account-holders/${alice.holder}/wallets`, undefined, await w.acme.key('brand_manager'));
  t.equal(denied.statusCode, 403);
  t.equal(denied.json().code, 'role_denied');
  const foreign = await w.bearer('GET', `/v1/account-holders/${alice.holder}/wallets`, undefined, w.globex.owner);
  t.equal(foreign.statusCode, 404, 'another tenant\'s holder');
  t.equal((await w.bearer('GET', `/v1/account-holders/${alice.holder}/wallets?cursor=${encodeURIComponent(selfList.next_cursor)}`)).statusCode, 200, 'one list: the holder\'s');

  // The vault stays its holder's: a new holder of the same member cannot take it.
  const etag = (await w.bearer('GET', `/v1/account-holders/${alice.holder}`)).headers.etag as string;
  t.equal((await w.bearer('PATCH', `/v1/account-holders/${alice.holder}`, { status: 'closed' }, w.acme.owner, { 'if-match': etag })).statusCode, 200);
  t.equal((await w.bearer('POST', '/v1/account-holders', { ...individual, member_id: alice.memberId })).statusCode, 201);
  const taken = await alice.self('POST', 'wallet-provision', { vault_id: mine.id, chains });
  t.equal(taken.statusCode, 409);
  t.equal(taken.json().code, 'holder_vault_taken');
});

t.test('readiness: a vault still creating, then active, then failed; a suspended holder is refused', async (t) => {
  const w = await setup(t);
  const bob = await w.member('bob');
  const created = await w.vaults.createVault(w.acme.org, { tier: 'hosted', end_user_subject: 'bob' });
  await w.store.batch([w.vaults.vaultOp({ ...created, end_user_auth: true })]);
  const pending = await bob.self('POST', 'wallet-provision', { vault_id: created.id, chains: ['evm-local'] });
  t.equal(pending.statusCode, 202, pending.body);
  t.same(pending.json(), { account_holder_id: bob.holder, status: 'vault_creating', vault_id: created.id, wallets: [], missing: ['evm-local'] });
  t.same((await bob.self('GET', 'wallets')).json().data, []);

  const keyed = await w.vault();
  const active: VaultRecord = { ...created, state: 'active', public_key: keyed.public_key, chain_code: keyed.chain_code, end_user_auth: true };
  await w.store.batch([w.vaults.vaultOp(active)]);
  t.match((await bob.self('GET', 'wallet-readiness')).json(), { status: 'wallets_pending', missing: ['evm-local'] }, 'reading derives nothing');
  const done = await bob.self('POST', 'wallet-provision', { vault_id: created.id, chains: ['evm-local'] });
  t.equal(done.statusCode, 200);
  t.match(done.json(), { status: 'ready', missing: [], wallets: [{ chain: 'evm-local' }] });

  await w.store.batch([w.vaults.vaultOp({ ...active, state: 'failed' })]);
  t.match((await bob.self('GET', 'wallet-readiness')).json(), { status: 'vault_failed', vault_id: created.id });

  // pending_verification → verified and active → suspended: a suspended holder gets no wallets.
  const patch = async (body: unknown) => {
    const etag = (await w.bearer('GET', `/v1/account-holders/${bob.holder}`)).headers.etag as string;
    const r = await w.bearer('PATCH', `/v1/account-holders/${bob.holder}`, body, w.acme.owner, { 'if-match': etag });
    if (r.statusCode !== 200) throw new Error(r.body);
  };
  await patch({ verification_status: 'pending' });
  await patch({ verification_status: 'verified', status: 'active' });
  await patch({ status: 'suspended' });
  const other = await w.vault({ end_user_subject: 'bob' });
  const before = await snapshot(w);
  const r = await bob.self('POST', 'wallet-provision', { vault_id: other.id, chains: ['evm-local'] });
  t.equal(r.statusCode, 409);
  t.equal(r.json().code, 'account_holder_suspended');
  t.equal(await snapshot(w), before, 'nothing changed');

  // A Hosted Auth member (the sandbox-demo sign-in): its subject is its hosted subject id, which its
  // passkey's member credential names; a vault bound to anything else is refused.
  const origin = 'http://127.0.0.1:9';
  await w.bearer('POST', '/v1/tenant/member-auth/allowed-origins', { origin });
  await w.bearer('POST', '/v1/tenant/member-auth/redirect-urls', { url: `${origin}/callback` });
  const bff = await w.platform.tenancy.createKey(w.acme.sandbox.id, 'member_auth', { label: 'bff' });
  const hosted = (await w.bearer('POST', '/v1/tenant/member-auth/applications/hosted', { enrollment: 'invite_only', origin, result_callback_url: `${origin}/callback`, bff_key_id: bff.key.id })).json();
  const grant = (await w.bearer('POST', '/v1/member-auth/hosted/authorizations/sandbox-demo', {}, bff.token, { 'x-svc-publishable-key': hosted.publishable_key })).json();
  const hostedHolder = await w.bearer('POST', '/v1/account-holders', { ...individual, member_id: grant.member.id });
  t.equal(hostedHolder.statusCode, 201);
  const provision = (vaultId: string) => w.bearer('POST', '/v1/account-holders/self/wallet-provision', { vault_id: vaultId, chains: ['evm-local'] }, bff.token, { 'x-svc-publishable-key': hosted.publishable_key, 'x-member-session-id': grant.session_id });
  const refused = await provision(other.id);
  t.equal(refused.statusCode, 409, refused.body);
  t.equal(refused.json().code, 'holder_vault_subject_mismatch', 'a vault bound to a BYO subject');
  t.equal(await ACCOUNT_HOLDER_VAULTS.in(w.store).get(hostedHolder.json().id), undefined, 'no link written');
  t.equal(await VAULT_ACCOUNT_HOLDERS.in(w.store).get(other.id), undefined);
  const own = await w.vault({ end_user_subject: grant.member.id });
  const linked = await provision(own.id);
  t.equal(linked.statusCode, 200, linked.body);
  t.match(linked.json(), { account_holder_id: hostedHolder.json().id, status: 'ready', vault_id: own.id });
});
