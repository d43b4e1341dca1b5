// Every ECDSA message and state round-trips through its versioned encoding and runs resume from their
// bytes; the stored OT setup and presignature decode and sign; after a reshare to a new committee (new
// members' OT setup run afresh) the same address signs.
import t from 'tap';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { recoverAddress, serializeSignature } from 'viem';
import { publicKeyToAddress } from 'viem/accounts';
import { parsePoint } from '../../../node/protocols/math/curve.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { keyShareParam } from '../../../node/protocols/keys/key-package.ts';
import { reshare, type ReshareParams } from '../../../node/protocols/reshare/reshare.ts';
import type { ReshareMember } from '../../../core/session/reshare-member.ts';
import { decodeOtSetup, encodeOtSetup, type EcdsaOtSetup } from '../../../node/protocols/ecdsa/ot-setup.ts';
import { decodePresignature, type Presignature } from '../../../node/protocols/ecdsa/presignature.ts';
import { nativePrimitives } from '../../../node/runtime/native-primitives.ts';
import type { StoredKey } from '../frost/keys.ts';
import { simulate } from '../simulate.ts';
import { committee, online, otSetup, presign, sid, sign } from './harness.ts';

const c = committee(3, 2, 'state');

const kinds: Record<string, string[]> = {
  setup: ['ecdsa-ot-setup/r1', 'ecdsa-ot-setup/r2', 'ecdsa-ot-setup/r3/v3'],
  presign: ['ecdsa-presign/r1/v4', 'ecdsa-presign/r2/v3', 'ecdsa-presign/r3/v3'],
  online: ['ecdsa-online/r1/v3'],
};

t.test('every message round-trips, and every run resumes from its bytes at every step', async (t) => {
  const setup = otSetup(c.keys, 'state-setup', { roundTrip: true, prims: nativePrimitives }); // the setup's state is the same on either provider
  t.equal(setup.results.size, 3, 'setup completes with runs restored from bytes at every step');
  const pre = presign({ keys: c.keys, ots: setup.results }, [1, 3], 'state-presign', [], { roundTrip: true });
  t.equal(pre.results.size, 2, 'presigning completes with runs restored from bytes at every step');
  const on = online(pre.results, sid('state digest'), { roundTrip: true });
  t.equal(on.results.size, 2, 'the online phase completes from restored runs');
  const sig = on.results.get(1)!;
  t.ok(secp256k1.verify(hexToBytes(sig.compact), hexToBytes(sid('state digest')), hexToBytes(sig.publicKey), { prehash: false }), 'signature verifies');
  const all = [...setup.transcript, ...pre.transcript, ...on.transcript];
  const kindList = [...kinds.setup!, ...kinds.presign!, ...kinds.online!];
  for (const kind of kindList) {
    const msgs = all.filter((m) => { try { decodeBlob(kind, m.payload); return true; } catch { return false; } });
    t.ok(msgs.length > 0, `${kind}: messages seen`);
    t.ok(msgs.every((m) => Buffer.from(encodeBlob(kind, decodeBlob(kind, m.payload))).equals(Buffer.from(m.payload))), `${kind}: decode then encode gives the same bytes`);
  }
});

t.test('stored OT setup and presignatures decode and sign', async (t) => {
  const ots = new Map([...c.ots].map(([id, o]) => [id, decodeOtSetup(encodeOtSetup(o))]));
  // SecretBytes compare only through what they expose (a deep comparison sees no private field).
  const exposed = (o: EcdsaOtSetup) => ({ ...o, peers: Object.fromEntries(Object.entries(o.peers).map(([j, p]) => [j, Object.fromEntries(Object.entries(p).map(([f, v]) => [f, typeof v === 'string' ? v : bytesToHex(v.expose())]))])) });
  t.same(exposed(ots.get(2)!), exposed(c.ots.get(2)!), 'OT setup round-trips');
  t.throws(() => decodeOtSetup(encodeBlob('ecdsa-presignature', {})), 'another blob kind is refused');
  const pre = presign({ keys: c.keys, ots }, [2, 3], 'stored-presign');
  const stored = new Map<number, Presignature>([...pre.results].map(([id, p]) => [id, decodePresignature(p.encode())]));
  t.equal(stored.get(2)!.id, pre.results.get(2)!.id, 'presignature id survives storage');
  const on = online(stored, sid('stored digest'));
  t.equal(on.results.size, 2, 'signs from stored presignatures');
});

