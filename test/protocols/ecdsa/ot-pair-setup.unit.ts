// OT setup per pair (docs/protocols/ecdsa.md "Per-pair setup"): a run on any two or more members of the
// committee sets up the pairs among them; each node merges it into its stored setup, and each pair's
// material carries the id of the run that made it, bound into that pair's presigning context. A vault
// whose third member missed the first setup signs with the two that ran it, and with the third once
// its pairs exist. Retirement names a pair: retiring {1,2} leaves {1,3} usable.
import t from 'tap';
import { hexToBytes } from '@noble/hashes/utils.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { InputError } from '../../../core/errors/protocol-errors.ts';
import { encodeBlob } from '../../../core/codec/blob.ts';
import { bytesToHex } from '@noble/hashes/utils.js';
import { decodeOtSetup, ecdsaOtSetupWith, encodeOtSetup, mergeOtSetup, retireOtPairs, type EcdsaOtSetup, type OtSetupParams } from '../../../node/protocols/ecdsa/ot-setup.ts';
import { checkPresignParams, presignContext, type PresignParams } from '../../../node/protocols/ecdsa/presign.ts';
import { nativePrimitives } from '../../../node/runtime/native-primitives.ts';
import { simulate } from '../simulate.ts';
import { dkgKeys, type StoredKey } from '../frost/keys.ts';
import { presign, sid, sign, type Committee } from './harness.ts';

const keys = dkgKeys(3, 2, 'ot-pair-setup');
const first = keys.get(1)!;

/**
 * One setup run on `parties` only, as the nodes of that subset would run it: on the native primitives,
 * as the nodes run it (the noble reference makes the same bytes: test/protocols/primitives.unit.ts).
 */
function setupRun(parties: number[], label: string): Map<number, EcdsaOtSetup> {
  const params = new Map<number, OtSetupParams>(parties.map((me) => [me, { sessionId: sid(label), keyId: first.pkg.keyId, epoch: first.pkg.epoch, parties, me }]));
  const { results, aborts } = simulate(ecdsaOtSetupWith(nativePrimitives), params, { seed: label });
  if (aborts.size) throw [...aborts.values()][0]!;
  return results;
}

/** Each node's stored setup after merging `runs` in order (what VaultShareStore.putOt does on disk). */
function merged(...runs: Map<number, EcdsaOtSetup>[]): Map<number, EcdsaOtSetup> {
  const out = new Map<number, EcdsaOtSetup>();
  for (const run of runs) for (const [me, s] of run) out.set(me, mergeOtSetup(out.get(me), s));
  return out;
}

const committeeWith = (ots: Map<number, EcdsaOtSetup>): Committee => ({ keys: keys as Map<number, StoredKey>, ots });
const verifies = (sig: { compact: string }, digest: string) => secp256k1.verify(hexToBytes(sig.compact), hexToBytes(digest), hexToBytes(first.pkg.groupKey), { prehash: false });
const presignParams = (ots: Map<number, EcdsaOtSetup>, signers: number[], me: number): PresignParams => ({ sessionId: sid('check'), signers, me, key: keys.get(me)!, path: [], ot: ots.get(me)! });

t.test('a setup on two of three members signs with that pair; the third is refused until its pairs exist', async (t) => {
  const only12 = merged(setupRun([1, 2], 'run {1,2}'));
  t.same([...only12.keys()], [1, 2], 'member 3 missed the run and holds nothing');
  t.same(Object.keys(only12.get(1)!.peers), ['2']);
  const digest = sid('pair digest');
  const sigs = sign(committeeWith(only12), [1, 2], digest, 'sign {1,2}');
  t.ok(verifies(sigs.get(1)!, digest), 'members 1 and 2 sign');
  t.throws(() => checkPresignParams(presignParams(only12, [1, 3], 1)), { code: 'bad_ot_setup', message: /no OT material for party 3/ }, 'member 1 refuses a run with 3: no material for that pair');
  t.throws(() => sign(committeeWith(only12), [1, 3], digest, 'sign {1,3} early'), InputError);

  // Member 3 returns: its pairs are set up by a run of their own, merged beside {1,2}.
  const all = merged(setupRun([1, 2], 'run {1,2}'), setupRun([1, 3], 'run {1,3}'), setupRun([2, 3], 'run {2,3}'));
  const ids = (me: number) => Object.fromEntries(Object.entries(all.get(me)!.peers).map(([j, p]) => [j, p.setupId]));
  t.equal(ids(1)['2'], ids(2)['1'], 'both members of a pair hold the same pair setup id');
  t.not(ids(1)['2'], ids(1)['3'], 'pairs made by different runs carry different ids');
  t.equal(ids(1)['2'], only12.get(1)!.peers['2']!.setupId, 'the later runs left pair {1,2} as it was');
  for (const signers of [[1, 3], [2, 3], [1, 2, 3]]) {
    const d = sid(`digest ${signers.join()}`);
    t.ok(verifies(sign(committeeWith(all), signers, d, `sign ${signers.join()}`).get(signers[0]!)!, d), `signers ${signers.join(',')} sign`);
  }
  const contexts = [1, 2, 3].map((me) => presignContext(presignParams(all, [1, 2, 3], me), first.pkg.groupKey));
  t.equal(new Set(contexts).size, 1, 'the presigning context is the same at every signer, whatever runs made their pairs');
});

