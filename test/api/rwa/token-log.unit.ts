// The token transparency log (docs/platform/transparency-log.md) through its routes and the TokenLog the
// other parts append through: appends never share an index, every checkpoint is a C2SP signed note under
// the published log key, proofs verify against the signed heads, witnesses cosign over real HTTP with the
// witness written from the C2SP texts (test/api/rwa/witness/), a log forked by rolling back the store is
// refused by the witness, and provenance/verify names an altered entry. Bad input changes nothing.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { base64 } from '@scure/base';
import { hexToBytes } from '@noble/hashes/utils.js';
import { setupTokenLog, putToken } from './token-log-fixture.ts';
import { C2spWitness } from './witness/c2sp-witness.ts';
import { openNote, parseNote, parseVkey, signaturesBy } from '../../../api/rwa/log/signed-note.ts';
import { parseCheckpointText, verifyCosignature } from '../../../api/rwa/log/checkpoint.ts';
import { EMPTY_ROOT, leafHash, verifyConsistency, verifyInclusion } from '../../../api/rwa/log/merkle.ts';
import { LOG_ENTRIES, LOG_WITNESSES, entryId } from '../../../api/rwa/log/collections.ts';
import type { LogEntryRecord } from '../../../api/rwa/log/records.ts';

const utf8 = new TextEncoder();
const field = (i: number) => ({ kind: 'field' as const, body: { path: 'coupon_rate', value: `${i}.5%`, n: i } });

/** The signed head the API serves, verified here as a client would: under the served vkey. */
function verifiedHead(body: { checkpoint: string; log_key: string }) {
  const note = openNote(body.checkpoint, parseVkey(body.log_key));
  return { ...parseCheckpointText(note.text), note };
}

t.test('appends are serialized per token: concurrent appends get distinct indices, each checkpoint signed', async (t) => {
  const s = await setupTokenLog(t);
  const tok = await putToken(s.store, s.scope);
  const got = await Promise.all(Array.from({ length: 24 }, (_, i) => s.tokenLog.log.append(s.scope, tok, field(i))));
  t.same(got.map((g) => g.index).sort((a, b) => a - b), Array.from({ length: 24 }, (_, i) => i), 'indices 0..23, none shared');
  const entries = await s.tokenLog.log.entries(tok);
  t.equal(entries.length, 24);
  const key = s.tokenLog.key.verifier(`api.example.test/rwa/${tok}`);
  let bad = 0;
  for (const e of entries) {
    const cp = parseCheckpointText(openNote(e.checkpoint, key).text);
    if (cp.size !== e.index + 1 || e.leaf_hash !== Buffer.from(leafHash(utf8.encode(e.entry))).toString('hex')) bad++;
    const parsed = JSON.parse(e.entry) as { index: number; token: string; kind: string };
    if (parsed.index !== e.index || parsed.token !== tok || parsed.kind !== 'field') bad++;
  }
  t.equal(bad, 0, 'every entry carries its index and token and a checkpoint of its size under the log key');
  // Another token's log is its own tree.
  const tok2 = await putToken(s.store, s.scope);
  t.equal((await s.tokenLog.log.append(s.scope, tok2, field(0))).index, 0);

  // What JSON cannot hold exactly is refused and appends nothing.
  for (const body of [{ x: undefined }, { x: Number.NaN }, { x: 1n }, { x: new Date() }]) {
    await t.rejects(s.tokenLog.log.append(s.scope, tok, { kind: 'field', body: body as Record<string, unknown> }), { code: 'validation_failed' });
  }
  await t.rejects(s.tokenLog.log.append(s.scope, tok, { kind: 'nonsense' as 'field', body: {} }), { code: 'validation_failed' });
  t.equal(await s.tokenLog.log.size(tok), 24, 'nothing appended by refused entries');
});

