// Client side of the node link: dials the coordinator (outbound only), proves the node's identity on
// each new stream, answers heartbeats, and redials with jittered exponential backoff when the
// coordinator goes away.
import type * as grpc from '@grpc/grpc-js';
import { EventEmitter } from 'node:events';
import { createClient, type ServiceClient } from '../../proto/grpc.ts';
import { NodeLinkService, type AttachResponse } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import type { Logger } from '../../common/logger.ts';
import type { NodeIdentity } from '../runtime/identity.ts';
import { attachMessage, LINK_VERSION } from '../../core/link/attach.ts';
import { INVENTORY_VERSION } from '../../core/link/inventory.ts';
import type { InventoryRequest } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import { rpcFailure } from '../../core/rpc/rpc-error.ts';

export interface LinkOptions {
  address: string;
  credentials: grpc.ChannelCredentials;
  identity: NodeIdentity;
  kind: number;
  owner: string;
  software: string;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  log: Logger;
}

type Stream = ReturnType<ServiceClient<(typeof NodeLinkService)['method']>['attach']>;

export type SessionTraffic = Extract<AttachResponse['body'], { case: 'open' | 'relay' | 'cancel' }>;

export class CoordinatorLink extends EventEmitter<{ attached: []; detached: []; refused: [string]; session: [SessionTraffic]; inventory: [InventoryRequest] }> {
  private client: ServiceClient<(typeof NodeLinkService)['method']>;
  private stream: Stream | undefined;
  private attempt = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  attached = false;

  constructor(private readonly opts: LinkOptions) {
    super();
    this.client = createClient(NodeLinkService, opts.address, opts.credentials, {
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      'grpc.initial_reconnect_backoff_ms': opts.reconnectMinMs,
      'grpc.max_reconnect_backoff_ms': opts.reconnectMaxMs,
    });
  }

  start(): void {
    this.connect();
  }

  private connect(): void {
    if (this.stopped) return;
    const { identity, log } = this.opts;
    const stream = this.client.attach();
    this.stream = stream;
    let ended = false;
    // Why the stream ended, as a registered code: the coordinator's refusal, the call's structured
    // status (core/rpc/rpc-error.ts), or `unavailable` for a stream that simply closed.
    let refusal: string | undefined;
    const onGone = (code: string, why: string) => {
      if (ended) return;
      ended = true;
      if (this.stream === stream) this.stream = undefined;
      if (this.attached) {
        this.attached = false;
        this.emit('detached');
        log.warn({ code, why }, 'detached from coordinator');
      }
      this.scheduleReconnect(code, why);
    };
    stream.on('data', (msg: AttachResponse) => {
      const body = msg.body;
      switch (body.case) {
        case 'challenge': {
          const c = body.value;
          const signature = identity.sign(
            attachMessage({
              coordinatorId: c.coordinatorId, connectionId: c.connectionId, nonce: c.nonce, nodeId: identity.nodeId,
              kind: this.opts.kind, owner: this.opts.owner, signingKey: identity.signingKey, encryptionKey: identity.encryptionKey,
            }),
          );
          stream.write({ body: { case: 'response', value: { signature } } });
          break;
        }
        case 'welcome':
          this.attached = true;
          this.attempt = 0;
          // The log is bound to this coordinator's address by node/main.ts.
          log.info('attached to coordinator');
          this.emit('attached');
          break;
        case 'heartbeat':
          stream.write({ body: { case: 'heartbeat', value: { sequence: body.value.sequence } } });
          break;
        case 'open':
        case 'relay':
        case 'cancel':
          this.emit('session', body);
          break;
        case 'inventoryRequest':
          // Only a coordinator that welcomed this node after the signed handshake asks (docs/transport.md "Inventory").
          if (this.attached) this.emit('inventory', body.value);
          break;
        case 'refusal':
          refusal = body.value.code;
          log.error({ code: body.value.code }, `coordinator refused this node: ${body.value.message}`);
          this.emit('refused', body.value.code);
          break;
        default:
          break;
      }
    });
    stream.on('error', (err: grpc.ServiceError) => {
      const e = rpcFailure(err);
      onGone(e.code, e.message);
    });
    stream.on('end', () => onGone(refusal ?? 'unavailable', refusal ? 'refused by the coordinator' : 'stream ended'));
    stream.on('close', () => onGone(refusal ?? 'unavailable', refusal ? 'refused by the coordinator' : 'stream closed'));
    stream.write({
      body: {
        case: 'hello',
        value: {
          version: LINK_VERSION, nodeId: identity.nodeId, kind: this.opts.kind, owner: this.opts.owner,
          signingKey: identity.signingKey, encryptionKey: identity.encryptionKey, software: this.opts.software,
          inventoryVersion: INVENTORY_VERSION,
        },
      },
    });
  }

  private scheduleReconnect(code: string, why: string): void {
    if (this.stopped || this.timer) return;
    const base = Math.min(this.opts.reconnectMaxMs, this.opts.reconnectMinMs * 2 ** Math.min(this.attempt, 16));
    const delay = Math.round(base / 2 + Math.random() * (base / 2));
    this.attempt++;
    this.opts.log.debug({ code, why, delay, attempt: this.attempt }, 'redialing coordinator');
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.connect();
    }, delay);
  }

  /** Writes on the current stream; false when detached (the message is dropped). */
  send(msg: Parameters<Stream['write']>[0]): boolean {
    if (!this.stream || !this.attached) return false;
    this.stream.write(msg);
    return true;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stream?.cancel();
    this.client.close();
  }
}
