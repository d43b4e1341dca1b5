// The injected primitives (node/protocols/math/primitives.ts): the node's native provider
// (node/runtime/native-primitives.ts: libsodium, OpenSSL and libsecp256k1) returns exactly the bytes of the
// noble reference, primitive by primitive on random and edge inputs, and protocol by protocol: the OT
// setup, presigning and the online phase give identical transcripts and results under either provider
// with the same seeded randomness, and parties on different providers interoperate.
import t from 'tap';
import { gcm } from '@noble/ciphers/aes.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { noblePrimitives, taggedHashWith, type Primitives } from '../../node/protocols/math/primitives.ts';
import { POINT_CACHE_SIZE, SHA256_OPENSSL_FROM, libsecpAddBase, libsecpMul, libsecpMulBase, libsecpMulPublic, libsecpPoint, nativePrimitives, sodiumSha256 } from '../../node/runtime/native-primitives.ts';
import { taggedHash } from '../../core/codec/transcript.ts';
import { encodeOtSetup } from '../../node/protocols/ecdsa/ot-setup.ts';
import { hashToScalars } from '../../node/protocols/ecdsa/hash.ts';
import { proveDlogFischlin, verifyDlogFischlin } from '../../node/protocols/ecdsa/fischlin.ts';
import { rvoleAlice, rvoleBobFinish, rvoleBobStart } from '../../node/protocols/ecdsa/rvole.ts';
import { BASE_OT_COUNT, baseOtChoose, baseOtKeys, baseOtSender, unpackPoints } from '../../node/protocols/ot/base-ot.ts';
import { checkChallenges, kosReceive, kosSend } from '../../node/protocols/ot/kos.ts';
import { Fn, G, Point, pointHex, randomScalar } from '../../node/protocols/math/curve.ts';
import type { Message } from '../../node/protocols/round/machine.ts';
import { dkgKeys } from './frost/keys.ts';
import { online, otSetup, presign, sid, type Committee } from './ecdsa/harness.ts';
import { seededRng } from './simulate.ts';

const noble = noblePrimitives;
const native = nativePrimitives;
const hex = (b: Uint8Array) => bytesToHex(b);
const plain = (b: Uint8Array) => Object.getPrototypeOf(b) === Uint8Array.prototype;

t.test('sha256: native equals the reference', async (t) => {
  const r = seededRng('prims sha256');
  // Empty, around the 55/56/64-byte padding boundaries, multi-block, and long (the KOS matrix, τ).
  // The provider sends short inputs to libsodium and long ones to OpenSSL: both sides of the switch, and
  // libsodium's at every length through its exported function.
  for (const n of [0, 1, 31, 32, 55, 56, 63, 64, 65, 119, 120, SHA256_OPENSSL_FROM - 1, SHA256_OPENSSL_FROM, SHA256_OPENSSL_FROM + 1, 1000, 24_064, 53_248, 100_001]) {
    const m = r(n);
    t.equal(hex(native.sha256(m)), hex(noble.sha256(m)), `${n} bytes`);
    t.equal(hex(sodiumSha256(m)), hex(noble.sha256(m)), `${n} bytes, libsodium`);
  }
  const sub = r(200).subarray(17, 150);
  t.equal(hex(native.sha256(sub)), hex(noble.sha256(sub)), 'a view at an offset into a larger buffer');
  let same = 0;
  for (let i = 0; i < 2000; i++) {
    const m = r(1 + (i % 97));
    if (hex(native.sha256(m)) === hex(noble.sha256(m))) same++;
  }
  t.equal(same, 2000, 'many short rows');
  t.ok(plain(native.sha256(r(5))) && plain(native.sha256(r(500))), 'a plain Uint8Array, not a Buffer, on both paths');
});

t.test('taggedHashWith is core\'s taggedHash on either provider', async (t) => {
  const parts = ['custody/x', 7, 123n, seededRng('parts')(77)];
  for (const p of [noble, native]) t.equal(hex(taggedHashWith(p, 'custody/test/v1', parts)), hex(taggedHash('custody/test/v1', parts)), p.name);
});

