// Declared image size is read from the header before any decode; a header claiming 50000x50000 is refused.
import t from 'tap';
import { PNG } from 'pngjs';
import { dimensionRefusal, imageDimensions } from '../../../api/adapters/image-dimensions.ts';

t.test('a real PNG reads its size; a header claiming 50000x50000 and a truncated header are refused', async (t) => {
  const p = new PNG({ width: 7, height: 3 });
  const real = PNG.sync.write(p);
  t.same(imageDimensions(real, 'image/png'), { width: 7, height: 3 });
  t.equal(dimensionRefusal(imageDimensions(real, 'image/png')), null);
  const bomb = Buffer.from(real);
  bomb.writeUInt32BE(50_000, 16);
  bomb.writeUInt32BE(50_000, 20);
  t.match(dimensionRefusal(imageDimensions(bomb, 'image/png')), /50000x50000; at most 4096x4096/);
  t.match(dimensionRefusal(imageDimensions(real.subarray(0, 12), 'image/png')), /no readable dimensions/);
});
