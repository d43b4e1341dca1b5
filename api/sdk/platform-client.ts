// The platform API's client (docs/sdk.md "Platform API"): one method per operation of the table in
// platform-operations.ts, named by its operationId (`getPaymentsById`, `postPaymentsQuote`), each sent
// with the workspace bearer key through the SDK's Transport: a timeout per attempt, retries with jitter
// and Retry-After for what is safe to repeat, CustodyApiError with the request id and a 422's `fields`.
// A write that honours Idempotency-Key gets one (the caller's, else a fresh one per call), which makes it
// safe to retry; a production key (svc_live_) also signs its writes when given `signing`.
import { allPages, type Page } from './all-pages.ts';
import type { ApiCredentials } from './request-signer.ts';
import { SdkError } from './sdk-error.ts';
import { Transport, type RetryOptions } from './transport.ts';
import { PLATFORM_OPERATIONS, pathParams, type PathParamNames, type PlatformOperation, type PlatformOperations } from './platform-operations.ts';

export interface PlatformClientOptions {
  /** Origin of the API, e.g. https://api.example.com (paths are under /v1). */
  baseUrl: string;
  /** The workspace bearer key, svc_test_… or svc_live_…. */
  apiKey: string;
  /** The bearer key's Ed25519 request-signing key: required for the writes of a production (svc_live_) key. */
  signing?: ApiCredentials;
  /** Headers sent with every call, e.g. `x-svc-publishable-key` for the member-auth operations. */
  headers?: Record<string, string>;
  /** How long one attempt may take before it counts as unanswered (default 30 000 ms). */
  timeoutMs?: number;
  retry?: RetryOptions;
  fetch?: typeof fetch;
  /** The longest answer body read, in bytes (default 32 MiB); a longer answer is a `bad_response` error. */
  maxResponseBytes?: number;
}

/** A JSON object as the API answers it: read its fields as unknown and check them before use. */
export type JsonObject = Record<string, unknown>;
export type QueryValue = string | number | boolean | undefined;

type Op = PlatformOperations[number];
type OpById<Id extends string> = Extract<Op, { id: Id }>;
type QueryOf<O> = O extends { query: readonly (infer Q extends string)[] } ? Q : never;

/** What one call takes: the path's parameters by name, then the body, query and per-call options. */
export type PlatformArgs<O extends Op> = { [K in PathParamNames<O['path']>]: string } & (O extends { body: true } ? { body?: unknown } : { body?: never }) & {
  /** Query parameters; a list also takes `cursor` and `limit` (1 to 100). */
  query?: Partial<Record<QueryOf<O> | (O extends { list: 'query' } ? 'cursor' | 'limit' : never), QueryValue>>;
  /** Sent as Idempotency-Key (operations that honour it; default a fresh one per call). */
  idempotencyKey?: string;
  /** More headers for this call: `if-match`, `svc-mfa-token`, `x-member-session-id`, ... */
  headers?: Record<string, string>;
};

export type PlatformResult<O extends Op> = O extends { empty: true } ? void : O extends { list: string } ? Page<JsonObject> : JsonObject;

/** Arguments may be left out when the operation has no path parameter. */
type ArgsParam<O extends Op> = PathParamNames<O['path']> extends never ? [args?: PlatformArgs<O>] : [args: PlatformArgs<O>];

/** One method per operation, named by its operationId. */
export type PlatformMethods = { [O in Op as O['id']]: (...args: ArgsParam<O>) => Promise<PlatformResult<O>> };
export type PlatformListOperationId = Extract<Op, { list: string }>['id'];

const BY_ID: ReadonlyMap<string, PlatformOperation> = new Map(PLATFORM_OPERATIONS.map((o) => [o.id, o]));

/** The path with its parameters filled in (each encoded) and its query; throws usage when one is missing. */
export function platformPath(op: PlatformOperation, args: { query?: Record<string, QueryValue> } & Record<string, unknown>): string {
  const path = op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    const v = args[name];
    if (typeof v !== 'string' || v === '') throw new SdkError('usage', `${op.id}: the path parameter ${name} is required`);
    return encodeURIComponent(v);
  });
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(args.query ?? {})) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

