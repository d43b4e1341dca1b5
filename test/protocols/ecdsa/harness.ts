// Shared setup for the ECDSA tests: keys from the project's DKG, the OT setup over them, and helpers
// that run presigning and the online phase in the simulated network, on the noble reference primitives
// unless a test passes others (`prims`). The committee a test starts from is the one exception: its OT
// setup runs on the native primitives unless the test passes the provider it is about. Both providers
// make the same setup, byte for byte, from the same seed (test/protocols/primitives.unit.ts), and the
// native one makes it in a third of the time (about 1 s of CPU for 2-of-3 against 3 s, 2 s for 3-of-5
// against 11 s): what the test then runs, and on which provider, is unchanged.
import { bytesToHex } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { simulate, type SimOptions } from '../simulate.ts';
import { dkgKeys, type StoredKey } from '../frost/keys.ts';
import { ecdsaOtSetupWith, type EcdsaOtSetup, type OtSetupParams } from '../../../node/protocols/ecdsa/ot-setup.ts';
import { ecdsaPresignWith, type PresignParams } from '../../../node/protocols/ecdsa/presign.ts';
import { noblePrimitives, type Primitives } from '../../../node/protocols/math/primitives.ts';
import { nativePrimitives } from '../../../node/runtime/native-primitives.ts';
import { ecdsaOnlineWith, type EcdsaSignature, type OnlineParams } from '../../../node/protocols/ecdsa/online.ts';
import type { Presignature } from '../../../node/protocols/ecdsa/presignature.ts';

export const sid = (label: string): string => bytesToHex(sha256(new TextEncoder().encode(label)));

export interface Committee {
  keys: Map<number, StoredKey>;
  ots: Map<number, EcdsaOtSetup>;
}

export type HarnessOptions = SimOptions & { prims?: Primitives };

export function otSetup(keys: Map<number, StoredKey>, label = 'ot-setup', opts: HarnessOptions = {}) {
  const first = [...keys.values()][0]!;
  const parties = first.pkg.parties;
  const params = new Map<number, OtSetupParams>(parties.map((me) => [me, { sessionId: sid(label), keyId: first.pkg.keyId, epoch: first.pkg.epoch, parties, me }]));
  return simulate(ecdsaOtSetupWith(opts.prims ?? noblePrimitives), params, { seed: label, ...opts });
}

export function committee(n: number, t: number, seed: string, prims: Primitives = nativePrimitives): Committee {
  const keys = dkgKeys(n, t, seed);
  const { results } = otSetup(keys, `ot/${seed}`, { prims });
  return { keys, ots: results };
}

export function presign(c: Committee, signers: number[], label: string, path: number[] = [], opts: HarnessOptions = {}) {
  const params = new Map<number, PresignParams>(signers.map((me) => [me, { sessionId: sid(label), signers, me, key: c.keys.get(me)!, path, ot: c.ots.get(me)! }]));
  return simulate(ecdsaPresignWith(opts.prims ?? noblePrimitives), params, { seed: label, ...opts });
}

/** The online session id the helpers use unless a test names one (bound into the re-randomizer δ). */
export const ONLINE_SID = sid('online session');

export function online(presigs: Map<number, Presignature>, digest: string, opts: HarnessOptions = {}, sessionId: string = ONLINE_SID) {
  const params = new Map<number, OnlineParams>([...presigs].map(([me, presignature]) => [me, { sessionId, presignature, digest }]));
  return simulate(ecdsaOnlineWith(opts.prims ?? noblePrimitives), params, { seed: 'online', ...opts });
}

/** Presign then sign; returns every signer's signature (they must agree). */
export function sign(c: Committee, signers: number[], digest: string, label: string, path: number[] = [], prims: Primitives = noblePrimitives): Map<number, EcdsaSignature> {
  const pre = presign(c, signers, label, path, { prims });
  if (pre.aborts.size) throw [...pre.aborts.values()][0]!;
  const on = online(pre.results, digest, { prims });
  if (on.aborts.size) throw [...on.aborts.values()][0]!;
  return on.results;
}