// libsodium computes every keystream of the native provider, whatever its length.
const streams: [string, Primitives['chacha20'], Primitives['xchacha20']][] = [
  ['native provider', native.chacha20, native.xchacha20],
];
for (const [what, chacha, xchacha] of streams) {
  t.test(`chacha20 and xchacha20 (${what}): equal to the reference`, async (t) => {
    const r = seededRng(`prims chacha ${what}`);
    for (const n of [0, 1, 63, 64, 65, 94, 128, 129, 1023, 1024, 4096, 24_065]) {
      const key = r(32);
      const n12 = r(12);
      const n24 = r(24);
      t.equal(hex(chacha(key, n12, n)), hex(noble.chacha20(key, n12, n)), `chacha20, ${n} bytes`);
      t.equal(hex(xchacha(key, n24, n)), hex(noble.xchacha20(key, n24, n)), `xchacha20, ${n} bytes`);
    }
    const zero = new Uint8Array(32);
    t.equal(hex(chacha(zero, new Uint8Array(12), 64)), hex(noble.chacha20(zero, new Uint8Array(12), 64)), 'all-zero key and nonce');
    t.equal(hex(xchacha(zero, new Uint8Array(24), 64)), hex(noble.xchacha20(zero, new Uint8Array(24), 64)), 'all-zero key and nonce (x)');
    // RFC 8439 §2.4.2's key and nonce (its example starts at counter 1; here the stream starts at 0).
    const rfcKey = Uint8Array.from({ length: 32 }, (_, i) => i);
    const rfcNonce = Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0x4a, 0, 0, 0, 0]);
    t.equal(hex(chacha(rfcKey, rfcNonce, 128)), hex(noble.chacha20(rfcKey, rfcNonce, 128)), 'RFC 8439 key and nonce');
    const unaligned = r(40).subarray(3, 35);
    const nonce = r(30).subarray(5, 29);
    t.equal(hex(xchacha(unaligned, nonce, 2000)), hex(noble.xchacha20(unaligned, nonce, 2000)), 'a key and a nonce at odd offsets');
    let same = 0;
    for (let i = 0; i < 300; i++) {
      const key = r(32);
      const nonce = r(24);
      if (hex(xchacha(key, nonce, 94)) === hex(noble.xchacha20(key, nonce, 94))) same++;
    }
    t.equal(same, 300, 'many KOS-sized columns');
    t.ok(plain(chacha(r(32), r(12), 32)) && plain(xchacha(r(32), r(24), 4096)) && plain(chacha(r(32), r(12), 4096)), 'plain Uint8Arrays');
    t.throws(() => chacha(r(31), r(12), 4096), 'short key refused');
    t.throws(() => chacha(r(32), r(8), 4096), 'wrong nonce size refused');
    t.throws(() => xchacha(r(32), r(12), 4096), 'wrong xnonce size refused');
  });
}

t.test('chacha20, xchacha20 and sha256 into a caller\'s buffer: the same bytes, in that buffer, on both providers', async (t) => {
  const r = seededRng('prims out');
  const streams = [['chacha20', 12, (p: Primitives) => p.chacha20], ['xchacha20', 24, (p: Primitives) => p.xchacha20]] as const;
  for (const [name, nonceLength, stream] of streams) {
    for (const n of [94, 128, 4096]) {
      const key = r(32);
      const nonce = r(nonceLength);
      const want = hex(stream(noble)(key, nonce, n));
      for (const p of [noble, native]) {
        // A view at an odd offset into a larger buffer, as the extension's columns are.
        const big = new Uint8Array(n + 7).fill(0xaa);
        const out = big.subarray(3, 3 + n);
        const got = stream(p)(key, nonce, n, out);
        t.ok(got === out && hex(out) === want && big[0] === 0xaa && big[n + 6] === 0xaa, `${name}, ${p.name}, ${n} bytes`);
      }
    }
    t.throws(() => stream(native)(r(32), r(nonceLength), 94, new Uint8Array(93)), `${name}: a wrong-sized buffer refused`);
  }
  for (const n of [50, SHA256_OPENSSL_FROM + 5]) {
    const m = r(n);
    for (const p of [noble, native]) {
      const out = new Uint8Array(32).fill(0xaa);
      t.ok(p.sha256(m, out) === out && hex(out) === hex(noble.sha256(m)), `sha256, ${p.name}, ${n} bytes`);
      t.throws(() => p.sha256(m, new Uint8Array(31)), `sha256, ${p.name}: a wrong-sized buffer refused`);
    }
  }
});

