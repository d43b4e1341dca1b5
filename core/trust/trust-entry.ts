// Entries of an organization's trust log, version 1 (docs/trust.md). The API keeps each organization's
// log and attaches it to what it asks the cluster for; every signer node verifies and applies it on its
// own, so the keys a node trusts change only through what an operator or the customer signed.
//
// Two kinds, one versioned encoding (domain `custody-trust\0`, version, kind):
// - bootstrap: an organization's first API key, signed with Ed25519 by an operator key;
// - request: a customer's signed HTTP request exactly as the API received it (RFC 9421 signature,
//   RFC 9530 Content-Digest), checked with the API's own verifier.
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { parseDictionary } from 'structured-headers';
import { lengthPrefixed } from '../codec/transcript.ts';
import { CustodyError } from '../errors/custody-error.ts';
import { verifyEd25519 } from '../../common/ed25519.ts';
import { verifyContentDigest } from '../http/content-digest.ts';
import { SignatureError, verifyRequest, type VerifyPolicy } from '../http/http-signature.ts';
import { apiKeyId } from './api-key-id.ts';
import { Reader, Writer, type FormatErrors } from '../intents/canonical.ts';

export const TRUST_DOMAIN = new TextEncoder().encode('custody-trust\0');
export const TRUST_VERSION = 1;
export const KIND_BOOTSTRAP = 1;
export const KIND_REQUEST = 2;

/** Largest request body an entry carries (an end-user JWKS fits many times over). */
export const MAX_ENTRY_BODY = 256 * 1024;
const MAX_URL = 2048;
const MAX_HEADER = 4096;
const ORG = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const METHOD = /^[A-Z]{1,16}$/;
const VISIBLE = /^[\x20-\x7e]*$/;

export class TrustEntryError extends CustodyError {
  constructor(message: string) {
    super('bad_trust_log', message);
    this.name = 'TrustEntryError';
  }
}

export interface BootstrapEntry {
  kind: 'bootstrap';
  org: string;
  /** apiKeyId(org, publicKey): checked when decoded. */
  keyId: string;
  /** Ed25519 public key, 64 lower-case hex characters. */
  publicKey: string;
  /** Unix seconds. */
  created: number;
  /** The operator key that signed, 64 lower-case hex characters. */
  operatorKey: string;
  signature: Uint8Array;
}

export interface RequestHeaders {
  'signature-input': string;
  signature: string;
  'content-digest'?: string;
  'content-type'?: string;
}

export interface RequestEntry {
  kind: 'request';
  method: string;
  /** The absolute target URI as the client addressed it (what `@target-uri` covers). */
  url: string;
  headers: RequestHeaders;
  body: Uint8Array;
}

export type TrustEntry = BootstrapEntry | RequestEntry;

// The encoding is the intents' (core/intents/canonical.ts): u16-length strings, u32-length bytes,
// big-endian integers, no trailing bytes; only the errors differ.
const ERRORS: FormatErrors = { noun: 'entry', fail: (m) => new TrustEntryError(m) };
const out = () => new Writer(ERRORS);

const header = (o: Writer, kind: number) => o.raw(TRUST_DOMAIN).u8(TRUST_VERSION).u8(kind);
const HEX32 = /^[0-9a-f]{64}$/;

function checkCreated(created: number): void {
  if (!Number.isSafeInteger(created) || created < 0) throw new TrustEntryError('created must be non-negative Unix seconds');
}

/** The canonical bytes an operator signs to bootstrap `org` with its first API key. */
export function bootstrapMessage(org: string, publicKeyHex: string, created: number): Uint8Array {
  const pk = publicKeyHex.toLowerCase();
  if (!HEX32.test(pk)) throw new TrustEntryError('public key must be 32 bytes of hex');
  checkCreated(created);
  return header(out(), KIND_BOOTSTRAP)
    .str(org, 'organization', ORG, 128)
    .str(apiKeyId(org, pk), 'key id', /^key_[0-9a-f]{24}$/, 28)
    .raw(hexToBytes(pk))
    .u64(BigInt(created))
    .finish();
}

