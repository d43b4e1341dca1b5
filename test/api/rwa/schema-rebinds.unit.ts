// Schema rebinds through the API (docs/platform/rwa.md "Schema rebinds"): a dry run checks every current value
// against the newer version and lists what differs; the token's attesters attest that dry run as the binding's
// policy requires; commit re-checks everything under the token's lock and moves the binding and the fields'
// visibility at once, or changes nothing. Stale attestations, a moved binding, another workspace, permissions.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { schemaApp, type SchemaApp } from './schema-fixture.ts';
import { statementText, verifyAttestationEntry, type RebindStatement } from '../../../api/rwa/schema/attestation.ts';
import type { TokenRecord } from '../../../api/tokenization/records.ts';

const v1 = {
  type: 'object',
  properties: {
    isin: { type: 'string', pattern: '^[A-Z]{2}[A-Z0-9]{9}[0-9]$', 'x-visibility': 'public' },
    coupon: { type: 'object', 'x-visibility': 'public', properties: { rate_bps: { type: 'integer', minimum: 0, maximum: 5000 } } },
    rating: { type: 'string', maxLength: 10, 'x-visibility': 'committed' },
    paying_agent: { type: 'string' },
  },
  additionalProperties: false,
};
/** Stricter: a lower coupon cap, and no paying agent. */
const v2 = { ...v1, properties: { ...v1.properties, coupon: { type: 'object', 'x-visibility': 'public', properties: { rate_bps: { type: 'integer', maximum: 400 } } }, paying_agent: undefined } };
/** Compatible: a new required field, and the rating goes public. */
const v3 = { ...v1, properties: { ...v1.properties, rating: { type: 'string', maxLength: 10, 'x-visibility': 'public' }, maturity: { type: 'string', format: 'date', 'x-visibility': 'public' } }, required: ['maturity'] };

async function setUp(s: SchemaApp, policy: number) {
  await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/upload-publish', { json_schema: v1 });
  await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/upload-publish', { json_schema: JSON.parse(JSON.stringify(v2)) });
  await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/upload-publish', { json_schema: v3 });
  const token = await s.token();
  await s.call('POST', `/v1/rwa/tokens/${token.id}/schema-binding`, { schema_id: 'acme-bond', version: 1, rebind_policy: { attestations: policy } });
  for (const [path, value] of [['isin', 'US0378331005'], ['coupon.rate_bps', 450], ['rating', 'AA'], ['paying_agent', 'Agent Bank']] as const) {
    const res = await s.call('POST', `/v1/rwa/tokens/${token.id}/fields/${path}`, { value });
    if (res.statusCode !== 200) throw new Error(res.body);
  }
  return token;
}

function rebindStatement(token: TokenRecord, r: { id: string; from_version: number; from_sha256: string; to_version: number; to_sha256: string; dry_run: { sha256: string } }, attesterId: string): RebindStatement {
  return {
    rebind_id: r.id, token_id: token.id, chain_id: token.chain_id, contract: token.address, schema_id: 'acme-bond', from_version: r.from_version, from_sha256: r.from_sha256,
    to_version: r.to_version, to_sha256: r.to_sha256, dry_run_sha256: r.dry_run.sha256, attester_id: attesterId,
  };
}

