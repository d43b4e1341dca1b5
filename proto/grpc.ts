// Adapter from protobuf-es service descriptors to @grpc/grpc-js, so no service is wired by hand:
// the method paths, streaming flags and (de)serializers all come from the generated descriptor.
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import { context, isSpanContextValid, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';

type MethodOf<S extends GenServiceMethods, K extends keyof S> = S[K];
type Req<M extends GenServiceMethods[string]> = MessageShape<M['input']>;
type Res<M extends GenServiceMethods[string]> = MessageShape<M['output']>;
type ReqInit<M extends GenServiceMethods[string]> = MessageInitShape<M['input']>;
type ResInit<M extends GenServiceMethods[string]> = MessageInitShape<M['output']>;

/** Server-side handler for each method, by method kind. */
export type ServiceImpl<S extends GenServiceMethods> = {
  [K in keyof S]: MethodOf<S, K>['methodKind'] extends 'unary'
    ? (request: Req<S[K]>, call: grpc.ServerUnaryCall<Req<S[K]>, Res<S[K]>>) => Promise<ResInit<S[K]>>
    : MethodOf<S, K>['methodKind'] extends 'server_streaming'
      ? (request: Req<S[K]>, call: grpc.ServerWritableStream<Req<S[K]>, ResInit<S[K]>>) => Promise<void> | void
      : MethodOf<S, K>['methodKind'] extends 'client_streaming'
        ? (call: grpc.ServerReadableStream<Req<S[K]>, Res<S[K]>>) => Promise<ResInit<S[K]>>
        : (call: grpc.ServerDuplexStream<Req<S[K]>, ResInit<S[K]>>) => void;
};

export interface CallOptions {
  deadline?: Date | number;
  metadata?: grpc.Metadata;
}

/** Client-side call for each method, by method kind. */
export type ServiceClient<S extends GenServiceMethods> = {
  [K in keyof S]: MethodOf<S, K>['methodKind'] extends 'unary'
    ? (request: ReqInit<S[K]>, options?: CallOptions) => Promise<Res<S[K]>>
    : MethodOf<S, K>['methodKind'] extends 'server_streaming'
      ? (request: ReqInit<S[K]>, options?: CallOptions) => grpc.ClientReadableStream<Res<S[K]>>
      : MethodOf<S, K>['methodKind'] extends 'client_streaming'
        ? (options?: CallOptions) => { stream: grpc.ClientWritableStream<ReqInit<S[K]>>; response: Promise<Res<S[K]>> }
        : (options?: CallOptions) => grpc.ClientDuplexStream<ReqInit<S[K]>, Res<S[K]>>;
} & { close(): void; raw: grpc.Client };

function serializer<D extends DescMessage>(schema: D) {
  return (value: MessageInitShape<D>): Buffer => {
    const bytes = toBinary(schema, create(schema, value));
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function deserializer<D extends DescMessage>(schema: D) {
  return (bytes: Buffer): MessageShape<D> => fromBinary(schema, bytes);
}

/** The grpc-js service definition of a protobuf-es service. */
export function serviceDefinition<S extends GenServiceMethods>(service: GenService<S>): grpc.ServiceDefinition {
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    def[method.localName] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: method.methodKind === 'client_streaming' || method.methodKind === 'bidi_streaming',
      responseStream: method.methodKind === 'server_streaming' || method.methodKind === 'bidi_streaming',
      requestSerialize: serializer(method.input),
      requestDeserialize: deserializer(method.input),
      responseSerialize: serializer(method.output),
      responseDeserialize: deserializer(method.output),
      originalName: method.name,
    } as grpc.MethodDefinition<unknown, unknown>;
  }
  return def as grpc.ServiceDefinition;
}

/**
 * Runs a handler that answers once (unary, client streaming) inside its server span, from the trace
 * context in the call's metadata; its result or error (as a gRPC status) is the answer and ends the span.
 */
function answerInSpan(serviceName: string, methodName: string, metadata: grpc.Metadata, run: () => unknown, cb: grpc.sendUnaryData<unknown>): void {
  const span = serverSpan(serviceName, methodName, metadata);
  void context.with(trace.setSpan(context.active(), span), () => Promise.resolve()
    .then(run)
    .then((res) => {
      endRpcSpan(span, undefined);
      cb(null, res);
    }, (err: unknown) => {
      const e = toServiceError(err);
      endRpcSpan(span, e);
      cb(e);
    }));
}

/** Registers an implementation on a grpc-js server. Unary errors become gRPC statuses. */
export function addService<S extends GenServiceMethods>(server: grpc.Server, service: GenService<S>, impl: ServiceImpl<S>): void {
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const method of service.methods) {
    const fn = (impl as Record<string, (...args: unknown[]) => unknown>)[method.localName];
    if (!fn) throw new Error(`no handler for ${service.typeName}.${method.name}`);
    switch (method.methodKind) {
      case 'unary':
        handlers[method.localName] = (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) =>
          answerInSpan(service.typeName, method.name, call.metadata, () => fn(call.request, call), cb);
        break;
      case 'client_streaming':
        handlers[method.localName] = (call: grpc.ServerReadableStream<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) =>
          answerInSpan(service.typeName, method.name, call.metadata, () => fn(call), cb);
        break;
      case 'server_streaming':
        // grpc-js ends a server stream with the status of an 'error' event (a destroyed stream sends none).
        handlers[method.localName] = (call: grpc.ServerWritableStream<unknown, unknown>) => {
          Promise.resolve()
            .then(() => fn(call.request, call))
            .catch((err: unknown) => call.emit('error', toServiceError(err)));
        };
        break;
      case 'bidi_streaming':
        handlers[method.localName] = (call: grpc.ServerDuplexStream<unknown, unknown>) => fn(call);
        break;
    }
  }
  server.addService(serviceDefinition(service), handlers);
}

