// Images built byte by byte for the upload tests (docs/platform/branding.md#logo, docs/platform/
// account-holders.md "Avatars"): a PNG carrying a tEXt chunk, a JPEG carrying EXIF, XMP and a comment,
// an animated GIF carrying a comment and an XMP application extension, WebPs carrying EXIF, XMP and ICC
// chunks, truncated and corrupt files of each format, headers declaring huge sizes.
import { crc32 } from 'node:zlib';
import { PNG } from 'pngjs';
import { decode as decodeJpeg, encode as encodeJpeg } from 'jpeg-js';
import { GifReader, GifWriter } from 'omggif';
import { encodeWebp } from '../../api/adapters/webp-reencode.ts';

/** What the metadata says: none of it may be found in a confirmed image. */
export const SECRET = 'secret-home-51.5007N-0.1246W';

/** Width x height RGBA pixels, each a different colour, opaque. */
export function pixels(width: number, height: number): Buffer {
  const data = Buffer.alloc(width * height * 4);
  for (let i = 0; i < width * height; i++) data.set([(i * 37) & 255, (i * 91) & 255, (i * 13 + 80) & 255, 255], i * 4);
  return data;
}

export function plainPng(width: number, height: number): Buffer {
  const p = new PNG({ width, height });
  pixels(width, height).copy(p.data);
  return PNG.sync.write(p);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), 8 + data.length);
  return out;
}

/** A PNG with a tEXt chunk (and an iTXt one) before its image data. */
export function pngWithText(width: number, height: number): Buffer {
  const png = plainPng(width, height);
  const ihdrEnd = 8 + 25;
  const text = pngChunk('tEXt', Buffer.from(`Comment\0${SECRET}`, 'latin1'));
  const itxt = pngChunk('iTXt', Buffer.from(`XML:com.adobe.xmp\0\0\0\0\0<x:xmpmeta>${SECRET}</x:xmpmeta>`, 'utf8'));
  return Buffer.concat([png.subarray(0, ihdrEnd), text, itxt, png.subarray(ihdrEnd)]);
}

/** A JPEG of the pixels (jpeg-js, quality 95). */
export function plainJpeg(width: number, height: number, data = pixels(width, height)): Buffer {
  return encodeJpeg({ width, height, data }, 95).data;
}

function segment(marker: number, body: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt16BE(0xff00 | marker, 0);
  head.writeUInt16BE(body.length + 2, 2);
  return Buffer.concat([head, body]);
}

/** An EXIF APP1 body: a little-endian TIFF header, IFD0 with Orientation and an ImageDescription. */
export function exifApp1(orientation: number): Buffer {
  const desc = Buffer.from(`${SECRET}\0`, 'latin1');
  const tiff = Buffer.alloc(8 + 2 + 2 * 12 + 4);
  tiff.write('II', 0, 'latin1');
  tiff.writeUInt16LE(42, 2);
  tiff.writeUInt32LE(8, 4);
  tiff.writeUInt16LE(2, 8);
  // 0x010E ImageDescription, ASCII, its text after the IFD.
  tiff.writeUInt16LE(0x010e, 10); tiff.writeUInt16LE(2, 12); tiff.writeUInt32LE(desc.length, 14); tiff.writeUInt32LE(tiff.length, 18);
  // 0x0112 Orientation, SHORT, one value.
  tiff.writeUInt16LE(0x0112, 22); tiff.writeUInt16LE(3, 24); tiff.writeUInt32LE(1, 26); tiff.writeUInt16LE(orientation, 30);
  tiff.writeUInt32LE(0, 34);
  return segment(0xe1, Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff, desc]));
}

/** A JPEG with an EXIF APP1 segment (orientation as given), an XMP APP1 and a COM segment after its SOI. */
export function jpegWithExif(width: number, height: number, orientation = 1, data?: Buffer): Buffer {
  const jpeg = plainJpeg(width, height, data);
  const xmp = segment(0xe1, Buffer.from(`http://ns.adobe.com/xap/1.0/\0<x:xmpmeta>${SECRET}</x:xmpmeta>`, 'latin1'));
  const com = segment(0xfe, Buffer.from(SECRET, 'latin1'));
  return Buffer.concat([jpeg.subarray(0, 2), exifApp1(orientation), xmp, com, jpeg.subarray(2)]);
}