t.test('aes128Block: FIPS 197\'s vector, and the same block from both providers', async (t) => {
  // FIPS 197 Appendix C.1 (AES-128).
  const key = Uint8Array.from({ length: 16 }, (_, i) => i);
  const pt = Uint8Array.from({ length: 16 }, (_, i) => i * 0x11);
  for (const p of [noble, native]) t.equal(hex(p.aes128Block(key, pt)), '69c4e0d86a7b0430d8cdb78070b4c55a', `${p.name}: FIPS 197 C.1`);
  const r = seededRng('prims aes');
  for (let i = 0; i < 50; i++) {
    const k = r(16);
    const b = r(16);
    if (hex(native.aes128Block(k, b)) !== hex(noble.aes128Block(k, b))) t.fail(`block ${i} differs`);
  }
  for (const p of [noble, native]) {
    t.throws(() => p.aes128Block(r(32), r(16)), `${p.name}: a 32-byte key refused`);
    t.throws(() => p.aes128Block(r(16), r(32)), `${p.name}: two blocks refused`);
  }
});

t.test('gcmHash: GCM\'s GHASH of additional data, the same from both providers and from noble\'s GCM', async (t) => {
  const r = seededRng('prims gcm');
  const j0 = Uint8Array.from([...new Uint8Array(12), 0, 0, 0, 1]);
  for (const n of [0, 16, 32, 48, 160, 752 * 16, 1000 * 16]) {
    const key = r(16);
    const data = r(n);
    const want = hex(noble.gcmHash(key, data));
    t.equal(hex(native.gcmHash(key, data)), want, `${n} bytes: native equals the reference`);
    // GCM with `data` as its AAD and an empty message: tag = GHASH ⊕ AES_K(J0) (SP 800-38D §7.1).
    const tag = gcm(key, new Uint8Array(12), data).encrypt(new Uint8Array(0));
    t.equal(hex(tag.map((v, i) => v ^ noble.aes128Block(key, j0)[i]!)), want, `${n} bytes: noble's GCM tag without its mask`);
  }
  const view = r(100).subarray(3, 3 + 64);
  const key = r(16);
  t.equal(hex(native.gcmHash(key, view)), hex(noble.gcmHash(key, view.slice())), 'data as a view at an odd offset');
  for (const p of [noble, native]) {
    t.throws(() => p.gcmHash(r(15), r(16)), `${p.name}: a short key refused`);
    t.throws(() => p.gcmHash(r(16), r(17)), `${p.name}: a partial block refused`);
  }
});

t.test('products by secret scalars: libsecp256k1 gives noble\'s points, and refuses what noble refuses', async (t) => {
  const r = seededRng('prims points');
  const n = Fn.ORDER;
  const edge = [1n, 2n, 3n, n - 1n, n - 2n, (n - 1n) / 2n, (n + 1n) / 2n, 1n << 128n, (1n << 255n) % n];
  const scalars = [...edge, ...Array.from({ length: 16 }, () => randomScalar(r))];
  const points = [G, G.negate(), G.multiply(7n), ...Array.from({ length: 3 }, () => G.multiply(randomScalar(r)))];
  let base = 0;
  let prod = 0;
  for (const k of scalars) if (libsecpMulBase(k).equals(noble.mulBase(k)) && native.mulBase(k).equals(G.multiply(k))) base++;
  for (const P of points) {
    const products = [native.times(P, 1), native.times(P, 100), noble.times(P, 1), noble.times(P, 100)];
    for (const k of scalars) {
      const want = P.multiply(k);
      if (libsecpMul(P, k).equals(want) && products.every((f) => f(k).equals(want))) prod++;
    }
  }
  t.equal(base, scalars.length, `k·G equal for ${scalars.length} scalars (edges 1, 2, n-1, n-2, (n±1)/2, 2^128 among them)`);
  t.equal(prod, scalars.length * points.length, `k·P equal for ${scalars.length} scalars × ${points.length} points, from a projective point too`);
  // A point whose projective Z is not 1 (a sum): the native provider encodes it affine first.
  const sum = G.multiply(5n).add(G.multiply(9n));
  t.ok(native.times(sum, 3)(12345n).equals(G.multiply(14n * 12345n)), 'a product of a projective sum');
  for (const [what, k] of [['zero', 0n], ['n', n], ['n+1', n + 1n], ['negative', -1n]] as const) {
    t.throws(() => native.mulBase(k), RangeError, `k·G with ${what} refused`);
    t.throws(() => native.times(G, 1)(k), RangeError, `k·P with ${what} refused`);
    t.throws(() => noble.mulBase(k), `noble refuses k·G with ${what} too`);
  }
  t.throws(() => native.times(Point.ZERO, 1), RangeError, 'the identity refused');
  t.throws(() => libsecpMul(Point.ZERO, 5n), RangeError, 'the identity refused (direct)');
});

