// The protocols whose steps may run on the node's worker threads (protocol-workers.ts): the long ones.
// A step there is the pure state machine's step, on a run that crosses the thread boundary in its
// sealed-storage form (serializeRun: secrets as secret sections) and a result in its sealed-storage
// codec, so what the worker computes is exactly what the same step computes inline. Parameters that hold
// secrets (ECDSA presigning: the key share and the OT material of the run's pairs) cross the same way,
// in a sealed-storage codec of their own; plain parameters (a DKG's, an OT setup's) are copied as they are.
// The online rounds of signing stay on the main thread: they are short.
import { dkg } from '../../protocols/dkg/dkg.ts';
import { decodeKeyShare, encodeKeyShare } from '../../protocols/keys/key-package.ts';
import { decodeOtSetup, ecdsaOtSetupWith, encodeOtSetup } from '../../protocols/ecdsa/ot-setup.ts';
import { ecdsaPresignWith } from '../../protocols/ecdsa/presign.ts';
import { decodePresignature, encodePresignature } from '../../protocols/ecdsa/presignature.ts';
import type { Protocol } from '../../protocols/round/machine.ts';
import { nativePrimitives } from '../native-primitives.ts';
import { decodePresignParams, encodePresignParams } from './presign-params.ts';

export interface Offloadable<P, R> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  protocol: Protocol<P, any, R>;
  encodeResult(result: R): Uint8Array;
  decodeResult(bytes: Uint8Array): R;
  /**
   * Parameters holding secrets: their sealed-storage bytes cross instead (transferred, zeroed once read),
   * since a structured copy would drop a redacting type's contents or, worse, print them.
   */
  encodeParams?(params: P): Uint8Array;
  decodeParams?(bytes: Uint8Array): P;
  /**
   * Steps of tens of milliseconds that a signing waits on: never queued behind a long step (a DKG round,
   * a base-OT step: seconds), but on the pool's short lane when every worker has one (protocol-workers.ts).
   */
  short?: boolean;
}

const entry = <P, R>(e: Offloadable<P, R>) => e;

export const OFFLOADED = {
  dkg: entry({ protocol: dkg, encodeResult: encodeKeyShare, decodeResult: decodeKeyShare }),
  // On the node's native primitives, as the inline run (node-protocols.ts); a node given other
  // primitives (a test on the noble reference) runs these inline.
  'ecdsa-ot-setup': entry({ protocol: ecdsaOtSetupWith(nativePrimitives), encodeResult: encodeOtSetup, decodeResult: decodeOtSetup }),
  // The key share and the OT material of the run's own pairs travel with the start step; every later
  // step carries the run, which holds what is left of that material (Alice's until round 1, Bob's
  // until round 2). The presignature comes back in the pool's sealed-storage form.
  'ecdsa-presign': entry({
    protocol: ecdsaPresignWith(nativePrimitives), encodeResult: encodePresignature, decodeResult: decodePresignature,
    encodeParams: encodePresignParams, decodeParams: decodePresignParams, short: true,
  }),
};

export type OffloadedName = keyof typeof OFFLOADED;

export const isOffloadedName = (name: string): name is OffloadedName => Object.hasOwn(OFFLOADED, name);
