// Opening KMS's CiphertextForRecipient: a CMS (RFC 5652) ContentInfo holding EnvelopedData (§6.1) with
// one KeyTransRecipientInfo (§6.2.1) whose content-encryption key is wrapped to the enclave's RSA key
// with RSAES-OAEP (RFC 8017 §7.1; parameters RFC 4055 §4.1: SHA-256, MGF1 with SHA-256, empty label),
// and whose content, the plaintext KMS answers, is AES-256-CBC encrypted (RFC 3565, IV as parameter).
// KMS sends it in BER, with indefinite lengths and the encrypted content in pieces, so it is parsed as
// BER (@peculiar/asn1-cms). Every field that decides how the bytes are decrypted is checked against
// what was asked for; anything else is refused rather than guessed.
import { constants, createDecipheriv, privateDecrypt, type KeyObject } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { ContentInfo, EnvelopedData, id_data, id_envelopedData } from '@peculiar/asn1-cms';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { RsaEsOaepParams, id_RSAES_OAEP, id_mgf1, id_pSpecified, id_sha256, pSpecifiedEmpty } from '@peculiar/asn1-rsa';
import { equalBytes } from '@noble/curves/utils.js';
import { SealError } from './seal-error.ts';

/** id-aes256-CBC (NIST CSOR, RFC 3565 §4.1). */
export const ID_AES256_CBC = '2.16.840.1.101.3.4.1.42';
const AES_BLOCK = 16;
const AES256_KEY_BYTES = 32;
/** The largest CiphertextForRecipient read: KMS's limit is 6144 bytes. */
export const MAX_RECIPIENT_CIPHERTEXT_BYTES = 8192;

const bytesOf = (o: OctetString) => new Uint8Array(o.buffer, o.byteOffset, o.byteLength);
const refuse = (message: string, cause?: unknown) => new SealError('unseal_failed', `CiphertextForRecipient: ${message}`, cause === undefined ? {} : { cause });

function parse<T>(bytes: ArrayBuffer | ArrayBufferView, type: new () => T, what: string): T {
  try {
    return AsnConvert.parse(bytes, type);
  } catch (err) {
    throw refuse(`${what} does not parse`, err);
  }
}

/** An AlgorithmIdentifier of a hash: absent parameters or NULL, as RFC 4055 §2.1 allows both. */
function isSha256(a: AlgorithmIdentifier): boolean {
  if (a.algorithm !== id_sha256) return false;
  const p = a.parameters;
  return p === undefined || p === null || (p.byteLength === 2 && new Uint8Array(p)[0] === 0x05 && new Uint8Array(p)[1] === 0x00);
}

/** RSAES-OAEP with SHA-256, MGF1-SHA-256 and the empty label: what RSAES_OAEP_SHA_256 means. */
function checkOaepSha256(alg: AlgorithmIdentifier): void {
  if (alg.algorithm !== id_RSAES_OAEP) throw refuse(`the key is wrapped with ${alg.algorithm}, not RSAES-OAEP`);
  // Absent parameters mean SHA-1 throughout (RFC 8017 A.2.1), which was not asked for.
  if (!alg.parameters) throw refuse('RSAES-OAEP without parameters means SHA-1, not SHA-256');
  const p = parse(alg.parameters, RsaEsOaepParams, 'RSAES-OAEP-params');
  if (!isSha256(p.hashAlgorithm)) throw refuse(`RSAES-OAEP hash is ${p.hashAlgorithm.algorithm}, not SHA-256`);
  if (p.maskGenAlgorithm.algorithm !== id_mgf1 || !p.maskGenAlgorithm.parameters) throw refuse('RSAES-OAEP mask generation is not MGF1');
  if (!isSha256(parse(p.maskGenAlgorithm.parameters, AlgorithmIdentifier, 'MGF1 hash'))) throw refuse('RSAES-OAEP MGF1 hash is not SHA-256');
  if (p.pSourceAlgorithm.algorithm !== id_pSpecified) throw refuse('RSAES-OAEP label source is not pSpecified');
  // An absent pSourceAlgorithm reads as the library's stand-in for the default, whose parameter is not
  // the empty string; it means the empty label. (A label of exactly those bytes would not unwrap.)
  const label = p.pSourceAlgorithm.parameters;
  const isDefault = label && pSpecifiedEmpty.parameters && equalBytes(new Uint8Array(label), new Uint8Array(pSpecifiedEmpty.parameters));
  if (label && !isDefault && parse(label, OctetString, 'RSAES-OAEP label').byteLength !== 0) throw refuse('RSAES-OAEP label is not empty');
}

