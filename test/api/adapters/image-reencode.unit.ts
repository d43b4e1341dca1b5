// An uploaded image decoded in full and written again from its pixels (api/adapters/image-reencode.ts,
// gif-reencode.ts, webp-reencode.ts): metadata does not survive, the size and pixels do (and a GIF's
// frames and timing), EXIF orientation is applied, bytes that do not decode and images past the pixel and
// frame limits are refused, and the worker thread answers the same.
import t from 'tap';
import { ImageDecodeError, MAX_QUEUED_IMAGES, exifOrientation, orient, reencodeImage, reencodeImageOffThread } from '../../../api/adapters/image-reencode.ts';
import { MAX_GIF_FRAMES } from '../../../api/adapters/gif-reencode.ts';
import { decodeWebp } from '../../../api/adapters/webp-reencode.ts';
import {
  GIF_1X1, SECRET, animatedGif, animatedWebp, decoded, exifApp1, garbageJpeg, garbageWebp, gifFrameOffScreen, gifFrames, gifIndexPastPalette, gifOfFrames, gifWithMetadata,
  gifWithoutPixels, jpegWithExif, jpegWithSecondFrame, losslessWebp, lossyWebp, pixels, pixelsWithAlpha, pngWithText, plainPng, webpChunks, webpDeclaring, webpWithMetadata,
} from '../image-fixtures.ts';

const has = (b: Buffer, s: string) => b.includes(Buffer.from(s, 'latin1'));

t.test('PNG: the tEXt and iTXt chunks are gone; the same size and the same pixels', async (t) => {
  const src = pngWithText(5, 3);
  t.ok(has(src, SECRET) && has(src, 'tEXt'), 'the fixture carries the metadata');
  const out = await reencodeImage(src, 'image/png');
  t.notOk(has(out, SECRET), 'no metadata text');
  t.notOk(has(out, 'tEXt') || has(out, 'iTXt'), 'no text chunk');
  const d = decoded(out);
  t.same([d.width, d.height], [5, 3]);
  t.same(Buffer.from(d.data), pixels(5, 3), 'lossless: the same pixels');
  t.same(await reencodeImage(out, 'image/png'), out, 'writing a clean image again gives the same bytes');
});

t.test('JPEG: EXIF, XMP and the comment are gone; the same size', async (t) => {
  const src = jpegWithExif(16, 8);
  t.ok(has(src, 'Exif\0') && has(src, SECRET));
  const out = await reencodeImage(src, 'image/jpeg');
  t.notOk(has(out, SECRET), 'no metadata text');
  t.notOk(has(out, 'Exif') || has(out, 'http://ns.adobe.com/xap'), 'no EXIF or XMP segment');
  for (let i = 2; i + 1 < out.length && out[i] === 0xff && out[i + 1] !== 0xda; i += 2 + out.readUInt16BE(i + 2)) {
    t.not(out[i + 1], 0xe1, 'no APP1');
    t.not(out[i + 1], 0xfe, 'no COM');
  }
  const d = decoded(out);
  t.same([d.width, d.height], [16, 8]);
});

