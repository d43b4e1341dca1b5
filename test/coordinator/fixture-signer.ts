// Signatures as a vault's committee would make them, from the whole key the coordinator unit tests hold
// (no deployment has one): the child key of a path by BIP-32 public derivation's tweak, then ECDSA with
// its recovery id, BIP-340 under the even-y key, or BIP-340 under the BIP-341 output key.
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { derive } from '../../core/keys/bip32.ts';
import { tapTweak } from '../../core/keys/taproot.ts';
import { Fn, G, pointHex } from '../../core/keys/point.ts';
import type { SignResult } from '../../core/session/session-results.ts';

export type FixtureScheme = 'ecdsa' | 'taproot' | 'bip340';

export interface FixtureSigner {
  /** Compressed group key, hex, as a vault record holds it. */
  publicKey: string;
  chainCode: string;
  sign(path: number[], scheme: FixtureScheme, digests: Uint8Array[]): SignResult;
}

export function fixtureSigner(secret: bigint, chainCode = '00'.repeat(32)): FixtureSigner {
  const publicKey = pointHex(G.multiply(secret));
  return {
    publicKey, chainCode,
    sign(path, scheme, digests) {
      const d = derive(publicKey, chainCode, path);
      let child = Fn.add(secret, d.tweak);
      const bytes = (x: bigint) => Fn.toBytes(x);
      if (scheme === 'ecdsa') {
        const sigs = digests.map((m) => secp256k1.Signature.fromBytes(secp256k1.sign(m, bytes(child), { prehash: false, format: 'recovered' }), 'recovered'));
        return { signatures: sigs.map((s) => s.toBytes('compact')), recoveryIds: sigs.map((s) => s.recovery!), publicKey: d.publicKey.toBytes(true) };
      }
      const even = d.publicKey.toBytes(true)[0] === 0x02;
      if (!even) child = Fn.neg(child);
      if (scheme === 'taproot') child = Fn.add(child, tapTweak(d.publicKey.toBytes(true).slice(1)));
      return { signatures: digests.map((m) => schnorr.sign(m, bytes(child), new Uint8Array(32))), publicKey: schnorr.getPublicKey(bytes(child)) };
    },
  };
}
