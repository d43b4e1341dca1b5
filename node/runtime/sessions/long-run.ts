// A long protocol run of a session (DKG, ECDSA OT setup, ECDSA presigning): on the node's protocol
// workers when it has them (workers/protocol-workers.ts), inline otherwise. The worker runs the protocol
// on the node's native primitives, so a node given other primitives (a test on the noble reference) runs
// it inline.
import type { Protocol } from '../../protocols/round/machine.ts';
import type { PartyProtocol } from '../party-protocol.ts';
import { runProtocol, type Finish } from '../protocols/run-protocol.ts';
import { nativePrimitives } from '../native-primitives.ts';
import { runProtocolOnWorkers } from '../workers/protocol-workers.ts';
import type { OffloadedName } from '../workers/offloaded.ts';
import type { NodeProtocolDeps } from './session-deps.ts';

export function runLong<P, S, R>(deps: NodeProtocolDeps, name: OffloadedName, protocol: Protocol<P, S, R>, me: number, params: P[], finish: (results: R[]) => Finish | Promise<Finish>): PartyProtocol {
  const native = deps.primitives === undefined || deps.primitives === nativePrimitives;
  if (deps.workers && native) return runProtocolOnWorkers(deps.workers, name, me, params, finish);
  return runProtocol(protocol, me, params, finish);
}