t.test('a rebind is dry-run, attested as the policy requires, then committed at once; every refusal changes nothing', async (t) => {
  const s = await schemaApp(t);
  const token = await setUp(s, 1);
  const secret = ed25519.utils.randomSecretKey();
  const attester = (await s.call('POST', `/v1/rwa/tokens/${token.id}/attesters`, { name: 'Trustee', key: { scheme: 'ed25519', public_key: bytesToHex(ed25519.getPublicKey(secret)) }, fields: ['*'] })).json().id as string;
  const sign = (st: RebindStatement, key = secret) => bytesToHex(ed25519.sign(utf8ToBytes(statementText({ kind: 'rebind', statement: st })), key));

  // To v2: the dry run fails and says why, field by field.
  const r2 = await s.call('POST', '/v1/rwa/schema-rebinds', { token_id: token.id, version: 2 });
  t.equal(r2.statusCode, 201, r2.body);
  t.match(r2.json(), { state: 'created', from_version: 1, to_version: 2, required_attestations: 1, dry_run: null });
  const id2 = r2.json().id as string;
  t.equal((await s.call('POST', `/v1/rwa/schema-rebinds/${id2}/attest`, { attester_id: attester, signature: '00'.repeat(64) })).statusCode, 409, 'nothing to attest before a dry run');
  t.equal((await s.call('POST', `/v1/rwa/schema-rebinds/${id2}/commit`)).statusCode, 409);
  const dry2 = await s.call('POST', `/v1/rwa/schema-rebinds/${id2}/dry-run`);
  t.equal(dry2.statusCode, 200, dry2.body);
  t.match(dry2.json(), { state: 'dry_run_failed', dry_run: { passed: false } });
  const byPath = Object.fromEntries(dry2.json().dry_run.fields.map((f: { path: string }) => [f.path, f]));
  t.match(byPath['coupon.rate_bps'], { status: 'invalid', problems: [/must be <= 400/] });
  t.match(byPath.paying_agent, { status: 'undefined_field', to_visibility: null });
  t.match(byPath.isin, { status: 'ok', from_visibility: 'public', to_visibility: 'public' });
  t.equal((await s.call('POST', `/v1/rwa/schema-rebinds/${id2}/commit`)).statusCode, 409, 'a failed dry run is not committed');

  // To v3: the dry run passes; the policy wants one attestation.
  const r3 = await s.call('POST', '/v1/rwa/schema-rebinds', { token_id: token.id, schema_id: 'acme-bond', version: 3 });
  const id3 = r3.json().id as string;
  const dry3 = await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/dry-run`);
  t.match(dry3.json(), { state: 'attesting', dry_run: { passed: true, added_fields: ['maturity'], missing_required: ['maturity'] } });
  t.match(dry3.json().dry_run.fields.find((f: { path: string }) => f.path === 'rating'), { status: 'ok', from_visibility: 'committed', to_visibility: 'public' });
  const commitEarly = await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/commit`);
  t.equal(commitEarly.statusCode, 409);
  t.match(commitEarly.json().error, /0 attestations.*requires 1/);

  const logBefore = s.log.of(token.id).length;
  const st = rebindStatement(token, dry3.json(), attester);
  const bad = await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/attest`, { attester_id: attester, signature: sign({ ...st, to_version: 2 }) }, s.acme.developer);
  t.equal(bad.statusCode, 422);
  t.equal(bad.json().code, 'attestation_signature_invalid');
  t.equal((await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/attest`, { attester_id: attester, signature: sign(st) }, s.acme.viewer)).statusCode, 403, 'attesting is tokenization.operate');
  t.equal((await s.call('GET', `/v1/rwa/schema-rebinds/${id3}`)).json().attestations.length, 0);
  t.equal(s.log.of(token.id).length, logBefore, 'no refusal was logged');
  const att = await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/attest`, { attester_id: attester, signature: sign(st) }, s.acme.developer);
  t.equal(att.statusCode, 200, att.body);
  t.match(att.json(), { state: 'ready', attestations: [{ attester_id: attester, statement: st }] });
  const attEntry = s.log.of(token.id).at(-1)!;
  t.match(attEntry, { kind: 'attestation', body: { subject: 'rebind' } });
  t.same(await verifyAttestationEntry(attEntry.body), { ok: true });
  t.equal((await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/attest`, { attester_id: attester, signature: sign(st) })).json().code, 'attestation_replayed');

  // A field changes after the attestation: commit refuses, the dry run starts the attestations again.
  await s.call('POST', `/v1/rwa/tokens/${token.id}/fields/isin`, { value: 'GB0002634946' });
  const stale = await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/commit`);
  t.equal(stale.statusCode, 409);
  t.match(stale.json().error, /changed since the dry run/);
  t.equal((await s.call('GET', `/v1/rwa/tokens/${token.id}/schema-binding`)).json().version, 1, 'the binding did not move');
  const redo = await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/dry-run`);
  t.match(redo.json(), { state: 'attesting', attestations: [] });
  t.not(redo.json().dry_run.sha256, dry3.json().dry_run.sha256);
  t.equal((await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/commit`, undefined, s.acme.developer)).statusCode, 403, 'commit is tokenization.manage');
  await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/attest`, { attester_id: attester, signature: sign(rebindStatement(token, redo.json(), attester)) });

  const ratingBefore = (await s.call('GET', `/v1/rwa/tokens/${token.id}/fields`)).json().fields.find((f: { path: string }) => f.path === 'rating');
  t.equal(ratingBefore.visibility, 'committed');
  const done = await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/commit`);
  t.equal(done.statusCode, 200, done.body);
  t.match(done.json(), { state: 'committed', committed_at: String });
  const binding = (await s.call('GET', `/v1/rwa/tokens/${token.id}/schema-binding`)).json();
  t.match(binding, { schema_id: 'acme-bond', version: 3, sha256: done.json().to_sha256, rebind_id: id3, log_index: done.json().log_index });
  t.match(s.log.of(token.id).at(-1), { kind: 'schema_binding', index: done.json().log_index, body: { action: 'rebind', rebind_id: id3, from_version: 1, to_version: 3, dry_run_sha256: redo.json().dry_run.sha256 } });
  const after = (await s.call('GET', `/v1/rwa/tokens/${token.id}/fields`)).json();
  t.match(after.fields.find((f: { path: string }) => f.path === 'rating'), { visibility: 'public', commitment: null, value: 'AA' });
  t.same(after.schema, { id: 'acme-bond', version: 3, sha256: binding.sha256 });
  t.same(after.missing_required, ['maturity']);
  t.equal((await s.call('POST', `/v1/rwa/tokens/${token.id}/fields/paying_agent`, { value: 'X' })).statusCode, 200, 'fields now validate against v3');

  // The rebind to v2 was overtaken; an older version is no rebind.
  const over = await s.call('POST', `/v1/rwa/schema-rebinds/${id2}/dry-run`);
  t.equal(over.statusCode, 409);
  t.equal((await s.call('GET', `/v1/rwa/schema-rebinds/${id2}`)).json().state, 'superseded');
  t.equal((await s.call('POST', '/v1/rwa/schema-rebinds', { token_id: token.id, version: 2 })).json().code, 'validation_failed');
  t.equal((await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/commit`)).statusCode, 409, 'committed once');

  // Another workspace sees none of it; a viewer proposes nothing.
  t.equal((await s.call('GET', `/v1/rwa/schema-rebinds/${id3}`, undefined, s.globex.owner)).statusCode, 404);
  t.equal((await s.call('POST', `/v1/rwa/schema-rebinds/${id3}/commit`, undefined, s.globex.owner)).statusCode, 404);
  t.equal((await s.call('POST', '/v1/rwa/schema-rebinds', { token_id: token.id, version: 3 }, s.globex.owner)).statusCode, 404);
  t.equal((await s.call('POST', '/v1/rwa/schema-rebinds', { token_id: token.id, version: 3 }, s.acme.viewer)).statusCode, 403);
  t.equal((await s.call('POST', '/v1/rwa/schema-rebinds', { token_id: token.id, version: 3 }, s.acme.owner, { 'idempotency-key': null })).statusCode, 400);
});

t.test('a policy of no attestation: a passing dry run is ready at once; an unbound token has no rebind', async (t) => {
  const s = await schemaApp(t);
  const token = await setUp(s, 0);
  const r = await s.call('POST', '/v1/rwa/schema-rebinds', { token_id: token.id, version: 3 });
  const id = r.json().id as string;
  t.match((await s.call('POST', `/v1/rwa/schema-rebinds/${id}/dry-run`)).json(), { state: 'ready', required_attestations: 0 });
  t.equal((await s.call('POST', `/v1/rwa/schema-rebinds/${id}/commit`)).statusCode, 200);
  const loose = await s.token();
  t.equal((await s.call('POST', '/v1/rwa/schema-rebinds', { token_id: loose.id, version: 3 })).statusCode, 409);
});