t.test('a retirement of pair {1,2} does not retire {1,3}; a new setup of {1,2} clears {1,2} alone', async (t) => {
  const all = merged(setupRun([1, 2, 3], 'run {1,2,3}'));
  const retired = new Map(all);
  retired.set(1, retireOtPairs(all.get(1)!, [2]));
  t.throws(() => checkPresignParams(presignParams(retired, [1, 2], 1)), { code: 'ot_retired' });
  const d = sid('after retirement');
  t.ok(verifies(sign(committeeWith(retired), [1, 3], d, 'sign {1,3} after retiring {1,2}').get(1)!, d), 'pair {1,3} still signs');
  const both = new Map(retired);
  both.set(1, retireOtPairs(retired.get(1)!, [3]));
  const again = merged(setupRun([1, 2], 'rerun {1,2}'));
  const healed = new Map(both);
  for (const [me, s] of again) healed.set(me, mergeOtSetup(healed.get(me), s));
  t.same(healed.get(1)!.retired, [3], 'the rerun of {1,2} clears that pair only');
  t.ok(verifies(sign(committeeWith(healed), [1, 2], d, 'sign {1,2} after its rerun').get(1)!, d));
});

t.test('the stored setup: version 2 round-trips, version 1 decodes with its setup id as every pair\'s', async (t) => {
  const all = merged(setupRun([1, 2], 'run {1,2}'), setupRun([1, 3], 'run {1,3}'));
  const one = all.get(1)!;
  const back = decodeOtSetup(encodeOtSetup(one));
  t.same(Object.fromEntries(Object.entries(back.peers).map(([j, p]) => [j, p.setupId])), Object.fromEntries(Object.entries(one.peers).map(([j, p]) => [j, p.setupId])));
  t.ok(back.peers['3']!.kd.equals(one.peers['3']!.kd));
  const legacyId = 'ab'.repeat(32);
  const v1peers = Object.fromEntries(Object.entries(one.peers).map(([j, p]) => [j, { k0: bytesToHex(p.k0.expose()), k1: bytesToHex(p.k1.expose()), delta: bytesToHex(p.delta.expose()), kd: bytesToHex(p.kd.expose()), zeroSeed: bytesToHex(p.zeroSeed.expose()) }]));
  const v1 = decodeOtSetup(encodeBlob('ecdsa-ot-setup', { keyId: one.keyId, epoch: one.epoch, parties: [1, 2, 3], me: 1, setupId: legacyId, peers: v1peers, retired: [3] }));
  t.same(Object.values(v1.peers).map((p) => p.setupId), [legacyId, legacyId]);
  t.same(v1.retired, [3]);
  t.throws(() => decodeOtSetup(encodeBlob('ecdsa-ot-setup', { keyId: 'k', epoch: 0, parties: [1, 2], me: 1, setupId: 'nope', peers: {}, retired: [] })), { code: 'bad_encoding' }, 'a malformed old setup id is refused');
});

t.test('a merge refuses a run of another key or party, and replaces a setup of another epoch', async (t) => {
  const run = setupRun([1, 2], 'run {1,2}').get(1)!;
  t.throws(() => mergeOtSetup({ ...run, keyId: 'other' }, run), { code: 'bad_ot_setup' });
  t.throws(() => mergeOtSetup({ ...run, me: 2 }, run), { code: 'bad_ot_setup' });
  const old = { ...setupRun([1, 3], 'run {1,3}').get(1)!, epoch: run.epoch - 1 };
  t.same(Object.keys(mergeOtSetup(old, run).peers), ['2'], 'nothing of an older epoch survives');
});

t.test('members holding different material for their pair (one merged a newer run) abort presigning; nothing signs', async (t) => {
  const older = merged(setupRun([1, 2], 'run {1,2}'));
  const newer = setupRun([1, 2], 'run {1,2} again');
  // Node 2 committed the newer run, node 1 did not (its session was cut before its commit).
  const mixed = new Map(older);
  mixed.set(2, mergeOtSetup(older.get(2), newer.get(2)!));
  t.not(mixed.get(1)!.peers['2']!.setupId, mixed.get(2)!.peers['1']!.setupId);
  const res = presign(committeeWith(mixed), [1, 2], 'mixed material');
  t.equal(res.results.size, 0, 'no presignature');
  t.equal(res.aborts.size, 2, 'both abort');
  for (const [me, abort] of res.aborts) t.same(abort.culprits, [3 - me], `party ${me} names its peer: the pair is retired on both sides`);
});
