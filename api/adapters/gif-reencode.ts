// An uploaded GIF decoded in full and written again from its frames (docs/platform/branding.md#image-checks):
// every frame keeps its place, size, palette, delay, disposal and transparent colour, and the loop count
// is kept, so an animation stays the animation that was uploaded; comments, application extensions
// (XMP among them) and bytes after the trailer are left behind. omggif (pure JavaScript) reads and writes.
// omggif is lenient where this must not be, so the checks it lacks are made around it: the trailer must
// be reached, frames must lie inside the screen and have a palette, the pixel data must fill each frame
// exactly, and every pixel must be a colour of its frame's palette.
import { GifReader, GifWriter } from 'omggif';
import { ImageDecodeError } from './image-decode-error.ts';
import { MAX_IMAGE_PIXELS, dimensionRefusal } from './image-dimensions.ts';

/** The most frames an uploaded GIF may have. */
export const MAX_GIF_FRAMES = 500;

/**
 * The most pixels all of a GIF's frames may show, frames x screen width x screen height: what a viewer
 * composes, and a bound on the decoding work (four 16 Mpx stills, or 500 frames of about 360 x 360).
 */
export const MAX_GIF_PIXELS = 4 * MAX_IMAGE_PIXELS;

const INVALID = 'object_key: the uploaded image is not a complete, valid GIF';

/** The GIF written again from its decoded frames; throws ImageDecodeError. */
export function reencodeGif(bytes: Buffer): Buffer {
  // omggif stops quietly at the end of its input, so a file cut off between two blocks would read as
  // complete. Behind the upload goes one byte no block can start or end with (0xFF): the reader ends
  // without an error only if it stopped at the trailer (0x3B) before that byte (a file cut inside its
  // header reads as no frames, refused below).
  const buf = Buffer.concat([bytes, Buffer.from([0xff])]);
  let reader: GifReader;
  try {
    reader = new GifReader(buf);
  } catch {
    throw new ImageDecodeError(INVALID);
  }
  const { width, height } = reader;
  const refusal = dimensionRefusal({ width, height });
  if (refusal) throw new ImageDecodeError(refusal);
  const count = reader.numFrames();
  if (count < 1) throw new ImageDecodeError(INVALID);
  if (count > MAX_GIF_FRAMES) throw new ImageDecodeError(`object_key: the uploaded GIF has ${count} frames; at most ${MAX_GIF_FRAMES} are accepted`);
  if (count * width * height > MAX_GIF_PIXELS) {
    throw new ImageDecodeError(`object_key: the uploaded GIF is ${count} frames of ${width}x${height}; at most ${MAX_GIF_PIXELS} pixels in all its frames are accepted`);
  }
  const frames = Array.from({ length: count }, (_, i) => reader.frameInfo(i));
  for (const f of frames) {
    const codeSize = buf[f.data_offset]!;
    if (f.palette_offset === null || f.palette_size === null || f.width < 1 || f.height < 1 || f.x + f.width > width || f.y + f.height > height || codeSize < 2 || codeSize > 8) {
      throw new ImageDecodeError(INVALID);
    }
  }

  // At most 12 bits of LZW code a pixel, one length byte in 256, and a frame's header and palette.
  const area = frames.reduce((n, f) => n + f.width * f.height, 0);
  const out = new Uint8Array(64 + Math.ceil(area * 1.6) + count * 1100);
  const loop = reader.loopCount();
  const writer = new GifWriter(out, width, height, loop === null ? {} : { loop });
  const canvas = new Uint8Array(width * height * 4);
  for (const [i, f] of frames.entries()) {
    // A fresh transparent canvas: the frame's pixels come out opaque, its transparent ones stay at alpha 0.
    canvas.fill(0);
    if (lzwMismatch(() => reader.decodeAndBlitFrameRGBA(i, canvas))) throw new ImageDecodeError(INVALID);
    const palette: number[] = [];
    for (let j = 0; j < f.palette_size!; j++) palette.push(buf.readUIntBE(f.palette_offset! + 3 * j, 3));
    const trans = f.transparent_index !== null && f.transparent_index < palette.length ? f.transparent_index : undefined;
    // A colour's first index (not the transparent one, whose colour is never shown).
    const indexOf = new Map<number, number>();
    for (const [j, c] of palette.entries()) if (j !== trans && !indexOf.has(c)) indexOf.set(c, j);
    const indexed = new Uint8Array(f.width * f.height);
    for (let y = 0; y < f.height; y++) {
      for (let x = 0; x < f.width; x++) {
        const o = ((f.y + y) * width + f.x + x) * 4;
        // A colour outside the palette (or transparency without a valid index) came from an index past it.
        const j = canvas[o + 3] === 0 ? trans : indexOf.get((canvas[o]! << 16) | (canvas[o + 1]! << 8) | canvas[o + 2]!);
        if (j === undefined) throw new ImageDecodeError(INVALID);
        indexed[y * f.width + x] = j;
      }
    }
    // Disposal 4 to 7 is reserved: viewers treat it as none specified (0).
    writer.addFrame(f.x, f.y, f.width, f.height, indexed as unknown as number[], { palette, delay: f.delay, disposal: f.disposal <= 3 ? f.disposal : 0, ...(trans === undefined ? {} : { transparent: trans }) });
  }
  const end = writer.end();
  // omggif writes into a fixed buffer and drops what does not fit; the bound above leaves room to spare.
  if (end >= out.length) throw new Error(`GIF re-encoding overran its ${out.length}-byte buffer`);
  return Buffer.from(out.buffer, 0, end);
}

/**
 * Runs an omggif frame decode; true when its LZW data gave fewer or more pixels than the frame has:
 * omggif 1.0.10 only logs that ("Warning, gif stream shorter/longer than expected.") and leaves the rest
 * of the frame as index 0, so the log line is caught here for the length of the (synchronous) call.
 */
function lzwMismatch(decode: () => void): boolean {
  const log = console.log;
  let mismatch = false;
  console.log = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].startsWith('Warning, gif stream')) mismatch = true;
    else log(...args);
  };
  try {
    decode();
  } finally {
    console.log = log;
  }
  return mismatch;
}
