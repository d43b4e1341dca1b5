// The refusal every decoder of an uploaded image throws (image-reencode.ts and the per-format files
// beside it); the confirmation turns it into 422 validation_failed (uploaded-image.ts).

/** The bytes are not a complete image of their type, or decode to more pixels than accepted. */
export class ImageDecodeError extends Error {
  override readonly name = 'ImageDecodeError';
}