/**
 * The plaintext of a CiphertextForRecipient, opened with the private half of the RSA key whose public
 * half the attestation document carried. Throws SealError `unseal_failed` for anything malformed,
 * unexpected or that does not decrypt. The content-encryption key is zeroed after use.
 */
export function openRecipientCiphertext(cms: Uint8Array, privateKey: KeyObject): Uint8Array {
  if (cms.length === 0 || cms.length > MAX_RECIPIENT_CIPHERTEXT_BYTES) throw refuse(`${cms.length} bytes, expected 1 to ${MAX_RECIPIENT_CIPHERTEXT_BYTES}`);
  const info = parse(cms, ContentInfo, 'ContentInfo');
  if (info.contentType !== id_envelopedData) throw refuse(`content type ${info.contentType} is not EnvelopedData`);
  const env = parse(info.content, EnvelopedData, 'EnvelopedData');
  if (env.version !== 0 && env.version !== 2) throw refuse(`EnvelopedData version ${env.version} is not 0 or 2`);
  if (env.recipientInfos.length !== 1) throw refuse(`${env.recipientInfos.length} recipients, expected exactly one`);
  const ktri = env.recipientInfos[0]!.ktri;
  if (!ktri) throw refuse('the recipient is not a key transport recipient');
  checkOaepSha256(ktri.keyEncryptionAlgorithm);

  const eci = env.encryptedContentInfo;
  if (eci.contentType !== id_data) throw refuse(`encrypted content type ${eci.contentType} is not data`);
  const cea = eci.contentEncryptionAlgorithm;
  if (cea.algorithm !== ID_AES256_CBC) throw refuse(`content is encrypted with ${cea.algorithm}, not AES-256-CBC`);
  if (!cea.parameters) throw refuse('AES-256-CBC without an IV');
  const iv = bytesOf(parse(cea.parameters, OctetString, 'AES-256-CBC IV'));
  if (iv.length !== AES_BLOCK) throw refuse(`the IV has ${iv.length} bytes, not ${AES_BLOCK}`);
  const content = eci.encryptedContent;
  // BER lets the content come whole or in pieces (a constructed OCTET STRING); both read the same.
  const pieces = content?.value ? [content.value] : content?.constructedValue ?? [];
  const ciphertext = Buffer.concat(pieces.map(bytesOf));
  if (ciphertext.length === 0 || ciphertext.length % AES_BLOCK !== 0) throw refuse(`the encrypted content has ${ciphertext.length} bytes, not a positive multiple of ${AES_BLOCK}`);

  let cek: Buffer;
  try {
    cek = privateDecrypt({ key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, bytesOf(ktri.encryptedKey));
  } catch (err) {
    throw refuse('the wrapped content-encryption key does not unwrap with this enclave key', err);
  }
  try {
    if (cek.length !== AES256_KEY_BYTES) throw refuse(`the content-encryption key has ${cek.length} bytes, not ${AES256_KEY_BYTES}`);
    const decipher = createDecipheriv('aes-256-cbc', cek, iv);
    const head = decipher.update(ciphertext);
    let tail: Buffer;
    try {
      tail = decipher.final();
    } catch (err) {
      head.fill(0);
      throw refuse('the content does not decrypt (bad padding)', err);
    }
    const plain = new Uint8Array(head.length + tail.length);
    plain.set(head);
    plain.set(tail, head.length);
    head.fill(0);
    tail.fill(0);
    return plain;
  } finally {
    cek.fill(0);
  }
}
