// What the node's main thread and its protocol workers send each other (protocol-workers.ts). Errors
// cross as their kind, code, message and culprits and are rebuilt on the main thread as the same class,
// so an abort raised in a worker blames the same party it would inline.
import type { Message } from '../../protocols/round/machine.ts';
import { InputError, ProtocolAbort, ProtocolBug } from '../../../core/errors/protocol-errors.ts';
import type { ErrorCode } from '../../../core/errors/error-codes.ts';

export type StepTask =
  | { id: number; name: string; op: 'start'; params: unknown }
  | { id: number; name: string; op: 'deliver'; run: Uint8Array; msg: Message };

export type StepReply =
  | { id: number; ok: true; run: Uint8Array | null; out: Message[]; result: Uint8Array | null }
  | { id: number; ok: false; error: WorkerError };

export interface WorkerError {
  kind: 'abort' | 'input' | 'bug' | 'other';
  code: string;
  message: string;
  culprits: number[];
}

export function describeError(err: unknown): WorkerError {
  if (err instanceof ProtocolAbort) return { kind: 'abort', code: err.code, message: err.message, culprits: [...err.culprits] };
  if (err instanceof InputError) return { kind: 'input', code: err.code, message: err.message, culprits: [] };
  if (err instanceof ProtocolBug) return { kind: 'bug', code: 'bug', message: err.message, culprits: [] };
  return { kind: 'other', code: 'bug', message: err instanceof Error ? err.message : String(err), culprits: [] };
}

export function rebuildError(e: WorkerError): Error {
  switch (e.kind) {
    case 'abort': return new ProtocolAbort(e.code as ErrorCode, e.culprits, e.message);
    case 'input': return new InputError(e.code as ErrorCode, e.message);
    case 'bug': return new ProtocolBug(e.message);
    default: return new Error(`protocol worker: ${e.message}`);
  }
}
