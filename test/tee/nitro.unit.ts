// AWS Nitro Enclaves attestation documents (AWS, "Verifying the root of trust"): real documents from
// blocky/nitrite verify against the pinned AWS root at their own time, with every field as the vectors'
// README states; every way a document can be wrong (structure, fields, signature, chain, time, root,
// debug mode, PCRs, nonce) is refused with its own code.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { createHash, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { AWS_NITRO_ROOT_G1_PEM } from '../../tee/attestation/roots/aws-nitro-root-g1.ts';
import { decode, encode, Tag } from 'cbor2';
import { verifyNitroAttestation, MAX_DOCUMENT_BYTES, type VerifyNitroAttestationOptions } from '../../tee/attestation/nitro.ts';
import { AttestationError } from '../../tee/attestation/attestation-error.ts';
import { ES384_PROTECTED_HEADER, sigStructure } from '../../tee/attestation/cose-sign1.ts';
import { decodeNitroPayload } from '../../tee/attestation/nitro-payload.ts';
import { issueCertificate, toPem } from '../../tee/attestation/dev-certificate.ts';
import { certificatesFromPem } from '../../tee/attestation/certificate.ts';
import { fromHex, toHex } from '../../common/bytes.ts';

const vectors = new URL('../../../shared/vectors/tee/nitro/', import.meta.url);
const b64 = (name: string) => new Uint8Array(Buffer.from(readFileSync(new URL(name, vectors), 'utf8').trim(), 'base64'));
const awsRootPem = readFileSync(new URL('aws-nitro-enclaves-root-G1.pem', vectors), 'utf8');
const awsRootDer = certificatesFromPem(awsRootPem)[0]!;
const real = b64('blocky-nitrite-nitro_attestation.b64');
const debug = b64('blocky-nitrite-nitro_attestation_debug.b64');
const selfSigned = b64('blocky-nitrite-selfsigned_attestation.b64');
const REAL_AT = new Date('2024-09-07T14:37:39.545Z');
const DEBUG_AT = new Date('2024-09-07T14:38:06.508Z');
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

const opts = (over: Partial<VerifyNitroAttestationOptions> = {}): VerifyNitroAttestationOptions => ({ roots: [awsRootPem], at: REAL_AT, ...over });

/** Asserts `fn` throws an AttestationError with `code`. */
function refuses(t: Test, fn: () => unknown, code: string, what: string) {
  t.throws(fn, { name: 'AttestationError', code }, what);
}

/** The document with one byte changed (XOR 0x01) at `offset`. */
function flip(doc: Uint8Array, offset: number): Uint8Array {
  const copy = new Uint8Array(doc);
  copy[offset]! ^= 0x01;
  return copy;
}
const offsetOf = (doc: Uint8Array, text: string) => Buffer.from(doc).indexOf(Buffer.from(text));

/** The COSE_Sign1 parts of a document, for rebuilding it differently. */
const parts = (doc: Uint8Array) => decode(doc, { preferMap: true }) as [Uint8Array, Map<unknown, unknown>, Uint8Array, Uint8Array];
const plain = (b: Uint8Array) => new Uint8Array(b);
const rebuild = (items: unknown[]) => encode(items.map((x) => (x instanceof Uint8Array ? plain(x) : x)));

t.test('the vectors are the ones the README describes', async (t) => {
  t.equal(real.length, 7539);
  t.equal(sha256(real), '72ffd835a669cad29f11314fb4185bd89eaed2762e30dc25282c663606ee30ee');
  t.equal(sha256(awsRootDer), '641a0321a3e244efe456463195d606317ed7cdcc3c1756e09893f3c68f79bb5b', 'the pinned AWS Root-G1');
});

