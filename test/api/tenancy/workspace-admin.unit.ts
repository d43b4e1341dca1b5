// The tenant area's workspace administration (docs/platform/tenancy.md "Workspace tokens", "Suspending a
// workspace", "Onboarding"): the workspace's bearer keys without a secret and with their last use, paged;
// renaming, suspending and reactivating the key's own workspace and what a suspended workspace may still
// do; the onboarding status of both environments and a setup that is safe to rerun. Each refusal reads
// the state back.
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { walletApp } from '../wallets/wallet-app.ts';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { TenancyService, type BearerKeyRecord } from '../../../api/tenancy/tenancy-service.ts';
import { BEARER_KEYS } from '../../../api/tenancy/collections.ts';

type Json = Record<string, unknown> & { data?: Record<string, unknown>[]; code?: string };

t.test('GET /v1/workspace-tokens: the workspace\'s keys, never a secret, with their last use, a page at a time', async (t) => {
  const s = await walletApp(t);
  const call = async (url: string, token = s.acme.owner) => {
    const r = await s.bearer('GET', url, undefined, token);
    return { status: r.statusCode, body: r.json() as Json };
  };
  const viewer = await s.acme.key('viewer');
  const bff = (await s.platform.tenancy.createKey(s.acme.sandbox.id, 'member_auth', { label: 'bff', mfa: true })).key;
  await s.platform.tenancy.revokeKey(bff.id);
  await s.acme.key('owner', s.acme.production.id);

  const all = await call('/v1/workspace-tokens?limit=100');
  t.equal(all.status, 200, JSON.stringify(all.body));
  const rows = all.body.data!;
  t.equal(rows.length, 3, 'the sandbox workspace\'s three keys: owner, viewer, the revoked BFF key; not production\'s');
  t.ok(rows.every((r) => r.environment === 'sandbox'));
  t.same(rows.map((r) => r.id), [...rows.map((r) => r.id as string)].sort(), 'oldest first');
  t.match(rows.find((r) => r.id === bff.id), { label: 'bff', role: 'member_auth', status: 'revoked', mfa: true, request_signing: false, last_used_at: null });
  const ownerRow = rows.find((r) => r.role === 'owner')!;
  t.match(ownerRow, { status: 'active', mfa: false });
  t.type(ownerRow.last_used_at, 'string', 'the owner key was just used');
  t.equal(rows.find((r) => r.role === 'viewer')!.last_used_at, null, 'the viewer key was never used');
  const text = JSON.stringify(all.body);
  for (const secret of ['token_sha256', 'totp_secret', 'signing_public_key', 'svc_test_']) t.notOk(text.includes(secret), `no ${secret} in the answer`);

  await call('/v1/tenant', viewer);
  t.type((await call('/v1/workspace-tokens')).body.data!.find((r) => r.role === 'viewer')!.last_used_at, 'string', 'a use is recorded');

  const first = await call('/v1/workspace-tokens?limit=2');
  t.match(first.body, { has_more: true });
  const second = await call(`/v1/workspace-tokens?limit=2&cursor=${encodeURIComponent(first.body.next_cursor as string)}`);
  t.same([...first.body.data!, ...second.body.data!].map((r) => r.id), rows.map((r) => r.id), 'two pages walk the same keys');
  t.match(second.body, { has_more: false, next_cursor: null });
  t.match(await call(`/v1/workspace-tokens?cursor=${encodeURIComponent(first.body.next_cursor as string)}`, s.globex.owner), { status: 400, body: { code: 'invalid_cursor' } }, 'another workspace\'s cursor');
  t.same((await call('/v1/workspace-tokens', s.globex.owner)).body.data!.map((r) => r.id).filter((id) => rows.some((r) => r.id === id)), [], 'Globex sees none of Acme\'s keys');
  t.match(await call('/v1/workspace-tokens', await s.acme.key('member_auth')), { status: 403, body: { code: 'role_denied' } });
});

t.test('keys made before the workspace index are listed once the store opens', async (t) => {
  const store = await RecordStore.open(mkdtempSync(join(tmpdir(), 'wstokens-')));
  t.teardown(() => store.close());
  const tenancy = new TenancyService(store);
  const { sandbox } = await tenancy.createTenant('Old');
  const old: BearerKeyRecord = {
    id: 'key_000000000001000000aaaaaaaa', tenant: sandbox.tenant, workspace: sandbox.id, environment: 'sandbox', role: 'viewer', label: 'old',
    token_sha256: '00'.repeat(32), signing_public_key: null, totp_secret: null, created_at: new Date(0).toISOString(), revoked: false,
  };
  await BEARER_KEYS.in(store).put(old.id, old);
  t.same(await tenancy.keysOf(sandbox.id, undefined, 10), [], 'stored as before: no index entry');
  await tenancy.prepareIndexes();
  t.same((await tenancy.keysOf(sandbox.id, undefined, 10)).map((k) => [k.id, k.last_used_at]), [[old.id, null]]);
});

