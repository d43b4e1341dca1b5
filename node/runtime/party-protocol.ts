// What the node runtime needs from a protocol run: messages to send, payloads to deliver, an outcome.
// Adapters in node/runtime/protocols/ wrap the pure state machines of node/protocols/ in this shape;
// the runtime knows nothing of their math.
import type { ErrorCode } from '../../core/errors/error-codes.ts';

export interface Outgoing {
  /** 1-based party index of the recipient, or 'all' for a broadcast to every other party. */
  to: number | 'all';
  round: number;
  payload: Uint8Array;
}

export type Step =
  | { kind: 'continue'; out: Outgoing[] }
  /** The run finished: `result` is public (safe for the coordinator); `commit` persists secrets. */
  | { kind: 'done'; out: Outgoing[]; result: Uint8Array; commit?: () => Promise<void> }
  | { kind: 'abort'; code: ErrorCode; message: string; culprits: number[] };

export interface PartyProtocol {
  start(): Promise<Step> | Step;
  /** Delivers one verified payload (sender authenticated by the transport). */
  deliver(from: number, round: number, payload: Uint8Array, broadcast: boolean): Promise<Step> | Step;
  /** Releases secret state after an abort or cancel. */
  dispose(): void;
  /**
   * A check the runtime awaits after sending start()'s messages and before delivering any payload; it
   * throws SessionRefused to refuse. A protocol whose first round is independent of the request (FROST
   * nonce commitments, RFC 9591 §5.1) runs its authorization here, while that round is relayed.
   */
  admit?: () => Promise<void>;
}