t.test('JPEG: EXIF orientation 6 is applied to the pixels, then dropped', async (t) => {
  t.equal(exifOrientation(exifApp1(6).subarray(4 + 5)), 6, 'read from the APP1 body after "Exif\\0"');
  t.equal(exifOrientation(Buffer.from('nonsense')), 1, 'unreadable: as stored');
  // Left half red, right half blue, 16x8: turned clockwise it is 8x16, top half red, bottom half blue.
  const data = Buffer.alloc(16 * 8 * 4);
  for (let y = 0; y < 8; y++) for (let x = 0; x < 16; x++) data.set(x < 8 ? [255, 0, 0, 255] : [0, 0, 255, 255], (y * 16 + x) * 4);
  const d = decoded(await reencodeImage(jpegWithExif(16, 8, 6, data), 'image/jpeg'));
  t.same([d.width, d.height], [8, 16], 'the sides swap');
  const at = (x: number, y: number) => Array.from(d.data.subarray((y * 8 + x) * 4, (y * 8 + x) * 4 + 3));
  t.ok(at(4, 2)[0]! > 200 && at(4, 2)[2]! < 60, 'top is red');
  t.ok(at(4, 13)[2]! > 200 && at(4, 13)[0]! < 60, 'bottom is blue');
  // Every orientation maps a 3x2 image's pixels one to one.
  const src = { width: 3, height: 2, data: Uint8Array.from({ length: 24 }, (_, i) => (i >> 2) + 1) };
  const expect: Record<number, number[]> = { 2: [3, 2, 1, 6, 5, 4], 3: [6, 5, 4, 3, 2, 1], 4: [4, 5, 6, 1, 2, 3], 5: [1, 4, 2, 5, 3, 6], 6: [4, 1, 5, 2, 6, 3], 7: [6, 3, 5, 2, 4, 1], 8: [3, 6, 2, 5, 1, 4] };
  for (const [o, want] of Object.entries(expect)) {
    const r = orient(src, Number(o));
    t.same([r.width, r.height], Number(o) >= 5 ? [2, 3] : [3, 2], `orientation ${o}: sides`);
    t.same(Array.from(r.data).filter((_, i) => i % 4 === 0), want, `orientation ${o}: pixels`);
  }
});

t.test('refused: a truncated PNG, a JPEG with a garbage scan, a second frame past the limit', async (t) => {
  const png = plainPng(6, 6);
  for (const cut of [png.length - 12, png.length - 20, 45]) await t.rejects(reencodeImage(png.subarray(0, cut), 'image/png'), ImageDecodeError, `PNG cut at ${cut}`);
  const crc = Buffer.from(png);
  crc[crc.length - 20]! ^= 1;
  await t.rejects(reencodeImage(crc, 'image/png'), { message: /not a complete, valid PNG/ }, 'a flipped bit in the image data (CRC)');
  await t.rejects(reencodeImage(garbageJpeg(16, 16), 'image/jpeg'), { message: /not a complete, valid JPEG/ });
  const jpeg = jpegWithExif(16, 16);
  await t.rejects(reencodeImage(jpeg.subarray(0, jpeg.length - 2), 'image/jpeg'), ImageDecodeError, 'a JPEG without its end');
  // The cheap header check reads the first frame (8x8); jpeg-js refuses the second at its header.
  const before = process.memoryUsage().arrayBuffers;
  await t.rejects(reencodeImage(jpegWithSecondFrame(60_000), 'image/jpeg'), { message: /declares more pixels than accepted/ });
  t.ok(process.memoryUsage().arrayBuffers - before < 64 * 1024 * 1024, 'refused before the pixels are allocated');
});

t.test('GIF: every frame with its place, delay, disposal and transparency, and the loop count, kept; the comment, the XMP extension and the bytes after the trailer gone', async (t) => {
  const src = gifWithMetadata();
  t.ok(has(src, SECRET) && has(src, 'XMP DataXMP'), 'the fixture carries the metadata');
  const out = await reencodeImage(src, 'image/gif');
  t.notOk(has(out, SECRET) || has(out, 'XMP DataXMP'), 'no comment, no XMP');
  t.equal(out.at(-1), 0x3b, 'nothing after the trailer');
  const [before, after] = [gifFrames(src), gifFrames(out)];
  t.equal(after.frames.length, 3, 'all three frames');
  t.same([after.width, after.height, after.loop], [12, 8, 0], 'the screen and the loop count');
  for (const [i, f] of after.frames.entries()) {
    const { rgba, ...place } = before.frames[i]!;
    t.same({ ...f, rgba: undefined }, { ...place, rgba: undefined }, `frame ${i}: place, delay, disposal, transparency`);
    t.ok(f.rgba.equals(rgba), `frame ${i}: the same pixels`);
  }
  t.same(out, await reencodeImage(animatedGif(), 'image/gif'), 'what the same GIF without metadata gives');
});

