// The embedded object store (docs/platform/branding.md#logo): a directory, written by a direct PUT to an
// expiring signed URL that the API's own upload route checks and serves.
import { createHmac, timingSafeEqual, randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { OBJECT_KEY, type ObjectStore, type UploadGrant } from './object-store.ts';

export class DirectoryObjectStore implements ObjectStore {
  readonly kind = 'directory' as const;
  constructor(private readonly dir: string, private readonly key: Uint8Array) {}

  static newKey(prefix: string): string {
    return `${prefix}/${randomBytes(16).toString('hex')}`;
  }

  private sig(g: UploadGrant): string {
    return createHmac('sha256', this.key).update(`upload.${g.object_key}.${g.content_type}.${g.max_bytes}.${g.expires_at}`).digest('base64url');
  }

  uploadUrl(g: UploadGrant, origin: string): string {
    const q = new URLSearchParams({ ct: g.content_type, max: String(g.max_bytes), exp: String(g.expires_at), sig: this.sig(g) });
    return `${origin}/v1/uploads/${g.object_key}?${q.toString()}`;
  }

  /** The grant a signed URL carries, if its signature holds and it has not expired. */
  checkUpload(objectKey: string, q: Record<string, string | undefined>, nowMs: number): UploadGrant | undefined {
    if (!OBJECT_KEY.test(objectKey)) return undefined;
    const g: UploadGrant = { object_key: objectKey, content_type: q.ct ?? '', max_bytes: Number(q.max), expires_at: Number(q.exp) };
    const given = Buffer.from(q.sig ?? '', 'base64url');
    const want = Buffer.from(this.sig(g), 'base64url');
    if (given.length !== want.length || !timingSafeEqual(given, want) || !(g.expires_at > nowMs)) return undefined;
    return g;
  }

  private downloadSig(objectKey: string, expiresAt: number): string {
    return createHmac('sha256', this.key).update(`download.${objectKey}.${expiresAt}`).digest('base64url');
  }

  /** A GET through the API's own download route, signed like an upload URL and as short-lived. */
  downloadUrl(objectKey: string, expiresAt: number, origin: string): string {
    const q = new URLSearchParams({ exp: String(expiresAt), sig: this.downloadSig(objectKey, expiresAt) });
    return `${origin}/v1/downloads/${objectKey}?${q.toString()}`;
  }

  /** Whether a download URL's signature holds for `objectKey` and it has not expired. */
  checkDownload(objectKey: string, q: Record<string, string | undefined>, nowMs: number): boolean {
    if (!OBJECT_KEY.test(objectKey)) return false;
    const exp = Number(q.exp);
    const given = Buffer.from(q.sig ?? '', 'base64url');
    const want = Buffer.from(this.downloadSig(objectKey, exp), 'base64url');
    return given.length === want.length && timingSafeEqual(given, want) && exp > nowMs;
  }

  async write(objectKey: string, bytes: Buffer): Promise<void> {
    const [prefix, name] = objectKey.split('/');
    await mkdir(join(this.dir, prefix!), { recursive: true });
    await writeFile(join(this.dir, prefix!, name!), bytes);
  }

  async put(objectKey: string, body: string | Uint8Array): Promise<void> {
    if (!OBJECT_KEY.test(objectKey)) throw new Error(`bad object key ${objectKey}`);
    await this.write(objectKey, typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  }

  async delete(objectKey: string): Promise<void> {
    if (!OBJECT_KEY.test(objectKey)) return;
    await rm(join(this.dir, objectKey), { force: true });
  }

  async head(objectKey: string): Promise<{ size: number } | undefined> {
    if (!OBJECT_KEY.test(objectKey)) return undefined;
    try {
      return { size: (await stat(join(this.dir, objectKey))).size };
    } catch {
      return undefined;
    }
  }

  async read(objectKey: string): Promise<Buffer | undefined> {
    if (!OBJECT_KEY.test(objectKey)) return undefined;
    try {
      return await readFile(join(this.dir, objectKey));
    } catch {
      return undefined;
    }
  }
}
