// A stored-form OT setup with placeholder material of the right sizes, for storage and guard tests
// that never run the protocol: each peer's pair carries the given setup id.
import { SecretBytes } from '../../core/codec/secret.ts';
import { BASE_OT_COUNT } from '../../node/protocols/ot/base-ot.ts';
import type { EcdsaOtSetup, PeerOt } from '../../node/protocols/ecdsa/ot-setup.ts';

const bytes = (n: number, fill: number) => new SecretBytes(new Uint8Array(n).fill(fill));

export function placeholderPeer(setupId: string, fill = 7): PeerOt {
  const keys = BASE_OT_COUNT * 32;
  return { k0: bytes(keys, fill), k1: bytes(keys, fill), delta: bytes(BASE_OT_COUNT / 8, fill), kd: bytes(keys, fill), zeroSeed: bytes(32, fill), setupId };
}

/** Party `me`'s setup of key `k` at epoch 0 with material toward each peer of `pairs`, under the pair's setup id. */
export function placeholderSetup(me: number, pairs: Record<number, string>, keyId = 'k'): EcdsaOtSetup {
  return { keyId, epoch: 0, me, peers: Object.fromEntries(Object.entries(pairs).map(([j, id]) => [j, placeholderPeer(id)])), retired: [] };
}
