// What the coordinator sees of an ECDSA signing session: broadcast messages travel signed but in clear,
// direct ones end-to-end encrypted. The online round broadcasts every u_j, so Σu = k·φ is public, and
// any Φ_j = φ_j·G in clear would give k⁻¹·G = Φ·(Σu)⁻¹ for every signature. No broadcast payload of a
// whole session (presigning and online) may carry a Φ_j, their sum Φ, or k⁻¹·G, in any encoding.
import t from 'tap';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { Fn, exposeScalar, mulBase, parsePoint, type Point } from '../../../node/protocols/math/curve.ts';
import type { Message } from '../../../node/protocols/round/machine.ts';
import { decodeBlob } from '../../../core/codec/blob.ts';
import type { PresignatureData } from '../../../node/protocols/ecdsa/presignature.ts';
import { ONLINE_SID, committee, online, presign, sid } from './harness.ts';
import { rerandomizer } from '../../../node/protocols/ecdsa/online.ts';

/** Every way a point could sit in a payload: compressed or uncompressed, as bytes or hex, or its x alone. */
function encodings(p: Point): Uint8Array[] {
  const raw = [p.toBytes(true), p.toBytes(false), p.toBytes(false).subarray(1, 33)];
  return [...raw, ...raw.map((b) => utf8ToBytes(bytesToHex(b)))];
}

function contains(hay: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

const carries = (msgs: Message[], p: Point) => msgs.filter((m) => encodings(p).some((e) => contains(m.payload, e)));

t.test('no broadcast of a signing session carries Φ_j or k⁻¹·G', async (t) => {
  const c = committee(2, 2, 'coordinator-view');
  const signers = [1, 2];
  const pre = presign(c, signers, 'coordinator-view presign');
  t.equal(pre.results.size, 2, 'presigning completes');
  // The test reads each signer's φ_j from its stored presignature (before the online phase takes it).
  const data = new Map([...pre.results].map(([id, p]) => [id, decodeBlob<PresignatureData>('ecdsa-presignature', p.encode(), { secrets: true })]));
  const on = online(pre.results, sid('coordinator-view digest'));
  t.equal(on.results.size, 2, 'the signature is produced');

  const phis = signers.map((j) => mulBase(exposeScalar(data.get(j)!.phi, 'phi')));
  const phi = signers.reduce((a, j) => Fn.add(a, exposeScalar(data.get(j)!.phi, 'phi')), 0n);
  const sumU = signers.reduce((a, j) => Fn.add(a, exposeScalar(data.get(j)!.u, 'u')), 0n);
  const k = Fn.div(sumU, phi);
  t.ok(mulBase(k).equals(parsePoint(data.get(1)!.R, 'R')), 'Σu / φ is the nonce k of R (the test knows φ)');
  const kInvG = mulBase(Fn.inv(k));
  const sumPhi = phis.reduce((a, p) => a.add(p));
  t.ok(sumPhi.multiply(Fn.inv(sumU)).equals(kInvG), 'Φ·(Σu)⁻¹ = k⁻¹·G: Φ with the broadcast u_j would give it');

  const all = [...pre.transcript, ...on.transcript];
  const broadcasts = all.filter((m) => m.to === 'all');
  t.ok(broadcasts.length > 0, 'the session has broadcasts (the online round)');
  phis.forEach((p, i) => {
    t.same(carries(broadcasts, p).map((m) => `round ${m.round} from ${m.from}`), [], `no broadcast carries Φ_${signers[i]}`);
    t.ok(carries(all.filter((m) => m.to !== 'all'), p).length > 0, `Φ_${signers[i]} does travel, in direct (encrypted) messages`);
  });
  t.same(carries(broadcasts, sumPhi), [], 'no broadcast carries Φ');
  t.same(carries(broadcasts, kInvG), [], 'no broadcast carries k⁻¹·G');
  // The re-randomized signature's nonce is k + δ (online.ts): neither its inverse image travels in clear.
  const d1 = data.get(1)!;
  const delta = rerandomizer(ONLINE_SID, d1.R, sid('coordinator-view digest'), signers, d1.publicKey);
  const kpInvG = mulBase(Fn.inv(Fn.add(k, delta)));
  const sumUp = Fn.add(sumU, Fn.mul(delta, phi));
  t.ok(sumPhi.multiply(Fn.inv(sumUp)).equals(kpInvG), 'Φ·(Σu\')⁻¹ = (k + δ)⁻¹·G');
  t.same(carries(broadcasts, kpInvG), [], 'no broadcast carries (k + δ)⁻¹·G');
});
