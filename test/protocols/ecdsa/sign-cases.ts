// Shared checks of the signing tests: a signature verifies with noble, is low-s, and viem recovers the
// key's Ethereum address from it; every qualified subset of a committee signs.
import type { Test } from 'tap';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hexToBytes } from '@noble/hashes/utils.js';
import { recoverAddress, serializeSignature } from 'viem';
import { publicKeyToAddress } from 'viem/accounts';
import { ORDER, parsePoint } from '../../../node/protocols/math/curve.ts';
import type { EcdsaSignature } from '../../../node/protocols/ecdsa/online.ts';
import { subsets } from '../frost/keys.ts';
import type { Primitives } from '../../../node/protocols/math/primitives.ts';
import { sid, sign, type Committee } from './harness.ts';

export const addressOf = (pubHex: string): string => publicKeyToAddress(`0x${parsePoint(pubHex, 'key').toHex(false)}`);

export async function checkSignature(t: Test, sig: EcdsaSignature, digest: string, publicKey: string): Promise<void> {
  t.ok(secp256k1.verify(hexToBytes(sig.compact), hexToBytes(digest), hexToBytes(publicKey), { prehash: false }), 'verifies with noble');
  t.ok(BigInt('0x' + sig.s) <= ORDER >> 1n, 'low s');
  const recovered = await recoverAddress({ hash: `0x${digest}`, signature: serializeSignature({ r: `0x${sig.r}`, s: `0x${sig.s}`, yParity: sig.recovery & 1 }) });
  t.equal(recovered, addressOf(publicKey), 'viem recovers the address');
}

export async function everySubsetSigns(t: Test, c: Committee, label: string, prims?: Primitives): Promise<void> {
  const { groupKey, parties, threshold } = c.keys.get(1)!.pkg;
  for (const signers of subsets(parties, threshold)) {
    const digest = sid(`message ${label} ${signers.join(',')}`);
    const res = sign(c, signers, digest, `sign ${label} ${signers.join(',')}`, [], prims);
    t.equal(res.size, signers.length, `subset ${signers}: every signer outputs`);
    const sigs = [...res.values()];
    t.ok(sigs.every((s) => s.compact === sigs[0]!.compact), 'signers agree');
    await checkSignature(t, sigs[0]!, digest, groupKey);
  }
}