t.test('P + k·G for public values: the same encoding from both providers, the identity as undefined', async (t) => {
  const r = seededRng('prims addBase');
  let same = 0;
  const cases = 24;
  for (let i = 0; i < cases; i++) {
    const x = randomScalar(r);
    const P = pointHex(G.multiply(x));
    const k = randomScalar(r);
    const want = pointHex(G.multiply(Fn.add(x, k)));
    if (libsecpAddBase(P, k) === want && native.addBase(P, k) === want && noble.addBase(P, k) === want) same++;
  }
  t.equal(same, cases, `${cases} random sums`);
  const P = pointHex(G.multiply(5n));
  t.equal(native.addBase(P, Fn.ORDER - 5n), undefined, 'P + (n-5)·G with P = 5·G is the identity: undefined natively');
  t.equal(noble.addBase(P, Fn.ORDER - 5n), undefined, 'and on noble');
  t.equal(native.addBase(P, 1n), pointHex(G.multiply(6n)), '5·G + G = 6·G');
  for (const bad of ['02' + '00'.repeat(32), '05' + '11'.repeat(32), 'zz', '04' + '11'.repeat(64)]) {
    t.throws(() => native.addBase(bad, 1n), { code: 'bad_point' }, `native refuses ${bad.slice(0, 6)}…`);
    t.throws(() => noble.addBase(bad, 1n), { code: 'bad_point' }, `noble refuses ${bad.slice(0, 6)}…`);
  }
  t.throws(() => native.addBase(P, 0n), RangeError, 'a zero scalar refused');
});

t.test('public products and point decompression: the same points from both providers, the same refusals', async (t) => {
  const r = seededRng('prims public');
  const n = Fn.ORDER;
  const scalars = [1n, 2n, n - 1n, (n + 1n) / 2n, ...Array.from({ length: 12 }, () => randomScalar(r))];
  const points = [G, G.negate(), G.multiply(5n).add(G.multiply(9n)), ...Array.from({ length: 4 }, () => G.multiply(randomScalar(r)))];
  let same = 0;
  for (const P of points) for (const k of scalars) if (libsecpMulPublic(P, k).equals(P.multiply(k)) && native.mulPublic(P, k).equals(noble.mulPublic(P, k))) same++;
  t.equal(same, scalars.length * points.length, `k·P equal for ${scalars.length} public scalars × ${points.length} points`);
  for (const k of [0n, n, -1n]) t.throws(() => native.mulPublic(G, k), RangeError, `a public product by ${k === n ? 'n' : k} refused`);
  t.throws(() => native.mulPublic(Point.ZERO, 3n), RangeError, 'a public product of the identity refused');
  let parsed = 0;
  for (const P of points) {
    const hex = pointHex(P);
    const a = libsecpPoint(hex, 'p');
    if (a.equals(P) && native.point(hex, 'p').equals(noble.point(hex, 'p')) && pointHex(a) === hex) parsed++;
  }
  t.equal(parsed, points.length, 'every compressed point decompresses to the same point, both parities');
  // x = 0 is not on the curve, x = p is not a field element, 05 is no prefix, uncompressed is refused here.
  for (const bad of ['02' + '00'.repeat(32), '03' + 'ff'.repeat(32), '05' + '11'.repeat(32), 'zz', '04' + '11'.repeat(64), '']) {
    t.throws(() => native.point(bad, 'p'), { code: 'bad_point' }, `native refuses ${bad.slice(0, 6) || 'empty'}…`);
    t.throws(() => noble.point(bad, 'p'), { code: 'bad_point' }, `noble refuses ${bad.slice(0, 6) || 'empty'}…`);
  }
});

