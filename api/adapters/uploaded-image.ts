// Confirming an image uploaded to the object store (docs/platform/branding.md#logo, docs/platform/
// account-holders.md "Avatars"): what the logo and the avatar flows share. An upload is accepted by what
// its bytes are (sniff-image.ts magic numbers), never by the content type its uploader declared.
import { CustodyError } from '../../core/errors/custody-error.ts';
import { sniffImage } from '../branding/sniff-image.ts';
import { dimensionRefusal, imageDimensions } from './image-dimensions.ts';
import { ObjectStoreError, type ObjectStore } from './object-store.ts';

/** The image types an upload URL may be asked for; the confirmation checks the bytes anyway. */
export const UPLOAD_IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;

/** Object-store failures (unreachable, refused) are the API's 502, never a 500 with the store's text. */
export async function fromStore<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    if (err instanceof ObjectStoreError) throw new CustodyError('object_store_error', 'the object store failed; try again');
    throw err;
  }
}

/**
 * The uploaded object's bytes and real image type: 422 validation_failed naming `object_key` when there
 * is no such object, it is larger than `maxBytes`, its bytes are not a PNG, JPEG, WebP or GIF image, or
 * its header declares no size or more than MAX_IMAGE_SIDE x MAX_IMAGE_SIDE pixels.
 */
export async function confirmUploadedImage(objects: ObjectStore, objectKey: string, maxBytes: number): Promise<{ bytes: Buffer; content_type: string }> {
  const size = await fromStore(() => objects.head(objectKey));
  if (size && size.size > maxBytes) throw new CustodyError('validation_failed', `object_key: the uploaded object is larger than ${maxBytes} bytes`);
  const bytes = size ? await fromStore(() => objects.read(objectKey)) : undefined;
  if (!bytes) throw new CustodyError('validation_failed', 'object_key: no uploaded object with this key');
  const content_type = sniffImage(bytes);
  if (!content_type) throw new CustodyError('validation_failed', 'object_key: the uploaded object is not a PNG, JPEG, WebP or GIF image');
  // The declared size is checked before anything decodes the pixels (a small file may claim 50000x50000).
  const refusal = dimensionRefusal(imageDimensions(bytes, content_type));
  if (refusal) throw new CustodyError('validation_failed', refusal);
  return { bytes, content_type };
}
