// Node-to-node envelopes: only the recipient reads a direct payload; any change by the relay, a
// replay into another session, or a redirect to another node is refused and names the sender.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import type { EnvelopeError} from '../../node/transport/envelope.ts';
import { open, sealBroadcast, sealDirect, type Envelope } from '../../node/transport/envelope.ts';
import { toHex } from '../../common/bytes.ts';

const mk = () => new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)));
const alice = mk();
const bob = mk();
const carol = mk();
const sessionId = new Uint8Array(32).fill(3);
const payload = new TextEncoder().encode('share for bob: 0123456789abcdef');

t.test('a direct envelope opens for its recipient only and hides the payload', async (t) => {
  const env = sealDirect(alice, bob, { sessionId, round: 2 }, payload);
  t.notOk(toHex(env.body).includes(toHex(payload.subarray(0, 12))), 'ciphertext does not contain the payload');
  t.same(open(bob, alice, sessionId, env), payload);
  t.throws(() => open(carol, alice, sessionId, env), { code: 'wrong_recipient', culprit: alice.nodeId });
  // Even if carol rewrites the recipient field, the signature breaks.
  t.throws(() => open(carol, alice, sessionId, { ...env, to: carol.nodeId }), { code: 'bad_signature' });
});

t.test('two envelopes of the same payload differ (fresh key salt, so a fresh key)', async (t) => {
  const a = sealDirect(alice, bob, { sessionId, round: 1 }, payload);
  const b = sealDirect(alice, bob, { sessionId, round: 1 }, payload);
  t.equal(a.keySalt.length, 32);
  t.not(toHex(a.keySalt), toHex(b.keySalt));
  t.not(toHex(a.body), toHex(b.body));
  t.same(open(bob, alice, sessionId, a), payload);
  t.same(open(bob, alice, sessionId, b), payload);
});

t.test('the pairwise secret is the same from both ends and differs per pair', async (t) => {
  t.equal(toHex(alice.agree(bob.encryptionKey)), toHex(bob.agree(alice.encryptionKey)));
  t.not(toHex(alice.agree(bob.encryptionKey)), toHex(alice.agree(carol.encryptionKey)));
  // A cached secret is the one a fresh identity with the same keys computes.
  const again = NodeIdentity.deserializeSecret(alice.serializeSecret());
  t.equal(toHex(again.agree(bob.encryptionKey)), toHex(alice.agree(bob.encryptionKey)));
});

t.test('a third party that swaps in its own encryption key cannot read or redirect', async (t) => {
  const env = sealDirect(alice, bob, { sessionId, round: 2 }, payload);
  // carol claims to be bob's sender with alice's identity but her own encryption key: the key differs.
  const fakeAlice = { nodeId: alice.nodeId, signingKey: alice.signingKey, encryptionKey: carol.encryptionKey };
  t.throws(() => open(bob, fakeAlice, sessionId, env), { code: 'decrypt_failed' });
  // A shortened salt breaks the signature.
  t.throws(() => open(bob, alice, sessionId, { ...env, keySalt: env.keySalt.subarray(0, 16) }), { code: 'bad_signature' });
});

t.test('every tampering is refused and names the sender', async (t) => {
  const env = sealDirect(alice, bob, { sessionId, round: 2 }, payload);
  const flip = (b: Uint8Array, i = 0) => {
    const c = b.slice();
    c[i] = c[i]! ^ 1;
    return c;
  };
  const cases: [string, Envelope, string][] = [
    ['flipped ciphertext byte', { ...env, body: flip(env.body, 5) }, 'bad_signature'],
    ['flipped signature byte', { ...env, signature: flip(env.signature) }, 'bad_signature'],
    ['changed round', { ...env, round: 3 }, 'bad_signature'],
    ['replayed into another session', { ...env, sessionId: new Uint8Array(32).fill(4) }, 'wrong_session'],
    ['other key salt', { ...env, keySalt: flip(env.keySalt) }, 'bad_signature'],
    ['unknown version', { ...env, version: 9 }, 'bad_version'],
  ];
  for (const [what, bad, code] of cases) {
    const err = t.throws(() => open(bob, alice, sessionId, bad), what) as EnvelopeError;
    t.equal(err.code, code, `${what}: ${code}`);
    t.equal(err.culprit, alice.nodeId, `${what}: names the sender`);
  }
  // Claiming to come from carol with alice's signature fails too.
  t.throws(() => open(bob, carol, sessionId, { ...env, from: carol.nodeId }), { code: 'bad_signature' });
});

t.test('a broadcast is signed and verifiable by every party', async (t) => {
  const env = sealBroadcast(alice, { sessionId, round: 1 }, payload);
  t.same(open(bob, alice, sessionId, env), payload);
  t.same(open(carol, alice, sessionId, env), payload);
  const tampered = { ...env, body: new Uint8Array([...env.body.slice(0, -1), 0]) };
  t.throws(() => open(bob, alice, sessionId, tampered), { code: 'bad_signature' });
});
