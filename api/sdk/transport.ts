// One HTTP exchange of the SDK with the API, resilient (docs/sdk.md "Timeouts and retries"): every
// attempt has a timeout; an attempt that got no answer, or a 429, 502, 503 or 504, is tried again after a
// full-jitter backoff (or the server's Retry-After, within bounds), but only when trying again cannot do
// the work twice. That holds for a read; for a write that carries an Idempotency-Key or a single-use
// intent (the API answers its repeat with the first answer); and for any request refused before it was
// sent (connection refused) or answered 429 (the API changes nothing then). Other writes get one attempt
// on an ambiguous failure: the caller learns the outcome is unknown (`network`) rather than getting it
// done twice. Error answers become CustodyApiError with the request id the API logged (its header, or
// the body's `request_id` when a proxy dropped the header) and, for a 400 or 422, the rejected fields.
// An answer longer than `maxResponseBytes` is not read on and not retried: `bad_response`.
import { kindOfHttpStatus } from '../../core/errors/http-status.ts';
import type { ErrorKind } from '../../core/errors/error-kinds.ts';
import { codeOfHttpStatus, SdkError } from './sdk-error.ts';
import { AnswerTooLarge, fetchAttempt, nodeHttpAttempt, type AnswerHeaders, type AttemptAnswer, type HttpAttempt } from './http-attempt.ts';

/** A field a 400 invalid_request or 422 validation_failed rejected, by its JSON name (docs/platform/errors.md). */
export interface FieldError {
  field: string;
  reason: string;
}

/**
 * An error answer of the API: its HTTP status and stable code. The code is the server's string (a newer
 * server may send one this SDK does not know); an answer without one (a proxy's error page) gets the
 * spec's code for its status (`codeOfHttpStatus`). `kind` is read from the status through the API's table
 * (core/errors/http-status.ts), undefined where the status does not name one kind (502: aborted or
 * transport) or is not the table's.
 */
export class CustodyApiError extends Error {
  readonly kind: ErrorKind | undefined;
  /**
   * The API's id of the request: quote it when reporting a problem. Read from the `x-request-id` header,
   * else from the error body's `request_id`; null from a proxy that sent neither.
   */
  readonly requestId: string | null;
  /** Every rejected field of a 400 or 422, when the answer lists them. */
  readonly fields: readonly FieldError[] | undefined;
  /** What the answer's Retry-After asked for, in milliseconds (429, 503), else null. */
  readonly retryAfterMs: number | null;
  constructor(readonly status: number, readonly code: string, message: string, extra: { requestId?: string | null; fields?: readonly FieldError[] | undefined; retryAfterMs?: number | null } = {}) {
    super(message);
    this.name = 'CustodyApiError';
    this.kind = kindOfHttpStatus(status);
    this.requestId = extra.requestId ?? null;
    this.fields = extra.fields;
    this.retryAfterMs = extra.retryAfterMs ?? null;
  }
}

export interface RetryOptions {
  /** Attempts in all, the first included (default 4; 1 turns retrying off). */
  attempts?: number;
  /** The backoff's base: attempt n waits a random time in [0, min(maxDelayMs, baseDelayMs * 2^n)) (default 250). */
  baseDelayMs?: number;
  /** The longest wait between attempts, and the longest Retry-After honoured: a longer one ends the retries (default 20 000). */
  maxDelayMs?: number;
}

