// The DEV-ONLY attestation authority: its documents have the shape of AWS's and verify through the same
// verifier, but only with `allowDevRoot: true`; they never verify against the AWS root, and an AWS document
// never verifies against a dev root.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { decode, Tag } from 'cbor2';
import { verifyNitroAttestation } from '../../tee/attestation/nitro.ts';
import { createDevAttestationAuthority, DEV_LEAF_VALIDITY_MS } from '../../tee/attestation/dev-provider.ts';
import { DEV_ROOT_COMMON_NAME, isDevRoot } from '../../tee/attestation/dev-root.ts';
import { certificatesFromPem, parseCertificate } from '../../tee/attestation/certificate.ts';
import { ES384_PROTECTED_HEADER } from '../../tee/attestation/cose-sign1.ts';

const vectors = new URL('../../../shared/vectors/tee/nitro/', import.meta.url);
const awsRootPem = readFileSync(new URL('aws-nitro-enclaves-root-G1.pem', vectors), 'utf8');
const real = new Uint8Array(Buffer.from(readFileSync(new URL('blocky-nitrite-nitro_attestation.b64', vectors), 'utf8').trim(), 'base64'));
const REAL_AT = new Date('2024-09-07T14:37:39.545Z');

const dev = createDevAttestationAuthority();
const AT = new Date('2026-03-01T12:00:00.250Z');
const pcr = (fill: number) => new Uint8Array(48).fill(fill);
const inputs = {
  at: AT,
  moduleId: 'i-0123456789abcdef0-enc0123456789abcdef',
  pcrs: new Map([[0, pcr(0xa0)], [1, pcr(0xa1)], [2, pcr(0xa2)], [4, pcr(0xa4)]]),
  publicKey: new Uint8Array(97).fill(4),
  userData: new Uint8Array(1024).fill(7),
  nonce: new Uint8Array(32).fill(9),
};
const doc = dev.attest(inputs);
const devOpts = { roots: [dev.rootPem], at: AT, allowDevRoot: true };

t.test('a dev document round-trips through the verifier with allowDevRoot', async (t) => {
  const v = verifyNitroAttestation(doc, { ...devOpts, expectedPcrs: inputs.pcrs, expectedNonce: inputs.nonce, maxAgeMs: 0 });
  t.equal(v.moduleId, inputs.moduleId);
  t.equal(v.digest, 'SHA384');
  t.equal(v.timestamp, AT.getTime());
  t.same([...v.pcrs.keys()], [...Array(16).keys()], 'PCRs 0..15');
  for (const [i, value] of inputs.pcrs) t.same(v.pcrs.get(i), value, `PCR${i}`);
  t.same(v.pcrs.get(3), new Uint8Array(48), 'PCRs not given are zero');
  t.same(v.publicKey, inputs.publicKey);
  t.same(v.userData, inputs.userData);
  t.same(v.nonce, inputs.nonce);
  t.equal(v.cabundle.length, 2, 'root and intermediate');
  t.same(v.cabundle[0], dev.rootDer);
  t.ok(verifyNitroAttestation(doc, { ...devOpts, roots: [dev.rootDer] }), 'the root as DER');
  t.ok(verifyNitroAttestation(doc, { ...devOpts, at: new Date(AT.getTime() + DEV_LEAF_VALIDITY_MS - 250) }), 'until the leaf expires');
});

t.test('a dev document has the shape of an AWS document', async (t) => {
  const [awsItems, devItems] = [real, doc].map((d) => decode(d, { preferMap: true }) as unknown[]);
  t.notOk(decode(doc) instanceof Tag, 'untagged');
  t.equal(devItems!.length, 4, 'a 4-array');
  t.same(devItems![0], ES384_PROTECTED_HEADER, 'protected {1: -35}');
  t.same(devItems![0], awsItems![0], 'the same protected header bytes as AWS');
  t.same(devItems![1], new Map(), 'an empty unprotected header');
  t.equal((devItems![3] as Uint8Array).length, 96, 'a 96-byte signature');
  const keys = (items: unknown[]) => [...(decode(items[2] as Uint8Array, { preferMap: true }) as Map<string, unknown>).keys()];
  t.same(keys(devItems!), keys(awsItems!), 'the same payload fields in the same order');
  const bare = createDevAttestationAuthority().attest({ at: AT });
  const fields = decode((decode(bare, { preferMap: true }) as unknown[])[2] as Uint8Array, { preferMap: true }) as Map<string, unknown>;
  t.equal(fields.get('public_key'), null, 'absent optional fields are null, as the NSM sends them');
  t.equal(fields.get('nonce'), null);
});

