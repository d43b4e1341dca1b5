// A double of AWS KMS for the tee sealer's tests (docs/tee.md "Sealing the storage key"): an HTTP server on
// loopback that speaks KMS's JSON 1.1 protocol (POST /, X-Amz-Target: TrentService.<Operation>,
// Content-Type: application/x-amz-json-1.1, base64 binary fields, errors as {"__type", "message"}), and
// does what the node relies on KMS to do:
//
// - it checks each request's SigV4 signature against the credentials it was given, computed here from
//   the specification (canonical request, string to sign, derived signing key), not with the signer the
//   client uses, and refuses an unknown access key, a wrong signature, a missing session token or a
//   request dated more than five minutes off its clock;
// - it holds one symmetric KMS key and implements GenerateDataKey and Decrypt; its CiphertextBlob is its
//   own opaque format (AES-256-GCM under the KMS key, the encryption context bound as associated data);
// - a request with a Recipient is judged by a key policy: the attestation document must verify with the
//   project's verifier (tee/attestation/nitro.ts) against the roots the double pins (a DEV-ONLY root
//   allowed), be at most five minutes old and not from a debug enclave, carry an RSA-2048 public key, and
//   have each measurement the policy names (kms:RecipientAttestation:ImageSha384 = PCR0,
//   kms:RecipientAttestation:PCR<n>) among its allowed values; a request without one is refused unless
//   the policy allows plaintext answers;
// - it answers a recipient with CiphertextForRecipient: CMS EnvelopedData built with @peculiar/asn1-cms,
//   the content-encryption key wrapped with RSAES-OAEP-SHA-256 to the document's key and the plaintext
//   AES-256-CBC encrypted, sent in BER with indefinite lengths and the content in pieces (as the AWS Nitro
//   Enclaves SDK's parser expects KMS's answer), or in DER when asked.
//
// The real service was not reachable from the test environment; what KMS does beyond its documentation
// (exact error texts, the exact encoding of its CMS) is this double's assumption.
import { createCipheriv, createDecipheriv, createHash, createHmac, createPublicKey, publicEncrypt, randomBytes, randomUUID, timingSafeEqual, constants, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import {
  CMSVersion, ContentEncryptionAlgorithmIdentifier, ContentInfo, EncryptedContent, EncryptedContentInfo, EnvelopedData, KeyEncryptionAlgorithmIdentifier,
  KeyTransRecipientInfo, RecipientIdentifier, RecipientInfo, RecipientInfos, id_data, id_envelopedData,
} from '@peculiar/asn1-cms';
import { AlgorithmIdentifier, SubjectKeyIdentifier } from '@peculiar/asn1-x509';
import { RsaEsOaepParams, id_RSAES_OAEP, id_mgf1, id_sha256 } from '@peculiar/asn1-rsa';
import { verifyNitroAttestation } from '../../tee/attestation/nitro.ts';
import { AttestationError } from '../../tee/attestation/attestation-error.ts';
import { ID_AES256_CBC } from '../../tee/seal/recipient-ciphertext.ts';
import type { AwsCredentials } from '../../common/aws-sigv4.ts';

export interface KmsDoubleKeyPolicy {
  /**
   * The Allow statement's conditions on the attestation document, by condition key without its
   * `kms:RecipientAttestation:` prefix (`ImageSha384` is PCR0, `PCR<n>` is PCR n): each named one must be
   * one of its values (StringEqualsIgnoreCase, lower-case hex).
   */
  readonly recipientAttestation: Readonly<Record<string, readonly string[]>>;
  /** kms:EncryptionContext:<key> conditions: the request's context must hold each pair. */
  readonly encryptionContext?: Readonly<Record<string, string>>;
  /** Answer requests that carry no attestation with a plaintext. Default false: they are refused. */
  readonly allowWithoutAttestation?: boolean;
}

export interface KmsDoubleOptions {
  readonly credentials: AwsCredentials;
  readonly region?: string;
  /** Roots attestation documents must chain to, PEM. */
  readonly attestationRoots: readonly string[];
  readonly policy: KmsDoubleKeyPolicy;
  /** Encoding of CiphertextForRecipient; default `ber`. */
  readonly cmsEncoding?: 'ber' | 'der';
  readonly clock?: () => number;
}

export interface KmsDoubleCall {
  readonly target: string;
  readonly status: number;
  readonly errorType?: string;
  /** The RSA public key a recipient request's document carried, SPKI hex. */
  readonly recipientKey?: string;
}

export interface KmsDouble {
  readonly endpoint: string;
  readonly region: string;
  readonly keyId: string;
  readonly keyArn: string;
  readonly calls: KmsDoubleCall[];
  /** The key's state: a disabled key refuses every request (DisabledException). */
  enabled: boolean;
  /** Changes the next CiphertextForRecipient before it is sent (a tampered answer). */
  tamperNextRecipientCiphertext?: ((cms: Uint8Array) => Uint8Array) | undefined;
  close(): Promise<void>;
}

const ACCOUNT = '111122223333';
const MAX_BODY = 64 * 1024;
const MAX_SKEW_MS = 5 * 60 * 1000;
const ATTESTATION_MAX_AGE_MS = 5 * 60 * 1000;
const BLOB_VERSION = 1;

class KmsFault extends Error {
  constructor(readonly type: string, message: string, readonly status = 400) {
    super(message);
  }
}

const sha256hex = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');
const hmac = (key: Uint8Array | string, data: string) => createHmac('sha256', key).update(data).digest();
const rfc3986 = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

// ── SigV4, from the specification (IAM User Guide, "Create a signed AWS API request") ──────────────────

/** Every value of a header as received, joined with commas, trimmed, inner runs of spaces collapsed. */
function headerValue(req: IncomingMessage, name: string): string | undefined {
  const values: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === name) values.push(req.rawHeaders[i + 1]!.trim().replace(/\s+/g, ' '));
  return values.length ? values.join(',') : undefined;
}

