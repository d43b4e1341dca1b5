// The witness written from the C2SP texts (c2sp-witness.ts), over real HTTP: it cosigns a log's
// checkpoints as the log grows, refuses a forked one (422) and keeps what it saw, and answers each other
// case of tlog-witness add-checkpoint with the status the text gives (400, 403, 404, 409 with the size).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { base64 } from '@scure/base';
import { C2spWitness } from './c2sp-witness.ts';
import { NoteSigner, encodeVkey, parseNote, parseVkey, signaturesBy } from '../../../../api/rwa/log/signed-note.ts';
import { checkpointText, verifyCosignature } from '../../../../api/rwa/log/checkpoint.ts';
import { consistencyProof, leafHash, rootOf } from '../../../../api/rwa/log/merkle.ts';

const ORIGIN = 'log.example/rwa/tok_w';
const leaves = (tag: string, n: number) => Array.from({ length: n }, (_, i) => leafHash(new TextEncoder().encode(`${tag} ${i}`)));

t.test('cosigns a growing log, refuses a fork, and answers every other case with the spec\'s status', async (t) => {
  const log = new NoteSigner(ORIGIN, randomBytes(32));
  const w = new C2spWitness({ name: 'witness.example/w', seed: randomBytes(32), logs: new Map([[ORIGIN, [encodeVkey(log.verifier)]]]), now: () => 1_700_000_000 });
  const url = await w.listen();
  t.teardown(() => w.close());
  const cp = (ls: Uint8Array[], n: number, signer = log, origin = ORIGIN) => signer.sign(checkpointText({ origin, size: n, root: rootOf(ls.slice(0, n)) }));
  const send = (old: number, proof: Uint8Array[], note: string) => fetch(`${url}/add-checkpoint`, { method: 'POST', body: `old ${old}\n${proof.map((p) => `${base64.encode(p)}\n`).join('')}\n${note}` });
  const honest = leaves('honest', 12);

  // First sight: old 0, no proof; the answer is a cosignature over the checkpoint, verifiable by the log.
  const r4 = await send(0, [], cp(honest, 4));
  t.equal(r4.status, 200);
  const line = await r4.text();
  const v = parseVkey(w.vkey);
  const n = parseNote(cp(honest, 4) + line);
  t.equal(verifyCosignature(n.text, signaturesBy(n, v)[0]!, v), 1_700_000_000n, 'a timestamped Ed25519 cosignature');
  // Growth with a consistency proof; the same size again with the same root.
  t.equal((await send(4, consistencyProof(honest, 4, 9), cp(honest, 9))).status, 200);
  t.equal((await send(9, [], cp(honest, 9))).status, 200);
  t.equal(w.state.get(ORIGIN)?.size, 9);

  // A fork: same log key, a tree of 12 that does not extend what the witness saw.
  const forked = [...honest.slice(0, 6), ...leaves('forked', 6)];
  const fork = await send(9, consistencyProof(forked, 9, 12), cp(forked, 12));
  t.equal(fork.status, 422, 'an inconsistent checkpoint is refused');
  t.equal((await send(9, [], cp(forked, 9))).status, 422, 'the same size with another root is refused');
  t.equal(w.state.get(ORIGIN)?.size, 9, 'and the witness keeps what it saw');

  // The rest of add-checkpoint's cases.
  const stale = await send(4, consistencyProof(honest, 4, 12), cp(honest, 12));
  t.equal(stale.status, 409, 'an old size that is not the witness\'s');
  t.equal(stale.headers.get('content-type'), 'text/x.tlog.size');
  t.equal(await stale.text(), '9\n');
  t.equal((await send(0, [], cp(honest, 12, log, 'other.example/log'))).status, 404, 'an unknown origin');
  t.equal((await send(9, consistencyProof(honest, 9, 12), cp(honest, 12, new NoteSigner(ORIGIN, randomBytes(32))))).status, 403, 'no signature by a trusted key');
  const tampered = cp(honest, 12).replace(/ (\S)(\S+)\n$/, (_m, a: string, b: string) => ` ${a === 'A' ? 'B' : 'A'}${b}\n`);
  t.equal((await send(9, consistencyProof(honest, 9, 12), tampered)).status, 403, 'a trusted key\'s signature that fails');
  t.equal((await send(13, [], cp(honest, 12))).status, 400, 'an old size above the checkpoint\'s');
  t.equal((await send(9, [], 'not a checkpoint\n')).status, 400);
  t.equal(w.state.get(ORIGIN)?.size, 9, 'none of them moved the witness');
  t.equal((await send(9, consistencyProof(honest, 9, 12), cp(honest, 12))).status, 200, 'the honest log goes on');
  const served = await fetch(`${url}/${Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(ORIGIN))).toString('hex')}/checkpoint`);
  t.equal(served.status, 200);
  t.match(await served.text(), /^log\.example\/rwa\/tok_w\n12\n/, 'the monitoring prefix serves the latest cosigned checkpoint');
});