/** The offset just past the SOS segment: where the entropy-coded data starts. */
function scanStart(jpeg: Buffer): number {
  let i = 2;
  while (i + 4 <= jpeg.length) {
    const marker = jpeg.readUInt16BE(i);
    const len = jpeg.readUInt16BE(i + 2);
    if (marker === 0xffda) return i + 2 + len;
    i += 2 + len;
  }
  throw new Error('no SOS');
}

/** A JPEG whose markers (SOI, DQT, SOF, DHT, SOS, EOI) are right and whose scan data is garbage. */
export function garbageJpeg(width: number, height: number): Buffer {
  const jpeg = plainJpeg(width, height);
  const start = scanStart(jpeg);
  const garbage = Buffer.alloc(jpeg.length - start - 2);
  for (let i = 0; i < garbage.length; i++) garbage[i] = i % 2 ? 0x41 : 0xff;
  return Buffer.concat([jpeg.subarray(0, start), garbage, Buffer.from([0xff, 0xd9])]);
}

/** A small real JPEG with a second SOF0 declaring `side` x `side` pixels before its scan. */
export function jpegWithSecondFrame(side: number): Buffer {
  const jpeg = plainJpeg(8, 8);
  let i = 2;
  for (;;) {
    const marker = jpeg.readUInt16BE(i);
    const len = jpeg.readUInt16BE(i + 2);
    if (marker === 0xffc0) {
      const sof = Buffer.from(jpeg.subarray(i, i + 2 + len));
      sof.writeUInt16BE(side, 5);
      sof.writeUInt16BE(side, 7);
      return Buffer.concat([jpeg.subarray(0, i + 2 + len), sof, jpeg.subarray(i + 2 + len)]);
    }
    i += 2 + len;
  }
}

/** A PNG whose IHDR declares width x height pixels (its CRC fixed) over a tiny real image's data. */
export function pngDeclaring(width: number, height: number): Buffer {
  const png = Buffer.from(plainPng(2, 2));
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
  return png;
}

/** A real GIF from another encoder (1x1, GIF89a: a global palette, a graphic control extension). */
export const GIF_1X1 = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');

/** One GIF frame: where it sits, its palette (0xRRGGBB, a power of two long) and its palette indices. */
export interface GifFrame { x: number; y: number; width: number; height: number; palette: number[]; indices: number[]; delay?: number; disposal?: number; transparent?: number }

/** A GIF of the frames (omggif), looping forever unless `loop` says otherwise. */
export function gif(width: number, height: number, frames: GifFrame[], loop: number | undefined = 0): Buffer {
  const buf = Buffer.alloc(1024 + frames.reduce((n, f) => n + 2 * f.indices.length + 1024, 0));
  const w = new GifWriter(buf, width, height, loop === undefined ? {} : { loop });
  for (const f of frames) w.addFrame(f.x, f.y, f.width, f.height, f.indices, { palette: f.palette, delay: f.delay ?? 0, disposal: f.disposal ?? 0, ...(f.transparent === undefined ? {} : { transparent: f.transparent }) });
  return buf.subarray(0, w.end());
}

/**
 * Three frames on a 12x8 screen: a full opaque frame, a 5x4 frame at (3,2) with a transparent hole, and a
 * 4x4 frame disposed to the background; 10, 20 and 30 hundredths of a second.
 */
export function animatedGif(): Buffer {
  const full = Array.from({ length: 12 * 8 }, (_, i) => i % 4);
  const hole = Array.from({ length: 5 * 4 }, (_, i) => (i % 3 === 0 ? 3 : i % 2));
  return gif(12, 8, [
    { x: 0, y: 0, width: 12, height: 8, palette: [0xff0000, 0x00ff00, 0x0000ff, 0xffffff], indices: full, delay: 10, disposal: 1 },
    { x: 3, y: 2, width: 5, height: 4, palette: [0x102030, 0x405060, 0x708090, 0x000000], indices: hole, delay: 20, disposal: 1, transparent: 3 },
    { x: 8, y: 4, width: 4, height: 4, palette: [0xabcdef, 0x123456], indices: Array.from({ length: 16 }, (_, i) => i & 1), delay: 30, disposal: 2 },
  ]);
}