t.test('a real document verifies at its own time, with every field', async (t) => {
  const doc = verifyNitroAttestation(real, opts());
  t.equal(doc.moduleId, 'i-0a22e5c5f24d22174-enc0191cceb4289903f');
  t.equal(doc.digest, 'SHA384');
  t.equal(doc.timestamp, 1725719859545);
  t.equal(doc.timestamp, REAL_AT.getTime());
  t.same([...doc.pcrs.keys()], [...Array(16).keys()], 'PCRs 0..15');
  t.equal(toHex(doc.pcrs.get(0)!), 'e72a46ca80a260fb044a125442f0c7e331813bcbaf9724d9f3857758992766f2d65710a27aa94ae3949dd54e7c9fe86a');
  t.equal(toHex(doc.pcrs.get(1)!), '0343b056cd8485ca7890ddd833476d78460aed2aa161548e4e26bedf321726696257d623e8805f3f605946b3d8b0c6aa');
  t.equal(toHex(doc.pcrs.get(2)!), 'd5dcbdea0aa39c802f9d55ced2ea6e4d74ecec5f08fe40c508882639c9090642669106a062a3e24ee2805a3024b9b75c');
  t.equal(toHex(doc.pcrs.get(4)!), '45706d7b621e4620a332e147a5ddb000b049f73d47d3e61f6b03d2069152d4df6a4a786ad1c10102b955799a9dc96b44');
  t.ok(doc.pcrs.get(3)!.every((b) => b === 0), 'PCR3 zero: no IAM role');
  t.ok(doc.pcrs.get(8)!.every((b) => b === 0), 'PCR8 zero: unsigned image');
  for (const field of ['publicKey', 'userData', 'nonce'] as const) {
    t.equal(doc[field]!.length, 1024, `${field}: 1024 bytes`);
    t.ok(doc[field]!.every((b) => b === 1), `${field}: all 0x01`);
    t.equal(Object.getPrototypeOf(doc[field]), Uint8Array.prototype, `${field}: a plain Uint8Array`);
  }
  t.equal(doc.cabundle.length, 4, 'root, regional, zonal, instance');
  t.same(doc.cabundle[0], awsRootDer, 'cabundle[0] is the AWS root, byte for byte');
  t.match(Buffer.from(doc.certificate).toString('latin1'), /i-0a22e5c5f24d22174-enc0191cceb4289903f\.us-east-1\.aws/);
});

t.test('the same document verifies tagged (18), with DER roots, among other roots, and with every expectation met', async (t) => {
  t.equal(verifyNitroAttestation(new Uint8Array([0xd2, ...real]), opts()).moduleId, 'i-0a22e5c5f24d22174-enc0191cceb4289903f', 'tag 18');
  t.ok(verifyNitroAttestation(real, opts({ roots: [awsRootDer] })), 'DER root');
  const other = selfMadeRoot();
  t.ok(verifyNitroAttestation(real, opts({ roots: [other, awsRootPem] })), 'a second pinned root');
  t.ok(verifyNitroAttestation(real, opts({ roots: [other + awsRootPem] })), 'a PEM bundle');
  const doc = verifyNitroAttestation(real, opts({
    expectedPcrs: new Map<number, Uint8Array>([
      [0, fromHex('e72a46ca80a260fb044a125442f0c7e331813bcbaf9724d9f3857758992766f2d65710a27aa94ae3949dd54e7c9fe86a')],
      [8, new Uint8Array(48)],
    ]),
    expectedNonce: new Uint8Array(1024).fill(1),
    maxAgeMs: 0,
  }));
  t.equal(doc.nonce!.length, 1024);
  t.ok(verifyNitroAttestation(real, opts({ expectedPcrs: { 3: new Uint8Array(48) } })), 'expected PCRs as a record');
  t.ok(verifyNitroAttestation(real, opts({ at: new Date('2024-09-07T17:37:39Z') })), 'at the leaf\'s notAfter');
});

t.test('a debug-mode document is refused by default, accepted with allowDebug', async (t) => {
  refuses(t, () => verifyNitroAttestation(debug, opts({ at: DEBUG_AT })), 'debug_enclave', 'debug refused');
  const doc = verifyNitroAttestation(debug, opts({ at: DEBUG_AT, allowDebug: true }));
  t.equal(doc.moduleId, 'i-0a22e5c5f24d22174-enc0191ccebaf8feaba');
  t.equal(doc.timestamp, DEBUG_AT.getTime());
  for (const i of [0, 1, 2]) t.ok(doc.pcrs.get(i)!.every((b) => b === 0), `PCR${i} zero`);
  refuses(t, () => verifyNitroAttestation(debug, opts({ at: DEBUG_AT, allowDebug: true, expectedPcrs: { 0: fromHex('e72a46ca80a260fb044a125442f0c7e331813bcbaf9724d9f3857758992766f2d65710a27aa94ae3949dd54e7c9fe86a') } })), 'attestation_pcr_mismatch', 'allowDebug does not waive expected PCRs');
});

