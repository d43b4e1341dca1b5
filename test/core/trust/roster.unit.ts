// The service-node roster format, version 1 (docs/trust.md "Committees"): one canonical encoding per
// node set, signed by an operator key, refused when altered, reordered, padded or signed by anyone else.
import t from 'tap';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { decodeRoster, rosterMessage, signRoster, verifyRoster, RosterError, type RosterNode } from '../../../core/trust/roster.ts';
import { nodeIdFor } from '../../../core/trust/node-id.ts';

const seed = (s: string) => sha256(new TextEncoder().encode(s));
const operator = seed('roster operator');
const operatorKeys = [bytesToHex(ed25519.getPublicKey(operator))];
const node = (name: string): RosterNode => {
  const sk = ed25519.getPublicKey(seed(`${name} signing`));
  return { nodeId: nodeIdFor(sk), signingKey: bytesToHex(sk), encryptionKey: bytesToHex(x25519.getPublicKey(seed(`${name} encryption`))) };
};
const nodes = ['a', 'b', 'c'].map(node);
const body = { version: 7, created: 1_795_000_000, nodes };

t.test('a signed roster verifies and decodes to what was signed, nodes in id order', async (t) => {
  const bytes = signRoster(body, operator);
  const r = verifyRoster(bytes, operatorKeys);
  t.equal(r.version, 7);
  t.equal(r.created, 1_795_000_000);
  t.same(r.nodes, [...nodes].sort((x, y) => (x.nodeId < y.nodeId ? -1 : 1)));
  t.same(signRoster({ ...body, nodes: [...nodes].reverse() }, operator), bytes, 'one encoding per node set');
  t.equal(bytesToHex(bytes.subarray(0, 16)), bytesToHex(new TextEncoder().encode('custody-roster\0')) + '01', 'domain, then format version 1');
});

t.test('altered, padded, reordered or foreign rosters are refused', async (t) => {
  const bytes = signRoster(body, operator);
  const flipped = bytes.slice();
  flipped[30] = flipped[30]! ^ 1;
  t.throws(() => verifyRoster(flipped, operatorKeys), RosterError, 'a changed byte');
  t.throws(() => verifyRoster(new Uint8Array([...bytes, 0]), operatorKeys), RosterError, 'trailing bytes');
  t.throws(() => verifyRoster(signRoster(body, seed('someone else')), operatorKeys), /not signed by an operator key/);
  const message = rosterMessage(body);
  // Swap the first two node records (same length each): no longer canonical.
  const rec = 2 + 21 + 64;
  const head = 15 + 1 + 8 + 8 + 2;
  const swapped = new Uint8Array([...message.subarray(0, head), ...message.subarray(head + rec, head + 2 * rec), ...message.subarray(head, head + rec), ...message.subarray(head + 2 * rec)]);
  const resigned = new Uint8Array([...swapped, ...ed25519.getPublicKey(operator), ...ed25519.sign(swapped, operator)]);
  t.throws(() => decodeRoster(resigned), /canonical/, 'nodes out of order');
  t.throws(() => signRoster({ ...body, nodes: [nodes[0]!, nodes[0]!] }, operator), /listed twice/);
  t.throws(() => signRoster({ ...body, nodes: [{ ...nodes[0]!, nodeId: nodes[1]!.nodeId }] }, operator), /derived/);
  t.throws(() => signRoster({ ...body, nodes: [] }, operator), /1 to 256/);
  t.throws(() => signRoster({ ...body, version: -1 }, operator), /non-negative/);
});