/** A GIF with a comment and an XMP application extension after its header, and bytes after its trailer. */
export function gifWithMetadata(g = animatedGif()): Buffer {
  const sub = (b: Buffer) => Buffer.concat([Buffer.from([b.length]), b, Buffer.from([0])]);
  const comment = Buffer.concat([Buffer.from([0x21, 0xfe]), sub(Buffer.from(SECRET, 'latin1'))]);
  const xmp = Buffer.concat([Buffer.from([0x21, 0xff, 0x0b]), Buffer.from('XMP DataXMP', 'latin1'), sub(Buffer.from(`<x:xmpmeta>${SECRET}</x:xmpmeta>`, 'latin1'))]);
  // After the logical screen descriptor (13 bytes; no global palette from omggif without one).
  return Buffer.concat([g.subarray(0, 13), comment, xmp, g.subarray(13), Buffer.from(`trailing ${SECRET}`, 'latin1')]);
}

/** The GIF's screen size, loop count and, for each frame, its placement, timing and the screen's RGBA after it alone. */
export function gifFrames(bytes: Buffer) {
  const r = new GifReader(bytes);
  return {
    width: r.width, height: r.height, loop: r.loopCount(),
    frames: Array.from({ length: r.numFrames() }, (_, i) => {
      const { x, y, width, height, delay, disposal, transparent_index } = r.frameInfo(i);
      const rgba = new Uint8Array(r.width * r.height * 4);
      r.decodeAndBlitFrameRGBA(i, rgba);
      return { x, y, width, height, delay, disposal, transparent: transparent_index !== null, rgba: Buffer.from(rgba) };
    }),
  };
}

/** The offset of the GIF's first image descriptor (0x2C) after its header and extensions. */
function firstImage(g: Buffer): number {
  let p = 13 + ((g[10]! & 0x80) ? 3 << ((g[10]! & 7) + 1) : 0);
  while (g[p] === 0x21) {
    p += 2;
    while (g[p] !== 0) p += g[p]! + 1;
    p++;
  }
  return p;
}

/** A one-frame 4x4 GIF whose LZW data is a clear code and the end code: no pixels at all. */
export function gifWithoutPixels(): Buffer {
  const g = gif(4, 4, [{ x: 0, y: 0, width: 4, height: 4, palette: [0, 0xffffff, 0xff0000, 0x00ff00], indices: Array(16).fill(1) }], undefined);
  const data = firstImage(g) + 10 + 12;
  // Code size 2: clear is 4, end is 5, each 3 bits: 100 then 101, low bits first (0b101100 = 0x2C).
  return Buffer.concat([g.subarray(0, data), Buffer.from([2, 1, 0x2c, 0, 0x3b])]);
}

/** A GIF whose second frame's pixels use index 3 of a 2-colour palette. */
export function gifIndexPastPalette(): Buffer {
  return gif(4, 2, [{ x: 0, y: 0, width: 4, height: 2, palette: [0xff0000, 0x00ff00], indices: [0, 1, 0, 1, 3, 3, 3, 3] }], undefined);
}

/** The animated GIF with its first frame moved to x = 1: past the screen's right edge. */
export function gifFrameOffScreen(): Buffer {
  const g = Buffer.from(animatedGif());
  g.writeUInt16LE(1, firstImage(g) + 1);
  return g;
}

/** A GIF of `count` 1x1 frames on a `width` x `height` screen. */
export function gifOfFrames(count: number, width = 1, height = 1): Buffer {
  return gif(width, height, Array.from({ length: count }, () => ({ x: 0, y: 0, width: 1, height: 1, palette: [0, 0xffffff], indices: [1] })));
}

function riffChunk(fourcc: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(fourcc, 0, 'latin1');
  head.writeUInt32LE(data.length, 4);
  return Buffer.concat([head, data, Buffer.alloc(data.length & 1)]);
}

function riff(chunks: Buffer[]): Buffer {
  const body = Buffer.concat([Buffer.from('WEBP', 'latin1'), ...chunks]);
  const head = Buffer.alloc(8);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(body.length, 4);
  return Buffer.concat([head, body]);
}

/** The chunks of a WebP after its RIFF header: fourcc and data. */
export function webpChunks(b: Buffer): { fourcc: string; data: Buffer }[] {
  const out: { fourcc: string; data: Buffer }[] = [];
  for (let at = 12; at + 8 <= b.length;) {
    const size = b.readUInt32LE(at + 4);
    out.push({ fourcc: b.toString('latin1', at, at + 4), data: b.subarray(at + 8, at + 8 + size) });
    at += 8 + size + (size & 1);
  }
  return out;
}

/** Width x height RGBA pixels with a transparent column on the left and half-transparent ones next to it. */
export function pixelsWithAlpha(width: number, height: number): Buffer {
  const data = pixels(width, height);
  for (let y = 0; y < height; y++) {
    data[(y * width) * 4 + 3] = 0;
    if (width > 1) data[(y * width + 1) * 4 + 3] = 128;
  }
  return data;
}

