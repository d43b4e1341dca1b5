// The one HTTP client webhooks go out through (the test operation and the delivery engine), built on
// undici with its own connect step: the name is resolved here, every resolved address is checked
// against the destination policy (destination-policy.ts), and the socket is opened to a checked address,
// so neither DNS rebinding nor a name that resolves inside the network reaches anything the policy
// refuses. Redirects are not followed (a 3xx is an answer, and not a 2xx). The response body is read
// as a stream up to a bound and the rest is cancelled. Failures are reported as a category, never as
// the underlying error text, errno or address (docs/security.md "Webhook destinations (SSRF)").
// Integration gateways (docs/platform/gateways.md) go out through it too, with their TLS public keys
// pinned: the peer certificate's SPKI SHA-256 is checked on every new connection, before a byte of the
// request is written, and a connection to any other key is closed (fails closed as
// `certificate_mismatch`).
import { createHash } from 'node:crypto';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { performance } from 'node:perf_hooks';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { type DestinationPolicy, normalizeHostname } from './destination-policy.ts';

/** Why a request did not deliver, as shown on the test result and on delivery rows. */
export type DeliveryErrorCategory = 'destination_not_allowed' | 'connection_failed' | 'timeout' | 'http_status';
export const DELIVERY_ERROR_CATEGORIES: readonly string[] = ['destination_not_allowed', 'connection_failed', 'timeout', 'http_status', 'endpoint_deleted'];
/** A pinned client's categories: the webhooks' and the pin check's. */
export type OutboundErrorCategory = DeliveryErrorCategory | 'certificate_mismatch';

/** Resolves a name to all its addresses (dns.lookup with `all` by default; tests inject their own). */
export type HostLookup = (hostname: string) => Promise<{ address: string; family: number }[]>;

export interface OutboundResult {
  delivered: boolean;
  status_code: number | null;
  duration_ms: number;
  error: OutboundErrorCategory | null;
  /** At most `maxResponseBytes` of the answer's body, decoded as UTF-8; null when there was no answer. */
  response_body: string | null;
  /** The answer's Retry-After header as sent, when it had one (the delivery engine reads it). */
  retry_after?: string;
}

export interface OutboundHttpOptions {
  policy: DestinationPolicy;
  /** The whole request, connect to last body byte read (spec: ten seconds). */
  timeoutMs?: number;
  /** How much of a response body is read and kept. */
  maxResponseBytes?: number;
  lookup?: HostLookup;
  /** Opens the socket to an already checked address (undici's connector); tests replace it. */
  socketConnector?: buildConnector.connector;
  /**
   * TLS public keys the peer must present, each the base64 SHA-256 of a DER SubjectPublicKeyInfo (the
   * `pin-sha256` form of RFC 7469). Set: the pin authenticates the peer in place of the Web PKI (a
   * self-signed certificate is accepted when its key is pinned), https only, and any other key fails
   * closed. Unset: the Web PKI, as for webhooks.
   */
  pins?: readonly string[];
}

export const DEFAULT_MAX_RESPONSE_BYTES = 4096;

/** The peer's TLS key is none of the pinned ones (or the connection was not TLS). */
export class CertificatePinMismatchError extends Error {
  constructor(readonly presented: string | null) {
    super('the peer\'s TLS public key matches no pinned SPKI SHA-256');
    this.name = 'CertificatePinMismatchError';
  }
}

/** The base64 SHA-256 of a DER SubjectPublicKeyInfo: how a TLS public key is pinned. */
export function spkiSha256(spkiDer: Uint8Array): string {
  return createHash('sha256').update(spkiDer).digest('base64');
}

/** The pin of the certificate a TLS socket's peer presented; null when there is none. */
export function peerSpkiSha256(socket: Socket): string | null {
  const cert = (socket as TLSSocket).getPeerX509Certificate?.();
  return cert ? spkiSha256(cert.publicKey.export({ type: 'spki', format: 'der' })) : null;
}

/** The connect step refused every address of a destination, or one of them. */
export class DestinationNotAllowedError extends Error {
  constructor() {
    super('destination not allowed by the webhook destination policy');
    this.name = 'DestinationNotAllowedError';
  }
}

const defaultLookup: HostLookup = (hostname) => dnsLookup(hostname, { all: true });

/** Older rows carried free text; anything outside the categories reads as the generic failure. */
export function publicDeliveryError(error: string | null): string | null {
  if (error === null || DELIVERY_ERROR_CATEGORIES.includes(error)) return error;
  if (error === 'endpoint deleted') return 'endpoint_deleted';
  if (error === 'timed out') return 'timeout';
  if (error.startsWith('endpoint answered')) return 'http_status';
  return 'connection_failed';
}

export class OutboundHttp {
  readonly policy: DestinationPolicy;
  private readonly timeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly lookup: HostLookup;
  private readonly socketConnector: buildConnector.connector;
  private readonly agent: Agent;
  private readonly pins: readonly string[] | undefined;

