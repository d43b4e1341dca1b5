// An uploaded image decoded in full and written again from its pixels (api/adapters/image-reencode.ts):
// metadata does not survive, the size and pixels do, EXIF orientation is applied, bytes that do not decode
// and frames past the pixel limit are refused, and the worker thread answers the same.
import t from 'tap';
import { ImageDecodeError, exifOrientation, orient, reencodeImage, reencodeImageOffThread } from '../../../api/adapters/image-reencode.ts';
import { SECRET, decoded, exifApp1, garbageJpeg, jpegWithExif, jpegWithSecondFrame, pixels, pngWithText, plainPng } from '../image-fixtures.ts';

const has = (b: Buffer, s: string) => b.includes(Buffer.from(s, 'latin1'));

t.test('PNG: the tEXt and iTXt chunks are gone; the same size and the same pixels', async (t) => {
  const src = pngWithText(5, 3);
  t.ok(has(src, SECRET) && has(src, 'tEXt'), 'the fixture carries the metadata');
  const out = reencodeImage(src, 'image/png');
  t.notOk(has(out, SECRET), 'no metadata text');
  t.notOk(has(out, 'tEXt') || has(out, 'iTXt'), 'no text chunk');
  const d = decoded(out);
  t.same([d.width, d.height], [5, 3]);
  t.same(Buffer.from(d.data), pixels(5, 3), 'lossless: the same pixels');
  t.same(reencodeImage(out, 'image/png'), out, 'writing a clean image again gives the same bytes');
});

t.test('JPEG: EXIF, XMP and the comment are gone; the same size', async (t) => {
  const src = jpegWithExif(16, 8);
  t.ok(has(src, 'Exif\0') && has(src, SECRET));
  const out = reencodeImage(src, 'image/jpeg');
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
  const d = decoded(reencodeImage(jpegWithExif(16, 8, 6, data), 'image/jpeg'));
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
  for (const cut of [png.length - 12, png.length - 20, 45]) t.throws(() => reencodeImage(png.subarray(0, cut), 'image/png'), ImageDecodeError, `PNG cut at ${cut}`);
  const crc = Buffer.from(png);
  crc[crc.length - 20]! ^= 1;
  t.throws(() => reencodeImage(crc, 'image/png'), { message: /not a complete, valid PNG/ }, 'a flipped bit in the image data (CRC)');
  t.throws(() => reencodeImage(garbageJpeg(16, 16), 'image/jpeg'), { message: /not a complete, valid JPEG/ });
  const jpeg = jpegWithExif(16, 16);
  t.throws(() => reencodeImage(jpeg.subarray(0, jpeg.length - 2), 'image/jpeg'), ImageDecodeError, 'a JPEG without its end');
  // The cheap header check reads the first frame (8x8); jpeg-js refuses the second at its header.
  const before = process.memoryUsage().arrayBuffers;
  t.throws(() => reencodeImage(jpegWithSecondFrame(60_000), 'image/jpeg'), { message: /declares more pixels than accepted/ });
  t.ok(process.memoryUsage().arrayBuffers - before < 64 * 1024 * 1024, 'refused before the pixels are allocated');
});

t.test('in a worker thread: the same bytes, the same refusals', async (t) => {
  const src = pngWithText(5, 3);
  t.same(await reencodeImageOffThread(src, 'image/png'), reencodeImage(src, 'image/png'));
  await t.rejects(reencodeImageOffThread(garbageJpeg(16, 16), 'image/jpeg'), ImageDecodeError);
  const both = await Promise.allSettled([reencodeImageOffThread(src.subarray(0, 40), 'image/png'), reencodeImageOffThread(src, 'image/png')]);
  t.same(both.map((r) => r.status), ['rejected', 'fulfilled'], 'a refusal does not stop the queue');
});