/** An operator's bootstrap entry (encoded): the signed message, the operator's public key, the signature. */
export function signBootstrap(org: string, publicKeyHex: string, created: number, operatorSecretKey: Uint8Array): Uint8Array {
  const message = bootstrapMessage(org, publicKeyHex, created);
  return out().raw(message).raw(ed25519.getPublicKey(operatorSecretKey)).raw(ed25519.sign(message, operatorSecretKey)).finish();
}

/** True when the bootstrap entry is signed by one of `operatorKeys` (32-byte Ed25519 public keys, hex). */
export function verifyBootstrap(entry: BootstrapEntry, operatorKeys: readonly string[]): boolean {
  if (!operatorKeys.some((k) => k.toLowerCase() === entry.operatorKey)) return false;
  return verifyEd25519(entry.signature, bootstrapMessage(entry.org, entry.publicKey, entry.created), hexToBytes(entry.operatorKey));
}

/** Encodes a received request as a log entry. Header names are the lower-case ones of RequestHeaders. */
export function requestEntry(req: { method: string; url: string; headers: RequestHeaders; body?: Uint8Array }): Uint8Array {
  return encodeTrustEntry({ kind: 'request', method: req.method, url: req.url, headers: req.headers, body: req.body ?? new Uint8Array() });
}

export function encodeTrustEntry(e: TrustEntry): Uint8Array {
  if (e.kind === 'bootstrap') {
    if (!HEX32.test(e.operatorKey) || e.signature.length !== 64) throw new TrustEntryError('operator key and signature are 32 and 64 bytes');
    return out().raw(bootstrapMessage(e.org, e.publicKey, e.created)).raw(hexToBytes(e.operatorKey)).raw(e.signature).finish();
  }
  const o = header(out(), KIND_REQUEST)
    .str(e.method, 'method', METHOD, 16)
    .str(e.url, 'url', /^https?:\/\/[\x21-\x7e]+$/, MAX_URL)
    .str(e.headers['signature-input'], 'signature-input', VISIBLE, MAX_HEADER)
    .str(e.headers.signature, 'signature', VISIBLE, MAX_HEADER);
  for (const name of ['content-digest', 'content-type'] as const) {
    const v = e.headers[name];
    if (v === undefined) o.u8(0);
    else o.u8(1).str(v, name, VISIBLE, MAX_HEADER);
  }
  return o.bytes(e.body, MAX_ENTRY_BODY, 'body').finish();
}

/** Parses one encoded entry; throws TrustEntryError unless the bytes are exactly one canonical entry. */
export function decodeTrustEntry(bytes: Uint8Array): TrustEntry {
  const r = new Reader(bytes, ERRORS);
  const domain = r.fixed(TRUST_DOMAIN.length, 'domain');
  if (!domain.every((b, i) => b === TRUST_DOMAIN[i])) throw new TrustEntryError('not a trust entry (domain)');
  const version = r.u8('version');
  if (version !== TRUST_VERSION) throw new TrustEntryError(`trust entry version ${version} is not supported`);
  const kind = r.u8('kind');
  let entry: TrustEntry;
  if (kind === KIND_BOOTSTRAP) {
    const org = r.str('organization', ORG, 128);
    const keyId = r.str('key id', /^key_[0-9a-f]{24}$/, 28);
    const publicKey = bytesToHex(r.fixed(32, 'public key'));
    const stamp = r.u64('created');
    if (stamp > BigInt(Number.MAX_SAFE_INTEGER)) throw new TrustEntryError('created is out of range');
    const created = Number(stamp);
    const operatorKey = bytesToHex(r.fixed(32, 'operator key'));
    const signature = r.fixed(64, 'signature');
    if (keyId !== apiKeyId(org, publicKey)) throw new TrustEntryError('the key id is not the one derived from the organization and key');
    entry = { kind: 'bootstrap', org, keyId, publicKey, created, operatorKey, signature };
  } else if (kind === KIND_REQUEST) {
    const method = r.str('method', METHOD, 16);
    const url = r.str('url', /^https?:\/\/[\x21-\x7e]+$/, MAX_URL);
    const headers: RequestHeaders = { 'signature-input': r.str('signature-input', VISIBLE, MAX_HEADER), signature: r.str('signature', VISIBLE, MAX_HEADER) };
    for (const name of ['content-digest', 'content-type'] as const) {
      const flag = r.u8(`${name} flag`);
      if (flag > 1) throw new TrustEntryError(`${name} flag must be 0 or 1`);
      if (flag === 1) headers[name] = r.str(name, VISIBLE, MAX_HEADER);
    }
    entry = { kind: 'request', method, url, headers, body: r.bytes(MAX_ENTRY_BODY, 'body') };
  } else {
    throw new TrustEntryError(`unknown trust entry kind ${kind}`);
  }
  r.end();
  return entry;
}