t.test('a self-signed, malformed document is refused as malformed', async (t) => {
  refuses(t, () => verifyNitroAttestation(selfSigned, opts()), 'bad_attestation', 'null unprotected header');
  const [p, , payload, sig] = parts(selfSigned);
  refuses(t, () => verifyNitroAttestation(rebuild([p, new Map(), payload, sig]), opts()), 'bad_attestation', 'null cabundle');
});

t.test('a changed byte anywhere is refused', async (t) => {
  const userData = offsetOf(real, 'user_data') + 'user_data'.length + 3 + 100;
  refuses(t, () => verifyNitroAttestation(flip(real, userData), opts()), 'bad_attestation_signature', 'a user_data byte');
  const nonce = offsetOf(real, 'nonce') + 'nonce'.length + 3;
  refuses(t, () => verifyNitroAttestation(flip(real, nonce), opts()), 'bad_attestation_signature', 'a nonce byte');
  refuses(t, () => verifyNitroAttestation(flip(real, offsetOf(real, 'SHA384') + 5), opts()), 'bad_attestation', 'the digest name');
  refuses(t, () => verifyNitroAttestation(flip(real, real.length - 1), opts()), 'bad_attestation_signature', 'the last signature byte');
  refuses(t, () => verifyNitroAttestation(flip(real, real.length - 60), opts()), 'bad_attestation_signature', 'a byte of r');
  // The protected header a1 01 38 22 sits at offset 2, after the array and byte-string heads.
  t.same(real.subarray(2, 6), ES384_PROTECTED_HEADER);
  refuses(t, () => verifyNitroAttestation(flip(real, 5), opts()), 'bad_attestation', 'alg ES384 (-35) changed to -36');
  const [, unprotected, payload, sig] = parts(real);
  refuses(t, () => verifyNitroAttestation(rebuild([encode(new Map<number, unknown>([[1, -35], [4, new Uint8Array(1)]])), unprotected, payload, sig]), opts()), 'bad_attestation', 'a protected header with a kid');
  refuses(t, () => verifyNitroAttestation(rebuild([encode(new Map()), unprotected, payload, sig]), opts()), 'bad_attestation', 'an empty protected header');
  // The same map encoded non-minimally (-35 as a two-byte negative) is not the bytes that were signed.
  refuses(t, () => verifyNitroAttestation(rebuild([Uint8Array.of(0xa1, 0x01, 0x39, 0x00, 0x22), unprotected, payload, sig]), opts()), 'bad_attestation', 'another encoding of {1: -35}');
  // A payload re-encoded with the same values but other byte strings fails: the signature covers the received bytes.
  const reencoded = encode(new Map([...(decode(payload, { preferMap: true }) as Map<string, unknown>)].reverse().map(([k, v]) => [k, v instanceof Uint8Array ? plain(v) : Array.isArray(v) ? v.map(plain) : v instanceof Map ? new Map([...v].map(([i, b]) => [i, plain(b)])) : v])));
  t.same(decodeNitroPayload(reencoded).moduleId, 'i-0a22e5c5f24d22174-enc0191cceb4289903f', 'the reordered payload decodes');
  refuses(t, () => verifyNitroAttestation(rebuild([ES384_PROTECTED_HEADER, unprotected, reencoded, sig]), opts()), 'bad_attestation_signature', 'a reordered payload');
});

t.test('the Sig_structure is ["Signature1", protected, h\'\', payload] over the received bytes', async (t) => {
  const s = sigStructure(ES384_PROTECTED_HEADER, Uint8Array.of(0xaa, 0xbb));
  t.equal(toHex(s), '84' + '6a' + Buffer.from('Signature1').toString('hex') + '44a1013822' + '40' + '42aabb');
});

