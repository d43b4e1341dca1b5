// FROST with precommitted nonces: round 1 done ahead (frostPrecommit) and a signing that starts from a
// nonce pair and the full commitment list (frostSignPrecommitted). The RFC 9591 and ZF vectors
// reproduce byte for byte through the split path; Taproot, BIP-340 and plain signatures verify with
// noble; the commitments named for a signer must be its own, every commitment must be a point, a
// wrong commitment of another signer names that signer; a nonce pair signs once.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { schnorr, secp256k1_FROST } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { frostPrecommit, frostSignPrecommitted, commitmentOf, precommitStatement, type FrostPrecommittedParams, type FrostPrecommitment } from '../../../node/protocols/frost/frost-precommit.ts';
import type { FrostSuite } from '../../../node/protocols/frost/frost-sign.ts';
import { outputKey } from '../../../node/protocols/frost/taproot.ts';
import { derive } from '../../../node/protocols/derive/bip32.ts';
import { pointHex } from '../../../node/protocols/math/curve.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import type { Message } from '../../../node/protocols/round/machine.ts';
import { simulate, seededRng } from '../simulate.ts';
import { dealerKeys, dkgKeys, type StoredKey } from './keys.ts';

const vectorsDir = new URL('../../../../shared/vectors/', import.meta.url);
const readVec = (p: string) => JSON.parse(readFileSync(new URL(p, vectorsDir), 'utf8'));
const sid = (s: string) => bytesToHex(sha256(new TextEncoder().encode(s)));

/** Each signer precommits one pair; the parameters of a signing with them. */
function precommitted(keys: Map<number, StoredKey>, signers: number[], suite: FrostSuite, message: string, opts: { path?: number[]; merkleRoot?: string; rngs?: Map<number, (n: number) => Uint8Array> } = {}) {
  const made = new Map<number, FrostPrecommitment>();
  for (const me of signers) {
    const rng = opts.rngs?.get(me) ?? seededRng(`pc/${me}/${message}`);
    made.set(me, frostPrecommit({ suite, me, key: keys.get(me)!, path: opts.path ?? [], ...(opts.merkleRoot ? { merkleRoot: opts.merkleRoot } : {}) }, 1, rng)[0]!);
  }
  const commitments = Object.fromEntries(signers.map((p) => [String(p), made.get(p)!.commitment]));
  const params = new Map<number, FrostPrecommittedParams>(signers.map((me) => [me, {
    sessionId: sid('pooled'), suite, message, signers, me, key: keys.get(me)!, path: opts.path ?? [],
    ...(opts.merkleRoot ? { merkleRoot: opts.merkleRoot } : {}), commitments, nonces: made.get(me)!.nonces,
  }]));
  return { made, commitments, params };
}

function runVector(t: Test, file: string, suite: FrostSuite) {
  const v = readVec(file);
  const keys = dealerKeys([v.inputs.group_secret_key, ...v.inputs.share_polynomial_coefficients], Number(v.config.MAX_PARTICIPANTS));
  const signers: number[] = v.inputs.participant_list;
  const rngs = new Map(signers.map((id) => {
    const o = v.round_one_outputs.outputs.find((x: { identifier: number }) => x.identifier === id);
    const queue = [hexToBytes(o.hiding_nonce_randomness), hexToBytes(o.binding_nonce_randomness)];
    return [id, () => queue.shift()!] as const;
  }));
  const { made, params } = precommitted(keys, signers, suite, v.inputs.message, { rngs });
  for (const o of v.round_one_outputs.outputs) {
    t.equal(made.get(o.identifier)!.commitment.hiding, o.hiding_nonce_commitment, `${file}: precommitted hiding commitment ${o.identifier}`);
    t.equal(made.get(o.identifier)!.commitment.binding, o.binding_nonce_commitment, `${file}: precommitted binding commitment ${o.identifier}`);
  }
  const { results, transcript, aborts } = simulate(frostSignPrecommitted, params);
  t.equal(aborts.size, 0);
  for (const o of v.round_two_outputs.outputs) {
    const m = transcript.find((x) => x.from === o.identifier)!;
    t.equal(m.round, 1, 'the share goes out in the first round');
    t.equal(decodeBlob<{ share: string }>('frost/pc1', m.payload).share, o.sig_share, `${file}: signature share ${o.identifier}`);
  }
  for (const r of results.values()) t.equal(r.signature, v.final_output.sig, `${file}: final signature`);
}

