// An uploaded avatar or logo decoded in full and written again from its pixels alone (docs/platform/
// branding.md#logo, docs/platform/account-holders.md "Avatars"): bytes that do not decode (a truncated
// file, a valid signature before garbage) are refused, and nothing but the pixels survives: no EXIF, XMP,
// ICC profile, text chunk or comment, no embedded thumbnail, no bytes after the image. Each format stays
// itself: PNG (pngjs) and JPEG (jpeg-js) here, GIF with all its frames (omggif, gif-reencode.ts), WebP
// (libwebp as WebAssembly, webp-reencode.ts). The caller has already refused a header declaring more than
// MAX_IMAGE_SIDE x MAX_IMAGE_SIDE pixels (image-dimensions.ts); jpeg-js is also given that limit, so a
// header the cheap check misread is refused before jpeg-js allocates a pixel, and every decoded size is
// checked again.
import { Worker } from 'node:worker_threads';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { PNG } from 'pngjs';
import { decode as decodeJpeg, encode as encodeJpeg } from 'jpeg-js';
import { reencodeGif } from './gif-reencode.ts';
import { ImageDecodeError } from './image-decode-error.ts';
import { MAX_IMAGE_PIXELS, dimensionRefusal } from './image-dimensions.ts';
import { reencodeWebp } from './webp-reencode.ts';

/** The quality a JPEG is written again at (jpeg-js, 1 to 100). */
export const JPEG_QUALITY = 90;

/** The image types that are decoded and written again; an upload of any other type is refused. */
export const REENCODED_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
export type ReencodedType = (typeof REENCODED_TYPES)[number];

export { ImageDecodeError };

interface Pixels { width: number; height: number; data: Uint8Array }

export interface ImageJob { bytes: Uint8Array; contentType: ReencodedType }
export type ImageJobReply = { ok: true; bytes: Uint8Array } | { ok: false; refused: boolean; message: string };

/** The longest one image may take in its worker before it is refused. */
export const REENCODE_TIMEOUT_MS = 60_000;

/**
 * The most images waiting for the worker, the one it works on included: one more is 503 unavailable at
 * once, rather than a request that waits minutes behind the others (2 to 5 MiB each, held meanwhile).
 */
export const MAX_QUEUED_IMAGES = 8;

/**
 * Run from the TypeScript source (npm start, the tests), the worker registers the TypeScript loader first
 * (image-worker-entry.mjs); the compiled build (dist/) runs the compiled worker.
 */
const WORKER_ENTRY = import.meta.url.endsWith('.ts') ? new URL('./image-worker-entry.mjs', import.meta.url) : new URL('./image-worker.js', import.meta.url);

// One image at a time, in one worker kept for the next (loading the decoders takes a moment): a 16 Mpx
// decode holds a few hundred MB, so confirmations queue instead of adding up.
let queue: Promise<unknown> = Promise.resolve();
let queued = 0;
let idle: Worker | undefined;

/**
 * reencodeImage in a worker thread (seconds for a large JPEG, off the API's event loop), one image at a
 * time; rejects with ImageDecodeError for a refused image or one past `timeoutMs` (REENCODE_TIMEOUT_MS;
 * its worker is then ended, and the next image gets a new one), and with CustodyError unavailable when
 * MAX_QUEUED_IMAGES are already waiting.
 */
export function reencodeImageOffThread(bytes: Buffer, contentType: ReencodedType, o: { timeoutMs?: number } = {}): Promise<Buffer> {
  if (queued >= MAX_QUEUED_IMAGES) return Promise.reject(new CustodyError('unavailable', 'object_key: too many uploaded images are being checked now; try again shortly'));
  queued++;
  const go = () => inWorker(bytes, contentType, o.timeoutMs ?? REENCODE_TIMEOUT_MS);
  const run = queue.then(go, go).finally(() => queued--);
  queue = run.catch(() => undefined);
  return run;
}

function inWorker(bytes: Buffer, contentType: ReencodedType, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const worker = idle ?? new Worker(WORKER_ENTRY);
    idle = undefined;
    // Held while it works; an idle worker does not keep the process alive.
    worker.ref();
    let settled = false;
    const settle = (keep: boolean, f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      worker.off('message', onMessage).off('error', onError).off('exit', onExit);
      if (keep) {
        worker.unref();
        idle = worker;
      } else void worker.terminate();
      f();
    };
    const onMessage = (r: ImageJobReply) => settle(true, () => {
      if (r.ok) resolve(Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength));
      else reject(r.refused ? new ImageDecodeError(r.message) : new Error(`image worker: ${r.message}`));
    });
    const onError = (err: Error) => settle(false, () => reject(err));
    const onExit = (code: number) => settle(false, () => reject(new Error(`image worker exited with code ${code} before answering`)));
    worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    const timer = setTimeout(() => settle(false, () => reject(new ImageDecodeError('object_key: the uploaded image takes too long to decode'))), timeoutMs);
    const job: ImageJob = { bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), contentType };
    worker.postMessage(job);
  });
}

