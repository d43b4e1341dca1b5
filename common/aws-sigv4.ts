// AWS Signature Version 4, for every AWS API the programs call: the API's S3 object store and SES domain
// adapter (api/adapters/), a tee node's KMS client (tee/seal/kms-client.ts). The canonicalisation is the
// AWS SDK's own signer (@smithy/signature-v4); its SHA-256 and HMAC-SHA256 are @noble/hashes.
// Spec: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv4.html
import { SignatureV4 } from '@smithy/signature-v4';
import { sha256 } from '@noble/hashes/sha2.js';
import { hmac } from '@noble/hashes/hmac.js';
import type { Checksum, SourceData } from '@smithy/types';

/** `sessionToken` goes with temporary credentials (an instance role's); it is sent as X-Amz-Security-Token. */
export interface AwsCredentials { accessKeyId: string; secretAccessKey: string; sessionToken?: string }

function bytes(d: SourceData): Uint8Array {
  if (typeof d === 'string') return new TextEncoder().encode(d);
  if (ArrayBuffer.isView(d)) return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  return new Uint8Array(d);
}

/** SHA-256, or HMAC-SHA256 when constructed with a key, in the signer's Checksum shape. */
export class NobleSha256 implements Checksum {
  private h: ReturnType<typeof sha256.create> | ReturnType<typeof hmac.create>;
  constructor(private readonly key?: SourceData) {
    this.h = this.fresh();
  }

  private fresh() {
    return this.key === undefined ? sha256.create() : hmac.create(sha256, bytes(this.key));
  }

  update(data: Uint8Array): void {
    this.h.update(bytes(data));
  }

  digest(): Promise<Uint8Array> {
    return Promise.resolve(this.h.digest());
  }

  reset(): void {
    this.h = this.fresh();
  }
}

/**
 * A signer for `service` in `region`. `credentials` are static keys or a provider the signer asks on every
 * request (cache it: see common/aws-credentials.ts). With a session token the signer sends
 * X-Amz-Security-Token, as a signed header or, in a presigned URL, as a signed query parameter.
 */
export function sigv4Signer(service: string, region: string, credentials: AwsCredentials | (() => Promise<AwsCredentials>)): SignatureV4 {
  // S3 signs the path as sent (no second URI-encoding); other services encode it again.
  return new SignatureV4({ service, region, credentials, sha256: NobleSha256, uriEscapePath: service !== 's3', applyChecksum: service === 's3' });
}

export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

export interface PresignInput {
  method: 'GET' | 'PUT' | 'HEAD';
  url: URL;
  /** Headers the client must send exactly (e.g. content-type, content-length); `host` is added. */
  headers?: Record<string, string>;
  expiresInSeconds: number;
  signingDate: Date;
}

/** A presigned URL (query-string authentication) with an unsigned payload, as S3 expects. */
export async function presignUrl(signer: SignatureV4, input: PresignInput): Promise<string> {
  const { url } = input;
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  const signed = await signer.presign({
    method: input.method, protocol: url.protocol, hostname: url.hostname, ...(url.port ? { port: Number(url.port) } : {}), path: url.pathname, query,
    headers: { host: url.host, ...input.headers, 'x-amz-content-sha256': UNSIGNED_PAYLOAD },
  }, { expiresIn: input.expiresInSeconds, signingDate: input.signingDate, unhoistableHeaders: new Set(['x-amz-content-sha256']), unsignableHeaders: new Set(['x-amz-content-sha256']) });
  const q = Object.entries(signed.query ?? {}).map(([k, v]) => `${rfc3986(k)}=${rfc3986(String(v))}`).join('&');
  return `${url.protocol}//${url.host}${url.pathname}?${q}`;
}

/** Headers of a request signed with an Authorization header (the payload hash is always signed). */
export async function signHeaders(signer: SignatureV4, input: { method: string; url: URL; headers?: Record<string, string>; body?: string | Uint8Array; signingDate: Date }): Promise<Record<string, string>> {
  const { url } = input;
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  const h = new NobleSha256();
  h.update(typeof input.body === 'string' || input.body === undefined ? new TextEncoder().encode(input.body ?? '') : input.body);
  const payloadHash = Buffer.from(await h.digest()).toString('hex');
  const signed = await signer.sign({
    method: input.method, protocol: url.protocol, hostname: url.hostname, ...(url.port ? { port: Number(url.port) } : {}), path: url.pathname, query,
    headers: { host: url.host, ...input.headers, 'x-amz-content-sha256': payloadHash }, ...(input.body !== undefined ? { body: input.body } : {}),
  }, { signingDate: input.signingDate });
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(signed.headers)) if (k.toLowerCase() !== 'host') out[k] = String(v);
  return out;
}

/** RFC 3986 percent-encoding, the form SigV4 uses for query names and values. */
export function rfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