t.test('RFC 9591 E.5 vector through precommit + precommitted signing', async (t) => runVector(t, 'frost/rfc9591-frost-secp256k1-sha256.json', 'secp256k1'));
t.test('ZF frost-secp256k1 vectors through precommit + precommitted signing', async (t) => {
  runVector(t, 'frost/zf-frost-secp256k1-vectors.json', 'secp256k1');
  runVector(t, 'frost/zf-frost-secp256k1-vectors-big-identifier.json', 'secp256k1');
});
t.test('ZF frost-secp256k1-tr (BIP-340) vector through precommit + precommitted signing', async (t) => runVector(t, 'frost/zf-frost-secp256k1-tr.json', 'bip340'));

t.test('precommitted Taproot, BIP-340 and plain signatures verify (derived, key-path and script-tree outputs)', async (t) => {
  const keys = dkgKeys(3, 2, 'precommit');
  const pkg = keys.get(1)!.pkg;
  for (const signers of [[1, 2], [1, 3], [2, 3], [1, 2, 3]]) {
    const digest = bytesToHex(sha256(new TextEncoder().encode(`pc ${signers}`)));
    const { params } = precommitted(keys, signers, 'taproot', digest);
    const { results, aborts } = simulate(frostSignPrecommitted, params);
    t.equal(aborts.size, 0);
    t.equal(new Set([...results.values()].map((r) => r.signature)).size, 1, `{${signers}} agree`);
    t.ok(schnorr.verify(hexToBytes(results.get(signers[0]!)!.signature), hexToBytes(digest), outputKey(pkg.groupKey)), `{${signers}} Taproot signature verifies under the output key`);
  }
  const digest = bytesToHex(sha256(new TextEncoder().encode('derived')));
  const path = [44, 0, 7];
  const d = pointHex(derive(pkg.groupKey, pkg.chainCode, path).publicKey);
  const root = bytesToHex(sha256(new TextEncoder().encode('tree')));
  const tr = simulate(frostSignPrecommitted, precommitted(keys, [1, 3], 'taproot', digest, { path, merkleRoot: root }).params);
  t.ok(schnorr.verify(hexToBytes(tr.results.get(1)!.signature), hexToBytes(digest), outputKey(d, hexToBytes(root))), 'derived, script-tree Taproot output signs');
  const bip = simulate(frostSignPrecommitted, precommitted(keys, [2, 3], 'bip340', digest, { path }).params);
  t.ok(schnorr.verify(hexToBytes(bip.results.get(2)!.signature), hexToBytes(digest), hexToBytes(d).slice(1)), 'BIP-340 signature verifies under the derived x-only key');
  const plain = simulate(frostSignPrecommitted, precommitted(keys, [1, 2], 'secp256k1', digest).params);
  t.ok(secp256k1_FROST.verify(hexToBytes(plain.results.get(1)!.signature), hexToBytes(digest), hexToBytes(pkg.groupKey)), 'RFC 9591 signature verifies');
});

t.test('precommit: commitments are the nonces times G, pairs are distinct, secrets redact', async (t) => {
  const keys = dkgKeys(2, 2, 'pc-shape');
  const made = frostPrecommit({ suite: 'taproot', me: 1, key: keys.get(1)!, path: [] }, 8, seededRng('shape'));
  t.equal(made.length, 8);
  t.equal(new Set(made.map((m) => m.commitment.hiding + m.commitment.binding)).size, 8, 'every pair is fresh');
  for (const m of made) t.same(commitmentOf(m.nonces), m.commitment);
  t.notMatch(JSON.stringify(made), new RegExp(bytesToHex(made[0]!.nonces.hiding.expose())), 'a nonce does not print');
  t.throws(() => frostPrecommit({ suite: 'taproot', me: 2, key: keys.get(1)!, path: [] }, 1, seededRng('x')), { code: 'bad_key' });
  t.throws(() => frostPrecommit({ suite: 'taproot', me: 1, key: keys.get(1)!, path: [] }, 0, seededRng('x')), { code: 'bad_params' });
  const b = { keyId: 'k', epoch: 1, suite: 'taproot' as const, signers: [2, 1], path: [0], merkleRoot: '' };
  t.not(bytesToHex(precommitStatement(b, 1, 'aa', made[0]!.commitment)), bytesToHex(precommitStatement({ ...b, epoch: 2 }, 1, 'aa', made[0]!.commitment)), 'the statement binds the epoch');
  t.equal(bytesToHex(precommitStatement(b, 1, 'aa', made[0]!.commitment)), bytesToHex(precommitStatement({ ...b, signers: [1, 2] }, 1, 'aa', made[0]!.commitment)), 'the signer set is taken sorted');
});

