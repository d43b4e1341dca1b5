// A real session host for a node of a multi-node test, wired to an in-memory relay: what it sends goes
// to the other nodes of `nodes` (broadcast or direct), and its results and failures are kept by session
// id. The test plays the coordinator: it opens sessions and reads the outcomes.
import { create } from '@bufbuild/protobuf';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { SessionHost, type ProtocolFactory } from '../../node/runtime/session-host.ts';
import type { NodeIdentity } from '../../node/runtime/identity.ts';
import type { SealedStore } from '../../node/storage/sealed-store.ts';
import { SessionOpenSchema, type Envelope, type Party, type Protocol } from '../../proto/gen/mpc/v1/session_pb.ts';
import type { Logger } from '../../common/logger.ts';
import { deadlineOf, newSessionId } from './session-ids.ts';

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

/** A node of such a test: its session host and the outcomes it reported. */
export interface RelayMember {
  host: SessionHost;
  outcomes: Map<string, RelayOutcome>;
}

/**
 * Opens a session at every member as the coordinator would and waits until each reported (at most
 * `waitMs`); then ends it everywhere, as the coordinator's cancel does after a refusal by some.
 */
export async function runRelayed(members: readonly RelayMember[], parties: Party[], protocol: Protocol, keyId: string, params: Uint8Array, waitMs: number): Promise<RelayOutcome[]> {
  const sessionId = newSessionId();
  const sid = bytesToHex(sessionId);
  const open = create(SessionOpenSchema, { sessionId, protocol, keyId, parties, params, deadlineMs: deadlineOf(sessionId) });
  for (const n of members) n.host.onOpen(open);
  const deadline = Date.now() + waitMs;
  while (members.some((n) => !n.outcomes.has(sid)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  for (const n of members) n.host.abortAll('session over');
  return members.map((n) => n.outcomes.get(sid) ?? { failed: { code: 'joined', message: 'still in the session' } });
}

/** Every record of a node's store: its key and a hash of its stored bytes. */
export async function storeRecords(store: SealedStore): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const k of store.keys('')) out.set(k, bytesToHex(sha256((await store.raw(k))!)));
  return out;
}
