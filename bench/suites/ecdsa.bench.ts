// Protocol core II: DKLs23 threshold ECDSA with every party in one process, beside a single-key noble
// ECDSA sign from the same run. DKG figures are the project's DKG followed by the pairwise OT setup
// (256 base OTs per ordered pair); the signing session is presigning plus the online phase. Cases run
// on the noble reference primitives, and the `.native` ones on the node's (node:crypto) provider, as
// a node runs them; the online phase calls no injected primitive, so it has one case.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { dkg, type DkgParams } from '../../node/protocols/dkg/dkg.ts';
import { encodeKeyShare, keyShareParam, SecretShare } from '../../node/protocols/keys/key-package.ts';
import { encodeOtSetup } from '../../node/protocols/ecdsa/ot-setup.ts';
import type { Presignature } from '../../node/protocols/ecdsa/presignature.ts';
import { exposeScalar } from '../../node/protocols/math/curve.ts';
import { simulate } from '../../test/protocols/simulate.ts';
import type { StoredKey } from '../../test/protocols/frost/keys.ts';
import { online, otSetup, presign, type Committee } from '../../test/protocols/ecdsa/harness.ts';
import type { Message } from '../../node/protocols/round/machine.ts';
import type { BenchSuite } from '../harness.ts';
import { noblePrimitives, type Primitives } from '../../node/protocols/math/primitives.ts';
import { nativePrimitives } from '../../node/runtime/native-primitives.ts';
import { systemRng } from '../../node/runtime/protocols/run-protocol.ts';

const sid = (s: string) => bytesToHex(sha256(new TextEncoder().encode(s)));
const digest = sid('bench digest');
let n = 0;

function dkgWithOt(parties: number[], threshold: number, prims: Primitives = noblePrimitives): Committee {
  const s = sid('ecdsa dkg ' + n++);
  const params = new Map<number, DkgParams>(parties.map((me) => [me, { sessionId: s, keyId: 'bench', epoch: 0, threshold, parties, me }]));
  const { results } = simulate(dkg, params, { seed: s });
  const keys = new Map<number, StoredKey>([...results].map(([id, k]) => [id, keyShareParam(k)]));
  const setup = otSetup(keys, 'ot ' + s, { prims });
  if (setup.results.size !== parties.length) throw new Error('OT setup failed');
  return { keys, ots: setup.results };
}

let committee: Committee;
const pool: Map<number, Presignature>[] = [];
const bytesSent = (msgs: Message[], from: number) => msgs.filter((m) => m.from === from).reduce((a, m) => a + m.payload.length, 0);
const figures: Record<string, number> = {};

// The timed runs draw from the system CSPRNG, as a node does (the harness's seeded RNG hashes per draw).
const systemRngs = new Map([1, 2, 3].map((id) => [id, systemRng] as const));

function presignOnce(prims: Primitives = noblePrimitives): Map<number, Presignature> {
  const res = presign(committee, [1, 2], 'presign ' + n++, [], { prims, rngs: systemRngs });
  if (res.results.size !== 2) throw new Error('presigning failed');
  return res.results;
}

function onlineOnce(pre: Map<number, Presignature>, prims: Primitives = noblePrimitives) {
  const res = online(pre, digest, { prims, rngs: systemRngs });
  if (res.results.size !== 2) throw new Error('signing failed');
  return res;
}

export const suite: BenchSuite = {
  title: 'DKLs23 threshold ECDSA (all parties in one process)',
  setup() {
    committee = dkgWithOt([1, 2, 3], 2);
    for (let i = 0; i < 60; i++) pool.push(presignOnce());
    const pre = presign(committee, [1, 2], 'bytes');
    const on = onlineOnce(pre.results);
    const setup = otSetup(committee.keys, 'bytes setup');
    figures.setup_bytes_per_party = bytesSent(setup.transcript, 1);
    figures.presign_bytes_per_party = bytesSent(pre.transcript, 1);
    figures.online_bytes_per_party = bytesSent(on.transcript, 1);
    const k = committee.keys.get(1)!;
    figures.key_share_bytes = encodeKeyShare({ share: new SecretShare(1, exposeScalar(k.share, 'share')), pkg: k.pkg }).length;
    figures.ot_setup_bytes = encodeOtSetup(committee.ots.get(1)!).length;
    figures.presignature_bytes = pool[0]!.get(1)!.encode().length;
  },
  cases: [
    { name: 'ecdsa.dkg+ot.2of3', baseline: 'baseline.ecdsa.sign', runs: 5, warmup: 1, fn: () => dkgWithOt([1, 2, 3], 2) },
    { name: 'ecdsa.dkg+ot.2of3.native', baseline: 'baseline.ecdsa.sign', runs: 5, warmup: 1, fn: () => dkgWithOt([1, 2, 3], 2, nativePrimitives) },
    { name: 'ecdsa.dkg+ot.2of2', baseline: 'baseline.ecdsa.sign', runs: 5, warmup: 1, fn: () => dkgWithOt([1, 2], 2) },
    {
      name: 'ecdsa.sign.2of3.session', baseline: 'baseline.ecdsa.sign', runs: 20, warmup: 3, fn: () => onlineOnce(presignOnce()),
      extra: () => ({ bytes_per_party: figures.presign_bytes_per_party! + figures.online_bytes_per_party! }),
    },
    {
      name: 'ecdsa.sign.2of3.session.native', baseline: 'baseline.ecdsa.sign', runs: 20, warmup: 3, fn: () => onlineOnce(presignOnce(nativePrimitives), nativePrimitives),
      extra: () => ({ bytes_per_party: figures.presign_bytes_per_party! + figures.online_bytes_per_party! }),
    },
    { name: 'ecdsa.presign.2of3', baseline: 'baseline.ecdsa.sign', runs: 20, warmup: 3, fn: () => presignOnce(), extra: () => ({ bytes_per_party: figures.presign_bytes_per_party!, presignature_bytes: figures.presignature_bytes! }) },
    { name: 'ecdsa.presign.2of3.native', baseline: 'baseline.ecdsa.sign', runs: 20, warmup: 3, fn: () => presignOnce(nativePrimitives) },
    { name: 'ecdsa.online.2of3', baseline: 'baseline.ecdsa.sign', runs: 25, warmup: 3, fn: () => onlineOnce(pool.pop()!), extra: () => ({ bytes_per_party: figures.online_bytes_per_party! }) },
    { name: 'ecdsa.online.2of3.native', baseline: 'baseline.ecdsa.sign', runs: 25, warmup: 3, fn: () => onlineOnce(pool.pop()!, nativePrimitives) },
    {
      name: 'ecdsa.ot-setup.2of3', runs: 3, warmup: 0, fn: () => otSetup(committee.keys, 'setup ' + n++),
      extra: () => ({ bytes_per_party: figures.setup_bytes_per_party!, key_share_bytes: figures.key_share_bytes!, ot_setup_bytes_per_party: figures.ot_setup_bytes! }),
    },
    { name: 'ecdsa.ot-setup.2of3.native', runs: 3, warmup: 0, fn: () => otSetup(committee.keys, 'setup ' + n++, { prims: nativePrimitives }) },
  ],
};
