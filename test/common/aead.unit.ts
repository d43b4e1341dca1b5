// The node's AEADs on libsodium (common/aead.ts) give noble's bytes, open what noble sealed and the other
// way round, and refuse an altered ciphertext, tag, additional data, nonce or key.
import t from 'tap';
import { chacha20poly1305, xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { chacha20Poly1305, xchacha20Poly1305, type Aead } from '../../common/aead.ts';
import { seededRng } from '../protocols/simulate.ts';

const cases: [string, Aead, typeof chacha20poly1305, number][] = [
  ['ChaCha20-Poly1305', chacha20Poly1305, chacha20poly1305, 12],
  ['XChaCha20-Poly1305', xchacha20Poly1305, xchacha20poly1305, 24],
];

for (const [name, ours, noble, nonceBytes] of cases) {
  t.test(`${name}: noble's bytes, both ways, and every alteration refused`, async (t) => {
    const r = seededRng(`aead ${name}`);
    for (const n of [0, 1, 15, 16, 17, 64, 718, 5000, 80_000]) {
      const key = r(32);
      const nonce = r(nonceBytes);
      const aad = r(n % 40);
      const pt = r(n);
      const sealed = ours.seal(key, nonce, aad, pt);
      t.equal(bytesToHex(sealed), bytesToHex(noble(key, nonce, aad).encrypt(pt)), `${n} bytes: the same ciphertext and tag as noble`);
      t.equal(bytesToHex(ours.open(key, nonce, aad, sealed)), bytesToHex(pt), `${n} bytes: opens`);
      t.equal(bytesToHex(noble(key, nonce, aad).decrypt(sealed)), bytesToHex(pt), `${n} bytes: noble opens it`);
    }
    const key = r(32);
    const nonce = r(nonceBytes);
    const aad = r(20);
    const sealed = ours.seal(key, nonce, aad, r(100));
    const flip = (b: Uint8Array, i: number) => { const c = b.slice(); c[i]! ^= 1; return c; };
    t.throws(() => ours.open(key, nonce, aad, flip(sealed, 3)), 'an altered ciphertext byte refused');
    t.throws(() => ours.open(key, nonce, aad, flip(sealed, sealed.length - 1)), 'an altered tag refused');
    t.throws(() => ours.open(key, nonce, flip(aad, 0), sealed), 'altered additional data refused');
    t.throws(() => ours.open(key, flip(nonce, 0), aad, sealed), 'another nonce refused');
    t.throws(() => ours.open(flip(key, 0), nonce, aad, sealed), 'another key refused');
    t.throws(() => ours.open(key, nonce, aad, sealed.subarray(0, 15)), 'shorter than a tag refused');
    t.throws(() => ours.seal(r(16), nonce, aad, r(5)), RangeError, 'a short key refused');
    t.throws(() => ours.seal(key, r(nonceBytes + 1), aad, r(5)), RangeError, 'a nonce of the wrong size refused');
  });
}
