// Every 400 and 422 of input names every bad field at once, by its JSON name, with the rule it broke, in
// one shape across both APIs (docs/platform/errors.md): `{ error, code, fields: [{ field, reason }] }`,
// `error` listing the same fields. Two bad fields on each of account holders (schema and service rules),
// payments and a vault API route; each refusal reads state back and finds nothing changed.
import t, { type Test } from 'tap';
import { setupPlatform } from './setup-platform.ts';
import { paymentsApp, ASSET } from './payments/payments-app.ts';
import { vaultApp } from './vault/vault-app.ts';
import { fieldOfPointer, schemaFieldErrors, MAX_FIELD_ERRORS } from '../../api/validation.ts';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Type } from '@sinclair/typebox';

interface Answer { error: string; code: string; fields?: { field: string; reason: string }[] }

/** The answer names exactly `names`, each with a reason, in `fields` and in `error`; no framework path prefix. */
function namesEvery(t: Test, a: Answer, names: string[], what: string) {
  t.same((a.fields ?? []).map((f) => f.field).sort(), [...names].sort(), `${what}: fields names ${names.join(', ')}`);
  for (const f of a.fields ?? []) {
    t.ok(f.reason.length > 0, `${what}: ${f.field} has a reason`);
    t.ok(a.error.includes(`${f.field}: ${f.reason}`), `${what}: the message says "${f.field}: ${f.reason}"`);
  }
  t.notMatch(a.error, /\b(body|querystring|params)\//, `${what}: no body/… paths`);
}

t.test('account holders: two bad fields of the schema, then two of the service rules, each named', async (t) => {
  const s = await setupPlatform(t);
  const list = async () => (await s.call('GET', '/v1/account-holders?limit=100')).json().data as unknown[];
  const before = await list();
  const schema = await s.call('POST', '/v1/account-holders', { type: 'individual', given_name: 7, family_name: 'L', nickname: 'x' }, s.owner.token, { 'idempotency-key': 'v1' });
  t.equal(schema.statusCode, 400, schema.body);
  t.equal(schema.json().code, 'invalid_request');
  namesEvery(t, schema.json(), ['given_name', 'nickname'], 'wrong type and unknown field');
  const missing = await s.call('POST', '/v1/account-holders', { given_name: 'Ada', email: 5 }, s.owner.token, { 'idempotency-key': 'v2' });
  t.equal(missing.statusCode, 400, missing.body);
  namesEvery(t, missing.json(), ['type', 'email'], 'missing required field and wrong type');
  const rules = await s.call('POST', '/v1/account-holders', { type: 'individual', given_name: 'Ada', family_name: 'Lovelace', email: 'not-an-email', phone: '07700 900123' }, s.owner.token, { 'idempotency-key': 'v3' });
  t.equal(rules.statusCode, 422, rules.body);
  t.equal(rules.json().code, 'validation_failed');
  namesEvery(t, rules.json(), ['email', 'phone'], 'bad email and bad phone');
  const business = await s.call('POST', '/v1/account-holders', { type: 'business', given_name: 'A', family_name: 'B' }, s.owner.token, { 'idempotency-key': 'v4' });
  t.equal(business.statusCode, 422, business.body);
  namesEvery(t, business.json(), ['given_name', 'family_name', 'legal_name'], 'a business with person names and no legal name');
  t.same(await list(), before, 'nothing was created');

  const h = await s.call('POST', '/v1/account-holders', { type: 'individual', given_name: 'Ada', family_name: 'Lovelace' }, s.owner.token, { 'idempotency-key': 'v5' });
  t.equal(h.statusCode, 201, h.body);
  const patch = await s.call('PATCH', `/v1/account-holders/${h.json().id}`, { email: 'nope', phone: 'nope' }, s.owner.token, { 'if-match': '"1"' });
  t.equal(patch.statusCode, 422, patch.body);
  namesEvery(t, patch.json(), ['email', 'phone'], 'PATCH: bad email and bad phone');
  t.same((await s.call('GET', `/v1/account-holders/${h.json().id}`)).json(), h.json(), 'the holder is unchanged');
});

t.test('payments: two bad fields named, nested ones by their path', async (t) => {
  const s = await paymentsApp(t);
  const ada = await s.holder();
  const payments = async () => (await s.bearer('GET', '/v1/payments?limit=100', undefined, s.acme.owner)).json().data as unknown[];
  const before = await payments();
  const r = await s.bearer('POST', '/v1/payments', { source_wallet_id: ada.wallet.id, destination: { account_holder_id: 5 }, amount: 12, asset: ASSET }, s.acme.owner, { 'idempotency-key': 'p1' });
  t.equal(r.statusCode, 400, r.body);
  t.equal(r.json().code, 'invalid_request');
  namesEvery(t, r.json(), ['destination', 'amount'], 'a bad destination and a number amount');
  const q = await s.bearer('POST', '/v1/payments/quote', { source_wallet_id: ada.wallet.id, destination: { account_holder_id: ada.id }, asset: ASSET, colour: 'red' }, s.acme.owner);
  t.equal(q.statusCode, 400, q.body);
  namesEvery(t, q.json(), ['kind', 'amount', 'colour'], 'quote: a missing kind and amount and an unknown field');
  t.same(await payments(), before, 'no payment was created');
});

t.test('vault API: two bad fields of POST /v1/vaults named, with the rule each broke', async (t) => {
  const { call } = await vaultApp(t);
  const vaultList = async () => (await call('GET', '/v1/vaults')).json() as unknown;
  const before = await vaultList();
  const r = await call('POST', '/v1/vaults', { tier: 'platinum', name: 7 });
  t.equal(r.statusCode, 400, r.body);
  t.equal(r.json().code, 'invalid_request');
  namesEvery(t, r.json(), ['tier', 'name'], 'an unknown tier and a number name');
  t.match(r.json().fields.find((f: { field: string }) => f.field === 'tier').reason, /one of .*hosted/, 'the tier names its choices');
  const wallets = await call('POST', '/v1/vaults', { tier: 'hosted', policy: { rolling_window: { seconds: 'x' } }, extra: true });
  t.equal(wallets.statusCode, 400, wallets.body);
  t.ok(wallets.json().fields.some((f: { field: string }) => f.field === 'extra'), 'the unknown field is named');
  t.ok(wallets.json().fields.some((f: { field: string }) => f.field.startsWith('policy')), 'the nested field is named by its path');
  t.same(await vaultList(), before, 'no vault was created');
});

t.test('field names from JSON pointers, and a hostile body costs at most MAX_FIELD_ERRORS', async (t) => {
  t.equal(fieldOfPointer('/rules/0/asset', 'body'), 'rules[0].asset');
  t.equal(fieldOfPointer('/surfaces/email/brand_name', 'body'), 'surfaces.email.brand_name');
  t.equal(fieldOfPointer('/a~1b/c~0d', 'body'), 'a/b.c~d');
  t.equal(fieldOfPointer('', 'body'), 'body');
  t.equal(fieldOfPointer('', 'querystring'), 'query');
  const schema = Type.Object({ items: Type.Array(Type.String()) });
  const check = TypeCompiler.Compile(schema);
  const fields = schemaFieldErrors(check.Errors({ items: Array.from({ length: 10_000 }, (_, i) => i) }), 'body');
  t.equal(fields.length, MAX_FIELD_ERRORS, 'the walk stops at the limit');
  t.same(fields[0], { field: 'items[0]', reason: fields[0]!.reason });
});
