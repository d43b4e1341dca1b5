// One HTTP attempt of the SDK's Transport (transport.ts): a request and its whole answer, or a thrown
// error. Two ways to make one: on `node:http` / `node:https` (the default), which costs a call nothing
// to load; and on a `fetch` the caller passes (tests, an instrumented fetch). Node's built-in `fetch`
// loads and initialises undici on its first use, which took longer than the rest of a command-line call
// together (docs/sdk.md "Start time"). Both attempts report what the Transport reads the same way: a
// timeout rejects with the signal's reason (a `TimeoutError`), a connection failure with an error whose
// `code` (or its cause's) is the system's (`ECONNREFUSED`, `ECONNRESET`, ...).
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
    const res = await f(url, { method: r.method, headers: r.headers, signal: r.signal, ...(r.body !== undefined ? { body: r.body } : {}) });
    return { status: res.status, headers: res.headers, text: await res.text() };
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
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => finish(err));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        // As Response.text(): a leading byte order mark is not part of the text.
        finish(undefined, { status: res.statusCode ?? 0, headers: new NodeAnswerHeaders(res.headers), text: text.charCodeAt(0) === 0xfeff ? text.slice(1) : text });
      });
      // A connection closed before the whole body arrived.
      res.on('close', () => finish(Object.assign(new Error('the connection closed before the whole answer arrived'), { code: 'ECONNRESET' })));
    });
    req.end(body);
  });
};
