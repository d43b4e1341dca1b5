// The protocols whose steps may run on the node's worker threads (protocol-workers.ts): the long ones
// whose parameters are plain data. A step there is the pure state machine's step, on a run that crosses
// the thread boundary in its sealed-storage form (serializeRun: secrets as secret sections) and a result
// in its sealed-storage codec, so what the worker computes is exactly what the same step computes inline.
// Signing runs stay on the main thread: their parameters hold the key share and OT material, and the
// online rounds are short.
import { dkg } from '../../protocols/dkg/dkg.ts';
import { decodeKeyShare, encodeKeyShare } from '../../protocols/keys/key-package.ts';
import { decodeOtSetup, ecdsaOtSetupWith, encodeOtSetup } from '../../protocols/ecdsa/ot-setup.ts';
import type { Protocol } from '../../protocols/round/machine.ts';
import { nativePrimitives } from '../native-primitives.ts';

export interface Offloadable<P, R> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  protocol: Protocol<P, any, R>;
  encodeResult(result: R): Uint8Array;
  decodeResult(bytes: Uint8Array): R;
}

const entry = <P, R>(e: Offloadable<P, R>) => e;

export const OFFLOADED = {
  dkg: entry({ protocol: dkg, encodeResult: encodeKeyShare, decodeResult: decodeKeyShare }),
  // On the node's native primitives, as the inline run (node-protocols.ts); a node given other
  // primitives (a test on the noble reference) runs this inline.
  'ecdsa-ot-setup': entry({ protocol: ecdsaOtSetupWith(nativePrimitives), encodeResult: encodeOtSetup, decodeResult: decodeOtSetup }),
};

export type OffloadedName = keyof typeof OFFLOADED;

export const isOffloadedName = (name: string): name is OffloadedName => Object.hasOwn(OFFLOADED, name);
