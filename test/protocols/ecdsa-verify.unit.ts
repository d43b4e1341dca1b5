// The online phase's check before release (node/protocols/math/ecdsa-verify.ts) answers as noble's
// `secp256k1.verify` (prehashed, low s) does, on fresh keys and on keys that hold a table, for valid
// signatures and for every kind of wrong one.
import t from 'tap';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { Fn, ORDER } from '../../node/protocols/math/curve.ts';
import { keysWithTables, verifyEcdsaDigest } from '../../node/protocols/math/ecdsa-verify.ts';
import { libsecpVerifyEcdsa } from '../../node/runtime/native-primitives.ts';

const enc = new TextEncoder();
const num = (b: Uint8Array) => BigInt('0x' + bytesToHex(b));

function signed(sk: Uint8Array, label: string) {
  const digest = sha256(enc.encode(label));
  const sig = secp256k1.sign(digest, sk, { prehash: false, lowS: true });
  return { digest, r: num(sig.subarray(0, 32)), s: num(sig.subarray(32)), m: Fn.create(num(digest)) };
}

t.test('agrees with noble on valid and altered signatures, before and after a key holds a table', async (t) => {
  const seed = sha256(enc.encode('ecdsa-verify keys'));
  const sks = [1, 2, 3].map((i) => sha256(new Uint8Array([...seed, i])));
  const tablesBefore = keysWithTables();
  for (const sk of sks) {
    const pk = bytesToHex(secp256k1.getPublicKey(sk, true));
    const otherPk = bytesToHex(secp256k1.getPublicKey(sha256(sk), true));
    for (let i = 0; i < 4; i++) {
      const { r, s, m } = signed(sk, `message ${i}`);
      const cases: [string, bigint, bigint, bigint, string, boolean][] = [
        ['valid', r, s, m, pk, true],
        ['another digest', r, s, Fn.create(m + 1n), pk, false],
        ['another key', r, s, m, otherPk, false],
        ['r changed', Fn.create(r + 1n), s, m, pk, false],
        ['s changed', r, Fn.create(s + 1n) > ORDER >> 1n ? Fn.create(s - 1n) : Fn.create(s + 1n), m, pk, false],
        ['high s (the same signature, s negated)', r, ORDER - s, m, pk, false],
        ['r zero', 0n, s, m, pk, false],
        ['s zero', r, 0n, m, pk, false],
        ['r = n', ORDER, s, m, pk, false],
      ];
      for (const [what, rr, ss, mm, key, want] of cases) {
        const compact = new Uint8Array(64);
        const ok = rr > 0n && rr < ORDER && ss > 0n && ss < ORDER;
        if (ok) {
          compact.set(Fn.toBytes(rr), 0);
          compact.set(Fn.toBytes(ss), 32);
        }
        const noble = ok && secp256k1.verify(compact, Fn.toBytes(mm), Buffer.from(key, 'hex'), { prehash: false, lowS: true });
        t.equal(noble, want, `noble: ${what} (use ${i + 1})`);
        t.equal(verifyEcdsaDigest(rr, ss, mm, key), want, `${what} (use ${i + 1})`);
        t.equal(libsecpVerifyEcdsa(rr, ss, mm, key), want, `libsecp256k1: ${what} (use ${i + 1})`);
      }
    }
  }
  t.ok(keysWithTables() >= tablesBefore + 3, 'each key used more than once holds a table');
});

t.test('a malformed or identity public key is refused, not verified', async (t) => {
  const { r, s, m } = signed(sha256(enc.encode('k')), 'm');
  t.throws(() => verifyEcdsaDigest(r, s, m, '02' + '00'.repeat(32)), { code: 'bad_point' });
  t.throws(() => verifyEcdsaDigest(r, s, m, 'zz'), { code: 'bad_point' });
  t.throws(() => libsecpVerifyEcdsa(r, s, m, '02' + '00'.repeat(32)), { code: 'bad_point' }, 'libsecp256k1: x = 0 is no point');
  t.throws(() => libsecpVerifyEcdsa(r, s, m, 'zz'), { code: 'bad_point' }, 'libsecp256k1: not hex');
  t.throws(() => libsecpVerifyEcdsa(r, s, m, '04' + '11'.repeat(64)), { code: 'bad_point' }, 'libsecp256k1: not a compressed key');
});

t.test('a digest at or above n verifies as its reduction, on both', async (t) => {
  // bits2int for a 256-bit curve: the digest as an integer, reduced mod n (all-ones is above n).
  const sk = sha256(enc.encode('high digest key'));
  const pk = bytesToHex(secp256k1.getPublicKey(sk, true));
  const digest = new Uint8Array(32).fill(0xff);
  const sig = secp256k1.sign(digest, sk, { prehash: false, lowS: true });
  const m = Fn.create(num(digest));
  t.ok(num(digest) >= ORDER, 'the digest is at least n');
  t.ok(verifyEcdsaDigest(num(sig.subarray(0, 32)), num(sig.subarray(32)), m, pk), 'reference');
  t.ok(libsecpVerifyEcdsa(num(sig.subarray(0, 32)), num(sig.subarray(32)), m, pk), 'libsecp256k1');
});