/** The image written again from its decoded pixels, in the same format; rejects with ImageDecodeError. */
export async function reencodeImage(bytes: Buffer, contentType: ReencodedType): Promise<Buffer> {
  switch (contentType) {
    case 'image/png': return reencodePng(bytes);
    case 'image/jpeg': return reencodeJpeg(bytes);
    case 'image/gif': return reencodeGif(bytes);
    case 'image/webp': return reencodeWebp(bytes);
  }
}

function checked(p: Pixels): Pixels {
  const refusal = dimensionRefusal(p);
  if (refusal) throw new ImageDecodeError(refusal);
  return p;
}

function reencodePng(bytes: Buffer): Buffer {
  let png: ReturnType<typeof PNG.sync.read>;
  try {
    // CRCs checked; 16-bit samples scaled to 8; palette, grey and tRNS expanded to RGBA.
    png = PNG.sync.read(bytes, { checkCRC: true });
  } catch {
    throw new ImageDecodeError('object_key: the uploaded image is not a complete, valid PNG');
  }
  const { data } = checked(png);
  let alpha = false;
  for (let i = 3; i < data.length; i += 4) if (data[i] !== 255) { alpha = true; break; }
  // Grey stays grey and opaque stays opaque, so a small logo does not grow into RGBA; gamma and every
  // ancillary chunk (tEXt, iTXt, zTXt, eXIf, iCCP, tIME, acTL...) are left behind.
  const colorType = png.color ? (alpha ? 6 : 2) : alpha ? 4 : 0;
  png.gamma = 0;
  return PNG.sync.write(png, { colorType, inputColorType: 6, bitDepth: 8 });
}

function reencodeJpeg(bytes: Buffer): Buffer {
  let img: Pixels & { exifBuffer?: Uint8Array };
  try {
    img = decodeJpeg(bytes, {
      useTArray: true, formatAsRGBA: true,
      // Strict: a missing scan, block or marker is an error, not grey pixels.
      tolerantDecoding: false,
      maxResolutionInMP: MAX_IMAGE_PIXELS / 1e6,
      maxMemoryUsageInMB: 512,
    });
  } catch (err) {
    if (err instanceof Error && /maxResolutionInMP/.test(err.message)) throw new ImageDecodeError('object_key: the uploaded image declares more pixels than accepted');
    throw new ImageDecodeError('object_key: the uploaded image is not a complete, valid JPEG');
  }
  checked(img);
  // EXIF is dropped, so its orientation is applied to the pixels: the image looks as it did.
  const upright = orient(img, exifOrientation(img.exifBuffer));
  return encodeJpeg({ width: upright.width, height: upright.height, data: upright.data }, JPEG_QUALITY).data;
}

/** The EXIF Orientation tag (0x0112) of IFD0, 1 (as stored) when absent or unreadable. */
export function exifOrientation(exif: Uint8Array | undefined): number {
  if (!exif) return 1;
  const b = Buffer.from(exif.buffer, exif.byteOffset, exif.byteLength);
  // jpeg-js hands the APP1 body after "Exif\0": the TIFF header follows the second padding byte.
  const o = b.length > 0 && b[0] === 0 ? 1 : 0;
  if (b.length < o + 8) return 1;
  const order = b.toString('latin1', o, o + 2);
  if (order !== 'II' && order !== 'MM') return 1;
  const le = order === 'II';
  const u16 = (at: number) => (le ? b.readUInt16LE(at) : b.readUInt16BE(at));
  const u32 = (at: number) => (le ? b.readUInt32LE(at) : b.readUInt32BE(at));
  if (u16(o + 2) !== 42) return 1;
  const ifd = o + u32(o + 4);
  if (ifd + 2 > b.length) return 1;
  const n = u16(ifd);
  for (let i = 0; i < n; i++) {
    const e = ifd + 2 + 12 * i;
    if (e + 12 > b.length) return 1;
    // Tag 0x0112, type SHORT (3): the value sits in the entry's first two value bytes.
    if (u16(e) === 0x0112) {
      const v = u16(e + 2) === 3 ? u16(e + 8) : 1;
      return v >= 1 && v <= 8 ? v : 1;
    }
  }
  return 1;
}

/** The RGBA pixels turned as EXIF orientation `o` says (2..8 mirror and/or rotate; 5..8 swap the sides). */
export function orient(p: Pixels, o: number): Pixels {
  if (o < 2 || o > 8) return p;
  const { width: w, height: h, data } = p;
  const swap = o >= 5;
  const dw = swap ? h : w;
  const out = new Uint8Array(data.length);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let dx: number, dy: number;
      switch (o) {
        case 2: dx = w - 1 - x; dy = y; break;
        case 3: dx = w - 1 - x; dy = h - 1 - y; break;
        case 4: dx = x; dy = h - 1 - y; break;
        case 5: dx = y; dy = x; break;
        case 6: dx = h - 1 - y; dy = x; break;
        case 7: dx = h - 1 - y; dy = w - 1 - x; break;
        default: dx = y; dy = w - 1 - x; break;
      }
      const s = (y * w + x) * 4;
      out.set(data.subarray(s, s + 4), (dy * dw + dx) * 4);
    }
  }
  return { width: dw, height: swap ? w : h, data: out };
}
