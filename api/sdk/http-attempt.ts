// One HTTP attempt of the SDK's Transport (transport.ts): a request and its whole answer, or a thrown
// error. Two ways to make one: on `node:http` / `node:https` (the default), which costs a call nothing
// to load; and on a `fetch` the caller passes (tests, an instrumented fetch). Node's built-in `fetch`
// loads and initialises undici on its first use, which took longer than the rest of a command-line call
// together (docs/sdk.md "Start time"). Both attempts report what the Transport reads the same way: a
// timeout rejects with the signal's reason (a `TimeoutError`), a connection failure with an error whose
// `code` (or its cause's) is the system's (`ECONNREFUSED`, `ECONNRESET`, ...). Both read at most
// `maxBytes` of an answer's body: a longer one (announced by its Content-Length, or as it arrives) ends
// the attempt with an `AnswerTooLarge`, so an answer that is not the API's (a wrong URL, a hostile proxy)
// cannot fill the caller's memory.
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type RequestOptions } from 'node:http';
import type { ClientRequest } from 'node:http';

/** The headers of an answer, read by name (case-insensitive); a `Headers` is one. */
export interface AnswerHeaders {
  get(name: string): string | null;
}

export interface AttemptRequest {
  method: string;
  headers: Record<string, string>;
  /** The JSON text of the body, if any (sent as UTF-8). */
  body?: string | undefined;
  /** Ends the attempt, whether it is waiting for the answer or reading it. */
  signal: AbortSignal;
  /** The most bytes of an answer's body read; a longer body throws AnswerTooLarge. */
  maxBytes: number;
}

/** An answer whose body is longer than the attempt's `maxBytes` (none of it is kept). */
export class AnswerTooLarge extends Error {
  constructor(readonly status: number, readonly maxBytes: number) {
    super(`the answer (HTTP ${status}) is longer than ${maxBytes} bytes`);
    this.name = 'AnswerTooLarge';
  }
}

/** The Content-Length an answer announced, when it is a number. */
function announcedLength(headers: AnswerHeaders): number | undefined {
  const v = headers.get('content-length');
  return v !== null && /^\d{1,15}$/.test(v.trim()) ? Number(v.trim()) : undefined;
}

/** As Response.text(): UTF-8, a leading byte order mark not part of the text. */
function textOf(bytes: Uint8Array): string {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

export interface AttemptAnswer {
  status: number;
  headers: AnswerHeaders;
  /** The answer's body as text (UTF-8). */
  text: string;
}

export type HttpAttempt = (url: string, r: AttemptRequest) => Promise<AttemptAnswer>;

/** An attempt through a `fetch` the caller gave. */
export function fetchAttempt(f: typeof fetch): HttpAttempt {
  return async (url, r) => {
    // A redirect is an answer, as on node:http: a signed request goes to the origin it was signed for.
    const res = await f(url, { method: r.method, headers: r.headers, signal: r.signal, redirect: 'manual', ...(r.body !== undefined ? { body: r.body } : {}) });
    const tooLarge = () => new AnswerTooLarge(res.status, r.maxBytes);
    if ((announcedLength(res.headers) ?? 0) > r.maxBytes) {
      await res.body?.cancel().catch(() => {});
      throw tooLarge();
    }
    if (!res.body) return { status: res.status, headers: res.headers, text: '' };
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > r.maxBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      chunks.push(value);
    }
    return { status: res.status, headers: res.headers, text: textOf(Buffer.concat(chunks)) };
  };
}

class NodeAnswerHeaders implements AnswerHeaders {
  constructor(private readonly raw: IncomingHttpHeaders) {}
  get(name: string): string | null {
    const v = this.raw[name.toLowerCase()];
    if (v === undefined) return null;
    return Array.isArray(v) ? v.join(', ') : v;
  }
}

type RequestFn = (url: URL, options: RequestOptions) => ClientRequest;
let httpsRequest: Promise<RequestFn> | undefined;

/** An attempt on `node:http` (or `node:https`, loaded on the first https URL), through the global agent. */
export const nodeHttpAttempt: HttpAttempt = async (url, r) => {
  const u = new URL(url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new TypeError(`${u.protocol} URLs are not supported: use http or https`);
  const request: RequestFn = u.protocol === 'https:' ? await (httpsRequest ??= import('node:https').then((m) => m.request)) : httpRequest;
  r.signal.throwIfAborted();
  const headers: Record<string, string> = { ...r.headers };
  const body = r.body !== undefined ? Buffer.from(r.body, 'utf8') : undefined;
  if (body) {
    const names = Object.keys(headers).map((k) => k.toLowerCase());
    // As fetch sends a string body.
    if (!names.includes('content-type')) headers['content-type'] = 'text/plain;charset=UTF-8';
    if (!names.includes('content-length')) headers['content-length'] = String(body.length);
  }
  return new Promise<AttemptAnswer>((resolve, reject) => {
    let settled = false;
    const finish = (err: unknown, answer?: AttemptAnswer) => {
      if (settled) return;
      settled = true;
      r.signal.removeEventListener('abort', onAbort);
      if (answer) resolve(answer);
      else reject(err);
    };
    const req = request(u, { method: r.method, headers });
    const onAbort = () => {
      finish(r.signal.reason);
      req.destroy();
    };
    r.signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err) => finish(err));
    req.on('response', (res: IncomingMessage) => {
      const answerHeaders = new NodeAnswerHeaders(res.headers);
      const tooLarge = () => {
        finish(new AnswerTooLarge(res.statusCode ?? 0, r.maxBytes));
        req.destroy();
      };
      if ((announcedLength(answerHeaders) ?? 0) > r.maxBytes) return tooLarge();
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > r.maxBytes) return tooLarge();
        chunks.push(c);
      });
      res.on('error', (err) => finish(err));
      res.on('end', () => finish(undefined, { status: res.statusCode ?? 0, headers: answerHeaders, text: textOf(Buffer.concat(chunks)) }));
      // A connection closed before the whole body arrived.
      res.on('close', () => finish(Object.assign(new Error('the connection closed before the whole answer arrived'), { code: 'ECONNRESET' })));
    });
    req.end(body);
  });
};
