// FROST signing through our wrapper: RFC 9591 and ZF vectors reproduce byte for byte; DKG keys sign for
// every qualified subset, plain, derived and Taproot-tweaked, verified by noble and matched against
// bitcoinjs-lib's P2TR output; cheaters are named; a nonce signs once.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { schnorr, secp256k1_FROST } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { HDKey } from '@scure/bip32';
import { frostSign, frostSignWith, type FrostSignParams, type FrostSuite } from '../../../node/protocols/frost/frost-sign.ts';
import { noblePrimitives, type Primitives } from '../../../node/protocols/math/primitives.ts';
import { nativePrimitives } from '../../../node/runtime/native-primitives.ts';
import { outputKey } from '../../../node/protocols/frost/taproot.ts';
import { derive } from '../../../node/protocols/derive/bip32.ts';
import { startRun, deliver, type Message } from '../../../node/protocols/round/machine.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { simulate, seededRng } from '../simulate.ts';
import { dealerKeys, dkgKeys, subsets, type StoredKey } from './keys.ts';
import { pointHex, G } from '../../../node/protocols/math/curve.ts';

bitcoin.initEccLib(ecc);
const vectorsDir = new URL('../../../../shared/vectors/', import.meta.url);
const readVec = (p: string) => JSON.parse(readFileSync(new URL(p, vectorsDir), 'utf8'));
const sid = (s: string) => bytesToHex(sha256(new TextEncoder().encode(s)));

function params(keys: Map<number, StoredKey>, signers: number[], suite: FrostSuite, message: string, opts: { path?: number[]; session?: string; merkleRoot?: string } = {}): Map<number, FrostSignParams> {
  return new Map(signers.map((me) => [me, { sessionId: sid(opts.session ?? 'sign'), suite, message, signers, me, key: keys.get(me)!, path: opts.path ?? [], ...(opts.merkleRoot ? { merkleRoot: opts.merkleRoot } : {}) }]));
}

const providers: Primitives[] = [noblePrimitives, nativePrimitives];

function runVector(t: Test, file: string, suite: FrostSuite) {
  for (const prims of providers) runVectorOn(t, file, suite, prims);
}

function runVectorOn(t: Test, file: string, suite: FrostSuite, prims: Primitives) {
  const frostSign = frostSignWith(prims);
  const v = readVec(file);
  const tag = `${file} [${prims.name}]`;
  const n = Number(v.config.MAX_PARTICIPANTS);
  const keys = dealerKeys([v.inputs.group_secret_key, ...v.inputs.share_polynomial_coefficients], n);
  for (const s of v.inputs.participant_shares) t.equal(bytesToHex(keys.get(s.identifier)!.share.expose()), s.participant_share, `${tag}: share ${s.identifier}`);
  const signers: number[] = v.inputs.participant_list;
  const p = params(keys, signers, suite, v.inputs.message);
  // Inject the vector's nonce randomness: hiding first, then binding, per participant.
  const rngFor = (id: number) => {
    const o = v.round_one_outputs.outputs.find((x: { identifier: number }) => x.identifier === id);
    const queue = [hexToBytes(o.hiding_nonce_randomness), hexToBytes(o.binding_nonce_randomness)];
    return () => queue.shift()!;
  };
  for (const id of signers) {
    const r = startRun(frostSign, p.get(id)!, rngFor(id));
    const c = decodeBlob<{ hiding: string; binding: string }>('frost/r1', r.out[0]!.payload);
    const o = v.round_one_outputs.outputs.find((x: { identifier: number }) => x.identifier === id);
    t.equal(c.hiding, o.hiding_nonce_commitment, `${tag}: hiding commitment ${id}`);
    t.equal(c.binding, o.binding_nonce_commitment, `${tag}: binding commitment ${id}`);
  }
  const { results, transcript } = simulate(frostSign, p, { seed: 'unused', rngs: new Map(signers.map((id) => [id, rngFor(id)])) });
  for (const o of v.round_two_outputs.outputs) {
    const m = transcript.find((x) => x.round === 2 && x.from === o.identifier)!;
    t.equal(decodeBlob<{ share: string }>('frost/r2', m.payload).share, o.sig_share, `${tag}: signature share ${o.identifier}`);
  }
  for (const r of results.values()) t.equal(r.signature, v.final_output.sig, `${tag}: final signature`);
}