/** Identifies an entry: SHA-256 over a domain tag and the entry's encoding, hex. */
export function trustEntryHash(bytes: Uint8Array): string {
  return bytesToHex(sha256(lengthPrefixed(['custody/trust-entry/v1', bytes])));
}

/** The request-signature profile of the vault API (api/auth/request-auth.ts), less its clock. */
const POLICY: Omit<VerifyPolicy, 'requiredComponents'> = { requiredParams: ['created', 'expires', 'nonce', 'keyid'], maxValiditySeconds: 300, skewSeconds: 30 };

export interface VerifiedRequestEntry {
  /** The API key that signed. */
  keyId: string;
  /** The signature's `created`, Unix seconds. */
  created: number;
  /** The URL's path. */
  path: string;
}

/** The `created` time (Unix seconds) a request entry's signature claims; nothing is verified here. */
export function requestEntryCreated(e: RequestEntry): number {
  let created: unknown;
  try {
    const inputs = parseDictionary(e.headers['signature-input']);
    const first = [...inputs.values()][0];
    created = inputs.size === 1 && first && Array.isArray(first[0]) ? first[1].get('created') : undefined;
  } catch {
    throw new TrustEntryError('Signature-Input is not a structured dictionary');
  }
  if (typeof created !== 'number' || !Number.isSafeInteger(created)) throw new TrustEntryError('the request signature carries no integer created time');
  return created;
}

/**
 * Verifies a request entry as the API verified the request: the Content-Digest of the body, then the
 * RFC 9421 signature under the key `lookup` returns. Freshness is judged at the signature's own
 * `created` time, not this machine's clock: a log is applied long after it was written, and what the
 * entries do is safe to replay (docs/trust.md). Throws TrustEntryError.
 */
export function verifyRequestEntry(e: RequestEntry, lookup: (keyId: string) => Uint8Array | undefined): VerifiedRequestEntry {
  const digest = e.headers['content-digest'];
  if (e.body.length > 0 && digest === undefined) throw new TrustEntryError('a request with a body needs a Content-Digest');
  if (digest !== undefined && !verifyContentDigest(digest, e.body)) throw new TrustEntryError('Content-Digest does not match the body');
  const created = requestEntryCreated(e);
  let url: URL;
  try {
    url = new URL(e.url);
  } catch {
    throw new TrustEntryError('the entry URL is not absolute');
  }
  try {
    const v = verifyRequest({ method: e.method, url: e.url, headers: { ...e.headers } }, lookup, created, {
      ...POLICY,
      requiredComponents: e.body.length > 0 ? ['@method', '@target-uri', 'content-digest'] : ['@method', '@target-uri'],
    });
    return { keyId: v.keyId, created: v.created, path: url.pathname };
  } catch (err) {
    if (err instanceof SignatureError) throw new TrustEntryError(`request signature refused: ${err.message}`);
    throw err;
  }
}
