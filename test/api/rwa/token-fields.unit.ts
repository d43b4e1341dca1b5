// A token's schema binding, fields, attesters and attested entries through the API (docs/platform/rwa.md):
// values checked against the bound published version, attesters registered with the paths they may attest,
// attested entries signed with the attester's own key (Ed25519, or EIP-712 by an address) verified and kept
// so anyone can check them again from the log entry alone; a value that fails the schema, an attester outside
// its scope, a bad or replayed signature refused with nothing changed (state and log read back); another
// workspace's token 404; the permissions of Tokenization I.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { schemaApp, type SchemaApp } from './schema-fixture.ts';
import { fieldTypedData, statementText, verifyAttestationEntry, type FieldStatement, type Statement } from '../../../api/rwa/schema/attestation.ts';
import { valueSha256 } from '../../../api/rwa/schema/canonical-json.ts';
import { fieldCommitment } from '../../../api/rwa/schema/token-metadata.ts';
import type { TokenRecord } from '../../../api/tokenization/records.ts';

const schemaDoc = {
  type: 'object',
  properties: {
    isin: { type: 'string', pattern: '^[A-Z]{2}[A-Z0-9]{9}[0-9]$', 'x-visibility': 'public' },
    coupon: { type: 'object', 'x-visibility': 'public', properties: { rate_bps: { type: 'integer', minimum: 0, maximum: 5000 } } },
    rating: { type: 'string', maxLength: 10, 'x-visibility': 'committed' },
    paying_agent: { type: 'string' },
  },
  required: ['isin'],
  additionalProperties: false,
};

/** A published bond schema and a token of Acme bound to its version 1. */
async function bound(s: SchemaApp, policy = 1) {
  await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/upload-publish', { json_schema: schemaDoc });
  const token = await s.token();
  const b = await s.call('POST', `/v1/rwa/tokens/${token.id}/schema-binding`, { schema_id: 'acme-bond', version: 1, rebind_policy: { attestations: policy } });
  if (b.statusCode !== 201) throw new Error(b.body);
  return { token, binding: b.json() as { sha256: string } };
}

const ed = () => {
  const secret = ed25519.utils.randomSecretKey();
  return { secret, publicKey: bytesToHex(ed25519.getPublicKey(secret)) };
};

function fieldStatement(token: TokenRecord, sha: string, attesterId: string, field: string, value: unknown, nonce: number, version = 1): FieldStatement {
  return { token_id: token.id, chain_id: token.chain_id, contract: token.address, field, value_sha256: valueSha256(value), schema_id: 'acme-bond', schema_version: version, schema_sha256: sha, attester_id: attesterId, nonce };
}
const edSign = (st: Statement, secret: Uint8Array) => bytesToHex(ed25519.sign(utf8ToBytes(statementText(st)), secret));

t.test('binding: to one published version, once; a rebind moves it', async (t) => {
  const s = await schemaApp(t);
  await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/upload-publish', { json_schema: schemaDoc });
  await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/draft', { json_schema: schemaDoc });
  const token = await s.token();
  t.equal((await s.call('GET', `/v1/rwa/tokens/${token.id}/schema-binding`, undefined, s.acme.viewer)).statusCode, 404, 'not bound yet');
  t.equal((await s.call('POST', `/v1/rwa/tokens/${token.id}/schema-binding`, { schema_id: 'acme-bond', version: 2 })).statusCode, 409, 'a draft is not bound');
  t.equal((await s.call('POST', `/v1/rwa/tokens/${token.id}/schema-binding`, { schema_id: 'nope', version: 1 })).statusCode, 404);
  t.equal((await s.call('POST', `/v1/rwa/tokens/${token.id}/schema-binding`, { schema_id: 'acme-bond', version: 1 }, s.acme.developer)).statusCode, 403, 'binding is tokenization.manage');
  t.same(s.log.of(token.id), [], 'no refusal reached the log');
  const b = await s.call('POST', `/v1/rwa/tokens/${token.id}/schema-binding`, { schema_id: 'acme-bond', version: 1 });
  t.equal(b.statusCode, 201, b.body);
  t.match(b.json(), { token_id: token.id, schema_id: 'acme-bond', version: 1, rebind_policy: { attestations: 1 }, log_index: 0 });
  t.match(s.log.of(token.id), [{ kind: 'schema_binding', body: { action: 'bind', token_id: token.id, schema_id: 'acme-bond', version: 1, sha256: b.json().sha256 } }]);
  t.equal((await s.call('POST', `/v1/rwa/tokens/${token.id}/schema-binding`, { schema_id: 'acme-bond', version: 1 })).statusCode, 409, 'bound once; a rebind moves it');
  t.same((await s.call('GET', `/v1/rwa/tokens/${token.id}/schema-binding`, undefined, s.acme.viewer)).json(), b.json());
  // Another workspace's token is not found, read or written.
  t.equal((await s.call('GET', `/v1/rwa/tokens/${token.id}/schema-binding`, undefined, s.globex.owner)).statusCode, 404);
  const other = await s.token(s.globex);
  t.equal((await s.call('POST', `/v1/rwa/tokens/${other.id}/schema-binding`, { schema_id: 'acme-bond', version: 1 })).statusCode, 404);
  t.equal(s.log.entries.length, 1);
});

