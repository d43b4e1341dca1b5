// The service's side of the gateway protocol (docs/platform/gateways.md "Requests"): each request is
// signed with the service's gateway key (RFC 9421, Ed25519, the profile of docs/request-signing.md) and
// sent through the webhooks' SSRF-safe client (api/webhooks/outbound-http.ts) with the gateway's TLS pins,
// so a call goes only to an allowed address and only to the pinned key. Answers are checked strictly
// (gateway-protocol.ts); a failure is a GatewayCallError with a category, never the gateway's own text.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { contentDigest } from '../../core/http/content-digest.ts';
import { signRequest } from '../../core/http/http-signature.ts';
import type { DestinationPolicy } from '../webhooks/destination-policy.ts';
import { OutboundHttp, type HostLookup, type OutboundResult } from '../webhooks/outbound-http.ts';
import type { GatewayRecord } from './gateway-records.ts';
import { MalformedAnswer, PROTOCOL_VERSION, isErrorAnswer, parseWireTransfer, type TransferSubmission, type WireTransfer } from './gateway-protocol.ts';

/** Why a call did not give an answer the service can use. */
export type GatewayCallCategory =
  | 'destination_not_allowed' | 'connection_failed' | 'timeout' | 'certificate_mismatch' | 'http_status' | 'malformed_answer' | 'gateway_error';

export class GatewayCallError extends CustodyError {
  constructor(readonly category: GatewayCallCategory, message: string, readonly status: number | null = null) {
    super(category === 'certificate_mismatch' ? 'certificate_pin_mismatch' : 'gateway_unavailable', message);
    this.name = 'GatewayCallError';
  }
}

/** The service's Ed25519 key for gateway requests, derived from the server's webhook seed (one secret to keep). */
export interface ServiceGatewayKey {
  keyId: string;
  secretKey: Uint8Array;
  publicKey: Uint8Array;
}

export function serviceGatewayKey(webhookSeed: Uint8Array): ServiceGatewayKey {
  const secretKey = new Uint8Array(createHmac('sha256', webhookSeed).update('integration-gateway-request-signing').digest());
  const publicKey = ed25519.getPublicKey(secretKey);
  return { keyId: `svc_gw_${createHash('sha256').update(publicKey).digest('hex').slice(0, 16)}`, secretKey, publicKey };
}

export interface GatewayClientOptions {
  key: ServiceGatewayKey;
  policy: DestinationPolicy;
  lookup?: HostLookup | undefined;
  /** One call, connect to last byte (API_GATEWAY_TIMEOUT_MS). */
  timeoutMs: number;
  /** Seconds since the epoch, for `created`/`expires`. */
  now: () => number;
}

/** How a request is signed: properly, not at all, or under a key the gateway does not know (conformance). */
export type Signing = 'service' | 'none' | 'wrong_key';

export interface RawAnswer {
  result: OutboundResult;
  /** The body parsed as JSON; undefined when it is not JSON or there was none. */
  json: unknown;
}

const ANSWER_BYTES = 16 * 1024;

/** Clients kept for reuse (their connections), per base URL, pins and timeout; the oldest is closed past this. */
const MAX_CLIENTS = 64;

export class GatewayClient {
  private readonly clients = new Map<string, OutboundHttp>();

  constructor(private readonly o: GatewayClientOptions) {}

  /**
   * The outbound client for these pins and timeout. Pins are checked on each new connection, and a
   * connection is kept only by the client made for its pins: a pin change gives a new client (new
   * connections, checked again), never a connection checked under the old pins.
   */
  private http(baseUrl: string, pins: string[] | undefined, timeoutMs: number): OutboundHttp {
    const key = `${new URL(baseUrl).origin}|${pins?.join(',') ?? ''}|${timeoutMs}`;
    let http = this.clients.get(key);
    if (!http) {
      http = new OutboundHttp({ policy: this.o.policy, timeoutMs, maxResponseBytes: ANSWER_BYTES, ...(this.o.lookup ? { lookup: this.o.lookup } : {}), ...(pins ? { pins } : {}) });
      this.clients.set(key, http);
      if (this.clients.size > MAX_CLIENTS) {
        const [oldest, client] = this.clients.entries().next().value!;
        this.clients.delete(oldest);
        void client.close().catch(() => undefined);
      }
    }
    return http;
  }

  /** Closes every kept client (the server's shutdown). */
  async close(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(all.map((c) => c.close().catch(() => undefined)));
  }