t.test('PATCH /v1/workspaces/{id}: name and status of the key\'s own workspace; a suspended workspace reads and is reactivated, nothing else', async (t) => {
  const s = await walletApp(t, { platform: { webhookAllowedDestinations: ['127.0.0.1'] } });
  const ws = s.acme.sandbox.id;
  const patch = (body: unknown, token = s.acme.owner, id = ws) => s.bearer('PATCH', `/v1/workspaces/${id}`, body, token);
  const read = async (id = ws) => (await s.bearer('GET', `/v1/workspaces/${id}`)).json() as Json;
  const endpoints = async () => ((await s.bearer('GET', '/v1/webhook-endpoints')).json() as Json).data!.length;
  const audit = async () => (await s.platform.audit.list(ws)).filter((e) => e.action === 'workspace.update');

  const renamed = await patch({ name: 'Acme test' });
  t.equal(renamed.statusCode, 200, renamed.body);
  t.match(renamed.json(), { id: ws, name: 'Acme test', status: 'active', current: true });
  t.equal((await patch({})).json().name, 'Acme test', '{} changes nothing');
  t.equal((await audit()).length, 1, 'one entry: the rename; {} wrote none');

  // Refusals, each changing nothing.
  const developer = await s.acme.key('developer');
  t.match((await patch({ status: 'suspended' }, developer)).json(), { code: 'role_denied' }, 'tenant.manage: owners and admins only');
  t.match((await patch({ status: 'suspended' }, s.acme.owner, s.acme.production.id)).json(), { code: 'forbidden' }, 'not the tenant\'s other workspace');
  t.equal((await patch({ status: 'suspended' }, s.acme.owner, s.globex.sandbox.id)).statusCode, 404, 'another tenant\'s workspace does not exist');
  t.equal((await patch({ status: 'closed' })).statusCode, 400, 'an unknown status');
  t.equal((await patch({ name: 'a\nb' })).statusCode, 422, 'a control character');
  t.equal((await patch({ name: 'x', tenant: 'ten_x' })).statusCode, 400, 'an unknown field');
  t.match([await read(), await read(s.acme.production.id), await read(s.globex.sandbox.id)].map((w) => w.status ?? w.code),
    ['active', 'active', 'not_found'], 'every workspace still active (Globex\'s not visible)');
  t.equal((await s.bearer('GET', `/v1/workspaces/${s.globex.sandbox.id}`, undefined, s.globex.owner)).json().status, 'active');
  t.equal((await read()).name, 'Acme test');
  t.equal((await audit()).length, 1);

  t.equal((await patch({ status: 'suspended' })).json().status, 'suspended');
  const refused = await s.bearer('POST', '/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/hook', events: ['webhook.test'] });
  t.match({ status: refused.statusCode, code: refused.json().code }, { status: 403, code: 'workspace_suspended' }, 'a change is refused');
  t.equal(await endpoints(), 0, 'and made nothing');
  t.match((await s.bearer('POST', '/v1/webhook-endpoints', 'not json', developer)).json(), { code: 'workspace_suspended' }, 'before the body is read');
  t.match((await s.bearer('PUT', '/v1/branding', { brand_name: 'X' })).json(), { code: 'workspace_suspended' });
  t.match((await s.bearer('POST', '/v1/onboarding/setup', {})).json(), { code: 'workspace_suspended' }, 'setup is a change too');
  t.equal(((await s.bearer('GET', '/v1/branding')).json() as { theme: { brand_name: unknown } }).theme.brand_name, null, 'the theme is unchanged');
  t.equal((await s.bearer('GET', '/v1/tenant', undefined, developer)).statusCode, 200, 'reads go on');
  t.equal((await s.bearer('GET', '/v1/workspace-tokens')).statusCode, 200);
  t.match((await patch({ name: 'renamed while suspended' }, developer)).json(), { code: 'role_denied' }, 'only an owner or admin reactivates');
  t.equal((await read()).status, 'suspended');
  const globexMade = await s.bearer('POST', '/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/hook', events: ['webhook.test'] }, s.globex.owner);
  t.equal(globexMade.statusCode, 201, 'another tenant is not affected');
  const liveSk = ed25519.utils.randomSecretKey();
  const live = await s.platform.tenancy.createKey(s.acme.production.id, 'owner', { signingPublicKey: bytesToHex(ed25519.getPublicKey(liveSk)) });
  const liveUrl = `/v1/workspaces/${s.acme.production.id}`;
  const liveBody = JSON.stringify({ name: 'Acme live' });
  const unsigned = await s.app.inject({ method: 'PATCH', url: liveUrl, headers: { authorization: `Bearer ${live.token}`, 'content-type': 'application/json' }, payload: liveBody });
  t.match(unsigned.json(), { code: 'signature_required' }, 'a production workspace changes only by a signed request');
  t.equal((await read(s.acme.production.id)).name, 'production');
  const signed = await s.app.inject({ method: 'PATCH', url: liveUrl, payload: liveBody,
    headers: { authorization: `Bearer ${live.token}`, 'content-type': 'application/json', ...signedHeaders({ keyId: live.key.id, secretKey: liveSk }, 'PATCH', `http://localhost:80${liveUrl}`, liveBody) } });
  t.match(signed.json(), { name: 'Acme live', status: 'active' }, 'the production workspace is not the suspended one');

  t.equal((await patch({ status: 'active' })).json().status, 'active', 'the owner reactivates it');
  t.equal((await s.bearer('POST', '/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/hook', events: ['webhook.test'] })).statusCode, 201, 'changes work again');
  t.same((await audit()).map((e) => [e.after, e.actor.type]), [
    [{ name: 'Acme test', status: 'active' }, 'api_key'], [{ name: 'Acme test', status: 'suspended' }, 'api_key'], [{ name: 'Acme test', status: 'active' }, 'api_key'],
  ], 'rename, suspend, reactivate: each audited');
});