t.test('a signer refuses commitments named for it that are not its own, and a non-point anywhere', async (t) => {
  const keys = dkgKeys(3, 2, 'pc-refuse');
  const digest = bytesToHex(sha256(new TextEncoder().encode('refuse')));
  const { params, made } = precommitted(keys, [1, 2], 'taproot', digest);
  const other = frostPrecommit({ suite: 'taproot', me: 1, key: keys.get(1)!, path: [] }, 1, seededRng('other'))[0]!;
  const p1 = params.get(1)!;
  t.throws(() => frostSignPrecommitted.start({ ...p1, commitments: { ...p1.commitments, 1: other.commitment } }, seededRng('x')), { code: 'wrong_commitment' }, 'altered own commitments');
  t.throws(() => frostSignPrecommitted.start({ ...p1, nonces: other.nonces }, seededRng('x')), { code: 'wrong_commitment' }, 'another pair than the named commitments');
  t.throws(() => frostSignPrecommitted.start({ ...p1, commitments: { ...p1.commitments, 2: { ...p1.commitments['2']!, hiding: '02' + 'f'.repeat(64) } } }, seededRng('x')), { code: 'bad_commitment' }, 'a non-point');
  t.throws(() => frostSignPrecommitted.start({ ...p1, commitments: { 1: p1.commitments['1']! } }, seededRng('x')), { code: 'bad_commitment' }, 'a signer without commitments');
  t.throws(() => frostSignPrecommitted.start({ ...p1, commitments: { ...p1.commitments, 3: made.get(2)!.commitment } }, seededRng('x')), { code: 'bad_commitment' }, 'a commitment of a non-signer');
  t.notOk(made.get(1)!.nonces.hiding.zeroized, 'a refused start consumed nothing');
});

t.test('another signer\'s altered commitment: the aggregate fails naming that signer, no signature', async (t) => {
  const keys = dkgKeys(3, 2, 'pc-alter');
  const digest = bytesToHex(sha256(new TextEncoder().encode('alter')));
  const { params } = precommitted(keys, [1, 2], 'taproot', digest);
  const forged = frostPrecommit({ suite: 'taproot', me: 2, key: keys.get(2)!, path: [] }, 1, seededRng('forged'))[0]!.commitment;
  // Signer 1 is handed a list with signer 2's commitments replaced; signer 2 signs over its true list.
  const p1 = params.get(1)!;
  const lied = new Map(params);
  lied.set(1, { ...p1, commitments: { ...p1.commitments, 2: forged } });
  const { results, aborts } = simulate(frostSignPrecommitted, lied);
  t.equal(results.size, 0, 'nobody gets a signature');
  t.match(aborts.get(1), { code: 'wrong_session' }, 'lists that differ are told apart by the context');
  // Signer 1 handed a list with signer 2's commitments replaced, signer 2 signing over its true pair
  // (the same deterministic draws, fresh objects: the first run consumed its own).
  const fresh = precommitted(keys, [1, 2], 'taproot', digest).params;
  const honest2 = frostSignPrecommitted.start(fresh.get(2)!, seededRng('x'));
  t.equal(honest2.out.length, 1);
  const f1 = fresh.get(1)!;
  const run1 = frostSignPrecommitted.start({ ...f1, commitments: { ...f1.commitments, 2: forged } }, seededRng('x'));
  const ctx1 = run1.state.context;
  const share2 = decodeBlob<{ share: string }>('frost/pc1', honest2.out[0]!.payload).share;
  const msg: Message = { from: 2, to: 'all', round: 1, payload: encodeBlob('frost/pc1', { share: share2, context: ctx1 }) };
  const parsed = frostSignPrecommitted.verify(run1.state, 1, msg);
  const stored = frostSignPrecommitted.store(run1.state, 1, msg, parsed);
  t.throws(() => frostSignPrecommitted.finalize(stored, 1, seededRng('x')), { code: 'bad_signature_share', culprits: [2] }, 'the culprit is named');
});

t.test('a nonce pair signs once: zeroed after the share, a second start throws', async (t) => {
  const keys = dkgKeys(2, 2, 'pc-once');
  const digest = bytesToHex(sha256(new TextEncoder().encode('once')));
  const { params, made } = precommitted(keys, [1, 2], 'taproot', digest);
  const first = frostSignPrecommitted.start(params.get(1)!, seededRng('x'));
  t.equal(first.state.nonces, null, 'the state holds no nonce');
  t.ok(made.get(1)!.nonces.hiding.zeroized && made.get(1)!.nonces.binding.zeroized, 'the pair is zeroed');
  t.throws(() => frostSignPrecommitted.start({ ...params.get(1)!, message: '00'.repeat(32) }, seededRng('x')), 'the same pair cannot sign another message');
  const { results } = simulate(frostSignPrecommitted, precommitted(keys, [1, 2], 'taproot', digest).params, { roundTrip: true });
  t.equal(results.size, 2, 'a precommitted run resumes from its bytes');
});