  get key(): ServiceGatewayKey {
    return this.o.key;
  }

  /** `<base_url>/v1<path>`. */
  url(gw: Pick<GatewayRecord, 'base_url'>, path: string): string {
    return `${gw.base_url.replace(/\/+$/, '')}/v${PROTOCOL_VERSION}${path}`;
  }

  headers(method: string, url: string, body: string | undefined, signing: Signing): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-digest'] = contentDigest(new TextEncoder().encode(body));
    }
    if (signing === 'none') return headers;
    const now = this.o.now();
    const secretKey = signing === 'service' ? this.o.key.secretKey : ed25519.utils.randomSecretKey();
    const sig = signRequest({ method, url, headers }, {
      keyId: this.o.key.keyId, secretKey, components: body !== undefined ? ['@method', '@target-uri', 'content-digest'] : ['@method', '@target-uri'],
      created: now, expires: now + 60, nonce: randomBytes(16).toString('hex'),
    });
    return { ...headers, ...sig };
  }

  /** One request as given (conformance sends unsigned and malformed ones); never throws. */
  async raw(gw: Pick<GatewayRecord, 'base_url' | 'pins'>, method: 'GET' | 'POST', path: string, body: string | undefined, signing: Signing = 'service', timeoutMs = this.o.timeoutMs): Promise<RawAnswer> {
    const url = this.url(gw, path);
    const pins = gw.pins ? [gw.pins.current, ...(gw.pins.next ? [gw.pins.next] : [])] : undefined;
    const result = await this.http(gw.base_url, pins, timeoutMs).request(url, { method, headers: this.headers(method, url, body, signing), ...(body !== undefined ? { body } : {}) });
    let json: unknown;
    try {
      json = result.response_body ? JSON.parse(result.response_body) : undefined;
    } catch {
      json = undefined;
    }
    return { result, json };
  }

  /** A transfer from an answer that must carry one with one of `statuses`; a GatewayCallError otherwise. */
  transferOf(a: RawAnswer, statuses: readonly number[]): { status: number; transfer: WireTransfer } {
    const r = a.result;
    if (r.status_code === null) {
      const category = r.error === 'http_status' || r.error === null ? 'connection_failed' : r.error;
      throw new GatewayCallError(category, CATEGORY_SENTENCES[category]);
    }
    if (!statuses.includes(r.status_code)) {
      if (isErrorAnswer(a.json)) throw new GatewayCallError('gateway_error', `the gateway answered ${r.status_code} ${a.json.code}`, r.status_code);
      throw new GatewayCallError('http_status', `the gateway answered ${r.status_code} without the protocol's error shape`, r.status_code);
    }
    try {
      return { status: r.status_code, transfer: parseWireTransfer(a.json) };
    } catch (err) {
      if (err instanceof MalformedAnswer) throw new GatewayCallError('malformed_answer', `malformed answer: ${err.message}`, r.status_code);
      throw err;
    }
  }

  /** POST /v1/transfers: 201 a new transfer, 200 the one the reference already names. */
  async submit(gw: GatewayRecord, s: TransferSubmission): Promise<{ status: number; transfer: WireTransfer }> {
    return this.transferOf(await this.raw(gw, 'POST', '/transfers', JSON.stringify(s)), [200, 201]);
  }

  /** GET /v1/transfers/{id}: the transfer, or undefined on the protocol's 404. */
  async get(gw: GatewayRecord, id: string): Promise<WireTransfer | undefined> {
    const a = await this.raw(gw, 'GET', `/transfers/${encodeURIComponent(id)}`, undefined);
    if (a.result.status_code === 404 && isErrorAnswer(a.json)) return undefined;
    return this.transferOf(a, [200]).transfer;
  }
}

export const CATEGORY_SENTENCES: Readonly<Record<GatewayCallCategory, string>> = {
  destination_not_allowed: 'the gateway\'s address is not allowed by the destination policy',
  connection_failed: 'the gateway could not be reached, or its certificate is not trusted (pin its key to trust a self-signed one)',
  timeout: 'the gateway did not answer in time',
  certificate_mismatch: 'the gateway presented a TLS key that matches no pinned SPKI SHA-256: the call was not made',
  http_status: 'the gateway answered an unexpected status',
  malformed_answer: 'the gateway\'s answer is not what the protocol defines',
  gateway_error: 'the gateway answered an error',
};