t.test('an append refuses to sign over a last entry altered in the store (no fork from a rewritten disk)', async (t) => {
  const s = await setupTokenLog(t);
  const tok = await putToken(s.store, s.scope);
  for (let i = 0; i < 3; i++) await s.tokenLog.log.append(s.scope, tok, field(i));
  const last = (await LOG_ENTRIES.in(s.store).get(entryId(tok, 2)))!;
  await LOG_ENTRIES.in(s.store).put(entryId(tok, 2), { ...last, edge: [base64.encode(randomBytes(32))] });
  await t.rejects(s.tokenLog.log.append(s.scope, tok, field(3)), { code: 'log_integrity_failed' });
  t.equal(await s.tokenLog.log.size(tok), 3, 'nothing appended');
});

t.test('signed tree heads, inclusion and consistency proofs through the API', async (t) => {
  const s = await setupTokenLog(t);
  const tok = await putToken(s.store, s.scope);

  const empty = await s.call('GET', `/v1/rwa/tokens/${tok}/log/sth`, undefined, s.viewer.token);
  t.equal(empty.statusCode, 200);
  const e0 = verifiedHead(empty.json());
  t.equal(e0.size, 0);
  t.same(e0.root, EMPTY_ROOT, 'the empty tree\'s root');
  t.equal(empty.json().origin, `api.example.test/rwa/${tok}`);
  t.match(empty.json().log_key, new RegExp(`^api\\.example\\.test/rwa/${tok}\\+[0-9a-f]{8}\\+`));

  for (let i = 0; i < 7; i++) await s.tokenLog.log.append(s.scope, tok, i === 3 ? { kind: 'attestation', body: { attester: 'att_1', sig: 'ab'.repeat(32) } } : field(i));
  const sth = await s.call('GET', `/v1/rwa/tokens/${tok}/log/sth`, undefined, s.viewer.token);
  const head = verifiedHead(sth.json());
  t.equal(head.size, 7);
  t.equal(sth.json().root_hash, base64.encode(head.root));

  let bad = 0;
  for (let i = 0; i < 7; i++) {
    const r = await s.call('GET', `/v1/rwa/tokens/${tok}/log/proof/inclusion?index=${i}`, undefined, s.viewer.token);
    const b = r.json();
    const leaf = leafHash(utf8.encode(b.entry));
    if (r.statusCode !== 200 || b.leaf_hash !== Buffer.from(leaf).toString('hex')) bad++;
    if (!verifyInclusion(i, 7, leaf, b.proof.map((p: string) => base64.decode(p)), head.root)) bad++;
    if (!b.tlog_proof.startsWith(`c2sp.org/tlog-proof@v1\nindex ${i}\n`) || !b.tlog_proof.endsWith(b.checkpoint)) bad++;
  }
  t.equal(bad, 0, 'every entry is proven into the signed head, and its tlog-proof carries the same');
  const incl = (await s.call('GET', `/v1/rwa/tokens/${tok}/log/proof/inclusion?index=3&tree_size=5`, undefined, s.viewer.token)).json();
  t.equal(JSON.parse(incl.entry).kind, 'attestation');
  const at5 = parseCheckpointText(parseNote(incl.checkpoint).text);
  t.ok(verifyInclusion(3, 5, leafHash(utf8.encode(incl.entry)), incl.proof.map((p: string) => base64.decode(p)), at5.root), 'proof into an older head');

  for (let m = 1; m <= 7; m++) {
    const c = (await s.call('GET', `/v1/rwa/tokens/${tok}/log/proof/consistency?first=${m}`, undefined, s.viewer.token)).json();
    const first = verifiedHead({ checkpoint: c.first_checkpoint, log_key: sth.json().log_key });
    if (!verifyConsistency(m, 7, first.root, head.root, c.proof.map((p: string) => base64.decode(p)))) bad++;
  }
  t.equal(bad, 0, 'every earlier head is consistent with the latest');

  // Bad input: documented status and code.
  const q = async (url: string, status: number, code?: string) => {
    const r = await s.call('GET', `/v1/rwa/tokens/${tok}/log/${url}`, undefined, s.viewer.token);
    t.equal(r.statusCode, status, url);
    if (code) t.equal(r.json().code, code, url);
  };
  await q('proof/inclusion?index=7', 422, 'validation_failed');
  await q('proof/inclusion?index=1&tree_size=9', 422, 'validation_failed');
  await q('proof/inclusion?index=-1', 400);
  await q('proof/inclusion', 400);
  await q('proof/consistency?first=5&second=3', 422, 'validation_failed');
  await q('proof/consistency?first=1&extra=2', 400);
  // Another workspace's token, and an id of no token: 404.
  const foreign = await putToken(s.store, s.otherScope);
  t.equal((await s.call('GET', `/v1/rwa/tokens/${foreign}/log/sth`)).statusCode, 404);
  t.equal((await s.call('GET', `/v1/rwa/tokens/${tok}/log/sth`, undefined, s.otherOwner.token)).statusCode, 404);
  t.equal((await s.call('GET', '/v1/rwa/tokens/tok_nope/log/sth')).statusCode, 404);
  t.equal((await s.app.inject({ method: 'GET', url: `/v1/rwa/tokens/${tok}/log/sth` })).statusCode, 401);
});

