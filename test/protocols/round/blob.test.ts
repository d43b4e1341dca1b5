// The versioned blob every message and stored run travels in: byte strings ride as binary sections,
// the older JSON-only version still reads, and every malformed blob is refused as bad_encoding.
import t from 'tap';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { decodeBlob, encodeBlob } from '../../../node/protocols/round/machine.ts';
import { InputError } from '../../../node/protocols/round/errors.ts';

const value: { a: string; n: number; big: Uint8Array; nested: [{ x: Uint8Array }, Uint8Array] } = {
  a: 'text', n: 7, big: new Uint8Array(5000).map((_, i) => i & 0xff), nested: [{ x: new Uint8Array([1, 2, 3]) }, new Uint8Array(0)],
};

t.test('byte strings round-trip as binary, not as JSON numbers or hex', async (t) => {
  const blob = encodeBlob('thing', value);
  t.equal(blob[0], 2, 'version 2');
  t.ok(blob.length < 5000 + 200, 'about the size of the bytes, not of their hex');
  const back = decodeBlob<typeof value>('thing', blob);
  t.ok(back.big instanceof Uint8Array);
  t.same([...back.big], [...value.big]);
  t.same([...back.nested[0]!.x], [1, 2, 3]);
  t.ok(back.nested[1] instanceof Uint8Array && back.nested[1].length === 0);
  t.same({ a: back.a, n: back.n }, { a: 'text', n: 7 });
  // The decoded bytes are copies: changing the blob afterwards changes nothing.
  blob.fill(0, blob.length - 10);
  t.equal(back.big[4999], 4999 & 0xff);
});

t.test('a version-1 blob (JSON only) still decodes', async (t) => {
  const v1 = new Uint8Array([1, ...utf8ToBytes(JSON.stringify({ k: 'thing', v: { a: 'old' } }))]);
  t.same(decodeBlob('thing', v1), { a: 'old' });
});

t.test('malformed blobs are refused as bad_encoding', async (t) => {
  const good = encodeBlob('thing', { x: new Uint8Array([9, 9]) });
  const json = (s: string, sections: Uint8Array[] = []) => {
    const j = utf8ToBytes(s);
    const out = new Uint8Array(5 + j.length + sections.reduce((a, b) => a + 4 + b.length, 0));
    const v = new DataView(out.buffer);
    out[0] = 2;
    v.setUint32(1, j.length);
    out.set(j, 5);
    let at = 5 + j.length;
    for (const b of sections) {
      v.setUint32(at, b.length);
      out.set(b, at + 4);
      at += 4 + b.length;
    }
    return out;
  };
  const cases: [string, Uint8Array][] = [
    ['unknown version', new Uint8Array([7, ...good.subarray(1)])],
    ['truncated section', good.subarray(0, good.length - 1)],
    ['JSON length past the end', (() => { const b = good.slice(); new DataView(b.buffer).setUint32(1, 1 << 20); return b; })()],
    ['reference to a missing section', json('{"k":"thing","v":{"x":{"$bytes":1}}}', [new Uint8Array(2)])],
    ['one section referenced twice', json('{"k":"thing","v":{"x":{"$bytes":0},"y":{"$bytes":0}}}', [new Uint8Array(2)])],
    ['a section nobody references', json('{"k":"thing","v":{}}', [new Uint8Array(2)])],
    ['a reference with extra keys', json('{"k":"thing","v":{"x":{"$bytes":0,"z":1}}}', [new Uint8Array(2)])],
    ['a reference that is not a number', json('{"k":"thing","v":{"x":{"$bytes":"0"}}}', [new Uint8Array(2)])],
    ['invalid UTF-8', json('{"k":"thing","v":"\u0000"}').map((b, i) => (i === 5 ? 0xff : b))],
  ];
  for (const [what, bytes] of cases) {
    const err = t.throws(() => decodeBlob('thing', bytes), what);
    t.ok(err instanceof InputError && err.code === 'bad_encoding', `${what}: bad_encoding`);
  }
  t.throws(() => decodeBlob('other', good), { code: 'bad_encoding' }, 'another kind');
});
