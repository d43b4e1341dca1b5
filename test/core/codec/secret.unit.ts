// SecretBytes: prints as <redacted> however it is printed, hands its bytes out only through expose(),
// compares in constant time, and once zeroed holds zeros and refuses to be read.
import t from 'tap';
import { format, inspect } from 'node:util';
import { bytesToHex } from '@noble/hashes/utils.js';
import { REDACTED, SecretBytes } from '../../../core/codec/secret.ts';
import { ProtocolBug } from '../../../core/errors/protocol-errors.ts';

const bytes = () => Uint8Array.from({ length: 32 }, (_, i) => 0xa0 + i);
const hex = bytesToHex(bytes());
const decimal = BigInt('0x' + hex).toString();

t.test('every printed form is <redacted>', async (t) => {
  const s = new SecretBytes(bytes());
  const holder = { id: 7, nested: [{ s }], s };
  const forms: [string, string][] = [
    ['String()', String(s)],
    ['toString()', s.toString()],
    ['template literal', `${s}`],
    ['concatenation', 'x' + s],
    ['JSON.stringify', JSON.stringify(s)],
    ['JSON.stringify of a holder', JSON.stringify(holder)],
    ['util.inspect', inspect(s)],
    ['util.inspect of a holder, full depth', inspect(holder, { depth: Infinity, showHidden: true })],
    ['util.format %o', format('%o', holder)],
    ['util.format %s', format('%s', s)],
    ['object spread', JSON.stringify({ ...s })],
  ];
  for (const [what, text] of forms) {
    const flat = text.replace(/\s+/g, '');
    t.notOk(flat.includes(hex) || flat.includes(decimal) || flat.includes('160,161,162') || flat.includes('"0":160'), `${what}: no secret in ${text}`);
  }
  t.equal(String(s), REDACTED);
  t.equal(JSON.stringify(holder), '{"id":7,"nested":[{"s":"<redacted>"}],"s":"<redacted>"}');
  t.equal(inspect(s), 'SecretBytes(<redacted>)');
  t.equal(Object.keys(s).length, 0, 'no enumerable property holds the bytes');
});

t.test('the bytes leave only through expose()', async (t) => {
  const b = bytes();
  const s = new SecretBytes(b);
  t.equal(bytesToHex(s.expose()), hex);
  t.equal(s.length, 32, 'the length is public');
  t.equal(s.expose(), b, 'expose() is a view, not a copy (nothing unzeroed is left behind)');
});

t.test('equals compares the content (one pass, no early exit) over equal lengths', async (t) => {
  const a = new SecretBytes(bytes());
  t.ok(a.equals(new SecretBytes(bytes())), 'same bytes');
  for (const at of [0, 15, 31]) {
    const other = bytes();
    other[at]! ^= 1;
    t.notOk(a.equals(new SecretBytes(other)), `differs at byte ${at}`);
  }
  t.notOk(a.equals(new SecretBytes(bytes().subarray(0, 31))), 'different length');
  t.ok(new SecretBytes(new Uint8Array(0)).equals(new SecretBytes(new Uint8Array(0))), 'two empty secrets');
});

t.test('zeroize overwrites the bytes and every later read refuses', async (t) => {
  const b = bytes();
  const s = new SecretBytes(b);
  t.notOk(s.zeroized);
  s.zeroize();
  t.ok(s.zeroized);
  t.ok(b.every((x) => x === 0), 'the bytes it held are zeros');
  t.throws(() => s.expose(), ProtocolBug, 'a zeroed secret cannot be read');
  t.throws(() => s.equals(new SecretBytes(bytes())), ProtocolBug, 'nor compared');
  t.equal(String(s), REDACTED, 'still prints redacted');
  t.throws(() => new SecretBytes('00' as unknown as Uint8Array), ProtocolBug, 'holds bytes only');
});