t.test('GIF from another encoder (a global palette and a graphic control extension): the same pixels', async (t) => {
  const out = await reencodeImage(GIF_1X1, 'image/gif');
  t.same(gifFrames(out).frames.map((f) => f.rgba), gifFrames(GIF_1X1).frames.map((f) => f.rgba));
});

t.test('GIF refused: no trailer, cut short, pixel data that ends early, an index past the palette, a frame off the screen, too many frames or pixels', async (t) => {
  const g = animatedGif();
  const refused: [string, Buffer, RegExp][] = [
    ['without its trailer', g.subarray(0, g.length - 1), /not a complete, valid GIF/],
    ['cut inside its last frame', g.subarray(0, g.length - 10), /not a complete, valid GIF/],
    ['cut inside its header', g.subarray(0, 11), /not a complete, valid GIF/],
    ['LZW data that ends before the pixels do', gifWithoutPixels(), /not a complete, valid GIF/],
    ['a pixel index past its palette', gifIndexPastPalette(), /not a complete, valid GIF/],
    ['a frame past the screen', gifFrameOffScreen(), /not a complete, valid GIF/],
    [`${MAX_GIF_FRAMES + 1} frames`, gifOfFrames(MAX_GIF_FRAMES + 1), /has 501 frames; at most 500 are accepted/],
    ['5 frames of 4096x4096', gifOfFrames(5, 4096, 4096), /is 5 frames of 4096x4096; at most 67108864 pixels in all its frames/],
  ];
  for (const [what, bytes, why] of refused) await t.rejects(reencodeImage(bytes, 'image/gif'), { name: 'ImageDecodeError', message: why }, what);
  t.equal(gifFrames(await reencodeImage(gifOfFrames(MAX_GIF_FRAMES), 'image/gif')).frames.length, MAX_GIF_FRAMES, `${MAX_GIF_FRAMES} frames are taken`);
});

t.test('WebP, lossless: the ICC, EXIF and XMP chunks are gone; still lossless, every pixel kept (alpha too)', async (t) => {
  const data = pixelsWithAlpha(9, 5);
  const src = webpWithMetadata(await losslessWebp(9, 5, data), 9, 5);
  t.same(webpChunks(src).map((c) => c.fourcc), ['VP8X', 'ICCP', 'VP8L', 'EXIF', 'XMP '], 'the fixture carries the metadata');
  const out = await reencodeImage(src, 'image/webp');
  t.notOk(has(out, SECRET), 'no metadata text');
  t.same(webpChunks(out).map((c) => c.fourcc), ['VP8L'], 'only the image');
  const d = (await decodeWebp(out))!;
  t.same([d.width, d.height], [9, 5]);
  t.ok(Buffer.from(d.data).equals(data), 'the same pixels');
});

t.test('WebP, lossy with alpha: the metadata is gone; still lossy with its alpha, the same size, about the same pixels', async (t) => {
  const data = pixelsWithAlpha(24, 16);
  const src = webpWithMetadata(await lossyWebp(24, 16, data), 24, 16);
  const out = await reencodeImage(src, 'image/webp');
  t.notOk(has(out, SECRET), 'no metadata text');
  const chunks = webpChunks(out);
  t.same(chunks.map((c) => c.fourcc), ['VP8X', 'ALPH', 'VP8 '], 'an image and its alpha, no ICCP, EXIF or XMP');
  t.equal(chunks[0]!.data[0], 0x10, 'VP8X flags alpha only');
  const [a, b] = [(await decodeWebp(src))!, (await decodeWebp(out))!];
  t.same([b.width, b.height], [24, 16]);
  let worst = 0;
  for (let i = 0; i < a.data.length; i++) worst = Math.max(worst, Math.abs(a.data[i]! - b.data[i]!));
  t.ok(worst <= 64, `close to the upload (largest difference ${worst})`);
  t.same(b.data.filter((_, i) => i % 4 === 3), a.data.filter((_, i) => i % 4 === 3), 'the alpha kept exactly');
});