class PlatformClientBase {
  private readonly transport: Transport;

  constructor(private readonly o: PlatformClientOptions) {
    if (!/^svc_(test|live)_\S+$/.test(o.apiKey)) throw new SdkError('invalid_config', 'apiKey must be a workspace key, svc_test_… or svc_live_…');
    this.transport = new Transport({ baseUrl: o.baseUrl, ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}), ...(o.retry ? { retry: o.retry } : {}), ...(o.fetch ? { fetch: o.fetch } : {}), ...(o.maxResponseBytes !== undefined ? { maxResponseBytes: o.maxResponseBytes } : {}) });
    for (const op of PLATFORM_OPERATIONS) {
      Object.defineProperty(this, op.id, { value: (args: Record<string, unknown> = {}) => this.call(op.id, args), enumerable: false });
    }
  }

  /** The operation of `id`, as the table has it. */
  static operation(id: string): PlatformOperation | undefined {
    return BY_ID.get(id);
  }

  /** Calls an operation by its operationId (what each method does). */
  async call(id: string, args: PlatformArgs<Op> | Record<string, unknown> = {}): Promise<unknown> {
    const op = BY_ID.get(id);
    if (!op) throw new SdkError('usage', `no platform operation ${id}`);
    const a = args as Record<string, unknown> & { body?: unknown; query?: Record<string, QueryValue>; idempotencyKey?: string; headers?: Record<string, string> };
    const path = platformPath(op, a);
    const payload = op.body && a.body !== undefined ? JSON.stringify(a.body) : undefined;
    const write = op.method !== 'GET';
    // A fresh key per call when none is given: a retry of this call is then answered, not done again.
    const idem = op.idempotent ? (a.idempotencyKey ?? `sdk-${crypto.randomUUID()}`) : undefined;
    const signing = this.o.signing;
    // The signer (and its curve) loads only for a write that is signed: a test key's calls never need it.
    const sign = write && signing ? (await import('./request-signer.ts')).signedHeaders : undefined;
    const answer = await this.transport.send<unknown>({
      method: op.method, path, payload, replaySafe: idem !== undefined,
      headers: () => ({
        authorization: `Bearer ${this.o.apiKey}`,
        ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(idem !== undefined ? { 'idempotency-key': idem } : {}),
        ...this.o.headers, ...a.headers,
        // Signed afresh on every attempt: a signature's nonce is single-use.
        ...(sign && signing ? sign(signing, op.method, this.transport.url(path), payload) : {}),
      }),
    });
    return op.empty ? undefined : answer.json;
  }

  /**
   * Every item of a list operation, page after page, asking for the next page only when the loop gets
   * there: `for await (const p of platform.each('getPayments', { query: { status: 'settled' } }))`.
   * The filters stay the same on every page (a cursor is bound to them).
   */
  each<Id extends PlatformListOperationId>(id: Id, ...rest: ArgsParam<OpById<Id>>): AsyncGenerator<JsonObject, void, undefined> {
    const op = BY_ID.get(id)!;
    const args = (rest[0] ?? {}) as Record<string, unknown> & { query?: Record<string, QueryValue>; body?: Record<string, unknown> };
    return allPages((cursor) => {
      const at = cursor === undefined ? args
        : op.list === 'body' ? { ...args, body: { ...args.body, cursor } } : { ...args, query: { ...args.query, cursor } };
      return this.call(id, at) as Promise<Page<JsonObject>>;
    });
  }
}

export type PlatformClient = PlatformClientBase & PlatformMethods;
/** `new PlatformClient({ baseUrl, apiKey })`: a client with one method per platform operation. */
export const PlatformClient = PlatformClientBase as unknown as {
  new (o: PlatformClientOptions): PlatformClient;
  operation(id: string): PlatformOperation | undefined;
};

/** The path parameters of an operation, in the order of its path. */
export function platformPathParams(op: PlatformOperation): string[] {
  return pathParams(op.path);
}
