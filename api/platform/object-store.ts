// The object store for uploads (docs/platform/branding.md#logo). The embedded store is a directory,
// written by a direct PUT to an expiring signed URL that the API serves; the S3-compatible store
// (s3-object-store.ts) hands out presigned PUT URLs to the bucket instead. Both answer the same interface.
import { createHmac, timingSafeEqual, randomBytes } from 'node:crypto';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface UploadGrant { object_key: string; content_type: string; max_bytes: number; expires_at: number }

export interface ObjectStore {
  /** `directory` stores are written through the API's own upload route; `s3` ones directly. */
  readonly kind: 'directory' | 's3';
  /** A URL that accepts one PUT of the object's bytes until the grant expires. */
  uploadUrl(grant: UploadGrant, origin: string): string | Promise<string>;
  /** The object's size, or undefined when there is none. */
  head(objectKey: string): Promise<{ size: number } | undefined>;
  read(objectKey: string): Promise<Buffer | undefined>;
}

/** The store could not be reached or answered an error (not "no such object"). */
export class ObjectStoreError extends Error {
  constructor(message: string, readonly status: number | null) {
    super(message);
    this.name = 'ObjectStoreError';
  }
}

export const OBJECT_KEY = /^[a-z_]+\/[0-9a-f]{32}$/;

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

  async write(objectKey: string, bytes: Buffer): Promise<void> {
    const [prefix, name] = objectKey.split('/');
    await mkdir(join(this.dir, prefix!), { recursive: true });
    await writeFile(join(this.dir, prefix!, name!), bytes);
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

/** The image type the bytes really are, from their magic numbers. */
export function sniffImage(b: Buffer): string | undefined {
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.length >= 6 && (b.subarray(0, 6).toString('latin1') === 'GIF87a' || b.subarray(0, 6).toString('latin1') === 'GIF89a')) return 'image/gif';
  if (b.length >= 12 && b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return undefined;
}
