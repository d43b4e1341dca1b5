// A reference integration gateway, written from docs/platform/gateways.md alone (it imports nothing of the
// service): HTTPS on loopback with a self-signed certificate, requests verified as the document says
// (RFC 9421 Ed25519 under the service key, Content-Digest, created/expires, one-use nonces), transfers
// recorded before they are answered, the sandbox table's outcomes, and callbacks signed with the key
// registered on the gateway record. `misbehave` makes it break one rule the conformance suite checks.
import { createServer, type Server } from 'node:https';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo, Socket } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ed25519 } from '@noble/curves/ed25519.js';
import { parseDictionary, serializeInnerList, type InnerList } from 'structured-headers';

export const MISBEHAVIOURS = [
  'accepts_unsigned', 'malformed_answer', 'not_idempotent', 'no_status_read', 'bad_callback_signature',
  'wrong_failure_reason', 'no_return', 'forgets_timed_out', 'lenient_parsing',
] as const;
export type Misbehaviour = (typeof MISBEHAVIOURS)[number];

/** A self-signed P-256 certificate for 127.0.0.1 made by openssl, and its SPKI pin (base64 SHA-256). */
export function selfSignedCertificate(): { key: string; cert: string; pin: string } {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-cert-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { cwd: dir, stdio: 'ignore' });
  const cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
  const spki = new X509Certificate(cert).publicKey.export({ type: 'spki', format: 'der' });
  return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert, pin: createHash('sha256').update(spki).digest('base64') };
}

interface Transfer {
  id: string; reference: string; direction: 'pull' | 'push'; amount: string; currency: string;
  status: 'pending' | 'settled' | 'failed' | 'returned'; reason: string | null; submitted_at: string; resolved_at: string | null;
}

const SANDBOX: Record<string, { outcome: 'refused' | 'failed' | 'returned' | 'hold'; reason?: string }> = {
  100001: { outcome: 'failed', reason: 'insufficient_funds' },
  100002: { outcome: 'failed', reason: 'account_closed' },
  100003: { outcome: 'returned', reason: 'unauthorized_debit' },
  100004: { outcome: 'refused', reason: 'account_invalid' },
  100005: { outcome: 'failed', reason: 'rejected_by_bank' },
  100006: { outcome: 'refused', reason: 'limit_exceeded' },
  100007: { outcome: 'returned', reason: 'account_closed' },
  100008: { outcome: 'returned', reason: 'payment_stopped' },
  100009: { outcome: 'hold' },
};

export interface ReferenceGatewayOptions {
  /** The service key from the gateway record (`service_key`). */
  serviceKeyId?: string;
  servicePublicKey?: string;
  /** Milliseconds since the epoch: the clock signatures are checked and made with. */
  now?: () => number;
  settleMs?: number;
  misbehave?: Misbehaviour;
}

export class ReferenceGateway {
  /** The callback signing key: its public half is registered on the gateway record. */
  readonly callbackSecret = ed25519.utils.randomSecretKey();
  readonly callbackPublicKey = Buffer.from(ed25519.getPublicKey(this.callbackSecret)).toString('hex');
  /** The gateway's id on the service: the callbacks' keyid. */
  gatewayId = '';
  serviceKeyId: string;
  servicePublicKey: string;
  /** While false, resolutions are not called back (a lost callback). */
  callbacksOn = true;
  readonly transfers = new Map<string, Transfer>();
  readonly byReference = new Map<string, string>();
  /** Every request that reached a handler (method, path). */
  readonly requests: { method: string; path: string }[] = [];
  readonly callbacks: { url: string; status: number }[] = [];
  private readonly nonces = new Set<string>();
  private readonly held = new Set<ServerResponse>();
  /** Every TCP connection, from before its TLS handshake: one a client dropped mid-handshake (a pin mismatch) is no HTTP connection for closeAllConnections. */
  private readonly sockets = new Set<Socket>();
  /** References whose first submission was held: only the first one is. */
  private readonly heldRefs = new Set<string>();
  private server!: Server;
  url = '';
  cert: { key: string; cert: string; pin: string };

