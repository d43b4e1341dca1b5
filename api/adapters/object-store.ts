// The object store for uploads (docs/platform/branding.md#logo). The embedded store is a directory
// (directory-object-store.ts), written by a direct PUT to an expiring signed URL that the API serves; the
// S3-compatible store (s3-object-store.ts) hands out presigned PUT URLs to the bucket instead. Both answer
// this interface.
import { CustodyError } from '../../core/errors/custody-error.ts';

export interface UploadGrant { object_key: string; content_type: string; max_bytes: number; expires_at: number }

export interface ObjectStore {
  /** `directory` stores are written through the API's own upload route; `s3` ones directly. */
  readonly kind: 'directory' | 's3';
  /** A URL that accepts one PUT of the object's bytes until the grant expires. */
  uploadUrl(grant: UploadGrant, origin: string): string | Promise<string>;
  /** The object's size, or undefined when there is none. */
  head(objectKey: string): Promise<{ size: number } | undefined>;
  read(objectKey: string): Promise<Buffer | undefined>;
  /** A URL that answers one object's bytes to a plain GET until `expiresAt` (ms): a presigned GET. */
  downloadUrl(objectKey: string, expiresAt: number, origin: string): string | Promise<string>;
  /**
   * Writes an object the API itself makes (a member's data export; a confirmed image written again from
   * its pixels), replacing any under that key; a string is stored as UTF-8.
   */
  put(objectKey: string, body: string | Uint8Array, contentType: string): Promise<void>;
  /** Deletes the object; none under the key is not an error. */
  delete(objectKey: string): Promise<void>;
}

/** The store could not be reached or answered an error (not "no such object"). */
export class ObjectStoreError extends CustodyError {
  constructor(message: string, readonly status: number | null) {
    super('object_store_error', message);
    this.name = 'ObjectStoreError';
  }
}

export const OBJECT_KEY = /^[a-z_]+\/[0-9a-f]{32}$/;
