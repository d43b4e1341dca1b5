// Signed notes, checkpoints and cosignatures (api/rwa/log/signed-note.ts, checkpoint.ts) against the C2SP
// texts: the signed-note specification's example key and note verify, a changed byte is refused, key IDs
// are SHA-256(name || 0x0A || type || key)[:4], and a cosignature is over `cosignature/v1\ntime <t>\n<text>`.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { encodeVkey, NoteSigner, openNote, parseNote, parseVkey, SIG_COSIGNATURE_ED25519, signaturesBy, verifierOf } from '../../../api/rwa/log/signed-note.ts';
import { checkpointText, cosignedMessage, parseCheckpointText, verifyCosignature } from '../../../api/rwa/log/checkpoint.ts';
import { EMPTY_ROOT } from '../../../api/rwa/log/merkle.ts';

// c2sp-signed-note.md, "Example".
const VKEY = 'example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k';
const NOTE = 'This is an example message.\n\n\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n';

t.test('the specification\'s example note verifies under its example key; altered, it does not', async (t) => {
  const v = parseVkey(VKEY);
  t.equal(v.name, 'example.com/foo');
  t.equal(encodeVkey(v), VKEY, 'a vkey round-trips');
  t.equal(openNote(NOTE, v).text, 'This is an example message.\n');
  t.throws(() => openNote(NOTE.replace('example message', 'example massage'), v), /does not verify/);
  t.throws(() => openNote(NOTE, verifierOf('example.com/bar', 1, v.publicKey)), /no signature by/, 'an unknown key is ignored, so nothing verifies');
  t.throws(() => parseVkey(VKEY.replace('530d903a', '530d903b')), /does not match/);
  t.throws(() => parseNote('text\n\n\u2014 a b\n'), /shorter than its key ID|base64/);
  t.throws(() => parseNote('text\u0007\n\n\u2014 example.com/foo AAAAAAAA\n'), /control character/);
  t.throws(() => parseNote('no blank line\n\u2014 x AAAAAAAA\n'), /blank line/);
});

t.test('key IDs, checkpoints and cosignatures as the C2SP texts define them', async (t) => {
  const seed = randomBytes(32);
  const signer = new NoteSigner('api.example.test/rwa/tok_1', seed);
  const pk = ed25519.getPublicKey(seed);
  const expected = sha256(new Uint8Array([...new TextEncoder().encode('api.example.test/rwa/tok_1'), 0x0a, 0x01, ...pk])).slice(0, 4);
  t.same(signer.verifier.keyId, expected);
  t.equal(JSON.stringify({ signer }), '{"signer":"<redacted>"}', 'a signer never prints its seed');
  const text = checkpointText({ origin: 'api.example.test/rwa/tok_1', size: 0, root: EMPTY_ROOT });
  t.equal(text, 'api.example.test/rwa/tok_1\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n');
  const note = signer.sign(text);
  t.same(parseCheckpointText(openNote(note, signer.verifier).text), { origin: 'api.example.test/rwa/tok_1', size: 0, root: EMPTY_ROOT });
  for (const bad of ['o\n01\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n', 'o\n1\nAAAA\n', '\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n', 'o\n1\n']) t.throws(() => parseCheckpointText(bad), bad);

  // A cosignature: key ID with type 0x04, timestamp then signature over the cosigned message.
  const wseed = randomBytes(32);
  const w = verifierOf('witness.example/w1', SIG_COSIGNATURE_ED25519, ed25519.getPublicKey(wseed));
  const ts = 1_700_000_000n;
  const raw = new Uint8Array(4 + 8 + 64);
  raw.set(w.keyId, 0);
  new DataView(raw.buffer).setBigUint64(4, ts);
  raw.set(ed25519.sign(cosignedMessage(text, ts), wseed), 12);
  const line = `\u2014 witness.example/w1 ${Buffer.from(raw).toString('base64')}\n`;
  const cosigned = parseNote(note + line);
  const [sig] = signaturesBy(cosigned, w);
  t.equal(verifyCosignature(cosigned.text, sig!, w), ts);
  t.equal(verifyCosignature(cosigned.text.replace('\n0\n', '\n1\n'), sig!, w), null, 'over another checkpoint it does not verify');
  raw[5] = raw[5]! ^ 1;
  t.equal(verifyCosignature(cosigned.text, parseNote(`${note}\u2014 witness.example/w1 ${Buffer.from(raw).toString('base64')}\n`).signatures[1]!, w), null, 'another timestamp does not verify');
  t.equal(verifyCosignature(cosigned.text, sig!, verifierOf('witness.example/w1', 0x01, w.publicKey)), null, 'a type 0x01 key is not a cosigner');
});
