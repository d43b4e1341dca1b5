// The S3-compatible object store (docs/platform/branding.md#logo): the production option beside the
// embedded directory store. Uploads go straight to the bucket through presigned PUT URLs (SigV4 query
// authentication, S3 API "Authenticating Requests: Using Query Parameters"); the API reads objects back
// with header-signed GET and HEAD requests. Works with AWS S3 and S3-compatible servers.
import type { SignatureV4 } from '@smithy/signature-v4';
import { presignUrl, signHeaders, sigv4Signer, type AwsCredentials } from './aws-sigv4.ts';
import type { AwsCredentialProvider } from '../../common/aws-credentials.ts';
import { OBJECT_KEY, ObjectStoreError, type ObjectStore, type UploadGrant } from './object-store.ts';

export interface S3ObjectStoreOptions {
  /** Origin of the S3 API, e.g. https://s3.eu-west-1.amazonaws.com or http://127.0.0.1:9000. */
  endpoint: string;
  bucket: string;
  region: string;
  /** Static keys, or a (cached) provider such as the standard chain: common/aws-credentials.ts. */
  credentials: AwsCredentials | AwsCredentialProvider;
  /** `https://host/bucket/key` (true) or `https://bucket.host/key` (false). */
  pathStyle?: boolean;
  clock?: () => number;
  timeoutMs?: number;
}

/** SigV4 presigned URLs live at most seven days. */
const MAX_PRESIGN_SECONDS = 604_800;

export class S3ObjectStore implements ObjectStore {
  readonly kind = 's3' as const;
  private readonly signer: SignatureV4;
  private readonly clock: () => number;
  private readonly endpoint: URL;

  constructor(private readonly o: S3ObjectStoreOptions) {
    this.signer = sigv4Signer('s3', o.region, o.credentials);
    this.clock = o.clock ?? Date.now;
    this.endpoint = new URL(o.endpoint);
  }

  /** The object's URL; keys are `<prefix>/<32 hex>`, so they need no escaping. */
  objectUrl(objectKey: string): URL {
    const e = this.endpoint;
    return this.o.pathStyle === false ? new URL(`${e.protocol}//${this.o.bucket}.${e.host}/${objectKey}`) : new URL(`${e.protocol}//${e.host}/${this.o.bucket}/${objectKey}`);
  }

  /**
   * A presigned PUT that S3 accepts only with exactly the granted Content-Type and Content-Length (both
   * are signed headers) until the grant expires. `origin` is unused: the URL points at the bucket.
   */
  async uploadUrl(g: UploadGrant): Promise<string> {
    if (!OBJECT_KEY.test(g.object_key)) throw new Error(`bad object key ${g.object_key}`);
    const now = this.clock();
    const seconds = Math.max(1, Math.min(MAX_PRESIGN_SECONDS, Math.floor((g.expires_at - now) / 1000)));
    return presignUrl(this.signer, {
      method: 'PUT', url: this.objectUrl(g.object_key), headers: { 'content-type': g.content_type, 'content-length': String(g.max_bytes) },
      expiresInSeconds: seconds, signingDate: new Date(now),
    });
  }

  /** A presigned GET of the object until `expiresAt`; `origin` is unused: the URL points at the bucket. */
  async downloadUrl(objectKey: string, expiresAt: number): Promise<string> {
    if (!OBJECT_KEY.test(objectKey)) throw new Error(`bad object key ${objectKey}`);
    const now = this.clock();
    const seconds = Math.max(1, Math.min(MAX_PRESIGN_SECONDS, Math.floor((expiresAt - now) / 1000)));
    return presignUrl(this.signer, { method: 'GET', url: this.objectUrl(objectKey), headers: {}, expiresInSeconds: seconds, signingDate: new Date(now) });
  }

  private async request(method: 'GET' | 'HEAD', objectKey: string): Promise<Response | undefined> {
    if (!OBJECT_KEY.test(objectKey)) return undefined;
    const url = this.objectUrl(objectKey);
    const headers = await signHeaders(this.signer, { method, url, signingDate: new Date(this.clock()) });
    let res: Response;
    try {
      res = await fetch(url, { method, headers, redirect: 'manual', signal: AbortSignal.timeout(this.o.timeoutMs ?? 10_000) });
    } catch (err) {
      throw new ObjectStoreError(`object store unreachable: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`, null);
    }
    if (res.status === 404) {
      await res.body?.cancel();
      return undefined;
    }
    if (res.status !== 200) {
      const text = method === 'GET' ? (await res.text()).slice(0, 300) : '';
      const code = /<Code>([^<]{1,64})<\/Code>/.exec(text)?.[1];
      throw new ObjectStoreError(`object store answered ${res.status}${code ? ` ${code}` : ''}`, res.status);
    }
    return res;
  }

  /** A header-signed PUT (the payload hash signed) of an object the API makes itself. */
  async put(objectKey: string, body: string | Uint8Array, contentType: string): Promise<void> {
    await this.write('PUT', objectKey, { body, headers: { 'content-type': contentType } });
  }

  /** A header-signed DELETE; S3 answers 204 also when there was no object. */
  async delete(objectKey: string): Promise<void> {
    await this.write('DELETE', objectKey, {});
  }

  private async write(method: 'PUT' | 'DELETE', objectKey: string, o: { body?: string | Uint8Array; headers?: Record<string, string> }): Promise<void> {
    if (!OBJECT_KEY.test(objectKey)) throw new Error(`bad object key ${objectKey}`);
    const url = this.objectUrl(objectKey);
    const headers = await signHeaders(this.signer, { method, url, signingDate: new Date(this.clock()), ...(o.headers ? { headers: o.headers } : {}), ...(o.body !== undefined ? { body: o.body } : {}) });
    let res: Response;
    try {
      res = await fetch(url, { method, headers, redirect: 'manual', signal: AbortSignal.timeout(this.o.timeoutMs ?? 10_000), ...(o.body !== undefined ? { body: o.body } : {}) });
    } catch (err) {
      throw new ObjectStoreError(`object store unreachable: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`, null);
    }
    const text = (await res.text()).slice(0, 300);
    if (res.status !== 200 && res.status !== 204) {
      const code = /<Code>([^<]{1,64})<\/Code>/.exec(text)?.[1];
      throw new ObjectStoreError(`object store answered ${res.status}${code ? ` ${code}` : ''}`, res.status);
    }
  }

  async head(objectKey: string): Promise<{ size: number } | undefined> {
    const res = await this.request('HEAD', objectKey);
    if (!res) return undefined;
    const size = Number(res.headers.get('content-length'));
    if (!Number.isSafeInteger(size) || size < 0) throw new ObjectStoreError('object store sent no Content-Length', res.status);
    return { size };
  }

  async read(objectKey: string): Promise<Buffer | undefined> {
    const res = await this.request('GET', objectKey);
    return res ? Buffer.from(await res.arrayBuffer()) : undefined;
  }
}
