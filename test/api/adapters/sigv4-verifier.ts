// A server-side SigV4 verifier for the test doubles, written from the AWS documentation independently of
// the signer the adapters use: canonical request, string to sign, signing key, signature; query-string
// (presigned) and Authorization-header forms; expiry and clock-skew rules of S3.
// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
// https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html
import { sha256 } from '@noble/hashes/sha2.js';
import { hmac } from '@noble/hashes/hmac.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { timingSafeEqual } from 'node:crypto';

export interface SignedRequest {
  method: string;
  /** The raw request target as received: path and query, still percent-encoded. */
  rawUrl: string;
  headers: Record<string, string | string[] | undefined>;
  body?: Uint8Array;
}

export interface VerifyOptions {
  service: string;
  region: string;
  /** Access key id to secret key. */
  keys: Record<string, string>;
  /** Access key id to the session token its temporary credentials must be sent with (X-Amz-Security-Token, signed). */
  sessionTokens?: Record<string, string>;
  nowMs: number;
  /** S3 signs the path as sent; other services encode each segment once more. */
  doubleEncodePath: boolean;
}

export type VerifyResult =
  | { ok: true; form: 'query' | 'header'; accessKeyId: string; signedHeaders: string[]; canonicalRequest: string; stringToSign: string; signature: string }
  | { ok: false; status: number; code: string; message: string; canonicalRequest?: string; stringToSign?: string; expected?: string };

const enc = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const hex = (b: Uint8Array) => bytesToHex(b);
const fail = (status: number, code: string, message: string, extra: Partial<VerifyResult> = {}): VerifyResult => ({ ok: false, status, code, message, ...extra } as VerifyResult);

export function signingKey(secret: string, date: string, region: string, service: string): Uint8Array {
  const kDate = hmac(sha256, utf8ToBytes(`AWS4${secret}`), utf8ToBytes(date));
  const kRegion = hmac(sha256, kDate, utf8ToBytes(region));
  const kService = hmac(sha256, kRegion, utf8ToBytes(service));
  return hmac(sha256, kService, utf8ToBytes('aws4_request'));
}

function parseQuery(q: string): [string, string][] {
  if (!q) return [];
  return q.split('&').filter(Boolean).map((p) => {
    const i = p.indexOf('=');
    const k = i < 0 ? p : p.slice(0, i);
    const v = i < 0 ? '' : p.slice(i + 1);
    return [decodeURIComponent(k), decodeURIComponent(v)];
  });
}

function header(h: SignedRequest['headers'], name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v.join(',') : v;
}

function amzDateMs(d: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(d);
  return m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) : NaN;
}