t.test('COSE structure and sizes', async (t) => {
  const [p, unprotected, payload, sig] = parts(real);
  const cases: [Uint8Array, string][] = [
    [new Uint8Array(0), 'empty'],
    [Uint8Array.of(0xff), 'not CBOR'],
    [new Uint8Array([...real, 0x00]), 'trailing bytes'],
    [rebuild([p, unprotected, payload]), 'a 3-array'],
    [rebuild([p, unprotected, payload, sig, sig]), 'a 5-array'],
    [encode(new Tag(19, [plain(p), unprotected, plain(payload), plain(sig)])), 'tag 19'],
    [encode(new Tag(18, new Tag(18, [plain(p), unprotected, plain(payload), plain(sig)]))), 'tag 18 twice'],
    [rebuild([p, unprotected, payload, sig.subarray(0, 95)]), 'a 95-byte signature'],
    [rebuild([p, unprotected, payload, new Uint8Array([...sig, 0])]), 'a 97-byte signature'],
    [rebuild([p, unprotected, payload, 'sig']), 'a text signature'],
    [rebuild([p, unprotected, 'payload', sig]), 'a text payload'],
    [rebuild([new Map([[1, -35]]), unprotected, payload, sig]), 'a protected header that is a map, not bytes'],
    [rebuild([p, [], payload, sig]), 'an unprotected header that is an array'],
    [rebuild([p, unprotected, encode([1, 2]), sig]), 'a payload that is not a map'],
    [rebuild([p, unprotected, Uint8Array.of(0xff), sig]), 'a payload that is not CBOR'],
    [new Uint8Array(MAX_DOCUMENT_BYTES + 1), 'too long'],
  ];
  for (const [doc, what] of cases) refuses(t, () => verifyNitroAttestation(doc, opts()), 'bad_attestation', what);
  refuses(t, () => verifyNitroAttestation('not bytes' as unknown as Uint8Array, opts()), 'bad_attestation', 'a string');
});

t.test('payload fields: types and sizes', async (t) => {
  const base = decode(parts(real)[2], { preferMap: true }) as Map<string, unknown>;
  const plainMap = (m: Map<string, unknown>) => new Map([...m].map(([k, v]) => [k, v instanceof Uint8Array ? plain(v) : Array.isArray(v) ? v.map((x) => (x instanceof Uint8Array ? plain(x) : x)) : v instanceof Map ? new Map([...v].map(([i, b]) => [i, b instanceof Uint8Array ? plain(b) : b])) : v]));
  const withField = (key: string, value: unknown) => encode(plainMap(new Map([...base, [key, value]])));
  const without = (key: string) => encode(plainMap(new Map([...base].filter(([k]) => k !== key))));
  const pcrs = (over: [unknown, unknown][]) => new Map<unknown, unknown>([...(base.get('pcrs') as Map<number, Uint8Array>), ...over]);
  const bad: [Uint8Array, string][] = [
    [without('module_id'), 'no module_id'],
    [withField('module_id', ''), 'an empty module_id'],
    [withField('module_id', 7), 'a numeric module_id'],
    [withField('digest', 'SHA256'), 'digest SHA256'],
    [without('digest'), 'no digest'],
    [without('timestamp'), 'no timestamp'],
    [withField('timestamp', 1725719859545.5), 'a float timestamp'],
    [withField('timestamp', '1725719859545'), 'a text timestamp'],
    [withField('timestamp', -1), 'a negative timestamp'],
    [withField('timestamp', 2n ** 64n - 1n), 'a timestamp past 2^53'],
    [without('pcrs'), 'no pcrs'],
    [withField('pcrs', new Map()), 'no PCR'],
    [withField('pcrs', [new Uint8Array(48)]), 'pcrs as an array'],
    [withField('pcrs', pcrs([[32, new Uint8Array(48)]])), 'PCR index 32'],
    [withField('pcrs', pcrs([[-1, new Uint8Array(48)]])), 'PCR index -1'],
    [withField('pcrs', pcrs([['0', new Uint8Array(48)]])), 'a text PCR index'],
    [withField('pcrs', pcrs([[5, new Uint8Array(47)]])), 'a 47-byte PCR'],
    [withField('pcrs', pcrs([[5, null]])), 'a null PCR'],
    [withField('pcrs', new Map([[3, new Uint8Array(48)]])), 'no PCR0..2'],
    [without('certificate'), 'no certificate'],
    [withField('certificate', new Uint8Array(0)), 'an empty certificate'],
    [withField('certificate', new Uint8Array(1025)), 'a 1025-byte certificate'],
    [without('cabundle'), 'no cabundle'],
    [withField('cabundle', null), 'a null cabundle'],
    [withField('cabundle', []), 'an empty cabundle'],
    [withField('cabundle', ['root']), 'a text certificate in the cabundle'],
    [withField('public_key', new Uint8Array(0)), 'an empty public_key'],
    [withField('public_key', new Uint8Array(1025)), 'a 1025-byte public_key'],
    [withField('user_data', new Uint8Array(1025)), 'a 1025-byte user_data'],
    [withField('nonce', new Uint8Array(1025)), 'a 1025-byte nonce'],
    [withField('nonce', 'abc'), 'a text nonce'],
    [withField('nonce', 1.5), 'a float'],
  ];
  for (const [payload, what] of bad) refuses(t, () => decodeNitroPayload(payload), 'bad_attestation', what);
  // Duplicate keys are refused by the decoder: the second module_id would otherwise win silently.
  const dup = Buffer.from(encode(plainMap(base))).toString('hex').replace(/^a9/, 'aa') + Buffer.from(encode(new Map([['module_id', 'x']]))).toString('hex').slice(2);
  refuses(t, () => decodeNitroPayload(fromHex(dup)), 'bad_attestation', 'a duplicate key');

  const sparse = decodeNitroPayload(encode(plainMap(new Map([...base].filter(([k]) => !['public_key', 'user_data'].includes(k)).map(([k, v]) => [k, k === 'nonce' ? null : v])))));
  t.equal(sparse.publicKey, undefined, 'an absent public_key');
  t.equal(sparse.userData, undefined, 'an absent user_data');
  t.equal(sparse.nonce, undefined, 'a null nonce');
  t.notOk('nonce' in sparse, 'no key for an absent field');
  t.same(decodeNitroPayload(withField('user_data', new Uint8Array(0))).userData, new Uint8Array(0), 'an empty user_data is kept');
  t.equal(decodeNitroPayload(withField('extra', 'ignored')).moduleId, 'i-0a22e5c5f24d22174-enc0191cceb4289903f', 'an unknown field is ignored');
  t.same([...decodeNitroPayload(withField('pcrs', new Map([[0, new Uint8Array(32)], [1, new Uint8Array(48)], [2, new Uint8Array(64)]]))).pcrs.keys()], [0, 1, 2], '32, 48 and 64-byte PCRs');
});