t.test('witnesses: registration, cosigning over HTTP, a lost answer (409), and a forked log refused', async (t) => {
  const s = await setupTokenLog(t);
  const tok = await putToken(s.store, s.scope);
  for (let i = 0; i < 5; i++) await s.tokenLog.log.append(s.scope, tok, field(i));
  const logKey = (await s.call('GET', `/v1/rwa/tokens/${tok}/log/sth`)).json().log_key as string;
  const origin = `api.example.test/rwa/${tok}`;
  const w = new C2spWitness({ name: 'witness.example/w1', seed: randomBytes(32), logs: new Map([[origin, [logKey]]]) });
  const url = await w.listen();
  t.teardown(() => w.close());

  // Registration: permission, bad keys, duplicates; each refusal registers nothing.
  const reg = (body: unknown, token = s.owner.token, headers: Record<string, string> = {}) => s.call('POST', `/v1/rwa/tokens/${tok}/witnesses`, body, token, headers);
  t.equal((await reg({ vkey: w.vkey, url }, s.developer.token)).json().code, 'role_denied', 'tokenization.manage registers witnesses');
  t.equal((await reg({ vkey: logKey, url })).json().code, 'validation_failed', 'a type 0x01 key is not a cosigner key');
  t.equal((await reg({ vkey: w.vkey.replace(/\+[0-9a-f]{8}\+/, '+00000000+'), url })).json().code, 'validation_failed', 'a key id that does not match');
  t.equal((await reg({ vkey: 'nonsense', url })).statusCode, 422);
  t.equal((await reg({ vkey: w.vkey, url: 'http://10.1.2.3/w' })).json().code, 'validation_failed', 'a destination the policy refuses');
  t.equal((await reg({ vkey: w.vkey, url, extra: 1 })).statusCode, 400);
  t.equal((await LOG_WITNESSES.in(s.store).byIndex(`${tok}\x00`)).length, 0, 'nothing registered');
  const first = await reg({ vkey: w.vkey, url }, s.owner.token, { 'idempotency-key': 'reg-1' });
  t.equal(first.statusCode, 201);
  t.match(first.json(), { name: 'witness.example/w1', vkey: w.vkey, url, cosigned_size: null });
  t.equal((await reg({ vkey: w.vkey, url }, s.owner.token, { 'idempotency-key': 'reg-1' })).json().id, first.json().id, 'the same key answers the same witness');
  t.equal((await reg({ vkey: w.vkey, url })).json().code, 'witness_already_registered');
  t.equal((await LOG_WITNESSES.in(s.store).byIndex(`${tok}\x00`)).length, 1);

  // Cosigning: the service submits old 0 and the checkpoint; the cosignature verifies under the witness key.
  const submit = (body: unknown = {}, token = s.developer.token) => s.call('POST', `/v1/rwa/tokens/${tok}/log/witness`, body, token);
  t.equal((await submit({}, s.viewer.token)).json().code, 'role_denied');
  const r1 = await submit();
  t.equal(r1.statusCode, 200);
  t.match(r1.json().results, [{ witness_id: first.json().id, outcome: 'cosigned', status_code: 200, old_size: 0 }]);
  const wv = parseVkey(w.vkey);
  const cosigned = (note: string) => {
    const n = parseNote(note);
    return signaturesBy(n, wv).map((sig) => verifyCosignature(n.text, sig, wv));
  };
  const sth5 = (await s.call('GET', `/v1/rwa/tokens/${tok}/log/sth`)).json();
  t.equal(cosigned(sth5.checkpoint).length, 1, 'the signed head carries the cosignature');
  t.ok(cosigned(sth5.checkpoint)[0], 'which verifies under the registered key');
  t.equal(w.state.get(origin)?.size, 5);
  t.match((await submit()).json().results, [{ outcome: 'already_cosigned' }], 'nothing new to cosign');

  // Growth: old 5 with a consistency proof to 8.
  for (let i = 5; i < 8; i++) await s.tokenLog.log.append(s.scope, tok, field(i));
  t.match((await submit()).json().results, [{ outcome: 'cosigned', old_size: 5 }]);
  t.equal(w.state.get(origin)?.size, 8);

  // A cosignature whose answer was lost: the witness holds 10, the service 8; the 409 names 10 and the
  // service submits again from there.
  for (let i = 8; i < 12; i++) await s.tokenLog.log.append(s.scope, tok, field(i));
  const c10 = (await s.call('GET', `/v1/rwa/tokens/${tok}/log/proof/consistency?first=8&second=10`)).json();
  const lost = await fetch(`${url}/add-checkpoint`, { method: 'POST', body: `old 8\n${c10.proof.map((p: string) => `${p}\n`).join('')}\n${c10.second_checkpoint}` });
  t.equal(lost.status, 200, 'the witness cosigned 10 for a client that lost the answer');
  const r409 = (await submit()).json();
  t.match(r409.results, [{ outcome: 'cosigned', old_size: 10 }], 'resubmitted from the size the 409 named');
  t.equal(w.state.get(origin)?.size, 12);
  t.equal(cosigned(r409.checkpoint).filter(Boolean).length, 1);

  // A second witness gets the same checkpoint from old 0; witness_id limits a submission to one.
  const w2 = new C2spWitness({ name: 'witness.example/w2', seed: randomBytes(32), logs: new Map([[origin, [logKey]]]) });
  const url2 = await w2.listen();
  t.teardown(() => w2.close());
  const second = (await reg({ vkey: w2.vkey, url: url2 })).json();
  t.match((await submit({ witness_id: second.id })).json().results, [{ witness_id: second.id, outcome: 'cosigned', old_size: 0 }]);
  t.equal((await submit({ witness_id: 'wit_nope' })).statusCode, 404);

  // A fork: the store is rolled back to 3 entries and the log grows differently. The witness that saw 12
  // refuses (422, the consistency proof fails), keeps 12, and the service stores no cosignature for it.
  for (let i = 3; i < 12; i++) await LOG_ENTRIES.in(s.store).delete(entryId(tok, i), [`${tok}\x00${String(i).padStart(12, '0')}`]);
  for (let i = 3; i < 14; i++) await s.tokenLog.log.append(s.scope, tok, { kind: 'field', body: { path: 'coupon_rate', value: 'forked', n: i } });
  const forked = (await submit()).json();
  const mine = forked.results.find((x: { witness_id: string }) => x.witness_id === first.json().id);
  t.match(mine, { outcome: 'refused', status_code: 422, old_size: 12 }, 'the witness refuses the forked checkpoint');
  t.equal(w.state.get(origin)?.size, 12, 'and keeps what it saw');
  t.equal(cosigned(forked.checkpoint).filter(Boolean).length, 0, 'no cosignature of w1 on the forked head');
  t.equal(w.requests.at(-1)?.status, 422);

  // provenance/verify sees the fork in the stored cosignatures.
  const report = (await s.call('GET', `/v1/rwa/tokens/${tok}/provenance/verify`, undefined, s.viewer.token)).json();
  t.equal(report.ok, false);
  const byName = Object.fromEntries(report.checks.map((c: { name: string }) => [c.name, c]));
  t.equal(byName['log.cosignatures'].ok, false, 'cosignatures of checkpoints the log no longer has');
  t.equal(byName['log.checkpoint_consistency'].ok, false);
  t.equal(byName['log.entries_rehash'].ok, true, 'the forked entries re-hash to what was signed over them');
});