export function canonicalRequest(method: string, path: string, query: [string, string][], headers: SignedRequest['headers'], signedHeaders: string[], payloadHash: string, doubleEncodePath: boolean): string {
  const canonPath = doubleEncodePath ? path.split('/').map((s) => enc(decodeURIComponent(s))).map((s) => enc(s)).join('/') : path;
  const q = query.map(([k, v]) => [enc(k), enc(v)] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)).map(([k, v]) => `${k}=${v}`).join('&');
  const ch = signedHeaders.map((n) => `${n}:${(header(headers, n) ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  return [method, canonPath || '/', q, ch, signedHeaders.join(';'), payloadHash].join('\n');
}

export function verifySigV4(req: SignedRequest, o: VerifyOptions): VerifyResult {
  const [path = '/', rawQuery = ''] = req.rawUrl.split(/\?(.*)/s);
  const query = parseQuery(rawQuery);
  const qget = (k: string) => query.find(([n]) => n === k)?.[1];
  const auth = header(req.headers, 'authorization');
  let form: 'query' | 'header';
  let credential: string | undefined, signedHeadersStr: string | undefined, signature: string | undefined, amzDate: string | undefined, payloadHash: string;
  let expires: number | undefined;
  if (qget('X-Amz-Algorithm') !== undefined) {
    form = 'query';
    if (qget('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') return fail(400, 'AuthorizationQueryParametersError', 'X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
    credential = qget('X-Amz-Credential');
    signedHeadersStr = qget('X-Amz-SignedHeaders');
    signature = qget('X-Amz-Signature');
    amzDate = qget('X-Amz-Date');
    expires = Number(qget('X-Amz-Expires'));
    if (!credential || !signedHeadersStr || !signature || !amzDate || !Number.isInteger(expires)) return fail(400, 'AuthorizationQueryParametersError', 'Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.');
    if (expires < 1 || expires > 604_800) return fail(400, 'AuthorizationQueryParametersError', 'X-Amz-Expires must be less than a week (in seconds) that is 604800');
    payloadHash = qget('X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD';
  } else if (auth) {
    form = 'header';
    const m = /^AWS4-HMAC-SHA256 Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})$/.exec(auth);
    if (!m) return fail(400, 'AuthorizationHeaderMalformed', 'The authorization header is malformed');
    [, credential, signedHeadersStr, signature] = m;
    amzDate = header(req.headers, 'x-amz-date');
    if (!amzDate) return fail(403, 'AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
    const declared = header(req.headers, 'x-amz-content-sha256');
    if (o.service === 's3' && !declared) return fail(400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
    const actual = hex(sha256(req.body ?? new Uint8Array()));
    if (declared && declared !== 'UNSIGNED-PAYLOAD' && declared !== actual) return fail(400, 'XAmzContentSHA256Mismatch', 'The provided x-amz-content-sha256 header does not match what was computed.');
    payloadHash = declared ?? actual;
  } else {
    return fail(403, 'AccessDenied', 'Access Denied');
  }
  const [accessKeyId, date, region, service, term, ...rest] = credential!.split('/');
  if (!accessKeyId || !date || rest.length || term !== 'aws4_request') return fail(400, 'AuthorizationQueryParametersError', 'Error parsing the X-Amz-Credential parameter');
  const secret = o.keys[accessKeyId];
  if (secret === undefined) return fail(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
  if (region !== o.region) return fail(400, 'AuthorizationQueryParametersError', `Error parsing the X-Amz-Credential parameter; the region '${region}' is wrong; expecting '${o.region}'`);
  if (service !== o.service) return fail(400, 'AuthorizationQueryParametersError', `Error parsing the X-Amz-Credential parameter; incorrect service "${service}". This endpoint belongs to "${o.service}".`);
  const t = amzDateMs(amzDate!);
  if (Number.isNaN(t) || amzDate!.slice(0, 8) !== date) return fail(403, 'AccessDenied', 'X-Amz-Date does not match the credential scope date');
  if (form === 'query') {
    if (o.nowMs > t + expires! * 1000) return fail(403, 'AccessDenied', 'Request has expired');
    if (t > o.nowMs + 15 * 60_000) return fail(403, 'AccessDenied', 'Request is not valid yet');
  } else if (Math.abs(o.nowMs - t) > 15 * 60_000) {
    return fail(403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.');
  }
  const signedHeaders = signedHeadersStr!.split(';');
  if (!signedHeaders.includes('host')) return fail(403, 'AccessDenied', 'There were headers present in the request which were not signed: host');
  // Temporary credentials: the token travels as X-Amz-Security-Token, a signed header or (presigned) a query
  // parameter, which the canonical query string below covers.
  const token = form === 'query' ? qget('X-Amz-Security-Token') : header(req.headers, 'x-amz-security-token');
  const wanted = o.sessionTokens?.[accessKeyId];
  if (wanted !== undefined || token !== undefined) {
    if (token === undefined || wanted === undefined || token !== wanted) return fail(403, 'InvalidToken', 'The provided token is malformed or otherwise invalid.');
    if (form === 'header' && !signedHeaders.includes('x-amz-security-token')) return fail(403, 'AccessDenied', 'There were headers present in the request which were not signed: x-amz-security-token');
  }
  const qNoSig = query.filter(([k]) => k !== 'X-Amz-Signature');
  const creq = canonicalRequest(req.method, path, qNoSig, req.headers, signedHeaders, payloadHash, o.doubleEncodePath);
  const scope = `${date}/${region}/${service}/aws4_request`;
  const sts = ['AWS4-HMAC-SHA256', amzDate, scope, hex(sha256(utf8ToBytes(creq)))].join('\n');
  const expected = hex(hmac(sha256, signingKey(secret, date, region, service), utf8ToBytes(sts)));
  const a = Buffer.from(expected), b = Buffer.from(signature!);
  if (a.length !== b.length || !timingSafeEqual(a, b)) {
    return fail(403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.', { canonicalRequest: creq, stringToSign: sts, expected });
  }
  return { ok: true, form, accessKeyId, signedHeaders, canonicalRequest: creq, stringToSign: sts, signature: expected };
}
