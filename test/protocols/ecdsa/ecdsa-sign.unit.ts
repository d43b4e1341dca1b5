// DKLs23 signing end to end over keys from the project's DKG: every qualified subset of 2-of-2 and
// 2-of-3 signs (3-of-5 in ecdsa-sign-3of5.unit.ts); every signature verifies with noble, is low-s, and
// viem recovers the key's address, also for a BIP-32 derived key. All of it under both primitive
// providers: the noble reference and the node's native OpenSSL one.
import t from 'tap';
import { derive } from '../../../node/protocols/derive/bip32.ts';
import { noblePrimitives } from '../../../node/protocols/math/primitives.ts';
import { nativePrimitives } from '../../../node/runtime/native-primitives.ts';
import { committee, sid, sign } from './harness.ts';
import { checkSignature, everySubsetSigns } from './sign-cases.ts';

for (const prims of [noblePrimitives, nativePrimitives]) {
  t.test(`on ${prims.name}`, async (t) => {
    t.test('2-of-2: every qualified subset signs', (t) => everySubsetSigns(t, committee(2, 2, 'sign-2of2', prims), '2of2', prims));

    const c = committee(3, 2, 'sign-2of3', prims);
    t.test('2-of-3: every qualified subset signs', (t) => everySubsetSigns(t, c, '2of3', prims));

    t.test('a derived key signs: the tweak is added to every share', async (t) => {
      const pkg = c.keys.get(1)!.pkg;
      const path = [44, 60, 0, 7];
      const derived = derive(pkg.groupKey, pkg.chainCode, path);
      const digest = sid('derived message');
      const sig = sign(c, [1, 3], digest, 'derived', path, prims).get(1)!;
      t.equal(sig.publicKey, derived.publicKey.toHex(true), 'signed under the derived key');
      t.not(sig.publicKey, pkg.groupKey, 'which differs from the group key');
      await checkSignature(t, sig, digest, sig.publicKey);
    });
  });
}