t.test('fields: set by the issuer, checked against the bound version; a value that fails it changes nothing', async (t) => {
  const s = await schemaApp(t);
  const { token, binding } = await bound(s);
  const set = (path: string, value: unknown, key = s.acme.developer) => s.call('POST', `/v1/rwa/tokens/${token.id}/fields/${path}`, { value }, key);
  const ok = await set('isin', 'US0378331005');
  t.equal(ok.statusCode, 200, ok.body);
  t.match(ok.json(), { path: 'isin', value: 'US0378331005', value_sha256: valueSha256('US0378331005'), visibility: 'public', schema_version: 1, sequence: 1, source: { type: 'issuer' }, attestations: [] });
  const rating = await set('rating', 'AA+');
  t.equal(rating.json().visibility, 'committed');
  t.equal(rating.json().commitment, fieldCommitment('rating', rating.json().salt, 'AA+'), 'a committed field carries its salted commitment');
  await set('paying_agent', 'Agent Bank');
  await set('coupon.rate_bps', 450);
  const logged = s.log.of(token.id).slice(1);
  t.same(logged.map((e) => e.kind), ['field', 'field', 'field', 'field']);
  t.match(logged[0]!.body, { field: 'isin', value: 'US0378331005', visibility: 'public', schema_sha256: binding.sha256 });
  t.notOk('value' in logged[1]!.body, 'a committed value is not in the log');
  t.equal(logged[1]!.body.commitment, rating.json().commitment);
  t.notOk('value' in logged[2]!.body, 'a private value is not in the log');
  t.equal(logged[2]!.body.value_sha256, valueSha256('Agent Bank'));

  const before = (await s.call('GET', `/v1/rwa/tokens/${token.id}/fields`, undefined, s.acme.viewer)).json();
  const refused: [string, unknown, string][] = [
    ['isin', 'not an isin', 'field_value_invalid'],
    ['coupon.rate_bps', 9000, 'field_value_invalid'],
    ['coupon.rate_bps', '450', 'field_value_invalid'],
    ['maturity', '2030-01-01', 'field_value_invalid'],
    ['coupon', { rate_bps: 1 }, 'field_value_invalid'],
  ];
  for (const [path, value, code] of refused) {
    const res = await set(path, value);
    t.equal(res.statusCode, 422, `${path} = ${JSON.stringify(value)}`);
    t.equal(res.json().code, code);
  }
  t.match((await set('coupon.rate_bps', 9000)).json().error, /coupon\.rate_bps: must be <= 5000/);
  t.equal((await set('bad..path', 1)).statusCode, 400);
  t.equal((await set('isin', 'US0378331005', s.acme.viewer)).statusCode, 403, 'setting a field is tokenization.operate');
  t.equal((await s.call('POST', `/v1/rwa/tokens/${token.id}/fields/isin`, { value: 'US0378331005' }, s.globex.owner)).statusCode, 404);
  t.same((await s.call('GET', `/v1/rwa/tokens/${token.id}/fields`, undefined, s.acme.viewer)).json(), before, 'nothing changed');
  t.equal(s.log.of(token.id).length, 5, 'nothing was logged');
  t.equal((await s.call('GET', `/v1/rwa/tokens/${token.id}/fields`, undefined, s.globex.owner)).statusCode, 404);

  t.same(before.schema, { id: 'acme-bond', version: 1, sha256: binding.sha256 });
  t.same(before.missing_required, []);
  t.same(before.token_metadata.attributes, [{ trait_type: 'coupon.rate_bps', value: 450 }, { trait_type: 'isin', value: 'US0378331005' }]);
  t.same(before.token_metadata.properties.commitments, { rating: rating.json().commitment });
  // An unbound token takes no field.
  const loose = await s.token();
  t.equal((await s.call('POST', `/v1/rwa/tokens/${loose.id}/fields/isin`, { value: 'US0378331005' })).statusCode, 409);
});

