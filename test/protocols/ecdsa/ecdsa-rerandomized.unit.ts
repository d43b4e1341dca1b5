// Re-randomized online phase (docs/protocols/pools.md "Re-randomized presignatures"; Groth and Shoup,
// EUROCRYPT 2022): every ECDSA signature is made with R' = R + δ·G, δ a domain-separated hash of the
// online session id, R, H(m), the signer set and the key. The signatures verify under the key with noble
// and with viem (recoverAddress, verifyHash), their r is x(R + δ·G) and not x(R), δ moves with every
// input, and a signer whose online share does not match its images is still named.
import t from 'tap';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hexToBytes } from '@noble/hashes/utils.js';
import { serializeSignature, verifyHash } from 'viem';
import { Fn, G, ORDER, parsePoint, scalarHex } from '../../../node/protocols/math/curve.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { ProtocolAbort } from '../../../core/errors/protocol-errors.ts';
import { derive } from '../../../node/protocols/derive/bip32.ts';
import type { Message } from '../../../node/protocols/round/machine.ts';
import { ONLINE_R1_KIND, rerandomizer } from '../../../node/protocols/ecdsa/online.ts';
import { ONLINE_SID, committee, online, presign, sid } from './harness.ts';
import { addressOf, checkSignature } from './sign-cases.ts';

const c = committee(3, 2, 'rerandomized');
const groupKey = c.keys.get(1)!.pkg.groupKey;

t.test('signatures use R\' = R + δ·G and verify with noble and viem', async (t) => {
  for (const [signers, path] of [[[1, 2], []], [[2, 3], [0, 5]], [[1, 2, 3], [44, 60, 0, 1]]] as [number[], number[]][]) {
    const digest = sid(`rerandomized ${signers} ${path}`);
    const pre = presign(c, signers, `rr ${signers} ${path}`, path);
    const p = pre.results.get(signers[0]!)!;
    const key = path.length ? derive(groupKey, c.keys.get(1)!.pkg.chainCode, path).publicKey.toHex(true) : groupKey;
    t.equal(p.publicKey, key, 'presigned for the derived key');
    const delta = rerandomizer(ONLINE_SID, p.R, digest, signers, p.publicKey);
    const R = parsePoint(p.R, 'R');
    const on = online(pre.results, digest);
    t.equal(on.results.size, signers.length, `${signers}: every signer outputs`);
    const sigs = [...on.results.values()];
    t.ok(sigs.every((s) => s.compact === sigs[0]!.compact), 'signers agree');
    const sig = sigs[0]!;
    t.equal(sig.r, scalarHex(Fn.create(R.add(G.multiply(delta)).toAffine().x)), 'r = x(R + δ·G)');
    t.not(sig.r, scalarHex(Fn.create(R.multiply(delta).toAffine().x)), 'not x(δ·R), the multiplicative form of v2');
    t.not(sig.r, scalarHex(Fn.create(R.toAffine().x)), 'and not x(R)');
    await checkSignature(t, sig, digest, key);
    const viemSig = serializeSignature({ r: `0x${sig.r}`, s: `0x${sig.s}`, yParity: sig.recovery & 1 });
    t.ok(await verifyHash({ address: addressOf(key) as `0x${string}`, hash: `0x${digest}`, signature: viemSig }), 'viem verifyHash accepts it');
    t.notOk(await verifyHash({ address: addressOf(key) as `0x${string}`, hash: `0x${sid('another digest')}`, signature: viemSig }), 'viem refuses it for another digest');
    t.ok(secp256k1.verify(hexToBytes(sig.compact), hexToBytes(digest), hexToBytes(key), { prehash: false }), 'noble verifies under the key');
  }
});

t.test('δ changes with each of its inputs', async (t) => {
  const pre = presign(c, [1, 3], 'rr inputs');
  const p = pre.results.get(1)!;
  const other = presign(c, [1, 3], 'rr inputs 2').results.get(1)!;
  const base = { sid: ONLINE_SID, R: p.R, digest: sid('m'), signers: [1, 3], key: p.publicKey };
  const d0 = rerandomizer(base.sid, base.R, base.digest, base.signers, base.key);
  t.ok(d0 > 0n && d0 < ORDER, 'δ is a non-zero scalar');
  t.equal(rerandomizer(base.sid, base.R, base.digest, [3, 1], base.key), d0, 'the signer set is taken sorted');
  const variants: [string, bigint][] = [
    ['session id', rerandomizer(sid('another session'), base.R, base.digest, base.signers, base.key)],
    ['R', rerandomizer(base.sid, other.R, base.digest, base.signers, base.key)],
    ['digest', rerandomizer(base.sid, base.R, sid('m2'), base.signers, base.key)],
    ['signer set', rerandomizer(base.sid, base.R, base.digest, [1, 2], base.key)],
    ['key', rerandomizer(base.sid, base.R, base.digest, base.signers, c.keys.get(1)!.pkg.groupKey === p.publicKey ? other.R : c.keys.get(1)!.pkg.groupKey)],
  ];
  for (const [what, d] of variants) t.not(d, d0, `δ changes with the ${what}`);

  // The same presignature material signing under two online session ids would give two different R'
  // (never done by a node: the presignature is taken once). Two fresh presignatures show it in effect.
  const a = online(presign(c, [1, 3], 'rr sid a').results, base.digest, {}, sid('online a'));
  const b = online(presign(c, [1, 3], 'rr sid a').results, base.digest, {}, sid('online b'));
  t.not(a.results.get(1)!.r, b.results.get(1)!.r, 'the same R under two online session ids signs with two R\'');
  await checkSignature(t, a.results.get(1)!, base.digest, p.publicKey);
  await checkSignature(t, b.results.get(1)!, base.digest, p.publicKey);
});

t.test('a wrong online share is still named against U_j + δ·Φ_j and H(m)·Φ_j + r\'·V_j', async (t) => {
  const digest = sid('rr culprit');
  for (const field of ['u', 'w'] as const) {
    const pre = presign(c, [1, 2, 3], `rr culprit ${field}`);
    const tamper = (m: Message) => {
      const v = decodeBlob<Record<string, unknown>>(ONLINE_R1_KIND, m.payload);
      // A u_j' off by one fails the check, as an arbitrary one does.
      v[field] = field === 'u' ? scalarHex(Fn.add(BigInt('0x' + (v.u as string)), 1n)) : scalarHex(5n);
      return [{ ...m, payload: encodeBlob(ONLINE_R1_KIND, v) }];
    };
    const res = online(pre.results, digest, { tamper: new Map([[2, tamper]]) });
    for (const h of [1, 3]) {
      const a = res.aborts.get(h);
      t.ok(a instanceof ProtocolAbort, `${field}: party ${h} aborts`);
      t.equal(a?.code, 'bad_signature_share', `${field}: party ${h} reports a bad share`);
      t.same(a?.culprits, [2], `${field}: party ${h} names party 2`);
      t.notOk(res.results.has(h), `${field}: party ${h} releases nothing`);
    }
  }
});

t.test('an online run with a malformed session id is refused before the presignature is taken', async (t) => {
  const pre = presign(c, [1, 2], 'rr bad sid');
  t.throws(() => online(pre.results, sid('x'), {}, 'not-hex'), { code: 'bad_session' }, 'refused');
  t.notOk(pre.results.get(1)!.used, 'the presignature is still unused');
  const ok = online(pre.results, sid('x'));
  t.equal(ok.results.size, 2, 'and signs afterwards');
});
