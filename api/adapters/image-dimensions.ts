// An image's width and height as its header declares them, read without decoding (PNG IHDR, JPEG SOFn,
// GIF logical screen, WebP VP8/VP8L/VP8X), so a decompression bomb is refused before any pixel is
// allocated (docs/platform/account-holders.md "Avatars", docs/platform/branding.md).

/** The largest side and pixel count an uploaded avatar or logo may declare. */
export const MAX_IMAGE_SIDE = 4096;
export const MAX_IMAGE_PIXELS = 16 * 1024 * 1024;

export interface ImageDimensions { width: number; height: number }

function jpeg(b: Buffer): ImageDimensions | undefined {
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1]!;
    if (marker === 0xff) { i++; continue; }
    const len = b.readUInt16BE(i + 2);
    // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
    i += 2 + len;
  }
  return undefined;
}

function webp(b: Buffer): ImageDimensions | undefined {
  if (b.length < 30) return undefined;
  const chunk = b.toString('latin1', 12, 16);
  if (chunk === 'VP8X') return { width: 1 + b.readUIntLE(24, 3), height: 1 + b.readUIntLE(27, 3) };
  if (chunk === 'VP8L') {
    const bits = b.readUInt32LE(21);
    return { width: 1 + (bits & 0x3fff), height: 1 + ((bits >>> 14) & 0x3fff) };
  }
  if (chunk === 'VP8 ') return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  return undefined;
}

/** The declared dimensions of a PNG, JPEG, GIF or WebP of the given (sniffed) type; undefined if unreadable. */
export function imageDimensions(b: Buffer, contentType: string): ImageDimensions | undefined {
  switch (contentType) {
    case 'image/png': return b.length >= 24 && b.toString('latin1', 12, 16) === 'IHDR' ? { width: b.readUInt32BE(16), height: b.readUInt32BE(20) } : undefined;
    case 'image/gif': return b.length >= 10 ? { width: b.readUInt16LE(6), height: b.readUInt16LE(8) } : undefined;
    case 'image/jpeg': return jpeg(b);
    case 'image/webp': return webp(b);
    default: return undefined;
  }
}

/** Null when the declared size is within the limits, else the reason (a sentence about object_key). */
export function dimensionRefusal(d: ImageDimensions | undefined): string | null {
  if (!d || d.width < 1 || d.height < 1) return 'object_key: the uploaded image has no readable dimensions';
  if (d.width > MAX_IMAGE_SIDE || d.height > MAX_IMAGE_SIDE || d.width * d.height > MAX_IMAGE_PIXELS) {
    return `object_key: the uploaded image is ${d.width}x${d.height}; at most ${MAX_IMAGE_SIDE}x${MAX_IMAGE_SIDE} pixels are accepted`;
  }
  return null;
}
