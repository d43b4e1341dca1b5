// The certificate chain of an attestation document, rule by rule: documents signed under hand-built
// chains (a pinned test root, CAs, a leaf) verify when every rule holds and are refused, with
// bad_attestation_chain or bad_attestation_signature, when one is broken.
import t from 'tap';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { KeyUsageFlags } from '@peculiar/asn1-x509';
import { id_ecdsaWithSHA256 } from '@peculiar/asn1-ecc';
import { verifyNitroAttestation } from '../../tee/attestation/nitro.ts';
import { issueCertificate, toPem, type CertificateSubject, type IssueCertificateParameters } from '../../tee/attestation/dev-certificate.ts';
import { encodeNitroPayload, signNitroDocument } from '../../tee/attestation/dev-provider.ts';

const AT = new Date('2026-03-01T12:00:00Z');
const FROM = new Date('2026-01-01T00:00:00Z');
const TO = new Date('2027-01-01T00:00:00Z');
const p384 = () => generateKeyPairSync('ec', { namedCurve: 'secp384r1' });

interface Party { readonly subject: CertificateSubject; readonly keys: ReturnType<typeof p384> }
const party = (commonName: string): Party => ({ subject: { commonName, organization: 'chain test' }, keys: p384() });

const root = party('test root');
const rootDer = issueCertificate({ subject: root.subject, publicKey: root.keys.publicKey, signingKey: root.keys.privateKey, notBefore: FROM, notAfter: TO, ca: {} });
const opts = { roots: [toPem(rootDer)], at: AT, allowDebug: true };

/** A certificate for `who`, issued by `by`, with overrides. */
const cert = (who: Party, by: Party, over: Partial<IssueCertificateParameters> = {}) =>
  issueCertificate({ subject: who.subject, publicKey: who.keys.publicKey, issuer: by.subject, signingKey: by.keys.privateKey, notBefore: FROM, notAfter: TO, ...over });

/** A document signed by `leafKey`, carrying `leaf` and the bundle [root, ...cas]. */
function document(leaf: Uint8Array, cas: Uint8Array[], leafKey: KeyObject, bundleRoot = rootDer): Uint8Array {
  const payload = encodeNitroPayload({
    moduleId: 'i-chain-test', digest: 'SHA384', timestamp: AT.getTime(),
    pcrs: new Map([[0, new Uint8Array(48)], [1, new Uint8Array(48)], [2, new Uint8Array(48)]]),
    certificate: leaf, cabundle: [bundleRoot, ...cas],
  });
  return signNitroDocument(payload, leafKey);
}

const ca1 = party('test CA 1');
const ca2 = party('test CA 2');
const leaf = party('test leaf');
const ca1Der = cert(ca1, root, { ca: { pathLength: 1 } });
const ca2Der = cert(ca2, ca1, { ca: { pathLength: 0 } });
const leafDer = cert(leaf, ca2);

t.test('a well-formed chain of root, two CAs and a leaf verifies', async (t) => {
  t.equal(verifyNitroAttestation(document(leafDer, [ca1Der, ca2Der], leaf.keys.privateKey), opts).moduleId, 'i-chain-test');
  t.ok(verifyNitroAttestation(document(cert(leaf, root), [], leaf.keys.privateKey), opts), 'a leaf issued by the root itself');
});

t.test('each broken rule is refused', async (t) => {
  const stranger = party('test CA 2');
  const cases: [Uint8Array, string, string][] = [
    [document(leafDer, [ca1Der, ca2Der], ca2.keys.privateKey), 'bad_attestation_signature', 'the document signed by another key than the leaf\'s'],
    [document(cert(leaf, stranger), [ca1Der, ca2Der], leaf.keys.privateKey), 'bad_attestation_chain', 'a leaf signed by a key of the same name'],
    [document(leafDer, [ca2Der], leaf.keys.privateKey), 'bad_attestation_chain', 'a CA missing from the bundle'],
    [document(leafDer, [ca2Der, ca1Der], leaf.keys.privateKey), 'bad_attestation_chain', 'the CAs out of order'],
    [document(leafDer, [ca1Der, cert(ca2, ca1)], leaf.keys.privateKey), 'bad_attestation_chain', 'an intermediate that is not a CA'],
    [document(leafDer, [cert(ca1, root, { ca: { pathLength: 0 } }), ca2Der], leaf.keys.privateKey), 'bad_attestation_chain', 'a path length exceeded'],
    [document(leafDer, [ca1Der, cert(ca2, ca1, { ca: {}, keyUsage: KeyUsageFlags.digitalSignature })], leaf.keys.privateKey), 'bad_attestation_chain', 'a CA without keyCertSign'],
    [document(cert(leaf, ca2, { ca: {} }), [ca1Der, ca2Der], leaf.keys.privateKey), 'bad_attestation_chain', 'a leaf that is a CA'],
    [document(cert(leaf, ca2, { keyUsage: KeyUsageFlags.keyEncipherment }), [ca1Der, ca2Der], leaf.keys.privateKey), 'bad_attestation_chain', 'a leaf not allowed to sign'],
    [document(cert(leaf, ca2, { signatureAlgorithm: id_ecdsaWithSHA256 }), [ca1Der, ca2Der], leaf.keys.privateKey), 'bad_attestation_chain', 'a leaf signed with ECDSA-SHA256'],
    [document(leafDer, [ca1Der, ca2Der], leaf.keys.privateKey, cert(root, root, { ca: {}, notBefore: FROM })), 'untrusted_attestation_root', 'a bundle root re-issued under the same name and key'],
  ];
  for (const [doc, code, what] of cases) t.throws(() => verifyNitroAttestation(doc, opts), { code }, what);

  const p256 = { subject: { commonName: 'test leaf on P-256' }, keys: generateKeyPairSync('ec', { namedCurve: 'prime256v1' }) };
  t.throws(() => verifyNitroAttestation(document(cert(p256, ca2), [ca1Der, ca2Der], leaf.keys.privateKey), opts), { code: 'bad_attestation_chain' }, 'a leaf on P-256');
  const ed = { subject: { commonName: 'test leaf on Ed25519' }, keys: generateKeyPairSync('ed25519') };
  t.throws(() => verifyNitroAttestation(document(cert(ed as unknown as Party, ca2), [ca1Der, ca2Der], leaf.keys.privateKey), opts), { code: 'bad_attestation_chain' }, 'a leaf with an Ed25519 key');
});

t.test('validity is checked on every certificate of the chain', async (t) => {
  const early = new Date('2026-02-01T00:00:00Z');
  t.throws(() => verifyNitroAttestation(document(leafDer, [cert(ca1, root, { ca: { pathLength: 1 }, notAfter: early }), ca2Der], leaf.keys.privateKey), opts), { code: 'attestation_expired' }, 'an expired intermediate');
  t.throws(() => verifyNitroAttestation(document(leafDer, [ca1Der, cert(ca2, ca1, { ca: { pathLength: 0 }, notBefore: new Date('2026-04-01T00:00:00Z') })], leaf.keys.privateKey), opts), { code: 'attestation_not_yet_valid' }, 'an intermediate not yet valid');
});
