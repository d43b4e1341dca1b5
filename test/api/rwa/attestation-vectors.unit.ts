// The attestation formats pinned (docs/platform/rwa.md "Attested entries"): the Ed25519 signatures over the
// statements' text (deterministic, RFC 8032) and the EIP-712 hashes of their typed data, for fixed inputs, so
// an attester implementing the format from the docs gets these exact bytes; and `verifyAttestationEntry`
// accepting each entry from its body alone, and refusing it when any one field of the statement is altered.
import t from 'tap';
import { createHash } from 'node:crypto';
import { hashTypedData } from 'viem';
import { fieldTypedData, rebindTypedData, verifyAttestationEntry, type FieldStatement, type RebindStatement } from '../../../api/rwa/schema/attestation.ts';
import { canonicalJson, valueSha256 } from '../../../api/rwa/schema/canonical-json.ts';

const field: FieldStatement = {
  token_id: 'tok_0000000000000000000000000a', chain_id: 31337, contract: `0x${'ab'.repeat(20)}`, field: 'coupon.rate_bps', value_sha256: valueSha256(450),
  schema_id: 'acme-bond', schema_version: 2, schema_sha256: 'cd'.repeat(32), attester_id: 'att_0000000000000000000000000b', nonce: 7,
};
const rebind: RebindStatement = {
  rebind_id: 'rbd_0000000000000000000000000c', token_id: field.token_id, chain_id: 31337, contract: field.contract, schema_id: 'acme-bond', from_version: 1, from_sha256: '11'.repeat(32),
  to_version: 2, to_sha256: '22'.repeat(32), dry_run_sha256: '33'.repeat(32), attester_id: field.attester_id,
};
/** The Ed25519 key of the 32-byte seed 0x01…01. */
const ED_KEY = { scheme: 'ed25519' as const, public_key: '8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c' };
/** The address of the secp256k1 key 0x02…02. */
const EVM_KEY = { scheme: 'eip712' as const, address: '0x5050a4f4b3f9338c3472dcc01a87c76a144b3c9c' };
const ED_FIELD_SIG = '662bd18fc28639d1a39c15e645d6e1fae72656ae98b3ada69db4e7a6148379e2d93476c6ae06a11285c9f5e2b3ec425f43eab2512cca11277eabb49f464c4109';
const ED_REBIND_SIG = '74b6e92c5f08e5a0e70f49dd38e1413b7472386b271802b2d6c3f0159bc9085ed5cda77efc67b247b690a71029e3c97f7bd8e1c2d634fd486e422b0bd46ba708';
const EVM_FIELD_SIG = '0xe9ebc05925b2de4cff71305c1ff8f67b43ac5087d017cfbfd93421844807b0936c95d16e171c51685ff8c86d72a7b4117a6337ecebab751e120cdcc518b7f5a01c';

t.test('canonical JSON and value hashes', async (t) => {
  t.equal(canonicalJson({ b: [1, 'x'], a: null, c: undefined }), '{"a":null,"b":[1,"x"]}');
  t.equal(valueSha256({ b: [1, 'x'], a: null }), createHash('sha256').update('{"a":null,"b":[1,"x"]}').digest('hex'));
  t.equal(valueSha256(450), createHash('sha256').update('450').digest('hex'));
  t.throws(() => canonicalJson(Number.NaN));
});

t.test('the EIP-712 hashes of the two statements', async (t) => {
  t.equal(hashTypedData(fieldTypedData(field)), '0x736d4a5d3c6ba6d3f57d7f45b158268b9a45d7a6de0ef7ce2c44d9d8804330c5');
  t.equal(hashTypedData(rebindTypedData(rebind)), '0x45d3d6d46fbe7a9261fca8d25d9bac314636e9eaf4c5eea5ca368312182e638c');
});

t.test('each entry verifies from its body alone, and no longer once any field of its statement changes', async (t) => {
  const entries = [
    { what: 'field, Ed25519', body: { subject: 'field', statement: field, key: ED_KEY, signature: ED_FIELD_SIG, value: 450 } },
    { what: 'field, EIP-712', body: { subject: 'field', statement: field, key: EVM_KEY, signature: EVM_FIELD_SIG } },
    { what: 'rebind, Ed25519', body: { subject: 'rebind', statement: rebind, key: ED_KEY, signature: ED_REBIND_SIG } },
  ];
  for (const { what, body } of entries) {
    t.same(await verifyAttestationEntry(body), { ok: true }, what);
    for (const [k, v] of Object.entries(body.statement)) {
      const altered = typeof v === 'number' ? v + 1 : k === 'contract' ? `0x${'ac'.repeat(20)}` : /^[0-9a-f]{64}$/.test(v) ? `${v.slice(0, 63)}${v.endsWith('0') ? '1' : '0'}` : `${v.slice(0, -1)}${v.endsWith('a') ? 'b' : 'a'}`;
      const res = await verifyAttestationEntry({ ...body, statement: { ...body.statement, [k]: altered } });
      t.equal(res.ok, false, `${what}: ${k} altered`);
    }
    t.equal((await verifyAttestationEntry({ ...body, subject: body.subject === 'field' ? 'rebind' : 'field' })).ok, false, `${what}: read as the other kind`);
    t.equal((await verifyAttestationEntry({ ...body, key: body.key === ED_KEY ? { scheme: 'ed25519', public_key: '11'.repeat(32) } : { scheme: 'eip712', address: `0x${'12'.repeat(20)}` } })).ok, false, `${what}: another key`);
  }
  t.match(await verifyAttestationEntry({ ...entries[0]!.body, value: 451 }), { ok: false, reason: /value does not hash/ });
  t.match(await verifyAttestationEntry({ subject: 'field' }), { ok: false, reason: /no statement/ });
  t.match(await verifyAttestationEntry({ ...entries[0]!.body, key: { scheme: 'rsa' } }), { ok: false, reason: /key/ });
});
