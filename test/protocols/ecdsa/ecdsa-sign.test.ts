// DKLs23 signing end to end over keys from the project's DKG: every qualified subset of 2-of-2, 2-of-3
// and 3-of-5 signs; every signature verifies with noble, is low-s, and viem recovers the key's address.
import t, { type Test } from 'tap';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hexToBytes } from '@noble/hashes/utils.js';
import { recoverAddress, serializeSignature } from 'viem';
import { publicKeyToAddress } from 'viem/accounts';
import { ORDER, parsePoint } from '../../../node/protocols/math/curve.ts';
import { derive } from '../../../node/protocols/derive/bip32.ts';
import type { EcdsaSignature } from '../../../node/protocols/ecdsa/online.ts';
import { subsets } from '../frost/keys.ts';
import { committee, sid, sign, type Committee } from './harness.ts';

const addressOf = (pubHex: string) => publicKeyToAddress(`0x${parsePoint(pubHex, 'key').toHex(false)}`);

async function checkSignature(t: Test, sig: EcdsaSignature, digest: string, publicKey: string) {
  t.ok(secp256k1.verify(hexToBytes(sig.compact), hexToBytes(digest), hexToBytes(publicKey), { prehash: false }), 'verifies with noble');
  t.ok(BigInt('0x' + sig.s) <= ORDER >> 1n, 'low s');
  const recovered = await recoverAddress({ hash: `0x${digest}`, signature: serializeSignature({ r: `0x${sig.r}`, s: `0x${sig.s}`, yParity: sig.recovery & 1 }) });
  t.equal(recovered, addressOf(publicKey), 'viem recovers the address');
}

const committees = new Map<string, Committee>();
const committeeOf = (n: number, th: number) => {
  const k = `${th}of${n}`;
  if (!committees.has(k)) committees.set(k, committee(n, th, `sign-${k}`));
  return committees.get(k)!;
};

for (const [n, th] of [[2, 2], [3, 2], [5, 3]] as const) {
  t.test(`${th}-of-${n}: every qualified subset signs`, async (t) => {
    const c = committeeOf(n, th);
    const groupKey = c.keys.get(1)!.pkg.groupKey;
    const parties = c.keys.get(1)!.pkg.parties;
    // 3-of-5 has 16 qualified subsets; each is one presign + online run.
    for (const signers of subsets(parties, th)) {
      const digest = sid(`message ${signers.join(',')}`);
      const res = sign(c, signers, digest, `sign ${n} ${signers.join(',')}`);
      t.equal(res.size, signers.length, `subset ${signers}: every signer outputs`);
      const sigs = [...res.values()];
      t.ok(sigs.every((s) => s.compact === sigs[0]!.compact), 'signers agree');
      await checkSignature(t, sigs[0]!, digest, groupKey);
    }
  });
}

t.test('a derived key signs: the tweak is added to every share', async (t) => {
  const c = committee(3, 2, 'sign-derived');
  const pkg = c.keys.get(1)!.pkg;
  const path = [44, 60, 0, 7];
  const derived = derive(pkg.groupKey, pkg.chainCode, path);
  const digest = sid('derived message');
  const res = sign(c, [1, 3], digest, 'derived', path);
  const sig = res.get(1)!;
  t.equal(sig.publicKey, derived.publicKey.toHex(true), 'signed under the derived key');
  await checkSignature(t, sig, digest, sig.publicKey);
});
