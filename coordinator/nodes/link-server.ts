// Server side of the node link: authenticates each node's stream (docs/transport.md) and keeps the
// registry of attached nodes current. A refusal is logged with its reason and ends the stream.
import type * as grpc from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../common/logger.ts';
import { toHex } from '../../common/bytes.ts';
import { NodeKind, type AttachRequest, type AttachResponse, type Hello, type InventoryPage } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { AttachResponseSchema } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import { LINK_VERSION, verifyAttach } from '../../core/link/attach.ts';
import { KIND_NAMES } from '../../core/link/node-kind.ts';
import { nodeIdFor } from '../../core/trust/node-id.ts';
import type { NodeRegistry } from './node-registry.ts';
import type { ErrorCode } from '../../core/errors/error-codes.ts';

/**
 * Heartbeats a node may miss before it is dropped. Protocol steps run on the node's event loop (an OT
 * setup can hold it for seconds), so this is generous; a dead stream is noticed at once anyway.
 */
export const SILENT_INTERVALS = 5;

type Call = grpc.ServerDuplexStream<AttachRequest, MessageInitShape<typeof AttachResponseSchema>>;

export interface LinkServerOptions {
  coordinatorId: string;
  heartbeatIntervalMs: number;
  registry: NodeRegistry;
  log: Logger;
  now?: () => number;
  /** How long a new stream may take to finish the handshake. */
  handshakeTimeoutMs?: number;
  /** Receives session traffic from attached nodes. */
  onSession?: (nodeId: string, msg: SessionMessage) => void;
  /**
   * True while the node is a party of a running session: a node busy computing a protocol step misses
   * heartbeats, and the session's own deadline (which names it) is the judge then, not the heartbeat.
   */
  inSession?: (nodeId: string) => boolean;
  /** Receives inventory pages from attached nodes (inventory-client.ts). */
  onInventory?: (nodeId: string, page: InventoryPage) => void;
}

export type SessionMessage = Extract<AttachRequest['body'], { case: 'send' | 'done' | 'failed' }>;