function canonicalQuery(search: string): string {
  const pairs = new URLSearchParams(search);
  return [...pairs].map(([k, v]) => [rfc3986(k), rfc3986(v)]).sort(([a, x], [b, y]) => (a! < b! ? -1 : a! > b! ? 1 : x! < y! ? -1 : x! > y! ? 1 : 0)).map(([k, v]) => `${k}=${v}`).join('&');
}

/** Canonical URI of a non-S3 service: each segment URI-encoded twice. */
function canonicalPath(path: string): string {
  return path.split('/').map((s) => rfc3986(rfc3986(decodeURIComponent(s)))).join('/') || '/';
}

function checkSignature(req: IncomingMessage, body: Buffer, o: { credentials: AwsCredentials; region: string; now: number }): void {
  const auth = headerValue(req, 'authorization');
  if (!auth) throw new KmsFault('MissingAuthenticationTokenException', 'Missing Authentication Token');
  const m = /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) throw new KmsFault('IncompleteSignatureException', 'Authorization header requires Credential, SignedHeaders and Signature');
  const [, accessKeyId, day, region, service, signedList, signature] = m as unknown as [string, string, string, string, string, string, string];
  if (accessKeyId !== o.credentials.accessKeyId) throw new KmsFault('UnrecognizedClientException', 'The security token included in the request is invalid.');
  if (o.credentials.sessionToken !== undefined && headerValue(req, 'x-amz-security-token') !== o.credentials.sessionToken) {
    throw new KmsFault('UnrecognizedClientException', 'The security token included in the request is invalid.');
  }
  if (region !== o.region || service !== 'kms') throw new KmsFault('InvalidSignatureException', `Credential should be scoped to region ${o.region} and service kms`);
  const amzDate = headerValue(req, 'x-amz-date') ?? '';
  const dm = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!dm || amzDate.slice(0, 8) !== day) throw new KmsFault('IncompleteSignatureException', 'X-Amz-Date is missing or does not match the credential scope');
  const at = Date.UTC(+dm[1]!, +dm[2]! - 1, +dm[3]!, +dm[4]!, +dm[5]!, +dm[6]!);
  if (Math.abs(at - o.now) > MAX_SKEW_MS) throw new KmsFault('InvalidSignatureException', 'Signature expired or not yet current');
  const signed = signedList.split(';');
  const sorted = [...signed].sort();
  if (signed.join(';') !== sorted.join(';') || !signed.includes('host') || !signed.includes('x-amz-date')) throw new KmsFault('InvalidSignatureException', 'SignedHeaders must be sorted and include host and x-amz-date');
  if (o.credentials.sessionToken !== undefined && !signed.includes('x-amz-security-token')) throw new KmsFault('InvalidSignatureException', 'X-Amz-Security-Token must be signed');
  const payloadHash = sha256hex(body);
  const declared = headerValue(req, 'x-amz-content-sha256');
  if (declared !== undefined && declared !== payloadHash) throw new KmsFault('InvalidSignatureException', 'X-Amz-Content-Sha256 does not match the body');
  const url = new URL(req.url ?? '/', 'http://double');
  const canonicalHeaders = signed.map((h) => `${h}:${headerValue(req, h) ?? ''}\n`).join('');
  const canonicalRequest = [req.method, canonicalPath(url.pathname), canonicalQuery(url.search), canonicalHeaders, signedList, payloadHash].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256hex(canonicalRequest)].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${o.credentials.secretAccessKey}`, day), region), service), 'aws4_request');
  const expected = hmac(signingKey, stringToSign);
  if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) {
    throw new KmsFault('InvalidSignatureException', 'The request signature we calculated does not match the signature you provided.');
  }
}

// ── CMS EnvelopedData to a recipient ────────────────────────────────────────────────────────────────

export interface RecipientCiphertextOptions {
  readonly encoding?: 'ber' | 'der';
  /** Overrides, to build answers a client must refuse. */
  readonly keyEncryptionAlgorithm?: AlgorithmIdentifier;
  readonly contentEncryptionOid?: string;
  readonly contentType?: string;
  readonly outerContentType?: string;
  readonly recipients?: number;
}

const sha256Alg = () => new AlgorithmIdentifier({ algorithm: id_sha256, parameters: null });

/** RSAES-OAEP with SHA-256, MGF1-SHA-256 and the default (empty) label. */
export function oaepSha256Algorithm(): AlgorithmIdentifier {
  const params = new RsaEsOaepParams({ hashAlgorithm: sha256Alg(), maskGenAlgorithm: new AlgorithmIdentifier({ algorithm: id_mgf1, parameters: AsnConvert.serialize(sha256Alg()) }) });
  return new KeyEncryptionAlgorithmIdentifier({ algorithm: id_RSAES_OAEP, parameters: AsnConvert.serialize(params) });
}

function readLength(b: Uint8Array, i: number): [length: number, start: number] {
  const first = b[i]!;
  if (first < 0x80) return [first, i + 1];
  let length = 0;
  for (let k = 0; k < (first & 0x7f); k++) length = length * 256 + b[i + 1 + k]!;
  return [length, i + 1 + (first & 0x7f)];
}

/**
 * DER to the BER a streaming encoder writes: ContentInfo, its [0], EnvelopedData and EncryptedContentInfo
 * with indefinite lengths, the encrypted content as a constructed [0] of 32-byte OCTET STRING pieces.
 * The recipient infos and algorithm identifiers stay as they are.
 */
function toStreamingBer(der: Uint8Array, depth = 0): number[] {
  const out: number[] = [];
  for (let i = 0; i < der.length;) {
    const tag = der[i]!;
    const [length, start] = readLength(der, i + 1);
    const body = der.subarray(start, start + length);
    const spine = (depth < 3 && (tag === 0x30 || tag === 0xa0)) || (depth === 3 && tag === 0x30);
    if (spine) out.push(tag, 0x80, ...toStreamingBer(body, depth + 1), 0, 0);
    else if (depth === 4 && tag === 0x80) {
      out.push(0xa0, 0x80);
      for (let k = 0; k < body.length; k += 32) {
        const piece = body.subarray(k, k + 32);
        out.push(0x04, piece.length, ...piece);
      }
      out.push(0, 0);
    } else out.push(...der.subarray(i, start + length));
    i = start + length;
  }
  return out;
}

/** `plaintext` as KMS answers it to a recipient: CMS EnvelopedData to `publicKey` (RSA). */
export function buildRecipientCiphertext(plaintext: Uint8Array, publicKey: KeyObject, o: RecipientCiphertextOptions = {}): Uint8Array {
  const cek = randomBytes(32);
  const iv = randomBytes(16);
  const cipher = createCipheriv('aes-256-cbc', cek, iv);
  const content = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  const wrapped = publicEncrypt({ key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, cek);
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const recipient = () => new RecipientInfo({
    ktri: new KeyTransRecipientInfo({
      version: CMSVersion.v2,
      rid: new RecipientIdentifier({ subjectKeyIdentifier: new SubjectKeyIdentifier(createHash('sha1').update(spki).digest()) }),
      keyEncryptionAlgorithm: o.keyEncryptionAlgorithm ?? oaepSha256Algorithm(),
      encryptedKey: new OctetString(wrapped),
    }),
  });
  const enveloped = new EnvelopedData({
    version: CMSVersion.v2,
    recipientInfos: new RecipientInfos(Array.from({ length: o.recipients ?? 1 }, recipient)),
    encryptedContentInfo: new EncryptedContentInfo({
      contentType: o.contentType ?? id_data,
      contentEncryptionAlgorithm: new ContentEncryptionAlgorithmIdentifier({ algorithm: o.contentEncryptionOid ?? ID_AES256_CBC, parameters: AsnConvert.serialize(new OctetString(iv)) }),
      encryptedContent: new EncryptedContent({ value: new OctetString(content) }),
    }),
  });
  cek.fill(0);
  const der = new Uint8Array(AsnConvert.serialize(new ContentInfo({ contentType: o.outerContentType ?? id_envelopedData, content: AsnConvert.serialize(enveloped) })));
  return (o.encoding ?? 'ber') === 'ber' ? new Uint8Array(toStreamingBer(der)) : der;
}

// ── The key and its ciphertext blobs ────────────────────────────────────────────────────────────────

/** Encryption context as associated data: its pairs sorted by key, each length-prefixed. */
function contextBytes(keyId: string, context: Record<string, string>): Buffer {
  const parts = [keyId, ...Object.keys(context).sort().flatMap((k) => [k, context[k]!])];
  return Buffer.concat(parts.map((p) => {
    const b = Buffer.from(p, 'utf8');
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    return Buffer.concat([len, b]);
  }));
}

function encryptBlob(material: Buffer, keyId: string, context: Record<string, string>, plaintext: Uint8Array): Buffer {
  const nonce = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', material, nonce);
  c.setAAD(contextBytes(keyId, context));
  const body = Buffer.concat([c.update(plaintext), c.final()]);
  return Buffer.concat([Buffer.from([BLOB_VERSION]), Buffer.from(keyId, 'ascii'), nonce, body, c.getAuthTag()]);
}

function decryptBlob(material: Buffer, keyId: string, context: Record<string, string>, blob: Buffer): Buffer {
  const idEnd = 1 + keyId.length;
  if (blob.length < idEnd + 12 + 16 + 1 || blob[0] !== BLOB_VERSION) throw new KmsFault('InvalidCiphertextException', '');
  if (blob.subarray(1, idEnd).toString('ascii') !== keyId) throw new KmsFault('IncorrectKeyException', 'The key ID in the request does not identify a KMS key that can perform this operation.');
  try {
    const d = createDecipheriv('aes-256-gcm', material, blob.subarray(idEnd, idEnd + 12));
    d.setAAD(contextBytes(keyId, context));
    d.setAuthTag(blob.subarray(blob.length - 16));
    return Buffer.concat([d.update(blob.subarray(idEnd + 12, blob.length - 16)), d.final()]);
  } catch {
    throw new KmsFault('InvalidCiphertextException', '');
  }
}

// ── Requests ────────────────────────────────────────────────────────────────────────────────────────

interface Recipient {
  publicKey: KeyObject;
  spkiHex: string;
}

function base64Field(body: Record<string, unknown>, name: string, required: boolean): Buffer | undefined {
  const v = body[name];
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length === 0) throw new KmsFault('ValidationException', `${name} must be a base64 blob`);
  return Buffer.from(v, 'base64');
}

function contextField(body: Record<string, unknown>): Record<string, string> {
  const v = body.EncryptionContext ?? {};
  if (typeof v !== 'object' || v === null || Array.isArray(v) || Object.values(v).some((x) => typeof x !== 'string')) throw new KmsFault('ValidationException', 'EncryptionContext must be a map of strings');
  return v as Record<string, string>;
}

export async function startKmsDouble(o: KmsDoubleOptions): Promise<KmsDouble> {
  const region = o.region ?? 'eu-west-1';
  const clock = o.clock ?? Date.now;
  const keyId = randomUUID();
  const keyArn = `arn:aws:kms:${region}:${ACCOUNT}:key/${keyId}`;
  const material = randomBytes(32);
  const calls: KmsDoubleCall[] = [];

  const resolveKey = (id: unknown) => {
    if (id === undefined) return;
    if (id !== keyId && id !== keyArn) throw new KmsFault('NotFoundException', `Key '${String(id).slice(0, 200)}' does not exist`);
  };

  /** The Recipient's document judged by the key policy; undefined when the request has none. */
  function judge(body: Record<string, unknown>, action: string, context: Record<string, string>): Recipient | undefined {
    for (const [k, v] of Object.entries(o.policy.encryptionContext ?? {})) {
      if (context[k] !== v) throw new KmsFault('AccessDeniedException', `no policy statement allows ${action} with this encryption context`);
    }
    const r = body.Recipient;
    if (r === undefined) {
      if (!o.policy.allowWithoutAttestation) throw new KmsFault('AccessDeniedException', `no policy statement allows ${action} without a recipient attestation`);
      return undefined;
    }
    if (typeof r !== 'object' || r === null) throw new KmsFault('ValidationException', 'Recipient must be an object');
    const rec = r as Record<string, unknown>;
    if (rec.KeyEncryptionAlgorithm !== 'RSAES_OAEP_SHA_256') throw new KmsFault('ValidationException', 'KeyEncryptionAlgorithm must be RSAES_OAEP_SHA_256');
    const doc = base64Field(rec, 'AttestationDocument', true)!;
    let attested;
    try {
      attested = verifyNitroAttestation(new Uint8Array(doc), { roots: o.attestationRoots, at: new Date(clock()), allowDevRoot: true, maxAgeMs: ATTESTATION_MAX_AGE_MS });
    } catch (err) {
      if (err instanceof AttestationError && err.code === 'bad_attestation') throw new KmsFault('ValidationException', 'The attestation document is not valid');
      if (err instanceof AttestationError) throw new KmsFault('AccessDeniedException', `the attestation document was refused (${err.code})`);
      throw err;
    }
    for (const [condition, allowed] of Object.entries(o.policy.recipientAttestation)) {
      const index = condition === 'ImageSha384' ? 0 : /^PCR(\d{1,2})$/.test(condition) ? Number(condition.slice(3)) : NaN;
      const value = Number.isNaN(index) ? undefined : attested.pcrs.get(index);
      const hex = value && Buffer.from(value).toString('hex');
      if (!hex || !allowed.some((a) => a.toLowerCase() === hex)) {
        throw new KmsFault('AccessDeniedException', `no policy statement allows ${action} with kms:RecipientAttestation:${condition} = ${hex ?? 'absent'}`);
      }
    }
    if (!attested.publicKey) throw new KmsFault('ValidationException', 'The attestation document has no public key');
    let publicKey: KeyObject;
    try {
      publicKey = createPublicKey({ key: Buffer.from(attested.publicKey), format: 'der', type: 'spki' });
    } catch {
      throw new KmsFault('ValidationException', 'The public key in the attestation document is not a DER SubjectPublicKeyInfo');
    }
    if (publicKey.asymmetricKeyType !== 'rsa' || publicKey.asymmetricKeyDetails?.modulusLength !== 2048) throw new KmsFault('ValidationException', 'The public key in the attestation document is not RSA-2048');
    return { publicKey, spkiHex: Buffer.from(attested.publicKey).toString('hex') };
  }

  const double: KmsDouble = {
    endpoint: '', region, keyId, keyArn, calls, enabled: true, tamperNextRecipientCiphertext: undefined,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };

  function answer(plaintext: Buffer, recipient: Recipient | undefined): Record<string, string> {
    if (!recipient) return { Plaintext: plaintext.toString('base64') };
    let cms = buildRecipientCiphertext(plaintext, recipient.publicKey, { encoding: o.cmsEncoding ?? 'ber' });
    const tamper = double.tamperNextRecipientCiphertext;
    double.tamperNextRecipientCiphertext = undefined;
    if (tamper) cms = tamper(cms);
    return { CiphertextForRecipient: Buffer.from(cms).toString('base64') };
  }

  function operate(target: string, body: Record<string, unknown>, note: (k: string) => void): Record<string, unknown> {
    if (target === 'TrentService.GenerateDataKey') {
      resolveKey(body.KeyId ?? '');
      if (!double.enabled) throw new KmsFault('DisabledException', `${keyArn} is disabled.`);
      const spec = body.KeySpec;
      const n = body.NumberOfBytes;
      if ((spec === undefined) === (n === undefined)) throw new KmsFault('ValidationException', 'Specify exactly one of KeySpec and NumberOfBytes');
      const size = spec === 'AES_256' ? 32 : spec === 'AES_128' ? 16 : typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 1024 ? n : 0;
      if (!size) throw new KmsFault('ValidationException', 'KeySpec must be AES_256 or AES_128, NumberOfBytes 1 to 1024');
      const context = contextField(body);
      const recipient = judge(body, 'kms:GenerateDataKey', context);
      if (recipient) note(recipient.spkiHex);
      const plaintext = randomBytes(size);
      const r = { CiphertextBlob: encryptBlob(material, keyId, context, plaintext).toString('base64'), KeyId: keyArn, ...answer(plaintext, recipient) };
      plaintext.fill(0);
      return r;
    }
    if (target === 'TrentService.Decrypt') {
      resolveKey(body.KeyId);
      if (!double.enabled) throw new KmsFault('DisabledException', `${keyArn} is disabled.`);
      const blob = base64Field(body, 'CiphertextBlob', true)!;
      if (blob.length > 6144) throw new KmsFault('ValidationException', 'CiphertextBlob is longer than 6144 bytes');
      const context = contextField(body);
      const recipient = judge(body, 'kms:Decrypt', context);
      if (recipient) note(recipient.spkiHex);
      const plaintext = decryptBlob(material, keyId, context, blob);
      const r = { KeyId: keyArn, EncryptionAlgorithm: 'SYMMETRIC_DEFAULT', ...answer(plaintext, recipient) };
      plaintext.fill(0);
      return r;
    }
    throw new KmsFault('UnknownOperationException', '');
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req as AsyncIterable<Buffer>) {
      size += c.length;
      if (size > MAX_BODY) break;
      chunks.push(c);
    }
    const body = Buffer.concat(chunks);
    const target = headerValue(req, 'x-amz-target') ?? '';
    let recipientKey: string | undefined;
    const send = (status: number, json: unknown, errorType?: string) => {
      calls.push({ target, status, ...(errorType ? { errorType } : {}), ...(recipientKey ? { recipientKey } : {}) });
      res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': randomUUID() });
      res.end(JSON.stringify(json));
    };
    try {
      if (size > MAX_BODY) throw new KmsFault('ValidationException', 'request body too large');
      if (req.method !== 'POST' || new URL(req.url ?? '/', 'http://double').pathname !== '/') throw new KmsFault('UnknownOperationException', '');
      checkSignature(req, body, { credentials: o.credentials, region, now: clock() });
      if (headerValue(req, 'content-type') !== 'application/x-amz-json-1.1') throw new KmsFault('SerializationException', 'Content-Type must be application/x-amz-json-1.1');
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        throw new KmsFault('SerializationException', 'the body is not JSON');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new KmsFault('SerializationException', 'the body is not a JSON object');
      send(200, operate(target, parsed as Record<string, unknown>, (k) => (recipientKey = k)));
    } catch (err) {
      if (!(err instanceof KmsFault)) {
        send(500, { __type: 'KMSInternalException', message: 'internal error' }, 'KMSInternalException');
        return;
      }
      // The service framework names its own errors with a namespace; KMS's are bare.
      const framework = ['UnrecognizedClientException', 'MissingAuthenticationTokenException', 'IncompleteSignatureException', 'InvalidSignatureException', 'UnknownOperationException', 'SerializationException'];
      const type = framework.includes(err.type) ? `com.amazon.coral.service#${err.type}` : err.type;
      send(err.status, { __type: type, ...(err.message ? { message: err.message } : {}) }, err.type);
    }
  }

  const server: Server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (double as { endpoint: string }).endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return double;
}
