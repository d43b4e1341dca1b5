// The server-side Ed25519 (OpenSSL) against @noble/curves in strict RFC 8032 mode: honest signatures
// agree byte for byte, and on crafted edge cases OpenSSL alone would accept, ours refuses. Whatever ours
// accepts, noble accepts too.
import t from 'tap';
import { createPublicKey, randomBytes, verify } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { bytesToNumberLE, concatBytes, numberToBytesLE } from '@noble/curves/utils.js';
import { Ed25519Signer, signEd25519, verifyEd25519 } from '../../common/ed25519.ts';

const Point = ed25519.Point;
const L = Point.Fn.ORDER;
const nobleStrict = (sig: Uint8Array, msg: Uint8Array, pub: Uint8Array) => {
  try {
    return ed25519.verify(sig, msg, pub, { zip215: false });
  } catch {
    return false;
  }
};
/** OpenSSL with no checks of ours in front. */
const opensslOnly = (sig: Uint8Array, msg: Uint8Array, pub: Uint8Array) =>
  verify(null, msg, createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), pub]), format: 'der', type: 'spki' }), sig);
const challenge = (r: Uint8Array, a: Uint8Array, m: Uint8Array) => bytesToNumberLE(sha512(concatBytes(r, a, m))) % L;
const bytes = (n: number) => new Uint8Array(randomBytes(n));

// The eight points of small order: multiples of a point of order 8.
const T8 = Point.fromHex('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a');
const torsion = Array.from({ length: 8 }, (_, k) => (k === 0 ? Point.ZERO : T8.multiplyUnsafe(BigInt(k))));

t.test('honest signatures: the same bytes as noble, accepted by both', async (t) => {
  for (let i = 0; i < 40; i++) {
    const seed = bytes(32);
    const msg = bytes(i * 7);
    const sig = new Ed25519Signer(seed).sign(msg);
    t.same(sig, ed25519.sign(msg, seed), 'deterministic signature matches');
    t.same(signEd25519(msg, seed), sig, 'and so does the one-shot signature (request signing, intent signing)');
    const pub = ed25519.getPublicKey(seed);
    t.ok(verifyEd25519(sig, msg, pub));
    const flipped = sig.slice();
    flipped[i % 64]! ^= 1 << i % 8;
    t.notOk(verifyEd25519(flipped, msg, pub), 'a flipped signature bit is refused');
    t.notOk(verifyEd25519(sig, concatBytes(msg, new Uint8Array([0])), pub), 'another message is refused');
  }
  t.throws(() => new Ed25519Signer(new Uint8Array(31)), /32 bytes/);
  t.throws(() => signEd25519(new Uint8Array(1), new Uint8Array(33)), /32 bytes/);
});

t.test('malformed inputs are refused without a throw', async (t) => {
  const seed = bytes(32);
  const pub = ed25519.getPublicKey(seed);
  const sig = ed25519.sign(new Uint8Array(1), seed);
  t.notOk(verifyEd25519(sig.subarray(0, 63), new Uint8Array(1), pub));
  t.notOk(verifyEd25519(sig, new Uint8Array(1), pub.subarray(0, 31)));
  t.notOk(verifyEd25519(sig, new Uint8Array(1), new Uint8Array(32).fill(0xff)), 'not a point');
});

t.test('edge cases: refused where strict RFC 8032 refuses, or stricter', async (t) => {
  const seed = bytes(32);
  const { scalar, pointBytes: pub } = ed25519.utils.getExtendedPublicKey(seed);
  const msg = new TextEncoder().encode('edge');
  const honest = ed25519.sign(msg, seed);
  const cases: { name: string; sig: Uint8Array; pub: Uint8Array; openssl?: boolean }[] = [];

  // S + L: the same S modulo L, non-canonical.
  const s = bytesToNumberLE(honest.subarray(32));
  cases.push({ name: 'S not reduced', sig: concatBytes(honest.subarray(0, 32), numberToBytesLE(s + L, 32)), pub });

  // Every public key of small order, with R = identity and S = 0: OpenSSL accepts this for the
  // identity key and any message.
  for (const [k, T] of torsion.entries()) {
    cases.push({ name: `public key of order dividing 8 (#${k})`, sig: concatBytes(Point.ZERO.toBytes(), new Uint8Array(32)), pub: T.toBytes(), openssl: k === 0 });
  }

  // The identity as a public key in a non-canonical encoding (y = p + 1).
  const nonCanonical = numberToBytesLE(Point.Fp.ORDER + 1n, 32);
  cases.push({ name: 'public key not canonically encoded', sig: concatBytes(Point.ZERO.toBytes(), new Uint8Array(32)), pub: nonCanonical });

  // R with a component of order 8: the cofactored equation (noble) holds, the cofactorless one does not.
  const r = bytesToNumberLE(bytes(64)) % L;
  const R = Point.BASE.multiply(r).add(T8).toBytes();
  const S = (r + challenge(R, pub, msg) * scalar) % L;
  const torsionR = concatBytes(R, numberToBytesLE(S, 32));
  t.ok(nobleStrict(torsionR, msg, pub), 'noble (cofactored) accepts a small-order component in R');
  t.notOk(verifyEd25519(torsionR, msg, pub), 'ours (cofactorless) refuses it');

  for (const c of cases) {
    t.notOk(nobleStrict(c.sig, msg, c.pub), `${c.name}: noble refuses`);
    t.notOk(verifyEd25519(c.sig, msg, c.pub), `${c.name}: ours refuses`);
    if (c.openssl) t.ok(opensslOnly(c.sig, msg, c.pub), `${c.name}: OpenSSL alone would accept`);
  }
  t.ok(verifyEd25519(honest, msg, pub), 'the honest signature still verifies after the cache saw bad keys');
});