t.test('point decompression keeps recent points: the same answers parsed again, after eviction, and refusals every time', async (t) => {
  const r = seededRng('prims point cache');
  const P = G.multiply(randomScalar(r));
  const hex = pointHex(P);
  const first = native.point(hex, 'p');
  t.ok(native.point(hex, 'p').equals(P) && first.equals(P), 'parsed twice: the same point');
  // More distinct points than are kept, then the first again: still the right point.
  const many = Array.from({ length: POINT_CACHE_SIZE + 20 }, (_, i) => G.multiply(BigInt(i + 2)));
  let right = 0;
  for (const Q of many) if (native.point(pointHex(Q), 'q').equals(Q)) right++;
  t.equal(right, many.length, `${many.length} distinct points, each decompressed right`);
  t.ok(native.point(hex, 'p').equals(P), 'a point evicted since is decompressed again, right');
  const bad = '02' + '00'.repeat(32);
  for (let i = 0; i < 3; i++) t.throws(() => native.point(bad, 'p'), { code: 'bad_point' }, `an off-curve encoding refused (try ${i + 1})`);
  // Both parities of one x are different points, under different keys.
  const even = pointHex(P).slice(2);
  const [a, b] = ['02' + even, '03' + even].map((h) => native.point(h, 'p'));
  t.ok(a!.equals(b!.negate()) && [a, b].every((x, i) => pointHex(x!) === ['02', '03'][i] + even), 'the two parities of one x stay apart');
});

t.test('hashToScalars: the same scalars from both providers', async (t) => {
  const r = seededRng('prims h2s');
  for (const n of [0, 50, 66, 500]) {
    const m = r(n);
    t.same(hashToScalars(m, 4, native), hashToScalars(m, 4, noble), `${n}-byte input, 4 scalars`);
  }
  t.same(hashToScalars(r(50), 0, native), [], 'no scalars');
});

t.test('Fischlin proofs: identical under both providers, each verifies under the other', async (t) => {
  const x = Fn.create(0xdeadbeefn);
  const X = G.multiply(x);
  const ctx = sid('fischlin prims');
  const p1 = proveDlogFischlin('ot-sender', ctx, 2, x, X, seededRng('f'), noble);
  const p2 = proveDlogFischlin('ot-sender', ctx, 2, x, X, seededRng('f'), native);
  t.same(p2, p1, 'same proof from the same randomness');
  t.ok(verifyDlogFischlin('ot-sender', ctx, 2, X, p1, native), 'noble proof verifies natively');
  t.ok(verifyDlogFischlin('ot-sender', ctx, 2, X, p2, noble), 'native proof verifies on noble');
  t.notOk(verifyDlogFischlin('ot-sender', ctx, 3, X, p1, native), 'wrong prover refused natively');
});

t.test('base OT, KOS and RVOLE: identical bytes, and parties on different providers interoperate', async (t) => {
  const run = (p: Primitives) => {
    const rng = seededRng('ot prims');
    const { a, A } = baseOtSender(rng);
    const choices = rng(BASE_OT_COUNT / 8);
    const recv = baseOtChoose('ctx', 1, 2, A, choices, rng, p);
    const sent = baseOtKeys('ctx', 1, 2, a, unpackPoints(recv.B, BASE_OT_COUNT, 'B'), A, p);
    const ext = kosReceive('ext', sent.k0, sent.k1, rng, p);
    const q = kosSend('ext', choices, recv.keys, ext.msg, p);
    return { choices, recv, sent, ext, q, rng };
  };
  const n = run(noble);
  const x = run(native);
  t.equal(x.recv.B, n.recv.B, 'base-OT points');
  t.same(x.recv.keys.map(hex), n.recv.keys.map(hex), 'receiver keys');
  t.same([...x.sent.k0, ...x.sent.k1].map(hex), [...n.sent.k0, ...n.sent.k1].map(hex), 'sender keys');
  t.equal(hex(x.ext.msg.u), hex(n.ext.msg.u), 'KOS matrix');
  t.equal(hex(x.ext.msg.check), hex(n.ext.msg.check), 'KOS check values');
  t.equal(hex(x.q), hex(n.q), 'sender rows');
  const lanes = (p: Primitives) => checkChallenges('ext', n.ext.msg.nonce, n.ext.msg.u, p).flatMap((l) => [hex(l.key), hex(l.chi)]);
  t.same(lanes(native), lanes(noble), 'check keys and challenges');
  // A native receiver's message checks on a noble sender, and the other way round.
  t.equal(hex(kosSend('ext', n.choices, n.recv.keys, x.ext.msg, noble)), hex(n.q), 'native Bob, noble Alice');
  t.equal(hex(kosSend('ext', x.choices, x.recv.keys, n.ext.msg, native)), hex(x.q), 'noble Bob, native Alice');

  const input: [bigint, bigint] = [Fn.create(42n), Fn.create(4242n)];
  const mult = (bobP: Primitives, aliceP: Primitives) => {
    const rng = seededRng('rvole prims');
    const bob = rvoleBobStart('mul', n.sent.k0, n.sent.k1, rng, bobP);
    const alice = rvoleAlice('mul', n.choices, n.recv.keys, bob.msg, input, rng, aliceP);
    const d = rvoleBobFinish('mul', bob.state, alice.msg, bobP);
    return { bob, alice, d };
  };
  const m1 = mult(noble, noble);
  const m2 = mult(native, native);
  t.equal(hex(m2.alice.msg.tau), hex(m1.alice.msg.tau), 'τ');
  t.same([m2.alice.msg.eta, m2.alice.msg.mu], [m1.alice.msg.eta, m1.alice.msg.mu], 'η and μ');
  t.same([...m2.alice.c, ...m2.d], [...m1.alice.c, ...m1.d], 'shares');
  t.equal(Fn.add(m1.alice.c[0], m1.d[0]), Fn.mul(m1.bob.chi, input[0]), 'c + d = χ·a');
  const m3 = mult(native, noble);
  const m4 = mult(noble, native);
  t.same([...m3.alice.c, ...m3.d, ...m4.alice.c, ...m4.d], [...m1.alice.c, ...m1.d, ...m1.alice.c, ...m1.d], 'mixed providers agree');
});

