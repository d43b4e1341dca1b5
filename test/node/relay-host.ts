// A real session host for a node of a multi-node test, wired to an in-memory relay: what it sends goes
// to the other nodes of `nodes` (broadcast or direct), and its results and failures are kept by session
// id. The test plays the coordinator: it opens sessions and reads the outcomes.
import { bytesToHex } from '@noble/hashes/utils.js';
import { SessionHost, type ProtocolFactory } from '../../node/runtime/session-host.ts';
import type { NodeIdentity } from '../../node/runtime/identity.ts';
import type { Envelope } from '../../proto/gen/mpc/v1/session_pb.ts';
import type { Logger } from '../../common/logger.ts';

export interface RelayOutcome {
  done?: Uint8Array;
  failed?: { code: string; message: string };
}

export function relayHost(identity: NodeIdentity, nodes: ReadonlyMap<string, { identity: NodeIdentity; host: SessionHost }>, factory: ProtocolFactory, log: Logger, outcomes: Map<string, RelayOutcome>): SessionHost {
  return new SessionHost(identity, (msg) => {
    const b = msg.body;
    if (b?.case === 'send') {
      const env = b.value.envelope as Envelope;
      const to = env.to === '' ? [...nodes.values()].filter((n) => n.identity.nodeId !== identity.nodeId) : [nodes.get(env.to)].filter((n) => n !== undefined);
      for (const n of to) queueMicrotask(() => n.host.onRelay(env));
    } else if (b?.case === 'done') outcomes.set(bytesToHex(b.value.sessionId as Uint8Array), { done: b.value.result as Uint8Array });
    else if (b?.case === 'failed') outcomes.set(bytesToHex(b.value.sessionId as Uint8Array), { failed: { code: b.value.code as string, message: b.value.message as string } });
  }, factory, log);
}