t.test('the dev root says what it is, and is recognized', async (t) => {
  const root = parseCertificate(certificatesFromPem(dev.rootPem)[0]!);
  t.match(root.x509.subject, /DEV-ONLY/);
  t.match(root.x509.subject, /not for production/);
  t.equal(root.label, DEV_ROOT_COMMON_NAME);
  t.equal(DEV_ROOT_COMMON_NAME, 'custody DEV-ONLY Nitro attestation root — not for production');
  t.ok(isDevRoot(dev.rootPem), 'PEM');
  t.ok(isDevRoot(dev.rootDer), 'DER');
  t.ok(isDevRoot(awsRootPem + dev.rootPem), 'a bundle holding a dev root');
  t.notOk(isDevRoot(awsRootPem), 'the AWS root is not a dev root');
  t.throws(() => isDevRoot('no certificate here'), { code: 'bad_config' });
});

t.test('without allowDevRoot a dev root is refused, whatever the document', async (t) => {
  t.throws(() => verifyNitroAttestation(doc, { roots: [dev.rootPem], at: AT }), { code: 'dev_attestation_root' }, 'dev document, dev root');
  t.throws(() => verifyNitroAttestation(doc, { roots: [dev.rootPem], at: AT, allowDevRoot: false }), { code: 'dev_attestation_root' }, 'allowDevRoot false');
  t.throws(() => verifyNitroAttestation(real, { roots: [awsRootPem, dev.rootPem], at: REAL_AT }), { code: 'dev_attestation_root' }, 'a dev root beside the AWS root, even for an AWS document');
  t.throws(() => verifyNitroAttestation(doc, { roots: [awsRootPem + dev.rootPem], at: AT }), { code: 'dev_attestation_root' }, 'a dev root inside a PEM bundle');
});

t.test('dev and AWS documents never cross', async (t) => {
  t.throws(() => verifyNitroAttestation(doc, { roots: [awsRootPem], at: AT }), { code: 'untrusted_attestation_root' }, 'a dev document against the AWS root');
  t.throws(() => verifyNitroAttestation(doc, { roots: [awsRootPem], at: AT, allowDevRoot: true }), { code: 'untrusted_attestation_root' }, 'allowDevRoot does not help without the dev root');
  t.throws(() => verifyNitroAttestation(real, { roots: [dev.rootPem], at: REAL_AT, allowDevRoot: true }), { code: 'untrusted_attestation_root' }, 'an AWS document against the dev root');
  const other = createDevAttestationAuthority();
  t.throws(() => verifyNitroAttestation(doc, { roots: [other.rootPem], at: AT, allowDevRoot: true }), { code: 'untrusted_attestation_root' }, 'another dev authority');
  t.ok(verifyNitroAttestation(real, { roots: [awsRootPem, dev.rootPem], at: REAL_AT, allowDevRoot: true }), 'an AWS document still verifies where dev roots are allowed');
});

t.test('dev documents meet the same checks as real ones', async (t) => {
  t.throws(() => verifyNitroAttestation(createDevAttestationAuthority().attest({ at: AT }), { roots: [], at: AT }), { code: 'bad_config' });
  const zero = dev.attest({ at: AT });
  t.throws(() => verifyNitroAttestation(zero, devOpts), { code: 'debug_enclave' }, 'no PCRs given: a debug enclave');
  t.ok(verifyNitroAttestation(zero, { ...devOpts, allowDebug: true }));
  t.throws(() => verifyNitroAttestation(doc, { ...devOpts, at: new Date(AT.getTime() + DEV_LEAF_VALIDITY_MS + 1000) }), { code: 'attestation_expired' }, 'after the leaf');
  t.throws(() => verifyNitroAttestation(doc, { ...devOpts, at: new Date(AT.getTime() - 1000) }), { code: 'attestation_not_yet_valid' }, 'before the leaf');
  t.throws(() => verifyNitroAttestation(doc, { ...devOpts, expectedNonce: new Uint8Array(32) }), { code: 'attestation_nonce_mismatch' });
  t.throws(() => verifyNitroAttestation(zero, { ...devOpts, allowDebug: true, expectedNonce: new Uint8Array(32) }), { code: 'attestation_nonce_mismatch' }, 'no nonce at all');
  t.throws(() => verifyNitroAttestation(doc, { ...devOpts, expectedPcrs: { 4: pcr(0xa5) } }), { code: 'attestation_pcr_mismatch' });
  const copy = new Uint8Array(doc);
  copy[copy.length - 1]! ^= 1;
  t.throws(() => verifyNitroAttestation(copy, devOpts), { code: 'bad_attestation_signature' });
});

t.test('the authority refuses to make a malformed document', async (t) => {
  t.throws(() => dev.attest({ at: AT, userData: new Uint8Array(1025) }), { code: 'bad_attestation' }, 'user_data too long');
  t.throws(() => dev.attest({ at: AT, publicKey: new Uint8Array(0) }), { code: 'bad_attestation' }, 'an empty public key');
  t.throws(() => dev.attest({ at: AT, pcrs: { 40: pcr(1) } }), { code: 'bad_attestation' }, 'PCR index 40');
  t.throws(() => dev.attest({ at: AT, moduleId: '' }), { code: 'bad_attestation' }, 'an empty module id');
  t.throws(() => dev.attest({ at: new Date(NaN) }), RangeError, 'an invalid time');
});