t.test('attested entries: Ed25519 and EIP-712, verified and kept; out of scope, bad or replayed signatures refused with nothing changed', async (t) => {
  const s = await schemaApp(t);
  const { token, binding } = await bound(s);
  const edKey = ed();
  const evm = privateKeyToAccount(generatePrivateKey());
  const addEd = await s.call('POST', `/v1/rwa/tokens/${token.id}/attesters`, { name: 'Registrar', key: { scheme: 'ed25519', public_key: edKey.publicKey }, fields: ['isin', 'coupon'] });
  t.equal(addEd.statusCode, 201, addEd.body);
  const addEvm = await s.call('POST', `/v1/rwa/tokens/${token.id}/attesters`, { name: 'Rating agency', key: { scheme: 'eip712', address: evm.address }, fields: ['rating'] });
  t.equal(addEvm.statusCode, 201, addEvm.body);
  const registrar = addEd.json().id as string;
  const agency = addEvm.json().id as string;
  t.match(s.log.of(token.id).slice(1), [{ kind: 'attester', body: { action: 'add', attester_id: registrar, fields: ['isin', 'coupon'] } }, { kind: 'attester', body: { action: 'add', attester_id: agency, key: { scheme: 'eip712', address: evm.address.toLowerCase() } } }]);
  t.equal((await s.call('POST', `/v1/rwa/tokens/${token.id}/attesters`, { name: 'Again', key: { scheme: 'ed25519', public_key: edKey.publicKey }, fields: ['isin'] })).statusCode, 409, 'one key once');
  t.equal((await s.call('POST', `/v1/rwa/tokens/${token.id}/attesters`, { name: 'Typo', key: { scheme: 'ed25519', public_key: ed().publicKey }, fields: ['isn'] })).json().code, 'validation_failed', 'a scope naming no field of the bound version');
  t.equal((await s.call('POST', `/v1/rwa/tokens/${token.id}/attesters`, { name: 'X', key: { scheme: 'ed25519', public_key: ed().publicKey }, fields: ['*'] }, s.acme.developer)).statusCode, 403, 'attesters are tokenization.manage');

  // The exact text an Ed25519 attester signs.
  const st1 = fieldStatement(token, binding.sha256, registrar, 'isin', 'US0378331005', 1);
  t.equal(statementText({ kind: 'field', statement: st1 }), [
    'rwa-attestation/v1', 'kind: field', `token: ${token.id}`, 'chain_id: 31337', `contract: ${token.address}`, 'field: isin', `value_sha256: ${valueSha256('US0378331005')}`,
    'schema: acme-bond', 'schema_version: 1', `schema_sha256: ${binding.sha256}`, `attester: ${registrar}`, 'nonce: 1', '',
  ].join('\n'));
  const entry = (path: string, body: Record<string, unknown>, key = s.acme.developer) => s.call('POST', `/v1/rwa/tokens/${token.id}/fields/${path}/attested-entry`, body, key);
  const sig1 = edSign({ kind: 'field', statement: st1 }, edKey.secret);
  const first = await entry('isin', { attester_id: registrar, value: 'US0378331005', nonce: 1, signature: sig1 });
  t.equal(first.statusCode, 200, first.body);
  t.match(first.json(), { path: 'isin', value: 'US0378331005', source: { type: 'attester', attester_id: registrar }, attestations: [{ attester_id: registrar, signature: sig1, statement: st1 }] });
  const logged = s.log.of(token.id).at(-1)!;
  t.equal(logged.kind, 'attestation');
  t.same(await verifyAttestationEntry(logged.body), { ok: true }, 'anyone re-verifies the entry from its body alone');

  const state = async () => ({ fields: (await s.call('GET', `/v1/rwa/tokens/${token.id}/fields`, undefined, s.acme.viewer)).json(), attesters: (await s.call('GET', `/v1/rwa/tokens/${token.id}/attesters`, undefined, s.acme.viewer)).json(), log: s.log.of(token.id).length });
  const before = await state();
  // The same signature again, under a fresh Idempotency-Key: a replay.
  const replay = await entry('isin', { attester_id: registrar, value: 'US0378331005', nonce: 1, signature: sig1 });
  t.equal(replay.statusCode, 409);
  t.equal(replay.json().code, 'attestation_replayed');
  // A signature over another value, field or nonce than the one posted.
  const st2 = fieldStatement(token, binding.sha256, registrar, 'isin', 'US0378331005', 2);
  const sig2 = edSign({ kind: 'field', statement: st2 }, edKey.secret);
  for (const [what, body, path] of [
    ['another value', { attester_id: registrar, value: 'GB0002634946', nonce: 2, signature: sig2 }, 'isin'],
    ['another nonce', { attester_id: registrar, value: 'US0378331005', nonce: 3, signature: sig2 }, 'isin'],
    ['another key', { attester_id: registrar, value: 'US0378331005', nonce: 2, signature: edSign({ kind: 'field', statement: st2 }, ed().secret) }, 'isin'],
    ['another field', { attester_id: registrar, value: 450, nonce: 2, signature: sig2 }, 'coupon.rate_bps'],
  ] as const) {
    const res = await entry(path, body);
    t.equal(res.statusCode, 422, what);
    t.equal(res.json().code, 'attestation_signature_invalid', what);
  }
  // Outside its scope, a value that fails the schema, an unknown attester.
  const outside = await entry('rating', { attester_id: registrar, value: 'AA', nonce: 2, signature: edSign({ kind: 'field', statement: fieldStatement(token, binding.sha256, registrar, 'rating', 'AA', 2) }, edKey.secret) });
  t.equal(outside.statusCode, 403);
  t.equal(outside.json().code, 'attester_out_of_scope');
  const failing = await entry('isin', { attester_id: registrar, value: 'nope', nonce: 2, signature: edSign({ kind: 'field', statement: fieldStatement(token, binding.sha256, registrar, 'isin', 'nope', 2) }, edKey.secret) });
  t.equal(failing.json().code, 'field_value_invalid');
  t.equal((await entry('isin', { attester_id: 'att_00000000000000000000000000', value: 'US0378331005', nonce: 2, signature: sig2 })).statusCode, 404);
  t.equal((await entry('isin', { attester_id: registrar, value: 'US0378331005', nonce: 2, signature: sig2 }, s.acme.viewer)).statusCode, 403);
  t.equal((await s.call('POST', `/v1/rwa/tokens/${token.id}/fields/isin/attested-entry`, { attester_id: registrar, value: 'US0378331005', nonce: 2, signature: sig2 }, s.globex.owner)).statusCode, 404);
  t.same(await state(), before, 'no refusal changed a field, an attester\'s nonce or the log');

  // The same value attested again at the next nonce: one more attestation on it, the value unchanged.
  const again = await entry('isin', { attester_id: registrar, value: 'US0378331005', nonce: 2, signature: sig2 });
  t.equal(again.statusCode, 200, again.body);
  t.equal(again.json().attestations.length, 2);
  t.equal(again.json().sequence, 1, 'the value did not change');
  t.equal((await s.call('GET', `/v1/rwa/tokens/${token.id}/attesters`, undefined, s.acme.viewer)).json().data[0].last_nonce, 2);
  // One signature posted twice at once, under two keys: exactly one is accepted.
  const st5 = fieldStatement(token, binding.sha256, registrar, 'coupon.rate_bps', 425, 3);
  const body5 = { attester_id: registrar, value: 425, nonce: 3, signature: edSign({ kind: 'field', statement: st5 }, edKey.secret) };
  const logAt = s.log.of(token.id).length;
  const raced = await Promise.all([entry('coupon.rate_bps', body5), entry('coupon.rate_bps', body5)]);
  t.same(raced.map((r) => r.statusCode).sort(), [200, 409]);
  t.equal(s.log.of(token.id).length, logAt + 1, 'one entry logged');

  // EIP-712 by an address.
  const st3 = fieldStatement(token, binding.sha256, agency, 'rating', 'AA-', 7);
  const sig3 = await evm.signTypedData(fieldTypedData(st3));
  const byEvm = await entry('rating', { attester_id: agency, value: 'AA-', nonce: 7, signature: sig3 });
  t.equal(byEvm.statusCode, 200, byEvm.body);
  const evmEntry = s.log.of(token.id).at(-1)!;
  t.notOk('value' in evmEntry.body, 'a committed value stays out of the log');
  t.same(await verifyAttestationEntry(evmEntry.body), { ok: true });
  // A value that is not the signed one, in the entry or altered afterwards, fails the check.
  t.match(await verifyAttestationEntry({ ...evmEntry.body, value: 'AAA' }), { ok: false, reason: /value does not hash/ });
  t.match(await verifyAttestationEntry({ ...logged.body, statement: { ...(logged.body.statement as object), nonce: 9 } }), { ok: false, reason: /ed25519 signature does not verify/ });
  t.match(await verifyAttestationEntry({ ...evmEntry.body, statement: { ...(evmEntry.body.statement as object), field: 'isin' } }), { ok: false, reason: /eip712 signature does not verify/ });
  t.match(await verifyAttestationEntry({ ...evmEntry.body, statement: { ...(evmEntry.body.statement as object), field: 'a\nb' } }), { ok: false, reason: /field is malformed/ });
  t.equal((await entry('rating', { attester_id: agency, value: 'AA-', nonce: 7, signature: sig3 })).json().code, 'attestation_replayed');

  // A removed attester attests nothing more; what it attested stays verifiable.
  const del = await s.call('DELETE', `/v1/rwa/tokens/${token.id}/attesters/${agency}`);
  t.equal(del.statusCode, 200, del.body);
  t.match(del.json(), { status: 'removed', removed_at: String });
  t.match(s.log.of(token.id).at(-1), { kind: 'attester', body: { action: 'remove', attester_id: agency } });
  const st4 = fieldStatement(token, binding.sha256, agency, 'rating', 'A', 8);
  const gone = await entry('rating', { attester_id: agency, value: 'A', nonce: 8, signature: await evm.signTypedData(fieldTypedData(st4)) });
  t.equal(gone.json().code, 'attester_out_of_scope');
  t.equal((await s.call('GET', `/v1/rwa/tokens/${token.id}/fields`, undefined, s.acme.viewer)).json().fields.find((f: { path: string }) => f.path === 'rating').value, 'AA-');
  t.equal((await s.call('DELETE', `/v1/rwa/tokens/${token.id}/attesters/${agency}`, undefined, s.globex.owner)).statusCode, 404);
  t.equal((await s.call('DELETE', `/v1/rwa/tokens/${token.id}/attesters/${registrar}`, undefined, s.acme.developer)).statusCode, 403);
  const list = (await s.call('GET', `/v1/rwa/tokens/${token.id}/attesters`, undefined, s.acme.viewer)).json();
  t.same(list.data.map((a: { id: string; status: string }) => [a.id, a.status]), [[registrar, 'active'], [agency, 'removed']]);
  t.equal((await s.call('GET', `/v1/rwa/tokens/${token.id}/attesters`, undefined, s.globex.owner)).statusCode, 404);
});