  constructor(private readonly o: ReferenceGatewayOptions = {}) {
    this.serviceKeyId = o.serviceKeyId ?? '';
    this.servicePublicKey = o.servicePublicKey ?? '';
    this.cert = selfSignedCertificate();
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  async start(): Promise<this> {
    this.server = createServer({ key: this.cert.key, cert: this.cert.cert }, (req, res) => void this.handle(req, res));
    this.server.on('connection', (sock: Socket) => {
      this.sockets.add(sock);
      sock.on('close', () => this.sockets.delete(sock));
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Serves another certificate from now on (a key rotation). */
  rotateCertificate(): { pin: string } {
    this.cert = selfSignedCertificate();
    this.server.setSecureContext({ key: this.cert.key, cert: this.cert.cert });
    this.server.closeIdleConnections();
    return { pin: this.cert.pin };
  }

  async stop(): Promise<void> {
    for (const r of this.held) r.destroy();
    this.server.closeAllConnections();
    for (const sock of this.sockets) sock.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private error(res: ServerResponse, status: number, code: string, error: string): void {
    this.send(res, status, { error, code });
  }

  /** The document's "Verifying a request": digest, signature base, Ed25519, created/expires, nonce. */
  private verify(req: IncomingMessage, body: Buffer): string | null {
    if (this.o.misbehave === 'accepts_unsigned') return null;
    const input = req.headers['signature-input'];
    const signature = req.headers.signature;
    if (typeof input !== 'string' || typeof signature !== 'string') return 'unsigned';
    if (body.length > 0) {
      const digest = req.headers['content-digest'];
      const want = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
      if (digest !== want) return 'content digest';
    }
    let inner: InnerList;
    let sig: Uint8Array;
    try {
      const inputs = parseDictionary(input);
      const sigs = parseDictionary(signature);
      if (inputs.size !== 1 || sigs.size !== 1) return 'one signature';
      const [label, member] = [...inputs.entries()][0]!;
      inner = member as InnerList;
      const s = sigs.get(label)![0];
      sig = new Uint8Array(s as ArrayBuffer);
    } catch {
      return 'malformed';
    }
    const params = inner[1];
    if (params.get('keyid') !== this.serviceKeyId) return 'keyid';
    const created = params.get('created');
    const expires = params.get('expires');
    const nonce = params.get('nonce');
    const nowS = Math.floor(this.now() / 1000);
    if (typeof created !== 'number' || typeof expires !== 'number' || typeof nonce !== 'string') return 'params';
    if (created > nowS + 30 || nowS > expires || expires - created > 300) return 'time';
    const lines: string[] = [];
    for (const [name] of inner[0]) {
      if (name === '@method') lines.push(`"@method": ${req.method}`);
      else if (name === '@target-uri') lines.push(`"@target-uri": https://${req.headers.host}${req.url}`);
      else if (name === 'content-digest') lines.push(`"content-digest": ${req.headers['content-digest']}`);
      else return 'component';
    }
    const names = inner[0].map(([n]) => n);
    if (!names.includes('@method') || !names.includes('@target-uri') || (body.length > 0 && !names.includes('content-digest'))) return 'coverage';
    lines.push(`"@signature-params": ${serializeInnerList(inner)}`);
    if (!ed25519.verify(sig, new TextEncoder().encode(lines.join('\n')), Buffer.from(this.servicePublicKey, 'hex'))) return 'signature';
    if (this.nonces.has(nonce)) return 'replayed';
    this.nonces.add(nonce);
    return null;
  }

  private wire(t: Transfer): Record<string, unknown> {
    if (this.o.misbehave === 'malformed_answer') return { ...t, amount: Number(t.amount) };
    return { ...t };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const path = (req.url ?? '').split('?')[0]!;
    this.requests.push({ method: req.method ?? '', path });
    const refused = this.verify(req, body);
    if (refused) return this.error(res, 401, 'unauthorized', `request signature refused: ${refused}`);
    if (req.method === 'POST' && path === '/v1/transfers') return this.submit(body, res);
    const m = /^\/v1\/transfers\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && m) {
      const t = this.transfers.get(decodeURIComponent(m[1]!));
      if (!t || this.o.misbehave === 'no_status_read') return this.error(res, 404, 'not_found', 'no such transfer');
      return this.send(res, 200, this.wire(t));
    }
    return this.error(res, 404, 'not_found', 'no such route');
  }

  private submit(raw: Buffer, res: ServerResponse): void {
    let b: Record<string, unknown>;
    try {
      b = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    } catch {
      return this.error(res, 400, 'invalid_request', 'body is not JSON');
    }
    const strict = this.o.misbehave !== 'lenient_parsing';
    const ok = typeof b.reference === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(b.reference)
      && (b.direction === 'pull' || b.direction === 'push')
      && (!strict || (typeof b.amount === 'string' && /^[1-9][0-9]{0,17}$/.test(b.amount)))
      && typeof b.currency === 'string' && /^[A-Z]{3}$/.test(b.currency)
      && (b.mode === 'sandbox' || b.mode === 'live') && typeof b.callback_url === 'string'
      && (b.account_holder_id === null || typeof b.account_holder_id === 'string');
    if (!ok) return this.error(res, 400, 'invalid_request', 'the submission is malformed');
    const reference = b.reference as string;
    const known = this.byReference.get(reference);
    if (known && this.o.misbehave !== 'not_idempotent') return this.send(res, 200, this.wire(this.transfers.get(known)!));
    const amount = String(b.amount);
    const magic = b.mode === 'sandbox' ? SANDBOX[amount] : undefined;
    const now = new Date(this.now()).toISOString();
    const t: Transfer = {
      id: `rgt_${randomBytes(8).toString('hex')}`, reference, direction: b.direction as Transfer['direction'], amount, currency: b.currency as string,
      status: magic?.outcome === 'refused' ? 'failed' : 'pending', reason: magic?.outcome === 'refused' ? magic.reason! : null, submitted_at: now,
      resolved_at: magic?.outcome === 'refused' ? now : null,
    };
    const record = () => {
      this.transfers.set(t.id, t);
      this.byReference.set(reference, t.id);
    };
    if (magic?.outcome === 'hold' && !this.heldRefs.has(reference)) {
      this.heldRefs.add(reference);
      // Recorded first, then never answered: the service times out and resubmits.
      if (this.o.misbehave !== 'forgets_timed_out') record();
      this.held.add(res);
      res.on('close', () => this.held.delete(res));
      this.resolveLater(t, b.callback_url as string);
      return;
    }
    record();
    this.send(res, 201, this.wire(t));
    if (t.status === 'pending') this.resolveLater(t, b.callback_url as string);
  }

  private resolveLater(t: Transfer, callbackUrl: string): void {
    setTimeout(() => void this.resolve(t, callbackUrl), this.o.settleMs ?? 30).unref();
  }

  private async resolve(t: Transfer, callbackUrl: string): Promise<void> {
    const magic = SANDBOX[t.amount];
    let status: Transfer['status'] = 'settled';
    let reason: string | null = null;
    if (magic?.outcome === 'failed') [status, reason] = ['failed', this.o.misbehave === 'wrong_failure_reason' && magic.reason === 'insufficient_funds' ? 'rejected_by_bank' : magic.reason!];
    if (magic?.outcome === 'returned' && this.o.misbehave !== 'no_return') [status, reason] = ['returned', magic.reason!];
    Object.assign(t, { status, reason, resolved_at: new Date(this.now()).toISOString() });
    if (this.callbacksOn) await this.callBack(t, callbackUrl);
  }

  /** The document's "Callbacks": POST {v: 1, transfer}, signed under the registered key, keyid the gateway id. */
  async callBack(t: Transfer, url: string, opts: { secret?: Uint8Array } = {}): Promise<number> {
    const body = JSON.stringify({ v: 1, transfer: this.wire(t) });
    const digest = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
    const created = Math.floor(this.now() / 1000);
    const params = `("@method" "@target-uri" "content-digest");created=${created};expires=${created + 60};nonce="${randomBytes(16).toString('hex')}";keyid="${this.gatewayId}";alg="ed25519"`;
    const base = [`"@method": POST`, `"@target-uri": ${url}`, `"content-digest": ${digest}`, `"@signature-params": ${params}`].join('\n');
    const secret = opts.secret ?? (this.o.misbehave === 'bad_callback_signature' ? ed25519.utils.randomSecretKey() : this.callbackSecret);
    const sig = Buffer.from(ed25519.sign(new TextEncoder().encode(base), secret)).toString('base64');
    try {
      const r = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', 'content-digest': digest, 'signature-input': `sig=${params}`, signature: `sig=:${sig}:` } });
      await r.arrayBuffer();
      this.callbacks.push({ url, status: r.status });
      return r.status;
    } catch {
      this.callbacks.push({ url, status: 0 });
      return 0;
    }
  }
}