t.test('RFC 9591 E.5 FROST(secp256k1, SHA-256) vector', async (t) => runVector(t, 'frost/rfc9591-frost-secp256k1-sha256.json', 'secp256k1'));
t.test('ZF frost-secp256k1 vectors', async (t) => {
  runVector(t, 'frost/zf-frost-secp256k1-vectors.json', 'secp256k1');
  runVector(t, 'frost/zf-frost-secp256k1-vectors-big-identifier.json', 'secp256k1');
});
t.test('ZF frost-secp256k1-tr (BIP-340) vector', async (t) => runVector(t, 'frost/zf-frost-secp256k1-tr.json', 'bip340'));

t.test('BIP-340 vectors through both verify paths (noble schnorr.verify, libsecp256k1)', async (t) => {
  const rows = readFileSync(new URL('bip/bip340-test-vectors.csv', vectorsDir), 'utf8').trim().split('\n').slice(1);
  t.ok(rows.length >= 15);
  for (const prims of providers) {
    for (const row of rows) {
      const [index, , pub, , msg, sig, result] = row.split(',');
      let ok = false;
      try {
        ok = prims.verifySchnorr(hexToBytes(sig!.toLowerCase()), hexToBytes(msg!.toLowerCase()), hexToBytes(pub!.toLowerCase()));
      } catch {
        ok = false;
      }
      t.equal(ok, result === 'TRUE', `vector ${index} [${prims.name}]`);
    }
  }
});

for (const [n, tt] of [[2, 2], [3, 2], [5, 3]] as const) {
  t.test(`${tt}-of-${n} DKG key: every qualified subset signs (Taproot and plain)`, async (t) => {
    const keys = dkgKeys(n, tt, `sign-${n}-${tt}`);
    const pkg = keys.get(1)!.pkg;
    const digest = bytesToHex(sha256(new TextEncoder().encode(`spend ${n}-${tt}`)));
    const q = outputKey(pkg.groupKey);
    const p2tr = bitcoin.payments.p2tr({ internalPubkey: hexToBytes(pkg.groupKey).slice(1), network: bitcoin.networks.regtest });
    t.equal(bytesToHex(p2tr.pubkey!), bytesToHex(q), 'our output key is bitcoinjs-lib p2tr\'s');
    const sets = subsets(pkg.parties, tt);
    for (const signers of sets) {
      const { results, aborts } = simulate(frostSign, params(keys, signers, 'taproot', digest, { session: `tr-${signers}` }), { seed: `tr-${signers}` });
      t.equal(aborts.size, 0);
      const sigs = new Set([...results.values()].map((r) => r.signature));
      t.equal(sigs.size, 1, `{${signers}} agree on one signature`);
      t.ok(schnorr.verify(hexToBytes([...sigs][0]!), hexToBytes(digest), q), `{${signers}} taproot signature verifies under the output key`);
    }
    const plain = simulate(frostSign, params(keys, pkg.parties.slice(0, tt), 'secp256k1', digest), { seed: 'plain' });
    t.ok(secp256k1_FROST.verify(hexToBytes(plain.results.get(1)!.signature), hexToBytes(digest), hexToBytes(pkg.groupKey)), 'RFC 9591 signature verifies');
  });
}