  constructor(o: OutboundHttpOptions) {
    this.policy = o.policy;
    this.timeoutMs = o.timeoutMs ?? 10_000;
    this.maxResponseBytes = o.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.lookup = o.lookup ?? defaultLookup;
    this.pins = o.pins?.length ? [...o.pins] : undefined;
    // A pinned peer is authenticated by its key, checked below once the handshake is done; the chain and
    // the name are then not what decides. TLS sessions are not resumed: a resumed session shows no peer
    // certificate, and every new connection must show the key it is checked against.
    this.socketConnector = o.socketConnector ?? buildConnector({ timeout: this.timeoutMs, ...(this.pins ? { rejectUnauthorized: false, maxCachedSessions: 0 } : {}) });
    this.agent = new Agent({ connect: (opts, cb) => this.connect(opts, cb) });
  }

  /** Hands the socket on only when its peer presented a pinned key (a pinned client speaks TLS only). */
  private checkPin(cb: buildConnector.Callback): buildConnector.Callback {
    const pins = this.pins;
    if (!pins) return cb;
    return ((err: Error | null, socket: Socket | null) => {
      if (err || !socket) return cb(err ?? new Error('no socket'), null);
      const presented = peerSpkiSha256(socket);
      if (presented !== null && pins.includes(presented)) return cb(null, socket);
      socket.destroy();
      cb(new CertificatePinMismatchError(presented), null);
    }) as buildConnector.Callback;
  }

  /** Resolves, checks every address, then connects to the first that answers (all of them checked). */
  private connect(opts: buildConnector.Options, cb: buildConnector.Callback): void {
    const protocol = opts.protocol;
    const hostname = normalizeHostname(opts.hostname);
    const dest = { protocol, hostname, port: Number(opts.port) || (protocol === 'https:' ? 443 : 80) };
    if (this.pins && protocol !== 'https:') return cb(new CertificatePinMismatchError(null), null);
    cb = this.checkPin(cb);
    const resolved = isIP(hostname) ? Promise.resolve([hostname]) : this.lookup(hostname).then((r) => r.map((x) => x.address));
    resolved.then((addresses) => {
      if (addresses.length === 0) return cb(new Error('no address'), null);
      if (!addresses.every((a) => this.policy.allowsAddress(dest, a))) return cb(new DestinationNotAllowedError(), null);
      const attempt = (i: number): void => this.socketConnector({ ...opts, hostname: addresses[i]! }, (...args) => {
        if (args[0] && i + 1 < addresses.length) return attempt(i + 1);
        cb(...args);
      });
      attempt(0);
    }, (err: unknown) => cb(err instanceof Error ? err : new Error('lookup failed'), null));
  }

  /** POSTs once; a 2xx delivers. Never throws. */
  post(url: string, req: { body: string; headers: Record<string, string> }): Promise<OutboundResult> {
    return this.send(url, { method: 'POST', body: req.body, headers: req.headers });
  }

  /** GETs once, under the same policy, timeout and bound (OIDC discovery, api/member-auth/oidc-discovery.ts). Never throws. */
  get(url: string, headers: Record<string, string> = {}): Promise<OutboundResult> {
    return this.send(url, { method: 'GET', headers });
  }

  /** One request of any method under the same policy, timeout, bound and pins. Never throws. */
  request(url: string, init: { method: string; body?: string; headers: Record<string, string> }): Promise<OutboundResult> {
    return this.send(url, init);
  }

  private async send(url: string, init: { method: string; body?: string; headers: Record<string, string> }): Promise<OutboundResult> {
    const t0 = performance.now();
    const done = (r: Omit<OutboundResult, 'duration_ms'>): OutboundResult => ({ ...r, duration_ms: Math.round(performance.now() - t0) });
    if (this.policy.checkUrl(url) !== null) return done({ delivered: false, status_code: null, error: 'destination_not_allowed', response_body: null });
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const res = await undiciFetch(url, { ...init, redirect: 'manual', signal, dispatcher: this.agent });
      const body = await readBounded(res.body, this.maxResponseBytes);
      const ok = res.status >= 200 && res.status < 300;
      const retryAfter = res.headers.get('retry-after');
      return done({ delivered: ok, status_code: res.status, error: ok ? null : 'http_status', response_body: body, ...(retryAfter !== null ? { retry_after: retryAfter } : {}) });
    } catch (err) {
      return done({ delivered: false, status_code: null, error: categorize(err, signal), response_body: null });
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

function categorize(err: unknown, signal: AbortSignal): OutboundErrorCategory {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof DestinationNotAllowedError) return 'destination_not_allowed';
    if (e instanceof CertificatePinMismatchError) return 'certificate_mismatch';
    if ((e as { code?: string }).code === 'UND_ERR_CONNECT_TIMEOUT') return 'timeout';
  }
  return signal.aborted ? 'timeout' : 'connection_failed';
}

/** Reads at most `max` bytes of a body and cancels the rest (the connection is then closed). */
async function readBounded(body: ReadableStream<Uint8Array> | null, max: number): Promise<string> {
  if (!body) return '';
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let n = 0;
  try {
    while (n < max) {
      const { done, value } = await reader.read();
      if (done) break;
      const part = value.subarray(0, max - n);
      chunks.push(part);
      n += part.length;
    }
  } catch {
    // cut short (timeout, reset): keep what arrived
  } finally {
    reader.cancel().catch(() => undefined);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}