t.test('certificates outside their validity are refused', async (t) => {
  refuses(t, () => verifyNitroAttestation(real, opts({ at: new Date('2024-09-07T17:37:40Z') })), 'attestation_expired', 'after the leaf\'s notAfter');
  refuses(t, () => verifyNitroAttestation(real, opts({ at: new Date('2024-09-07T14:37:35Z') })), 'attestation_not_yet_valid', 'before the leaf\'s notBefore');
  refuses(t, () => verifyNitroAttestation(real, opts({ at: new Date('2024-09-08T13:06:37Z') })), 'attestation_expired', 'after the instance CA\'s notAfter');
  refuses(t, () => verifyNitroAttestation(real, opts({ at: new Date('2049-10-29T00:00:00Z') })), 'attestation_expired', 'after the root\'s notAfter');
  refuses(t, () => verifyNitroAttestation(real, opts({ at: new Date('2019-01-01T00:00:00Z') })), 'attestation_not_yet_valid', 'before the root\'s notBefore');
  t.throws(() => verifyNitroAttestation(real, opts({ at: new Date('2024-09-07T17:37:40Z') })), /expired at 2024-09-07T17:37:39.000Z/, 'the message names the expiry');
});

t.test('the document timestamp is checked against the verification time', async (t) => {
  refuses(t, () => verifyNitroAttestation(real, opts({ at: new Date(REAL_AT.getTime() - 1) })), 'attestation_not_yet_valid', 'dated after `at`');
  t.ok(verifyNitroAttestation(real, opts({ at: new Date(REAL_AT.getTime() + 5000), maxAgeMs: 5000 })), 'exactly maxAgeMs old');
  refuses(t, () => verifyNitroAttestation(real, opts({ at: new Date(REAL_AT.getTime() + 5001), maxAgeMs: 5000 })), 'stale_attestation', 'older than maxAgeMs');
  t.ok(verifyNitroAttestation(real, opts({ at: new Date(REAL_AT.getTime() + 3_600_000) })), 'no age limit unless asked');
});