t.test('derived keys sign with the same shares; the derived key is BIP-32\'s', async (t) => {
  const keys = dkgKeys(3, 2, 'derive');
  const pkg = keys.get(1)!.pkg;
  const hd = new HDKey({ publicKey: hexToBytes(pkg.groupKey), chainCode: hexToBytes(pkg.chainCode) });
  for (const path of [[0], [1, 7], [44, 0, 0, 5], [2147483647]]) {
    const d = derive(pkg.groupKey, pkg.chainCode, path);
    const oracle = hd.derive('m/' + path.join('/'));
    t.equal(pointHex(d.publicKey), bytesToHex(oracle.publicKey!), `m/${path.join('/')} public key`);
    t.equal(d.chainCode, bytesToHex(oracle.chainCode!), `m/${path.join('/')} chain code`);
    const digest = bytesToHex(sha256(new TextEncoder().encode('derived ' + path)));
    const { results } = simulate(frostSign, params(keys, [1, 3], 'taproot', digest, { path }), { seed: 'd' + path });
    t.ok(schnorr.verify(hexToBytes(results.get(1)!.signature), hexToBytes(digest), outputKey(pointHex(d.publicKey))), `m/${path.join('/')} signs`);
  }
  t.throws(() => derive(pkg.groupKey, pkg.chainCode, [0x80000000]), { code: 'bad_path' }, 'hardened index refused');
});

t.test('a bad signature share is named; no signature is released to the honest party', async (t) => {
  const keys = dkgKeys(3, 2, 'cheat');
  const digest = bytesToHex(sha256(new TextEncoder().encode('cheat')));
  for (const prims of providers) {
    for (const [what, share] of [['a random share', '11'.repeat(32)], ['a zero share', '00'.repeat(32)]] as const) {
      for (const suite of ['taproot', 'secp256k1'] as const) {
        const tamper = (m: Message) => (m.round === 2 ? [{ ...m, payload: encodeBlob('frost/r2', { share }) }] : [m]);
        const { results, aborts } = simulate(frostSignWith(prims), params(keys, [1, 2], suite, digest), { tamper: new Map([[2, tamper]]) });
        t.notOk(results.has(1), `${prims.name}, ${suite}, ${what}: no signature`);
        t.match(aborts.get(1), { code: 'bad_signature_share', culprits: [2] }, `${prims.name}, ${suite}, ${what}: the culprit is named`);
      }
    }
  }
  // A share that is right for another message (the signer signed something else) is caught the same way.
  for (const prims of providers) {
    const other = simulate(frostSignWith(prims), params(keys, [1, 2], 'taproot', bytesToHex(sha256(new TextEncoder().encode('other'))), { session: 'other' })).transcript.find((m) => m.round === 2 && m.from === 2)!;
    const share = decodeBlob<{ share: string }>('frost/r2', other.payload).share;
    const { aborts } = simulate(frostSignWith(prims), params(keys, [1, 2], 'taproot', digest), { tamper: new Map([[2, (m: Message) => (m.round === 2 ? [{ ...m, payload: encodeBlob('frost/r2', { share }) }] : [m])]]) });
    t.match(aborts.get(1), { code: 'bad_signature_share', culprits: [2] }, `${prims.name}: a share from another signing is named`);
  }
});

t.test('a commitment from another session or signer set is refused', async (t) => {
  const keys = dkgKeys(3, 2, 'replay');
  const digest = bytesToHex(sha256(new TextEncoder().encode('replay')));
  const old = simulate(frostSign, params(keys, [1, 2], 'taproot', digest, { session: 'old' })).transcript.find((m) => m.round === 1 && m.from === 2)!;
  const { aborts } = simulate(frostSign, params(keys, [1, 2], 'taproot', digest, { session: 'new' }), { tamper: new Map([[2, (m: Message) => (m.round === 1 ? [old] : [m])]]) });
  t.match(aborts.get(1), { code: 'wrong_session', culprits: [2] });
  const bad = (m: Message) => (m.round === 1 ? [{ ...m, payload: encodeBlob('frost/r1', { ...decodeBlob<Record<string, string>>('frost/r1', m.payload), hiding: '02' + 'f'.repeat(64) }) }] : [m]);
  for (const prims of providers) {
    const offCurve = simulate(frostSignWith(prims), params(keys, [1, 2], 'taproot', digest, { session: 'oc' }), { tamper: new Map([[2, bad]]) });
    t.match(offCurve.aborts.get(1), { code: 'bad_commitment', culprits: [2] }, `${prims.name}: an off-curve commitment is named`);
  }
});

