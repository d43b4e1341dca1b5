// Confirming an image uploaded to the object store (docs/platform/branding.md#logo, docs/platform/
// account-holders.md "Avatars"): what the logo and the avatar flows share. An upload is accepted by what
// its bytes are (sniff-image.ts magic numbers), never by the content type its uploader declared, and only
// once it decodes in full; what is kept is the image written again from its pixels (image-reencode.ts).
import { CustodyError } from '../../core/errors/custody-error.ts';
import { sniffImage } from '../branding/sniff-image.ts';
import { dimensionRefusal, imageDimensions } from './image-dimensions.ts';
import { ImageDecodeError, REENCODED_TYPES, reencodeImageOffThread, type ReencodedType } from './image-reencode.ts';
import { ObjectStoreError, type ObjectStore } from './object-store.ts';

/**
 * The image types an upload URL may be asked for (platform-api.md "logo content types"); the confirmation
 * checks the bytes anyway, and decodes and writes again each of them (docs/platform/branding.md#image-formats).
 */
export const UPLOAD_IMAGE_TYPES = REENCODED_TYPES;

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
 * Confirms the uploaded object as an image: 422 validation_failed naming `object_key` when there is no
 * such object, it is larger than `maxBytes`, its bytes are not a PNG, JPEG, GIF or WebP image, its header
 * declares no size or more than MAX_IMAGE_SIDE x MAX_IMAGE_SIDE pixels (checked before anything decodes
 * the pixels), or it does not decode in full (nor, for a GIF, within MAX_GIF_FRAMES frames and
 * MAX_GIF_PIXELS in all; an animated WebP is refused). Then the object is replaced by the image written
 * again from its pixels (no metadata), stored with its real type; answers those bytes and that type. A
 * refusal writes nothing.
 */
export async function confirmUploadedImage(objects: ObjectStore, objectKey: string, maxBytes: number): Promise<{ bytes: Buffer; content_type: ReencodedType }> {
  const size = await fromStore(() => objects.head(objectKey));
  if (size && size.size > maxBytes) throw new CustodyError('validation_failed', `object_key: the uploaded object is larger than ${maxBytes} bytes`);
  const upload = size ? await fromStore(() => objects.read(objectKey)) : undefined;
  if (!upload) throw new CustodyError('validation_failed', 'object_key: no uploaded object with this key');
  const content_type = REENCODED_TYPES.find((t) => t === sniffImage(upload));
  if (!content_type) throw new CustodyError('validation_failed', 'object_key: the uploaded object is not a PNG, JPEG, GIF or WebP image');
  // The declared size is checked before anything decodes the pixels (a small file may claim 50000x50000).
  const refusal = dimensionRefusal(imageDimensions(upload, content_type));
  if (refusal) throw new CustodyError('validation_failed', refusal);
  let bytes: Buffer;
  try {
    bytes = await reencodeImageOffThread(upload, content_type);
  } catch (err) {
    if (err instanceof ImageDecodeError) throw new CustodyError('validation_failed', err.message);
    throw err;
  }
  await fromStore(() => objects.put(objectKey, bytes, content_type));
  return { bytes, content_type };
}