/**
 * An error carrying a gRPC status code, for handlers that want a specific status, and optionally the
 * trailers to send with it (core/rpc/rpc-error.ts puts the structured error details there).
 */
export class GrpcStatusError extends Error {
  constructor(readonly code: grpc.status, message: string, readonly metadata?: grpc.Metadata) {
    super(message);
    this.name = 'GrpcStatusError';
  }

  get details(): string {
    return this.message;
  }
}

// Traces across gRPC (docs/operations.md "Traces"): a unary or client-streaming call carries the W3C
// `traceparent` of its client span in its metadata, and the server's span continues that trace. Streams
// that live as long as a link (the node link, WatchNodes) carry none: the node link carries a session's
// trace context in SessionOpen instead. With no OpenTelemetry SDK started these are no-ops.
const metadataGetter: TextMapGetter<grpc.Metadata> = {
  keys: (md) => Object.keys(md.getMap()),
  get: (md, key) => {
    const v = md.get(key).filter((x): x is string => typeof x === 'string');
    return v.length ? v : undefined;
  },
};
const metadataSetter: TextMapSetter<grpc.Metadata> = { set: (md, key, value) => md.set(key, value) };
const rpcTracer = () => trace.getTracer('threshold-custody');

function rpcAttributes(serviceName: string, methodName: string) {
  return { 'rpc.system': 'grpc', 'rpc.service': serviceName, 'rpc.method': methodName };
}

function serverSpan(serviceName: string, methodName: string, md: grpc.Metadata): Span {
  const parent = propagation.extract(ROOT_CONTEXT, md, metadataGetter);
  return rpcTracer().startSpan(`${serviceName}/${methodName}`, { kind: SpanKind.SERVER, attributes: rpcAttributes(serviceName, methodName) }, parent);
}

/** A client span for a call, and the call's metadata with that span's `traceparent` added. */
function clientSpan(serviceName: string, methodName: string, md: grpc.Metadata): { span: Span; metadata: grpc.Metadata } {
  const span = rpcTracer().startSpan(`${serviceName}/${methodName}`, { kind: SpanKind.CLIENT, attributes: rpcAttributes(serviceName, methodName) });
  if (!isSpanContextValid(span.spanContext())) return { span, metadata: md };
  const metadata = md.clone();
  propagation.inject(trace.setSpan(context.active(), span), metadata, metadataSetter);
  return { span, metadata };
}

function endRpcSpan(span: Span, err: { code?: grpc.status | undefined } | undefined): void {
  const code = err?.code ?? (err ? grpc.status.UNKNOWN : grpc.status.OK);
  span.setAttribute('rpc.grpc.status_code', code);
  if (err) {
    span.setAttribute('error.type', grpc.status[code] ?? String(code));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

function toServiceError(err: unknown): Partial<grpc.ServiceError> {
  if (err instanceof GrpcStatusError) return { code: err.code, details: err.message, message: err.message, ...(err.metadata ? { metadata: err.metadata } : {}) };
  const message = err instanceof Error ? err.message : String(err);
  return { code: grpc.status.INTERNAL, details: message, message };
}

/** A typed client for a protobuf-es service. */
export function createClient<S extends GenServiceMethods>(
  service: GenService<S>,
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ClientOptions,
): ServiceClient<S> {
  const Ctor = grpc.makeGenericClientConstructor(serviceDefinition(service), service.name);
  const raw = new Ctor(address, credentials, options) as unknown as grpc.Client & Record<string, (...args: unknown[]) => unknown>;
  const client: Record<string, unknown> = { close: () => raw.close(), raw };
  for (const method of service.methods) {
    const name = method.localName;
    const call = raw[name]!.bind(raw);
    const opts = (o?: CallOptions): grpc.CallOptions => (o?.deadline !== undefined ? { deadline: o.deadline } : {});
    const md = (o?: CallOptions) => o?.metadata ?? new grpc.Metadata();
    switch (method.methodKind) {
      case 'unary':
        client[name] = (req: unknown, o?: CallOptions) =>
          new Promise((resolve, reject) => {
            const { span, metadata } = clientSpan(service.typeName, method.name, md(o));
            call(req, metadata, opts(o), (err: grpc.ServiceError | null, res: unknown) => {
              endRpcSpan(span, err ?? undefined);
              if (err) reject(err);
              else resolve(res);
            });
          });
        break;
      case 'server_streaming':
        client[name] = (req: unknown, o?: CallOptions) => call(req, md(o), opts(o));
        break;
      case 'client_streaming':
        client[name] = (o?: CallOptions) => {
          let stream: unknown;
          const response = new Promise((resolve, reject) => {
            const { span, metadata } = clientSpan(service.typeName, method.name, md(o));
            stream = call(metadata, opts(o), (err: grpc.ServiceError | null, res: unknown) => {
              endRpcSpan(span, err ?? undefined);
              if (err) reject(err);
              else resolve(res);
            });
          });
          return { stream, response };
        };
        break;
      case 'bidi_streaming':
        client[name] = (o?: CallOptions) => call(md(o), opts(o));
        break;
    }
  }
  return client as ServiceClient<S>;
}