t.test('a nonce signs once: a run cannot be finalized twice, and resumes from its bytes', async (t) => {
  const keys = dkgKeys(2, 2, 'once');
  const digest = bytesToHex(sha256(new TextEncoder().encode('once')));
  const p = params(keys, [1, 2], 'taproot', digest);
  const a = startRun(frostSign, p.get(1)!, seededRng('a'));
  const b = startRun(frostSign, p.get(2)!, seededRng('b'));
  const stepA = deliver(frostSign, a.run, b.out[0]!, seededRng('a'));
  t.equal(stepA.kind, 'continue');
  t.equal(stepA.run.state.nonces, null, 'nonce consumed by the round-2 share');
  t.equal(stepA.run.state.share, null, 'share dropped from the state');
  t.throws(() => frostSign.finalize(stepA.run.state, 1, seededRng('x')), /nonce already consumed/);
  t.throws(() => deliver(frostSign, stepA.run, b.out[0]!, seededRng('a')), { code: 'duplicate_message', culprits: [2] }, 'a replayed commitment is refused');
  const rt = simulate(frostSign, p, { roundTrip: true, seed: 'rt' });
  t.equal(rt.results.size, 2, 'runs resume from serialized bytes');
});

t.test('a group commitment planted in the state before round 2 changes nothing that is signed', async (t) => {
  const keys = dkgKeys(2, 2, 'planted');
  const digest = bytesToHex(sha256(new TextEncoder().encode('planted')));
  const p = params(keys, [1, 2], 'taproot', digest);
  for (const prims of providers) {
    const proto = frostSignWith(prims);
    const shareOf = (plant: boolean) => {
      // The same draws each time: the same nonces, so the shares compare.
      const a = startRun(proto, p.get(1)!, seededRng('planted a'));
      const b = startRun(proto, p.get(2)!, seededRng('planted b'));
      const withB = proto.store(a.run.state, 1, b.out[0]!, proto.verify(a.run.state, 1, b.out[0]!));
      const state = plant ? { ...withB, groupCommitment: pointHex(G.multiply(12345n)) } : withB;
      const step = proto.finalize(state, 1, seededRng('x'));
      if (step.kind !== 'next') throw new Error('round 1 did not finish');
      return { share: decodeBlob<{ share: string }>('frost/r2', step.out[0]!.payload).share, kept: step.state.groupCommitment };
    };
    const honest = shareOf(false);
    const planted = shareOf(true);
    t.equal(planted.share, honest.share, `${prims.name}: the share is computed over the group commitment it computes itself`);
    t.equal(planted.kept, honest.kept, `${prims.name}: and that is the one kept for the aggregation`);
  }
});

t.test('every FROST and reshare message round-trips through its encoding', async (t) => {
  const keys = dkgKeys(3, 2, 'codec');
  const { transcript } = simulate(frostSign, params(keys, [1, 3], 'taproot', '11'.repeat(32)), { seed: 'codec' });
  t.equal(transcript.length, 4);
  for (const m of transcript) {
    const kind = m.round === 1 ? 'frost/r1' : 'frost/r2';
    t.same(encodeBlob(kind, decodeBlob(kind, m.payload)), m.payload, `${kind} from ${m.from}`);
  }
});

t.test('signing parameters are validated', async (t) => {
  const keys = dkgKeys(3, 2, 'params');
  const base = params(keys, [1, 2], 'taproot', '00'.repeat(32)).get(1)!;
  const rng = seededRng('p');
  t.throws(() => frostSign.start({ ...base, signers: [1] }, rng), { code: 'not_enough_signers' });
  t.throws(() => frostSign.start({ ...base, signers: [1, 4] }, rng), { code: 'bad_parties' });
  t.throws(() => frostSign.start({ ...base, message: 'abcd' }, rng), { code: 'bad_message' });
  t.throws(() => frostSign.start({ ...base, me: 2 }, rng), { code: 'bad_key' });
  t.throws(() => frostSign.start({ ...base, suite: 'ed25519' as FrostSuite }, rng), { code: 'bad_suite' });
  void G;
});
