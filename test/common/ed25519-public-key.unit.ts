// isValidEd25519PublicKey (common/ed25519.ts): keys some secret key has are accepted; the eight points
// of small order in every encoding (canonical and not), points off the curve, non-canonical y >= p,
// and points with a small-order component are refused.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { isValidEd25519PublicKey, isValidEd25519PublicKeyHex } from '../../common/ed25519.ts';
import { BAD_ED25519_KEYS, SMALL_ORDER_CANONICAL } from '../vectors/ed25519-bad-keys.ts';

t.test('every bad encoding is refused', async (t) => {
  t.equal(SMALL_ORDER_CANONICAL.length, 8, 'the eight small-order points');
  // The list is what it says: the eight canonical encodings are the eight distinct points of order 1 to 8.
  const points = SMALL_ORDER_CANONICAL.map((h) => ed25519.Point.fromHex(h));
  t.ok(points.every((p) => p.isSmallOrder()), 'each is of small order');
  t.equal(new Set(points.map((p) => p.toHex())).size, 8, 'and they are distinct');
  for (const [name, hex] of Object.entries(BAD_ED25519_KEYS)) {
    t.equal(isValidEd25519PublicKeyHex(hex), false, name);
    t.equal(isValidEd25519PublicKey(new Uint8Array(Buffer.from(hex, 'hex'))), false, `${name} (bytes)`);
  }
});

t.test('real keys are accepted, in either hex case; malformed input is refused without a throw', async (t) => {
  for (let i = 0; i < 20; i++) {
    const pub = ed25519.getPublicKey(ed25519.utils.randomSecretKey());
    t.ok(isValidEd25519PublicKey(pub));
    t.ok(isValidEd25519PublicKeyHex(bytesToHex(pub).toUpperCase()));
  }
  t.notOk(isValidEd25519PublicKey(new Uint8Array(31)));
  t.notOk(isValidEd25519PublicKey(new Uint8Array(33)));
  t.notOk(isValidEd25519PublicKeyHex('zz'.repeat(32)));
  t.notOk(isValidEd25519PublicKeyHex('ab'.repeat(31)));
});