t.test('WebP refused: truncated, corrupt image data, an animation, a canvas its image does not fill', async (t) => {
  const lossless = webpWithMetadata(await losslessWebp(9, 5), 9, 5);
  const lossy = await lossyWebp(24, 16);
  const refused: [string, Buffer, RegExp][] = [
    ['lossless, cut short', lossless.subarray(0, lossless.length - 40), /not a complete, valid WebP/],
    ['lossy, cut short', lossy.subarray(0, lossy.length - 10), /not a complete, valid WebP/],
    ['lossless, its bitstream garbage', garbageWebp(await losslessWebp(9, 5)), /not a complete, valid WebP/],
    ['lossy, its bitstream garbage', garbageWebp(lossy), /not a complete, valid WebP/],
    ['an animation', animatedWebp(await losslessWebp(9, 5), 9, 5), /an animated WebP is not accepted/],
    ['a 4000x4000 canvas over a 9x5 image', webpDeclaring(await losslessWebp(9, 5), 4000, 4000), /not a complete, valid WebP/],
    ['RIFF and nothing else', Buffer.from('RIFF\x04\0\0\0WEBP', 'latin1'), /not a complete, valid WebP/],
  ];
  for (const [what, bytes, why] of refused) await t.rejects(reencodeImage(bytes, 'image/webp'), { name: 'ImageDecodeError', message: why }, what);
});

t.test('in a worker thread: the same bytes, the same refusals', async (t) => {
  const src = pngWithText(5, 3);
  t.same(await reencodeImageOffThread(src, 'image/png'), await reencodeImage(src, 'image/png'));
  await t.rejects(reencodeImageOffThread(garbageJpeg(16, 16), 'image/jpeg'), ImageDecodeError);
  const both = await Promise.allSettled([reencodeImageOffThread(src.subarray(0, 40), 'image/png'), reencodeImageOffThread(src, 'image/png')]);
  t.same(both.map((r) => r.status), ['rejected', 'fulfilled'], 'a refusal does not stop the queue');
  const gif = gifWithMetadata();
  t.same(await reencodeImageOffThread(gif, 'image/gif'), await reencodeImage(gif, 'image/gif'), 'a GIF');
  const webp = webpWithMetadata(await losslessWebp(9, 5), 9, 5);
  t.same(await reencodeImageOffThread(webp, 'image/webp'), await reencodeImage(webp, 'image/webp'), 'a WebP: libwebp loads in the worker');
  await t.rejects(reencodeImageOffThread(webp.subarray(0, webp.length - 40), 'image/webp'), ImageDecodeError);
});

t.test('in a worker thread: an image past its time is refused and its worker ended; the next image gets a new one', async (t) => {
  // 1500 x 1500 takes the worker far more than a millisecond to decode and write again.
  const big = plainPng(1500, 1500);
  await t.rejects(reencodeImageOffThread(big, 'image/png', { timeoutMs: 1 }), { name: 'ImageDecodeError', message: /takes too long to decode/ });
  const small = pngWithText(5, 3);
  t.same(await reencodeImageOffThread(small, 'image/png'), await reencodeImage(small, 'image/png'), 'the queue goes on');
});

t.test(`in a worker thread: past ${MAX_QUEUED_IMAGES} images waiting, one more is 503 unavailable at once, and the others are answered`, async (t) => {
  const src = pngWithText(5, 3);
  const runs = Array.from({ length: MAX_QUEUED_IMAGES + 1 }, () => reencodeImageOffThread(src, 'image/png'));
  const settled = await Promise.allSettled(runs);
  t.same(settled.map((r) => r.status), [...Array(MAX_QUEUED_IMAGES).fill('fulfilled'), 'rejected']);
  t.match((settled.at(-1) as PromiseRejectedResult).reason, { code: 'unavailable', message: /too many uploaded images/ });
  t.ok(await reencodeImageOffThread(src, 'image/png'), 'once they are done, a new image is taken');
});