export function createLinkHandler(opts: LinkServerOptions): (call: Call) => void {
  const now = opts.now ?? Date.now;
  return (call: Call) => {
    const connectionId = new Uint8Array(randomBytes(16));
    const nonce = new Uint8Array(randomBytes(32));
    const conn = toHex(connectionId);
    const peer = call.getPeer();
    let state: 'hello' | 'challenge' | 'attached' | 'closed' = 'hello';
    let hello: Hello | undefined;
    // Ticks of our own heartbeat with nothing heard since the one before: counted, not timed, so a
    // coordinator whose own event loop was held up does not blame the node for the delay.
    let heard = true;
    let missed = 0;
    let heartbeat: NodeJS.Timeout | undefined;
    let seq = 0n;

    const close = () => {
      if (state === 'closed') return;
      const wasAttached = state === 'attached';
      state = 'closed';
      clearTimeout(handshakeTimer);
      clearInterval(heartbeat);
      if (wasAttached && hello && opts.registry.detach(hello.nodeId, conn)) {
        opts.log.info({ nodeId: hello.nodeId, peer }, 'node detached');
      }
      call.end();
    };

    // Only registered codes leave the coordinator (core/errors/error-codes.ts).
    const refuse = (code: ErrorCode, message: string) => {
      opts.log.warn({ nodeId: hello?.nodeId, peer, code }, `node refused: ${message}`);
      const refusal: MessageInitShape<typeof AttachResponseSchema> = { body: { case: 'refusal', value: { code, message } } };
      call.write(refusal);
      close();
    };

    const handshakeTimer = setTimeout(() => refuse('handshake_timeout', 'no complete handshake in time'), opts.handshakeTimeoutMs ?? 10_000);

    call.on('data', (msg: AttachRequest) => {
      heard = true;
      const body = msg.body;
      if (state === 'hello') {
        if (body.case !== 'hello') return refuse('bad_hello', 'first message must be hello');
        hello = body.value;
        const problem = checkHello(hello);
        if (problem) return refuse('bad_hello', problem);
        void opts.registry.known(hello.nodeId).then((known) => {
          if (state !== 'hello' || !hello) return;
          if (known && (toHex(known.signingKey) !== toHex(hello.signingKey) || toHex(known.encryptionKey) !== toHex(hello.encryptionKey))) {
            return refuse('identity_mismatch', 'keys differ from the ones pinned for this node id');
          }
          state = 'challenge';
          call.write({ body: { case: 'challenge', value: { connectionId, nonce, coordinatorId: opts.coordinatorId } } });
        }, (err: unknown) => refuse('internal', `registry read failed: ${(err as Error).message}`));
        return;
      }
      if (state === 'challenge') {
        if (body.case !== 'response' || !hello) return refuse('bad_hello', 'expected the challenge response');
        const ok = verifyAttach(
          {
            coordinatorId: opts.coordinatorId, connectionId, nonce, nodeId: hello.nodeId, kind: hello.kind, owner: hello.owner,
            signingKey: hello.signingKey, encryptionKey: hello.encryptionKey,
          },
          body.value.signature,
        );
        if (!ok) return refuse('bad_signature', 'identity signature does not verify');
        const h = hello;
        const kind = KIND_NAMES[h.kind]!;
        void opts.registry
          .known(h.nodeId)
          .then((known) =>
            opts.registry.remember({
              nodeId: h.nodeId, kind, owner: h.owner, signingKey: h.signingKey, encryptionKey: h.encryptionKey, firstSeenMs: known?.firstSeenMs ?? now(),
            }).then(() => known),
          )
          .then((known) => {
            if (state !== 'challenge') return;
            state = 'attached';
            clearTimeout(handshakeTimer);
            opts.registry.attach(
              { nodeId: h.nodeId, kind, owner: h.owner, signingKey: h.signingKey, encryptionKey: h.encryptionKey, firstSeenMs: known?.firstSeenMs ?? now(), attachedAtMs: now(), connectionId: conn, inventoryVersion: h.inventoryVersion },
              close,
              (m: MessageInitShape<typeof AttachResponseSchema>) => {
                if (state === 'attached') call.write(m);
              },
            );
            call.write({ body: { case: 'welcome', value: { nodeId: h.nodeId, heartbeatIntervalMs: opts.heartbeatIntervalMs } } });
            opts.log.info({ nodeId: h.nodeId, kind, peer, software: h.software }, 'node attached');
            heartbeat = setInterval(() => {
              missed = heard ? 0 : missed + 1;
              heard = false;
              if (missed >= SILENT_INTERVALS && !opts.inSession?.(h.nodeId)) {
                opts.log.warn({ nodeId: h.nodeId }, `node silent for ${SILENT_INTERVALS} heartbeats; dropping it`);
                return close();
              }
              call.write({ body: { case: 'heartbeat', value: { sequence: ++seq } } });
            }, opts.heartbeatIntervalMs);
          }, (err: unknown) => refuse('internal', `registry write failed: ${(err as Error).message}`));
        return;
      }
      if (state === 'attached' && hello) {
        if (body.case === 'send' || body.case === 'done' || body.case === 'failed') opts.onSession?.(hello.nodeId, body);
        else if (body.case === 'inventory') opts.onInventory?.(hello.nodeId, body.value);
        else if (body.case !== 'heartbeat') opts.log.debug({ nodeId: hello.nodeId, kind: body.case }, 'ignoring unexpected message');
      }
    });
    call.on('end', close);
    call.on('error', close);
    call.on('close', close);
  };
}

function checkHello(h: Hello): string | undefined {
  if (h.version !== LINK_VERSION) return `link version ${h.version} is not spoken here (want ${LINK_VERSION})`;
  if (!KIND_NAMES[h.kind]) return 'unknown node kind';
  if (h.signingKey.length !== 32) return 'signing key must be 32 bytes';
  if (h.encryptionKey.length !== 32) return 'encryption key must be 32 bytes';
  if (h.nodeId !== nodeIdFor(h.signingKey)) return 'node id is not derived from the signing key';
  if ((h.kind === NodeKind.SELF || h.kind === NodeKind.TEE) && !h.owner) return 'self and tee nodes name their owner';
  if (h.owner.length > 128) return 'owner is too long';
  return undefined;
}

export type { AttachResponse };
