// Images built byte by byte for the upload tests (docs/platform/branding.md#logo, docs/platform/
// account-holders.md "Avatars"): a PNG carrying a tEXt chunk, a JPEG carrying EXIF, XMP and a comment,
// a truncated PNG, a JPEG whose entropy-coded data is garbage, headers declaring huge sizes.
import { crc32 } from 'node:zlib';
import { PNG } from 'pngjs';
import { decode as decodeJpeg, encode as encodeJpeg } from 'jpeg-js';

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

/** A real GIF (1x1, GIF89a): a format no longer taken. */
export const GIF_1X1 = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');

/** The decoded size and RGBA pixels of a PNG or JPEG. */
export function decoded(bytes: Buffer): { width: number; height: number; data: Uint8Array } {
  if (bytes[0] === 0x89) return PNG.sync.read(bytes);
  return decodeJpeg(bytes, { useTArray: true, formatAsRGBA: true, tolerantDecoding: false });
}