t.test('a document under another root is refused', async (t) => {
  refuses(t, () => verifyNitroAttestation(real, opts({ roots: [selfMadeRoot()] })), 'untrusted_attestation_root', 'a self-made root');
  // A bundle whose first certificate is not the pinned root, even if the rest chains to it, is refused.
  const [p, unprotected, payload, sig] = parts(real);
  const map = decode(payload, { preferMap: true }) as Map<string, unknown>;
  const bundle = (map.get('cabundle') as Uint8Array[]).map(plain);
  const without0 = new Map([...map].map(([k, v]) => [k, k === 'cabundle' ? bundle.slice(1) : v instanceof Uint8Array ? plain(v) : v]));
  refuses(t, () => verifyNitroAttestation(rebuild([p, unprotected, encode(without0), sig]), opts()), 'untrusted_attestation_root', 'cabundle[0] is not the root');
});

t.test('PCR and nonce expectations', async (t) => {
  refuses(t, () => verifyNitroAttestation(real, opts({ expectedPcrs: new Map([[0, new Uint8Array(48)]]) })), 'attestation_pcr_mismatch', 'PCR0');
  refuses(t, () => verifyNitroAttestation(real, opts({ expectedPcrs: { 4: new Uint8Array(48).fill(0x45) } })), 'attestation_pcr_mismatch', 'PCR4');
  refuses(t, () => verifyNitroAttestation(real, opts({ expectedPcrs: { 20: new Uint8Array(48) } })), 'attestation_pcr_mismatch', 'an absent PCR');
  refuses(t, () => verifyNitroAttestation(real, opts({ expectedPcrs: { 3: new Uint8Array(32) } })), 'attestation_pcr_mismatch', 'a shorter expected value');
  refuses(t, () => verifyNitroAttestation(real, opts({ expectedNonce: new Uint8Array(1024).fill(2) })), 'attestation_nonce_mismatch', 'another nonce');
  refuses(t, () => verifyNitroAttestation(real, opts({ expectedNonce: new Uint8Array(1023).fill(1) })), 'attestation_nonce_mismatch', 'a prefix of the nonce');
  refuses(t, () => verifyNitroAttestation(real, opts({ expectedNonce: new Uint8Array(0) })), 'attestation_nonce_mismatch', 'an empty nonce');
});

t.test('options are checked before the document', async (t) => {
  refuses(t, () => verifyNitroAttestation(real, opts({ roots: [] })), 'bad_config', 'no root');
  refuses(t, () => verifyNitroAttestation(real, opts({ roots: ['not a PEM'] })), 'bad_config', 'a root with no PEM block');
  refuses(t, () => verifyNitroAttestation(real, opts({ roots: [new Uint8Array([0x30, 0x00])] })), 'bad_config', 'a DER root that does not parse');
  refuses(t, () => verifyNitroAttestation(real, opts({ at: new Date(NaN) })), 'bad_config', 'an invalid date');
  refuses(t, () => verifyNitroAttestation(real, opts({ at: '2024-09-07' as unknown as Date })), 'bad_config', 'a string date');
  refuses(t, () => verifyNitroAttestation(real, opts({ maxAgeMs: -1 })), 'bad_config', 'a negative maxAgeMs');
  const err = t.throws(() => verifyNitroAttestation(real, opts({ roots: [] }))) as unknown;
  t.ok(err instanceof AttestationError, 'an AttestationError');
  t.equal((err as AttestationError).kind, 'invalid');
});

/** A self-signed P-384 root that is neither AWS's nor marked as a development root. */
function selfMadeRoot(): string {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'secp384r1' });
  const subject = { commonName: 'aws.nitro-enclaves', organization: 'Amazon' };
  return toPem(issueCertificate({ subject, publicKey, signingKey: privateKey, notBefore: new Date('2019-01-01T00:00:00Z'), notAfter: new Date('2049-12-31T00:00:00Z'), ca: {} }));
}

t.test('the shipped AWS Nitro root is the published one', async (t) => {
  const der = new X509Certificate(AWS_NITRO_ROOT_G1_PEM).raw;
  t.equal(createHash('sha256').update(der).digest('hex'), '641a0321a3e244efe456463195d606317ed7cdcc3c1756e09893f3c68f79bb5b');
  t.equal(der.toString('hex'), new X509Certificate(awsRootPem).raw.toString('hex'), 'byte for byte the vector');
});