/** A lossless WebP (VP8L) of the pixels. */
export async function losslessWebp(width: number, height: number, data = pixels(width, height)): Promise<Buffer> {
  return encodeWebp({ width, height, data: new Uint8ClampedArray(data) }, { lossless: true });
}

/** A lossy WebP (VP8, with ALPH when the pixels have alpha) at quality 95. */
export async function lossyWebp(width: number, height: number, data = pixels(width, height)): Promise<Buffer> {
  return encodeWebp({ width, height, data: new Uint8ClampedArray(data) }, { quality: 95 });
}

/**
 * The WebP rewritten as the extended format: VP8X (flags ICC, alpha, EXIF, XMP), an ICCP chunk, the
 * image's own chunks, then EXIF and XMP chunks, each carrying SECRET.
 */
export function webpWithMetadata(webp: Buffer, width: number, height: number): Buffer {
  const image = webpChunks(webp).filter((c) => c.fourcc !== 'VP8X');
  const vp8x = Buffer.alloc(10);
  vp8x[0] = 0x20 | 0x10 | 0x08 | 0x04;
  vp8x.writeUIntLE(width - 1, 4, 3);
  vp8x.writeUIntLE(height - 1, 7, 3);
  const exif = Buffer.concat([Buffer.from('II*\0\x08\0\0\0', 'latin1'), Buffer.from(SECRET, 'latin1')]);
  return riff([
    riffChunk('VP8X', vp8x),
    riffChunk('ICCP', Buffer.from(`icc ${SECRET}`, 'latin1')),
    ...image.map((c) => riffChunk(c.fourcc, c.data)),
    riffChunk('EXIF', exif),
    riffChunk('XMP ', Buffer.from(`<x:xmpmeta>${SECRET}</x:xmpmeta>`, 'latin1')),
  ]);
}

/** A WebP (VP8X with the animation flag, ANIM, one ANMF frame holding the image's chunks). */
export function animatedWebp(webp: Buffer, width: number, height: number): Buffer {
  const vp8x = Buffer.alloc(10);
  vp8x[0] = 0x02;
  vp8x.writeUIntLE(width - 1, 4, 3);
  vp8x.writeUIntLE(height - 1, 7, 3);
  const frame = Buffer.alloc(16);
  frame.writeUIntLE(width - 1, 6, 3);
  frame.writeUIntLE(height - 1, 9, 3);
  frame.writeUIntLE(100, 12, 3);
  const image = webpChunks(webp).filter((c) => c.fourcc !== 'VP8X').map((c) => riffChunk(c.fourcc, c.data));
  return riff([riffChunk('VP8X', vp8x), riffChunk('ANIM', Buffer.alloc(6)), riffChunk('ANMF', Buffer.concat([frame, ...image]))]);
}

/** A WebP whose VP8X declares `width` x `height` in front of a small real image. */
export function webpDeclaring(webp: Buffer, width: number, height: number): Buffer {
  const vp8x = Buffer.alloc(10);
  vp8x.writeUIntLE(width - 1, 4, 3);
  vp8x.writeUIntLE(height - 1, 7, 3);
  return riff([riffChunk('VP8X', vp8x), ...webpChunks(webp).filter((c) => c.fourcc !== 'VP8X').map((c) => riffChunk(c.fourcc, c.data))]);
}

/** The WebP with its image chunk's data after the first `keep` bytes replaced by a repeating pattern. */
export function garbageWebp(webp: Buffer, keep = 5): Buffer {
  const out = Buffer.from(webp);
  const at = webpChunks(webp).findIndex((c) => c.fourcc === 'VP8L' || c.fourcc === 'VP8 ');
  const chunk = webpChunks(webp)[at]!;
  const start = chunk.data.byteOffset - webp.byteOffset + keep;
  for (let i = start; i < start + chunk.data.length - keep; i++) out[i] = i % 3 ? 0xa5 : 0x5a;
  return out;
}

/** The decoded size and RGBA pixels of a PNG or JPEG. */
export function decoded(bytes: Buffer): { width: number; height: number; data: Uint8Array } {
  if (bytes[0] === 0x89) return PNG.sync.read(bytes);
  return decodeJpeg(bytes, { useTArray: true, formatAsRGBA: true, tolerantDecoding: false });
}
