// 32-byte strings that are not Ed25519 public keys anyone can sign under, as hex. The small-order list is
// the well-known one (libsodium's blocklist; "Taming the many EdDSAs", Chalkias et al. 2020): the eight
// points of order 1, 2, 4 and 8 in their canonical encodings, and the non-canonical encodings of some of
// them (y >= p, or x = 0 with the sign bit set).

/** The eight points of small order, canonically encoded. */
export const SMALL_ORDER_CANONICAL = [
  '0100000000000000000000000000000000000000000000000000000000000000', // identity (order 1)
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p - 1 (order 2)
  '0000000000000000000000000000000000000000000000000000000000000000', // y = 0, x positive (order 4)
  '0000000000000000000000000000000000000000000000000000000000000080', // y = 0, x negative (order 4)
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', // order 8
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85', // order 8
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a', // order 8
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa', // order 8
];

/** Non-canonical encodings of small-order points. */
export const SMALL_ORDER_NON_CANONICAL = [
  '0100000000000000000000000000000000000000000000000000000000000080', // identity, x = 0 with the sign bit
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff', // y = p - 1, x = 0 with the sign bit
  'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p (= 0)
  'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff', // y = p, sign bit
  'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p + 1 (= 1, the identity)
  'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff', // y = p + 1, sign bit
];

/** A point with a small-order component: the key of seed SHA-256("mixed-order test key") plus the order-8 point c7176a70…7a. */
const MIXED_ORDER = '327f3aaa4daf1fc5f5e3cc48217c4b26cb0ceec0cec85c734bddfc6f7b27708d';

/** Every kind of bad key by name. */
export const BAD_ED25519_KEYS: Record<string, string> = {
  ...Object.fromEntries(SMALL_ORDER_CANONICAL.map((h, i) => [`small order, canonical #${i + 1} (${h.slice(0, 8)}…${h.slice(-2)})`, h])),
  ...Object.fromEntries(SMALL_ORDER_NON_CANONICAL.map((h, i) => [`small order, non-canonical #${i + 1} (${h.slice(0, 8)}…${h.slice(-2)})`, h])),
  'off the curve (y = 2)': '0200000000000000000000000000000000000000000000000000000000000000',
  'non-canonical y >= p (y = p + 3, on the curve once reduced, not of small order)': 'f0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'mixed order (a key plus a point of order 8)': MIXED_ORDER,
};