t.test('onboarding: the status of both environments, and a setup that makes the missing defaults once', async (t) => {
  const s = await walletApp(t, { platform: { webhookAllowedDestinations: ['127.0.0.1'] } });
  const status = async (token = s.acme.owner) => {
    const r = await s.bearer('GET', '/v1/onboarding/status', undefined, token);
    t.equal(r.statusCode, 200, r.body);
    return r.json() as { tenant_id: string; environments: { environment: string; ready: boolean; status: string; items: { item: string; configured: boolean; required: boolean; next: string | null }[] }[] };
  };
  const configured = (st: Awaited<ReturnType<typeof status>>, env: string) =>
    Object.fromEntries(st.environments.find((e) => e.environment === env)!.items.map((i) => [i.item, i.configured]));

  const before = await status();
  t.equal(before.tenant_id, s.acme.tenant.id);
  t.same(before.environments.map((e) => [e.environment, e.ready, e.status]), [['sandbox', false, 'active'], ['production', false, 'active']]);
  t.same(configured(before, 'sandbox'), { keys: true, member_auth_application: false, branding: false, sending_domain: false, webhook_endpoint: false, gateway: false });
  t.same(configured(before, 'production'), { keys: false, member_auth_application: false, branding: false, sending_domain: false, webhook_endpoint: false, gateway: false }, 'production has no key yet');
  const sandbox = before.environments[0]!.items;
  t.same(sandbox.filter((i) => i.required).map((i) => i.item), ['keys', 'member_auth_application', 'webhook_endpoint'], 'what sandbox requires');
  t.ok(before.environments[1]!.items.every((i) => i.required), 'production requires all six');
  t.match(sandbox.find((i) => i.item === 'webhook_endpoint'), { next: 'POST /v1/webhook-endpoints' });
  t.equal(sandbox.find((i) => i.item === 'keys')!.next, null, 'a configured item has no next step');

  t.match((await s.bearer('POST', '/v1/onboarding/setup', {}, await s.acme.key('developer'))).json(), { code: 'role_denied' }, 'setup is tenant.manage');
  t.equal(((await s.bearer('GET', '/v1/branding')).json() as { theme: { brand_name: unknown } }).theme.brand_name, null, 'the refusal made nothing');

  const setup = await s.bearer('POST', '/v1/onboarding/setup', {}, s.acme.owner, { 'idempotency-key': 'once' });
  t.equal(setup.statusCode, 200, setup.body);
  t.same(setup.json().made, ['branding']);
  t.match(((await s.bearer('GET', '/v1/branding')).json() as { theme: unknown }).theme, { brand_name: 'Acme', app_title: 'Acme', from_name: 'Acme' }, 'the brand is the tenant\'s name');
  t.same((await s.bearer('POST', '/v1/onboarding/setup', {}, s.acme.owner, { 'idempotency-key': 'once' })).json().made, ['branding'], 'the same Idempotency-Key replays');
  t.same((await s.bearer('POST', '/v1/onboarding/setup')).json().made, [], 'a rerun makes nothing');
  t.equal((await s.platform.audit.list(s.acme.sandbox.id)).filter((e) => e.action === 'branding.update').length, 1, 'one audited change');
  await s.bearer('PUT', '/v1/branding', { brand_name: 'Acme Bank' });
  t.same((await s.bearer('POST', '/v1/onboarding/setup')).json().made, [], 'a brand the customer chose is kept');
  t.equal(((await s.bearer('GET', '/v1/branding')).json() as { theme: { brand_name: string } }).theme.brand_name, 'Acme Bank');

  t.equal((await s.bearer('POST', '/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/hook', events: ['webhook.test'] })).statusCode, 201);
  const after = await status(await s.acme.key('viewer'));
  t.same(configured(after, 'sandbox'), { keys: true, member_auth_application: false, branding: true, sending_domain: false, webhook_endpoint: true, gateway: false });
  t.same(configured(after, 'production'), { keys: false, member_auth_application: false, branding: false, sending_domain: false, webhook_endpoint: false, gateway: false }, 'sandbox setup changed nothing of production');
  t.notOk(JSON.stringify(after).includes('127.0.0.1'), 'no record is named, only whether it exists');
  t.equal(after.environments[0]!.ready, false, 'sandbox still needs a member-auth application');
  t.match(await s.bearer('GET', '/v1/onboarding/status', undefined, await s.acme.key('member_auth')), { statusCode: 403 });
});