export interface TransportOptions {
  /** Origin of the API (paths are under /v1). */
  baseUrl: string;
  /** How long one attempt may take before it counts as unanswered (default 30 000). */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** Sends each attempt through this fetch instead of `node:http` (http-attempt.ts). */
  fetch?: typeof fetch;
  /** The longest answer body read, in bytes (default 32 MiB); a longer one throws `bad_response`. */
  maxResponseBytes?: number;
  /** For tests: the jitter's source (default Math.random) and the wait. */
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface Exchange {
  method: string;
  /** The path with its query, from /v1. */
  path: string;
  /** The JSON text of the body, if any. */
  payload?: string | undefined;
  /** The headers of one attempt, made afresh for each (a request signature is single-use). */
  headers: () => Record<string, string>;
  /** Whether doing it again cannot do it twice (see the file's header); reads always are. */
  replaySafe?: boolean;
}

export interface Answer<T> {
  json: T;
  status: number;
  headers: AnswerHeaders;
}

/** The default `maxResponseBytes`: far above any answer of the API (a list page, an export's manifest). */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
const RETRIED_STATUSES = new Set([429, 502, 503, 504]);
/** Errors of a connection that never carried the request: trying again cannot do anything twice. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH']);

/** Retry-After in milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isFinite(at) ? Math.max(0, at - now) : null;
}

function causeCode(err: unknown): string | undefined {
  for (let e = err as { cause?: unknown; code?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string') return e.code;
  }
  return undefined;
}

function fieldsOf(body: unknown): FieldError[] | undefined {
  const fields = (body as { fields?: unknown } | undefined)?.fields;
  if (!Array.isArray(fields)) return undefined;
  return fields.filter((f): f is FieldError => typeof (f as FieldError)?.field === 'string' && typeof (f as FieldError)?.reason === 'string').map((f) => ({ field: f.field, reason: f.reason }));
}

export class Transport {
  private readonly attempt: HttpAttempt;
  private readonly base: string;
  readonly timeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly attempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly random: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(o: TransportOptions) {
    this.base = o.baseUrl.replace(/\/$/, '');
    this.attempt = o.fetch ? fetchAttempt(o.fetch) : nodeHttpAttempt;
    this.timeoutMs = o.timeoutMs ?? 30_000;
    this.maxResponseBytes = o.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    if (!Number.isSafeInteger(this.maxResponseBytes) || this.maxResponseBytes < 1) throw new SdkError('invalid_config', 'maxResponseBytes must be a positive whole number of bytes');
    this.attempts = Math.max(1, Math.floor(o.retry?.attempts ?? 4));
    this.baseDelayMs = o.retry?.baseDelayMs ?? 250;
    this.maxDelayMs = o.retry?.maxDelayMs ?? 20_000;
    this.random = o.random ?? Math.random;
    this.sleep = o.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    for (const [name, v] of [['timeoutMs', this.timeoutMs], ['retry.baseDelayMs', this.baseDelayMs], ['retry.maxDelayMs', this.maxDelayMs]] as const) {
      if (!Number.isFinite(v) || v < 0) throw new SdkError('invalid_config', `${name} must be a non-negative number of milliseconds`);
    }
  }

  url(path: string): string {
    return this.base + path;
  }

  /** The wait before attempt `n + 1` (n from 0): the server's Retry-After within bounds, else full jitter. */
  private delay(n: number, asked: number | null): number | undefined {
    if (asked !== null) return asked <= this.maxDelayMs ? asked : undefined;
    return Math.floor(this.random() * Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** n));
  }

  /** Sends the exchange, retrying as the file's header says; throws CustodyApiError or SdkError. */
  async send<T>(x: Exchange): Promise<Answer<T>> {
    const safe = x.replaySafe === true || x.method === 'GET' || x.method === 'HEAD';
    const url = this.url(x.path);
    for (let n = 0; ; n++) {
      const last = n + 1 >= this.attempts;
      let res: AttemptAnswer;
      try {
        res = await this.attempt(url, { method: x.method, headers: x.headers(), signal: AbortSignal.timeout(this.timeoutMs), body: x.payload, maxBytes: this.maxResponseBytes });
      } catch (err) {
        // An answer came, so the request was processed or refused: not tried again, not read on.
        if (err instanceof AnswerTooLarge) {
          const unknown = safe ? '' : ' (the request may have been processed: read the resource before doing it again)';
          throw new SdkError('bad_response', `${x.method} ${x.path.split('?')[0]}: the answer (HTTP ${err.status}) is longer than maxResponseBytes (${err.maxBytes}): not the API's, or raise maxResponseBytes${unknown}`, { cause: err });
        }
        const code = causeCode(err);
        const timedOut = (err as { name?: string })?.name === 'TimeoutError';
        const wait = !last && (safe || (code !== undefined && NOT_SENT.has(code))) ? this.delay(n, null) : undefined;
        if (wait !== undefined) {
          await this.sleep(wait);
          continue;
        }
        const cause = (err as { cause?: { message?: string } })?.cause?.message;
        const why = timedOut ? `no answer within ${this.timeoutMs} ms` : (cause ?? (err as Error)?.message ?? String(err));
        // The message names the operation only: a request may carry secrets, none of which is echoed.
        const unknown = code !== undefined && NOT_SENT.has(code) ? '' : safe ? '' : ' (the request may or may not have been processed: read the resource before doing it again)';
        throw new SdkError('network', `${x.method} ${x.path.split('?')[0]}: cannot reach the API at ${this.base}: ${why}${unknown}`, { cause: err });
      }
      const { text } = res;
      const ok = res.status >= 200 && res.status < 300;
      const header = res.headers.get('x-request-id');
      const asked = retryAfterMs(res.headers.get('retry-after'));
      if (RETRIED_STATUSES.has(res.status) && !last && (safe || res.status === 429)) {
        const wait = this.delay(n, asked);
        if (wait !== undefined) {
          await this.sleep(wait);
          continue;
        }
      }
      let json: unknown;
      try {
        json = text ? (JSON.parse(text) as unknown) : undefined;
      } catch {
        if (ok) throw new SdkError('bad_response', `${x.method} ${x.path.split('?')[0]}: the answer (HTTP ${res.status}) is not JSON: ${text.slice(0, 120)}`);
        throw new CustodyApiError(res.status, codeOfHttpStatus(res.status), `HTTP ${res.status}: ${text.slice(0, 200)}`, { requestId: header, retryAfterMs: asked });
      }
      if (!ok) {
        const e = (json ?? {}) as { error?: unknown; code?: unknown; request_id?: unknown };
        // The header first; the body's copy when a proxy on the way dropped the header.
        const requestId = header ?? (typeof e.request_id === 'string' && e.request_id ? e.request_id : null);
        throw new CustodyApiError(res.status, typeof e.code === 'string' && e.code ? e.code : codeOfHttpStatus(res.status), typeof e.error === 'string' ? e.error : `HTTP ${res.status}`, { requestId, fields: fieldsOf(json), retryAfterMs: asked });
      }
      return { json: json as T, status: res.status, headers: res.headers };
    }
  }
}
