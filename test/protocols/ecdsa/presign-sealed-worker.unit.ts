// ECDSA presigning in the form a protocol worker runs it (node/runtime/workers/): parameters through
// their sealed codec, the run through its sealed-storage bytes after every step, the presignature
// through the pool's codec. With the same inputs and the same seeded randomness it sends the same bytes
// and ends in the same presignatures as the run kept in memory, and those sign.
import t from 'tap';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { ecdsaPresignWith, type PresignParams, type PresignState } from '../../../node/protocols/ecdsa/presign.ts';
import { decodePresignature, encodePresignature, type Presignature } from '../../../node/protocols/ecdsa/presignature.ts';
import type { Protocol } from '../../../node/protocols/round/machine.ts';
import { nativePrimitives } from '../../../node/runtime/native-primitives.ts';
import { decodePresignParams, encodePresignParams } from '../../../node/runtime/workers/presign-params.ts';
import { exposeScalar } from '../../../node/protocols/math/curve.ts';
import { simulate } from '../simulate.ts';
import { committee, online, sid } from './harness.ts';

const c = committee(4, 3, 'presign-sealed-worker');
const native = ecdsaPresignWith(nativePrimitives);

/** The presigning protocol with its parameters passed through the worker's sealed codec first. */
const sealedParams: Protocol<PresignParams, PresignState, Presignature> = {
  ...native,
  start: (params, rng) => native.start(decodePresignParams(encodePresignParams(params)), rng),
};

const paramsFor = (signers: number[], label: string, path: number[] = []) =>
  new Map<number, PresignParams>(signers.map((me) => [me, { sessionId: sid(label), signers, me, key: c.keys.get(me)!, path, ot: c.ots.get(me)! }]));

t.test('the worker form sends the same bytes and makes the same presignatures as the run in memory', async (t) => {
  for (const [signers, path] of [[[1, 2, 3], []], [[1, 3, 4], [0, 5]]] as const) {
    const label = `same-${signers.join('')}`;
    const inMemory = simulate(native, paramsFor([...signers], label, [...path]), { seed: label });
    const workerForm = simulate(sealedParams, paramsFor([...signers], label, [...path]), { seed: label, roundTrip: true });
    t.equal(inMemory.aborts.size + workerForm.aborts.size, 0, `signers ${signers}: no aborts`);
    t.equal(workerForm.transcript.length, inMemory.transcript.length, `signers ${signers}: as many messages`);
    t.ok(workerForm.transcript.every((m, i) => bytesToHex(m.payload) === bytesToHex(inMemory.transcript[i]!.payload)), `signers ${signers}: every message byte for byte`);
    for (const me of signers) {
      // The result crosses back in the pool's sealed codec.
      const back = decodePresignature(encodePresignature(workerForm.results.get(me)!));
      t.equal(bytesToHex(back.encode()), bytesToHex(inMemory.results.get(me)!.encode()), `signers ${signers}: party ${me}'s presignature, secrets included`);
    }
    const digest = sid(`digest ${label}`);
    const sig = online(new Map(signers.map((me) => [me, decodePresignature(encodePresignature(workerForm.results.get(me)!))])), digest).results.get(signers[0]!)!;
    t.ok(secp256k1.verify(hexToBytes(sig.compact), hexToBytes(digest), hexToBytes(sig.publicKey), { prehash: false }), `signers ${signers}: the presignatures sign`);
  }
});

t.test('the sealed parameters hold the run\'s own pairs only, and their secrets only as secret sections', async (t) => {
  const p = paramsFor([1, 3], 'trim').get(1)!;
  const bytes = encodePresignParams(p);
  const back = decodePresignParams(bytes);
  t.same(Object.keys(back.ot.peers), ['3'], 'only the pair with the other signer (not 2 or 4) crosses');
  t.same(Object.keys(p.ot.peers).sort(), ['2', '3', '4'], 'the caller\'s setup is untouched');
  t.equal(exposeScalar(back.key.share, 'share'), exposeScalar(p.key.share, 'share'), 'the key share arrives whole');
  t.ok(back.ot.peers['3']!.delta.equals(p.ot.peers['3']!.delta) && back.ot.peers['3']!.k0.equals(p.ot.peers['3']!.k0), 'and the OT material');
  const json = new TextDecoder().decode(bytes.subarray(5, 5 + new DataView(bytes.buffer).getUint32(1)));
  t.notMatch(json, bytesToHex(p.key.share.expose()), 'the share is not in the readable part');
  t.match(json, '$secret', 'secrets are marked sections');
  t.equal(String(back.key.share), '<redacted>', 'and come back in their redacting type');
  t.throws(() => decodePresignParams(new Uint8Array([2, 0, 0, 0, 2, 123, 125])), { name: 'InputError' }, 'other bytes are refused');
});