/** A transcript as comparable text: every message's route and payload bytes. */
const transcriptOf = (msgs: Message[]) => msgs.map((m) => `${m.from}>${m.to}@${m.round}:${hex(m.payload)}`);

t.test('OT setup, presigning and online: identical transcripts and results under both providers', async (t) => {
  const keys = dkgKeys(3, 2, 'prims-committee');
  const setups = new Map<string, Committee>();
  const transcripts = new Map<string, string[]>();
  for (const p of [noble, native]) {
    const setup = otSetup(keys, 'prims setup', { prims: p });
    t.equal(setup.aborts.size, 0, `${p.name}: setup completes`);
    setups.set(p.name, { keys, ots: setup.results });
    transcripts.set(p.name, transcriptOf(setup.transcript));
  }
  t.same(transcripts.get(native.name), transcripts.get(noble.name), 'setup transcripts');
  for (const id of [1, 2, 3]) {
    t.equal(hex(encodeOtSetup(setups.get(native.name)!.ots.get(id)!)), hex(encodeOtSetup(setups.get(noble.name)!.ots.get(id)!)), `party ${id}'s stored setup`);
  }

  const c = setups.get(noble.name)!;
  const digest = sid('prims digest');
  const runs = [noble, native].map((p) => {
    const pre = presign(c, [1, 3], 'prims presign', [0, 5], { prims: p });
    // Encoded before the online phase takes the presignatures (single use).
    const stored = [1, 3].map((id) => hex(pre.results.get(id)!.encode()));
    const on = online(pre.results, digest, { prims: p });
    return { pre, stored, on };
  });
  const [a, b] = runs as [(typeof runs)[0], (typeof runs)[0]];
  t.equal(a.pre.aborts.size + b.pre.aborts.size + a.on.aborts.size + b.on.aborts.size, 0, 'no aborts');
  t.same(transcriptOf(b.pre.transcript), transcriptOf(a.pre.transcript), 'presigning transcripts');
  t.same(b.stored, a.stored, 'stored presignatures');
  t.same(transcriptOf(b.on.transcript), transcriptOf(a.on.transcript), 'online transcripts');
  t.same([...b.on.results.values()], [...a.on.results.values()], 'signatures');

  // Stored material is provider-independent: a setup made natively serves presigning on noble.
  const mixed = presign(setups.get(native.name)!, [1, 2, 3], 'prims mixed', [], { prims: noble });
  t.equal(mixed.aborts.size, 0, 'a native setup serves noble presigning');
  t.equal(online(mixed.results, digest, { prims: native }).results.size, 3, 'and signs natively');
});
