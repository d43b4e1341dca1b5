// An uploaded WebP decoded in full and written again from its pixels (docs/platform/branding.md#image-checks)
// by libwebp, as WebAssembly (@jsquash/webp): a truncated or corrupt file does not decode, and the new
// file has no EXIF, XMP or ICC chunk and nothing after its end. A lossless upload is written lossless (the
// same pixels), a lossy one lossy at WEBP_QUALITY, as a JPEG is. An animated WebP is refused: libwebp's
// still-image decoder does not take it, and keeping only its first frame would change what was uploaded.
// The package's own loader fetches its .wasm by URL, which Node does not do for files: the .wasm is read
// from node_modules here, compiled once per thread, and each image gets a new instance, so the memory a
// large image grew is given back with it.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { ImageDecodeError } from './image-decode-error.ts';
import { dimensionRefusal } from './image-dimensions.ts';

/** The quality a lossy WebP is written again at (libwebp, 0 to 100). */
export const WEBP_QUALITY = 90;

const INVALID = 'object_key: the uploaded image is not a complete, valid WebP';

export interface RgbaImage { width: number; height: number; data: Uint8ClampedArray }
interface Decoder { decode(data: Uint8Array): RgbaImage | null }
interface Encoder { encode(data: Uint8ClampedArray, width: number, height: number, options: Record<string, number>): Uint8Array | null }
interface WasmInstance { exports: object }
type Factory<M> = (o: { noInitialRun: boolean; instantiateWasm: (imports: object, done: (i: WasmInstance) => void) => object }) => Promise<M>;

// Node has WebAssembly; the TypeScript libraries this project builds with (ES2023, no DOM) do not declare it.
const { Module: WasmModule, Instance: WasmInstance } = (globalThis as unknown as {
  WebAssembly: { Module: new (bytes: Uint8Array) => object; Instance: new (module: object, imports: object) => WasmInstance };
}).WebAssembly;

const resolve = createRequire(import.meta.url).resolve;
const compiled = new Map<string, object>();

/** A new instance of one of the package's codecs (its Emscripten factory and .wasm, non-SIMD: runs anywhere). */
async function codec<M>(name: 'dec/webp_dec' | 'enc/webp_enc'): Promise<M> {
  const factory = ((await import(name === 'dec/webp_dec' ? '@jsquash/webp/codec/dec/webp_dec.js' : '@jsquash/webp/codec/enc/webp_enc.js')) as { default: Factory<M> }).default;
  let wasm = compiled.get(name);
  if (!wasm) compiled.set(name, (wasm = new WasmModule(readFileSync(resolve(`@jsquash/webp/codec/${name}.wasm`)))));
  const module = wasm;
  return factory({
    noInitialRun: true,
    instantiateWasm: (imports, done) => {
      const instance = new WasmInstance(module, imports);
      done(instance);
      return instance.exports;
    },
  });
}

/** Whether the image chunk is lossless (VP8L) or lossy (VP8), and whether the file is an animation. */
function layout(b: Buffer): { lossless: boolean; animated: boolean } | undefined {
  let animated = false;
  for (let at = 12; at + 8 <= b.length;) {
    const fourcc = b.toString('latin1', at, at + 4);
    const size = b.readUInt32LE(at + 4);
    // VP8X flags: the animation bit is 0x02.
    if (fourcc === 'VP8X' && at + 9 <= b.length) animated = (b[at + 8]! & 0x02) !== 0;
    if (fourcc === 'ANIM' || fourcc === 'ANMF') animated = true;
    if (fourcc === 'VP8 ' || fourcc === 'VP8L') return { lossless: fourcc === 'VP8L', animated };
    at += 8 + size + (size & 1);
  }
  // An animation keeps its image chunks inside its ANMF frames.
  return animated ? { lossless: false, animated } : undefined;
}

/** The RGBA pixels of a still WebP, or null when libwebp does not decode it. */
export async function decodeWebp(bytes: Uint8Array): Promise<RgbaImage | null> {
  return (await codec<Decoder>('dec/webp_dec')).decode(bytes);
}

/** A WebP of the RGBA pixels: lossless (every pixel kept, even under full transparency) or lossy at `quality`. */
export async function encodeWebp(img: RgbaImage, o: { lossless: true } | { quality: number }): Promise<Buffer> {
  const { defaultOptions } = await import('@jsquash/webp/meta.js');
  const options = 'lossless' in o ? { ...defaultOptions, lossless: 1, exact: 1 } : { ...defaultOptions, quality: o.quality };
  const out = (await codec<Encoder>('enc/webp_enc')).encode(img.data, img.width, img.height, options);
  if (!out) throw new Error('libwebp could not encode the image');
  // A copy: nothing of the encoder's memory is held after this.
  return Buffer.from(out);
}

/** The WebP written again from its decoded pixels; throws ImageDecodeError. */
export async function reencodeWebp(bytes: Buffer): Promise<Buffer> {
  const l = layout(bytes);
  if (l?.animated) throw new ImageDecodeError('object_key: an animated WebP is not accepted (a still WebP is, and so is an animated GIF)');
  if (!l) throw new ImageDecodeError(INVALID);
  const img = await decodeWebp(bytes);
  if (!img) throw new ImageDecodeError(INVALID);
  const refusal = dimensionRefusal(img);
  if (refusal) throw new ImageDecodeError(refusal);
  return encodeWebp(img, l.lossless ? { lossless: true } : { quality: WEBP_QUALITY });
}
