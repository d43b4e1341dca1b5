// The versioned blob every message and stored run travels in: byte strings ride as binary sections,
// the older JSON-only version still reads, every malformed blob is refused as bad_encoding, and a
// secret goes into a blob only for sealed storage.
import t from 'tap';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { InputError, ProtocolBug } from '../../../core/errors/protocol-errors.ts';
import { SecretBytes } from '../../../core/codec/secret.ts';
import { SecretShare } from '../../../node/protocols/keys/key-package.ts';

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

t.test('a Node Buffer (what gRPC bytes fields are) rides as a byte section like any Uint8Array', async (t) => {
  const blob = encodeBlob('thing', { b: Buffer.from([9, 8, 7]) });
  const back = decodeBlob<{ b: Uint8Array }>('thing', blob);
  t.ok(back.b instanceof Uint8Array, 'not {type: "Buffer", data: [...]}');
  t.same([...back.b], [9, 8, 7]);
});

t.test('a version-1 blob (JSON only) still decodes', async (t) => {
  const v1 = new Uint8Array([1, ...utf8ToBytes(JSON.stringify({ k: 'thing', v: { a: 'old' } }))]);
  t.same(decodeBlob('thing', v1), { a: 'old' });
});

t.test('malformed blobs are refused as bad_encoding', async (t) => {
  const good = encodeBlob('thing', { x: new Uint8Array([9, 9]) });
  // Malformed references are written through the encoder itself: a plain object shaped like a
  // reference is not a byte string, so it goes into the JSON as it is.
  const two = new Uint8Array(2);
  const appended = (b: Uint8Array) => new Uint8Array([...b, 0, 0, 0, 1, 7]);
  const cases: [string, Uint8Array][] = [
    ['unknown version', new Uint8Array([7, ...good.subarray(1)])],
    ['truncated section', good.subarray(0, good.length - 1)],
    ['JSON length past the end', (() => { const b = good.slice(); new DataView(b.buffer).setUint32(1, 1 << 20); return b; })()],
    ['reference to a missing section', encodeBlob('thing', { x: { $bytes: 1 }, y: two })],
    ['one section referenced twice', encodeBlob('thing', { x: { $bytes: 0 }, y: two })],
    ['a section nobody references', appended(good)],
    ['a reference with extra keys', encodeBlob('thing', { y: two, x: { $bytes: 0, z: 1 } })],
    ['a reference that is not a number', encodeBlob('thing', { y: two, x: { $bytes: '0' } })],
    ['invalid UTF-8', good.map((b, i) => (i === 6 ? 0xff : b))],
  ];
  for (const [what, bytes] of cases) {
    const err = t.throws(() => decodeBlob('thing', bytes), what);
    t.ok(err instanceof InputError && err.code === 'bad_encoding', `${what}: bad_encoding`);
  }
  t.throws(() => decodeBlob('other', good), { code: 'bad_encoding' }, 'another kind');
});

t.test('a secret is refused unless the blob is for sealed storage, and then round-trips as a secret', async (t) => {
  const secret = new SecretBytes(Uint8Array.from({ length: 32 }, (_, i) => i + 1));
  const value = { public: new Uint8Array([7]), deep: [{ secret }], n: 1 };
  t.throws(() => encodeBlob('thing', value), ProtocolBug, 'a wire payload cannot carry a secret');
  t.throws(() => encodeBlob('thing', secret), ProtocolBug, 'not even as the whole value');
  const sealed = encodeBlob('thing', value, { secrets: true });
  t.ok(new TextDecoder().decode(sealed).includes('{"$secret":1}'), 'written as a marked section');
  const back = decodeBlob<typeof value>('thing', sealed, { secrets: true });
  t.ok(back.deep[0]!.secret instanceof SecretBytes, 'read back as SecretBytes');
  t.ok(back.deep[0]!.secret.equals(secret), 'with the same bytes');
  t.same([...back.public], [7], 'byte strings beside it are unchanged');
  t.throws(() => decodeBlob('thing', sealed), { code: 'bad_encoding' }, 'a blob with a secret is not read as a payload');
  // A peer cannot smuggle a secret marker into a payload either (written through the encoder: a plain
  // object shaped like a marker goes into the JSON as it is).
  const forged = encodeBlob('thing', { x: { $secret: 0 }, y: new Uint8Array(32) });
  t.throws(() => decodeBlob('thing', forged), { code: 'bad_encoding' }, 'a forged marker in a payload is refused');
  const zeroed = new SecretBytes(new Uint8Array(32));
  zeroed.zeroize();
  t.throws(() => encodeBlob('thing', { zeroed }, { secrets: true }), ProtocolBug, 'a zeroed secret is not stored');
});

t.test('a redacting type that is not SecretBytes is refused even for sealed storage', async (t) => {
  const share = new SecretShare(1, 5n);
  t.throws(() => encodeBlob('thing', { share }), ProtocolBug, 'a key share object would be written as <redacted>');
  t.throws(() => encodeBlob('thing', { share }, { secrets: true }), ProtocolBug, 'with the opt-in too');
  t.same(decodeBlob('thing', encodeBlob('thing', { note: '<redacted>' })), { note: '<redacted>' }, 'the plain text <redacted> is only text');
});
