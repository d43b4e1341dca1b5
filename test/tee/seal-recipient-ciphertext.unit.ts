// Opening KMS's CiphertextForRecipient (tee/seal/recipient-ciphertext.ts): CMS EnvelopedData (RFC 5652
// §6) to the enclave's RSA key with RSAES-OAEP-SHA-256 (RFC 8017, RFC 4055), content AES-256-CBC (RFC
// 3565), in BER as KMS streams it or in DER. Everything that decides how it is decrypted must be what the
// Recipient asked for; any other algorithm, shape or key is refused with unseal_failed.
import t, { type Test } from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { RsaEsOaepParams, id_RSAES_OAEP, id_sha1, id_mgf1, id_sha256, id_pSpecified } from '@peculiar/asn1-rsa';
import { id_signedData } from '@peculiar/asn1-cms';
import { OctetString } from '@peculiar/asn1-schema';
import { openRecipientCiphertext } from '../../tee/seal/recipient-ciphertext.ts';
import { SealError } from '../../tee/seal/seal-error.ts';
import { buildRecipientCiphertext, oaepSha256Algorithm, type RecipientCiphertextOptions } from './kms-double.ts';

const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const secret = new Uint8Array(32).map((_, i) => i + 1);

function refused(t: Test, cms: Uint8Array, pattern: RegExp, key = privateKey): void {
  try {
    openRecipientCiphertext(cms, key);
    t.fail('opened');
  } catch (err) {
    t.type(err, SealError);
    t.equal((err as SealError).code, 'unseal_failed');
    t.match((err as Error).message, pattern);
  }
}

const build = (o: RecipientCiphertextOptions = {}) => buildRecipientCiphertext(secret, publicKey, o);
const oaep = (params: RsaEsOaepParams) => new AlgorithmIdentifier({ algorithm: id_RSAES_OAEP, parameters: AsnConvert.serialize(params) });
const sha = (oid: string) => new AlgorithmIdentifier({ algorithm: oid, parameters: null });

t.test('BER with indefinite lengths and the content in pieces, and DER, open to the plaintext', async (t) => {
  const ber = build({ encoding: 'ber' });
  t.equal(ber[1], 0x80, 'the BER form has indefinite lengths');
  t.same(openRecipientCiphertext(ber, privateKey), secret);
  const der = build({ encoding: 'der' });
  t.equal(der[1], 0x82, 'the DER form has definite ones');
  t.same(openRecipientCiphertext(der, privateKey), secret);
  const plaintext = new Uint8Array(100).fill(9);
  t.same(openRecipientCiphertext(buildRecipientCiphertext(plaintext, publicKey), privateKey), plaintext, 'any length');
});

t.test('OAEP parameters are RSAES_OAEP_SHA_256 written either way RFC 4055 allows', async (t) => {
  const bare = new AlgorithmIdentifier({ algorithm: id_sha256 });
  const noNull = oaep(new RsaEsOaepParams({ hashAlgorithm: bare, maskGenAlgorithm: new AlgorithmIdentifier({ algorithm: id_mgf1, parameters: AsnConvert.serialize(bare) }) }));
  t.same(openRecipientCiphertext(build({ keyEncryptionAlgorithm: noNull }), privateKey), secret, 'hash parameters absent');
  t.same(openRecipientCiphertext(build({ keyEncryptionAlgorithm: oaepSha256Algorithm() }), privateKey), secret, 'hash parameters NULL');
  const emptyLabel = oaep(new RsaEsOaepParams({
    hashAlgorithm: sha(id_sha256), maskGenAlgorithm: new AlgorithmIdentifier({ algorithm: id_mgf1, parameters: AsnConvert.serialize(sha(id_sha256)) }),
    pSourceAlgorithm: new AlgorithmIdentifier({ algorithm: id_pSpecified, parameters: AsnConvert.serialize(new OctetString(0)) }),
  }));
  t.same(openRecipientCiphertext(build({ keyEncryptionAlgorithm: emptyLabel }), privateKey), secret, 'the empty label spelled out');
});

t.test('another key wrapping than RSAES-OAEP with SHA-256 is refused before any decryption', async (t) => {
  refused(t, build({ keyEncryptionAlgorithm: new AlgorithmIdentifier({ algorithm: id_RSAES_OAEP }) }), /without parameters means SHA-1/);
  refused(t, build({ keyEncryptionAlgorithm: oaep(new RsaEsOaepParams({ hashAlgorithm: sha(id_sha1) })) }), /hash is 1\.3\.14\.3\.2\.26/);
  refused(t, build({ keyEncryptionAlgorithm: oaep(new RsaEsOaepParams({ hashAlgorithm: sha(id_sha256) })) }), /MGF1 hash is not SHA-256/);
  const labelled = oaep(new RsaEsOaepParams({
    hashAlgorithm: sha(id_sha256), maskGenAlgorithm: new AlgorithmIdentifier({ algorithm: id_mgf1, parameters: AsnConvert.serialize(sha(id_sha256)) }),
    pSourceAlgorithm: new AlgorithmIdentifier({ algorithm: id_pSpecified, parameters: AsnConvert.serialize(new OctetString(new Uint8Array([1, 2, 3]))) }),
  }));
  refused(t, build({ keyEncryptionAlgorithm: labelled }), /label is not empty/);
  refused(t, build({ keyEncryptionAlgorithm: new AlgorithmIdentifier({ algorithm: '1.2.840.113549.1.1.1', parameters: null }) }), /not RSAES-OAEP/);
});

t.test('another shape or content cipher is refused', async (t) => {
  refused(t, build({ outerContentType: id_signedData }), /not EnvelopedData/);
  refused(t, build({ contentType: id_signedData }), /not data/);
  refused(t, build({ contentEncryptionOid: '2.16.840.1.101.3.4.1.2' }), /not AES-256-CBC/);
  refused(t, build({ recipients: 2 }), /2 recipients, expected exactly one/);
  refused(t, new Uint8Array(0), /0 bytes/);
  refused(t, new Uint8Array(9000), /9000 bytes/);
  refused(t, new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x00]), /does not parse/);
});

t.test('only the private half of the attested key opens it', async (t) => {
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  refused(t, build(), /does not unwrap with this enclave key/, other);
});