t.test('provenance/verify: green on an intact log; names an altered entry by index and kind; takes registered checks', async (t) => {
  const s = await setupTokenLog(t);
  const tok = await putToken(s.store, s.scope);
  const kinds = ['schema_binding', 'field', 'attester', 'field', 'eligibility', 'lockup'] as const;
  for (const [i, kind] of kinds.entries()) await s.tokenLog.log.append(s.scope, tok, { kind, body: { n: i, path: 'face_value', value: '1000' } });
  const ok = (await s.call('GET', `/v1/rwa/tokens/${tok}/provenance/verify`, undefined, s.viewer.token)).json();
  t.equal(ok.ok, true);
  t.same(ok.checks.map((c: { name: string }) => c.name), ['log.checkpoint_signatures', 'log.entries_rehash', 'log.cosignatures', 'log.checkpoint_consistency', 'attestation_signatures', 'chain_operations'], 'the log\'s checks, the attestations\' and the operations\' (registered at wiring)');
  t.equal(ok.tree_size, 6);

  // Entry 3 (a field) altered in the store, its leaf hash recomputed to match: the signed root names it.
  const rec = (await LOG_ENTRIES.in(s.store).get(entryId(tok, 3)))!;
  const altered = rec.entry.replace('"value":"1000"', '"value":"9000"');
  t.not(altered, rec.entry);
  await LOG_ENTRIES.in(s.store).put(entryId(tok, 3), { ...rec, entry: altered, leaf_hash: Buffer.from(leafHash(utf8.encode(altered))).toString('hex') } satisfies LogEntryRecord);
  const bad = (await s.call('GET', `/v1/rwa/tokens/${tok}/provenance/verify`)).json();
  t.equal(bad.ok, false);
  const rehash = bad.checks.find((c: { name: string }) => c.name === 'log.entries_rehash');
  t.same(rehash.problems.map((p: { index: number; kind: string }) => [p.index, p.kind]), [[3, 'field']], 'entry 3, a field, and no other');
  // An inclusion proof served for it no longer verifies against the signed head: a client sees it too.
  const incl = (await s.call('GET', `/v1/rwa/tokens/${tok}/log/proof/inclusion?index=3`)).json();
  const head = parseCheckpointText(parseNote(incl.checkpoint).text);
  t.notOk(verifyInclusion(3, 6, hexToBytes(incl.leaf_hash), incl.proof.map((p: string) => base64.decode(p)), head.root));

  // Another part's check, registered at wiring time, runs over the decoded entries.
  s.tokenLog.provenance.register({
    name: 'test.attestations_present',
    async check(ctx) {
      const att = ctx.entries.filter((e) => e?.kind === 'attester');
      return { checked: att.length, problems: att.length === 1 ? [] : [{ detail: 'expected one attester' }] };
    },
  });
  t.throws(() => s.tokenLog.provenance.register({ name: 'log.cosignatures', check: async () => ({ checked: 0, problems: [] }) }), 'names are unique');
  const more = (await s.call('GET', `/v1/rwa/tokens/${tok}/provenance/verify`)).json();
  t.match(more.checks.at(-1), { name: 'test.attestations_present', ok: true, checked: 1 });
  t.equal((await s.call('GET', `/v1/rwa/tokens/${tok}/provenance/verify`, undefined, s.otherOwner.token)).statusCode, 404);

  // An attestation entry whose signature is not one (appended past the API) is named by the attestations' check.
  await s.tokenLog.log.append(s.scope, tok, { kind: 'attestation', body: { subject: 'field', statement: { path: 'face_value' }, signature: '00' } });
  const forged = (await s.call('GET', `/v1/rwa/tokens/${tok}/provenance/verify`)).json();
  const att = forged.checks.find((c: { name: string }) => c.name === 'attestation_signatures');
  t.same([att.ok, att.checked, att.problems.map((p: { index: number; kind: string }) => [p.index, p.kind])], [false, 1, [[6, 'attestation']]]);
});