t.test('a stored presignature decodes alike on the native primitives, and a planted point is refused alike', async (t) => {
  const pre = presign({ keys: c.keys, ots: c.ots }, [1, 2], 'native-decode');
  const bytes = pre.results.get(1)!.encode();
  const native = decodePresignature(bytes, nativePrimitives);
  const reference = decodePresignature(bytes);
  t.same([native.id, native.R, native.publicKey, native.signers], [reference.id, reference.R, reference.publicKey, reference.signers], 'the same presignature');
  const on = online(new Map([[1, native], [2, decodePresignature(pre.results.get(2)!.encode(), nativePrimitives)]]), sid('native decode digest'));
  t.equal(on.results.size, 2, 'signs from presignatures the native primitives decoded');
  // Not on the curve (x = 5 has no y on secp256k1), as R, as the key and as a signer image in turn.
  const bad = `02${'0'.repeat(63)}5`;
  const data = decodeBlob<Record<string, unknown>>('ecdsa-presignature', bytes, { secrets: true });
  const images = data.images as Record<string, Record<string, string>>;
  const planted = [
    { ...data, R: bad },
    { ...data, publicKey: bad },
    { ...data, images: { ...images, 2: { ...images['2']!, Phi: bad } } },
  ];
  for (const [i, d] of planted.entries()) {
    const tampered = encodeBlob('ecdsa-presignature', d, { secrets: true });
    let nativeError: unknown;
    let referenceError: unknown;
    try { decodePresignature(tampered, nativePrimitives); } catch (err) { nativeError = err; }
    try { decodePresignature(tampered); } catch (err) { referenceError = err; }
    t.match(nativeError, { code: 'bad_point' }, `planted point ${i}: refused on the native primitives`);
    t.same([(nativeError as Error)?.message, (nativeError as { code?: string })?.code], [(referenceError as Error)?.message, (referenceError as { code?: string })?.code], `planted point ${i}: the same error as the reference`);
  }
});

t.test('after a reshare to a new committee the same address signs', async (t) => {
  const oldPkg = c.keys.get(1)!.pkg;
  // Old parties 1 and 2 deal; the new committee is the old party 3 plus two new nodes, 2-of-3.
  const members: ReshareMember[] = [{ party: 1, oldId: 1 }, { party: 2, oldId: 2 }, { party: 3, newId: 1 }, { party: 4, newId: 2 }, { party: 5, newId: 3 }];
  const params = new Map<number, ReshareParams>(members.map((m) => {
    const p: ReshareParams = { sessionId: sid('ecdsa reshare'), members, me: m.party, oldPkg, newThreshold: 2, newEpoch: 1 };
    if (m.oldId) p.oldShare = { id: m.oldId, share: c.keys.get(m.oldId)!.share };
    return [m.party, p];
  }));
  const { results } = simulate(reshare, params, { seed: 'ecdsa reshare' });
  const keys = new Map<number, StoredKey>();
  for (const r of results.values()) if (r.kind === 'receiver') keys.set(r.key.share.id, keyShareParam(r.key));
  t.equal(keys.size, 3, 'three new shares');
  t.equal(keys.get(1)!.pkg.groupKey, oldPkg.groupKey, 'same group key');
  t.throws(() => presign({ keys, ots: c.ots }, [1, 2], 'stale-ot'), 'the old epoch OT setup is refused');
  const ots = otSetup(keys, 'ot after reshare', { prims: nativePrimitives }).results; // the setup on the fast provider, as committee() does
  const digest = sid('after reshare');
  const sig = sign({ keys, ots }, [2, 3], digest, 'sign after reshare').get(2)!;
  t.equal(sig.publicKey, oldPkg.groupKey, 'signed under the unchanged key');
  t.ok(secp256k1.verify(hexToBytes(sig.compact), hexToBytes(digest), hexToBytes(oldPkg.groupKey), { prehash: false }), 'verifies under the old group key');
  const recovered = await recoverAddress({ hash: `0x${digest}`, signature: serializeSignature({ r: `0x${sig.r}`, s: `0x${sig.s}`, yParity: sig.recovery & 1 }) });
  t.equal(recovered, publicKeyToAddress(`0x${parsePoint(oldPkg.groupKey, 'key').toHex(false)}`), 'viem recovers the same address as before the reshare');
});
