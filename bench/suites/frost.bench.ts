// Protocol core I: DKG 2-of-3, a full FROST 2-of-3 Taproot signing session with every party in one
// process (on the node's native primitives, and on the reference ones), reshare 2-of-3 to 2-of-3, and
// bare noble schnorr_FROST doing the same session's work (each signer commits, signs, checks the
// other's share, aggregates and verifies), all beside a single-key BIP-340 sign from the same run.
import { schnorr, schnorr_FROST } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { dkg, type DkgParams } from '../../node/protocols/dkg/dkg.ts';
import { frostSign, frostSignWith, type FrostSignParams } from '../../node/protocols/frost/frost-sign.ts';
import { nativePrimitives } from '../../node/runtime/native-primitives.ts';
import { reshare, type ReshareParams } from '../../node/protocols/reshare/reshare.ts';
import { taprootKeyShare } from '../../node/protocols/frost/taproot.ts';
import { SecretShare } from '../../node/protocols/keys/key-package.ts';
import { exposeScalar, scalarHex } from '../../node/protocols/math/curve.ts';
import { simulate } from '../../test/protocols/simulate.ts';
import { dkgKeys, type StoredKey } from '../../test/protocols/frost/keys.ts';
import type { BenchSuite } from '../harness.ts';

const sid = (s: string) => bytesToHex(sha256(new TextEncoder().encode(s)));
const parties = [1, 2, 3];
let n = 0;
const keys: Map<number, StoredKey> = dkgKeys(3, 2, 'bench');
const digest = bytesToHex(sha256(new TextEncoder().encode('bench digest')));

function dkgOnce() {
  const s = sid('dkg' + n++);
  const params = new Map<number, DkgParams>(parties.map((me) => [me, { sessionId: s, keyId: 'bench', epoch: 0, threshold: 2, parties, me }]));
  return simulate(dkg, params, { seed: s });
}

const frostSignNative = frostSignWith(nativePrimitives);

function signOnce(protocol = frostSignNative) {
  const s = sid('sign' + n++);
  const params = new Map<number, FrostSignParams>([1, 2].map((me) => [me, { sessionId: s, suite: 'taproot', message: digest, signers: [1, 2], me, key: keys.get(me)!, path: [] }]));
  const { results } = simulate(protocol, params, { seed: s });
  if (results.size !== 2) throw new Error('signing failed');
}

function reshareOnce() {
  const s = sid('reshare' + n++);
  const oldPkg = keys.get(1)!.pkg;
  const members = parties.map((p) => ({ party: p, newId: p, ...(p !== 3 ? { oldId: p } : {}) }));
  const params = new Map<number, ReshareParams>(parties.map((me) => [me, {
    sessionId: s, members, me, oldPkg, newThreshold: 2, newEpoch: 1, ...(me !== 3 ? { oldShare: { id: me, share: keys.get(me)!.share } } : {}),
  }]));
  const { results } = simulate(reshare, params, { seed: s });
  if (results.size !== 3) throw new Error('reshare failed');
}

// Bare noble: the same Taproot-tweaked key, the same per-signer work, no wrapper.
const tweaked = [1, 2].map((id) => taprootKeyShare({ share: new SecretShare(id, exposeScalar(keys.get(id)!.share, 'share')), pkg: keys.get(id)!.pkg }));
const idOf = (i: number) => schnorr_FROST.Identifier.fromNumber(i);
const pub = {
  signers: { min: 2, max: 3 },
  commitments: tweaked[0]!.pkg.groupCommitment.map(hexToBytes),
  verifyingShares: Object.fromEntries([1, 2].map((i) => [idOf(i), hexToBytes(tweaked[0]!.pkg.verificationShares[String(i)]!)])),
};
const secrets = tweaked.map((k) => ({ identifier: idOf(k.share.id), signingShare: hexToBytes(scalarHex(k.share.scalar())) }));
const msg = hexToBytes(digest);
const xonly = hexToBytes(tweaked[0]!.pkg.groupKey).slice(1);
function bareNobleSession() {
  const c = secrets.map((s) => schnorr_FROST.commit(s));
  const list = c.map((x) => x.commitments);
  const shares = secrets.map((s, i) => schnorr_FROST.signShare(s, pub, c[i]!.nonces, list, msg));
  for (let me = 0; me < 2; me++) {
    const other = 1 - me;
    if (!schnorr_FROST.verifyShare(pub, list, msg, idOf(other + 1), shares[other]!)) throw new Error('share');
    const sig = schnorr_FROST.aggregate(pub, list, msg, { [idOf(1)]: shares[0]!, [idOf(2)]: shares[1]! });
    if (!schnorr.verify(sig, msg, xonly)) throw new Error('verify');
  }
}

export const suite: BenchSuite = {
  title: 'protocol core I: DKG, FROST, reshare',
  cases: [
    { name: 'frost.noble-bare.session.2of3', baseline: 'baseline.schnorr.sign', runs: 40, fn: bareNobleSession },
    { name: 'frost.session.2of3', baseline: 'frost.noble-bare.session.2of3', runs: 40, fn: () => signOnce() },
    { name: 'frost.session.2of3.vs-single', baseline: 'baseline.schnorr.sign', runs: 40, fn: () => signOnce() },
    { name: 'frost.session.2of3.reference', baseline: 'baseline.schnorr.sign', runs: 40, fn: () => signOnce(frostSign) },
    { name: 'dkg.2of3', baseline: 'baseline.schnorr.sign', runs: 20, fn: dkgOnce },
    { name: 'reshare.2of3-to-2of3', baseline: 'baseline.schnorr.sign', runs: 20, fn: reshareOnce },
  ],
};
