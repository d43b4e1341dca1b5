// The gRPC edge of the error model (core/errors/): a CustodyError leaves a server as a gRPC status chosen
// by its kind, with the code, kind, message and culprits as structured details (the standard richer
// error model: a google.rpc.Status in the `grpc-status-details-bin` trailer whose details hold an
// mpc.v1.ErrorInfo), and arrives at the client as the same CustodyError. A code never travels inside a
// message text, and a caller never parses one out of it.
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { anyIs, anyPack, anyUnpack } from '@bufbuild/protobuf/wkt';
import { StatusSchema } from '../../proto/gen/google/rpc/status_pb.ts';
import { ErrorInfoSchema } from '../../proto/gen/mpc/v1/error_pb.ts';
import { GrpcStatusError } from '../../proto/grpc.ts';
import { CustodyError } from '../errors/custody-error.ts';
import { isErrorCode } from '../errors/error-codes.ts';
import type { ErrorKind } from '../errors/error-kinds.ts';

/** The trailer of the gRPC richer error model; grpc-js sends and receives `-bin` values as bytes. */
export const STATUS_DETAILS_KEY = 'grpc-status-details-bin';

/** The one table from kinds to gRPC statuses. */
export const GRPC_STATUS: Readonly<Record<ErrorKind, grpc.status>> = {
  invalid: grpc.status.INVALID_ARGUMENT,
  unauthenticated: grpc.status.UNAUTHENTICATED,
  refused: grpc.status.PERMISSION_DENIED,
  not_found: grpc.status.NOT_FOUND,
  conflict: grpc.status.FAILED_PRECONDITION,
  limited: grpc.status.RESOURCE_EXHAUSTED,
  aborted: grpc.status.ABORTED,
  unavailable: grpc.status.UNAVAILABLE,
  transport: grpc.status.UNAVAILABLE,
  bug: grpc.status.INTERNAL,
};

// Bounds on what is encoded and on what is accepted from a peer.
const MAX_DETAILS_BYTES = 16 * 1024;
const MAX_MESSAGE_CHARS = 2000;
const MAX_CULPRITS = 64;
const MAX_CULPRIT_CHARS = 128;
const MAX_CODE_CHARS = 64;

const bounded = (s: string, max: number) => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

/**
 * The gRPC status a server answers with for `err`: a CustodyError keeps its code, kind, message and
 * culprits; anything else is a bug of ours and leaves as INTERNAL `internal`, without its message
 * (which may hold anything; the server logs it).
 */
export function toRpcError(err: unknown): GrpcStatusError {
  const e = err instanceof CustodyError ? err : new CustodyError('internal', 'internal error');
  const status = GRPC_STATUS[e.kind];
  const message = bounded(e.message, MAX_MESSAGE_CHARS);
  const info = create(ErrorInfoSchema, {
    code: e.code, kind: e.kind, message,
    culprits: e.culprits.slice(0, MAX_CULPRITS).map((c) => bounded(String(c), MAX_CULPRIT_CHARS)),
  });
  const bytes = toBinary(StatusSchema, create(StatusSchema, { code: status, message, details: [anyPack(ErrorInfoSchema, info)] }));
  const metadata = new grpc.Metadata();
  metadata.set(STATUS_DETAILS_KEY, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  return new GrpcStatusError(status, message, metadata);
}

/** Whether `err` is what grpc-js rejects a call with. */
export function isServiceError(err: unknown): err is grpc.ServiceError {
  return err instanceof Error && typeof (err as Partial<grpc.ServiceError>).code === 'number' && (err as Partial<grpc.ServiceError>).metadata instanceof grpc.Metadata;
}

/**
 * The CustodyError a failed call carries: code, culprits and message from its structured details. A
 * status without usable details (another server, a proxy, the channel itself) becomes `unavailable` for
 * UNAVAILABLE and DEADLINE_EXCEEDED, `rpc_error` otherwise; an unregistered code (a newer peer)
 * becomes `rpc_error`. The ServiceError is the cause either way.
 */
export function fromRpcError(e: grpc.ServiceError): CustodyError {
  const text = bounded(e.details || e.message || `gRPC status ${e.code}`, MAX_MESSAGE_CHARS);
  const info = errorInfo(e);
  if (!info) {
    const code = e.code === grpc.status.UNAVAILABLE || e.code === grpc.status.DEADLINE_EXCEEDED ? 'unavailable' : 'rpc_error';
    return new CustodyError(code, text, { cause: e });
  }
  const message = bounded(info.message, MAX_MESSAGE_CHARS);
  const culprits = info.culprits.slice(0, MAX_CULPRITS).map((c) => bounded(c, MAX_CULPRIT_CHARS));
  if (!isErrorCode(info.code)) {
    return new CustodyError('rpc_error', `unregistered error code ${JSON.stringify(bounded(info.code, MAX_CODE_CHARS))}: ${message}`, { culprits, cause: e });
  }
  return new CustodyError(info.code, message, { culprits, cause: e });
}

/** Any failure of a call as a CustodyError: a ServiceError by its details, anything else as `rpc_error`. */
export function rpcFailure(err: unknown): CustodyError {
  if (err instanceof CustodyError) return err;
  if (isServiceError(err)) return fromRpcError(err);
  return new CustodyError('rpc_error', bounded(err instanceof Error ? err.message : String(err), MAX_MESSAGE_CHARS), { cause: err });
}

function errorInfo(e: grpc.ServiceError) {
  const value = e.metadata?.get(STATUS_DETAILS_KEY)[0];
  if (!(value instanceof Uint8Array) || value.length > MAX_DETAILS_BYTES) return undefined;
  try {
    const status = fromBinary(StatusSchema, value);
    if (status.code !== e.code) return undefined;
    const any = status.details.find((d) => anyIs(d, ErrorInfoSchema));
    return any ? anyUnpack(any, ErrorInfoSchema) : undefined;
  } catch {
    return undefined;
  }
}
