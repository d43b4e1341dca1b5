// The optional browser package (platform-api.md "BFF helper and browser rules", last item;
// docs/platform/bff.md "The browser package"): what a customer's page calls for its signed-in member.
// It calls only the customer's same-origin BFF (bff-routes.ts), with the browser's cookies
// (`credentials: 'same-origin'`) and the CSRF header the BFF checks; the BFF holds the member session
// and the API's credentials. It never takes an API key, a provider proof, a session id, an access or
// refresh token or an authorization header (credential-guard.ts): such an option, header or argument is
// refused before anything is sent. Contacts and money movement are not here: they stay customer-server
// operations. ESM with no Node built-ins; bundled by deploy/sdk/build-browser.mjs.
import { BffBrowserError } from './bff-browser-error.ts';
import { BFF_BASE, BFF_CSRF_HEADER, BFF_CSRF_VALUE, BFF_ROUTES } from './bff-routes.ts';
import { checkHeaders, checkName, checkNoCredential } from './credential-guard.ts';

/** Where the page is: `globalThis.location` in a browser. */
export interface PageLocation {
  readonly origin: string;
  assign(url: string): void;
}

export interface BffClientOptions {
  /** The BFF's member routes: a path of the page's origin (default `/bff`), or an absolute URL of that same origin. */
  base?: string;
  /** Extra headers on every call (a trace id, a locale); never an authorization or session header. */
  headers?: Record<string, string>;
  fetch?: typeof fetch;
  /** Default `globalThis.location`. */
  location?: PageLocation;
}

const OPTIONS = new Set(['base', 'headers', 'fetch', 'location']);

export type Json = Record<string, unknown>;

export interface SessionStatus {
  signed_in: boolean;
  /** When the current member session ends (the BFF refreshes it before): signed in only. */
  expires_at?: string;
  application_kind?: 'byo_oidc' | 'hosted';
  /** Signed out only: the BFF offers `signInSandboxDemo()` (a sandbox application's demo persona). */
  sandbox_demo?: boolean;
}

/** The member's safe profile: no session id, token or workspace credential. */
export interface Profile {
  member_id: string;
  application_kind: 'byo_oidc' | 'hosted';
  authenticated_at: string;
  amr: string[];
  acr: string | null;
  restricted_until: string | null;
  account_holder: { id: string; status: string; verification_status: string } | null;
}

/** What the member still has to do before the account is in use, and the first of it (`next`). */
export interface Enrolment {
  account_holder_linked: boolean;
  verification_status: string | null;
  consents_current: boolean | null;
  wallet_status: string | null;
  next: 'link_account_holder' | 'accept_policies' | 'provision_wallet' | 'done';
}

export interface Avatar {
  content_type: string;
  size: number;
  confirmed_at: string;
  /** A same-origin path of the BFF that serves the image. */
  url: string;
}

export interface Page<T = Json> { data: T[]; next_cursor: string | null; has_more: boolean }
export interface PageQuery { cursor?: string; limit?: number }

export interface DataExport extends Json {
  id: string;
  status: 'pending' | 'ready' | 'failed' | 'expired';
  /** When ready: a same-origin path of the BFF that serves the file. */
  download: { url: string; expires_at: string } | null;
}

const ID = /^[A-Za-z0-9_-]{1,64}$/;

function fail(message: string): never {
  throw new BffBrowserError('invalid_argument', message);
}

export class BffClient {
  private readonly base: string;
  private readonly headers: Record<string, string>;
  private readonly fetch: typeof fetch;
  private readonly location: PageLocation | undefined;

  constructor(o: BffClientOptions = {}) {
    if (o === null || typeof o !== 'object') fail('options must be an object');
    // Credentials first, whatever else is wrong: the refusal must name them.
    for (const k of Object.keys(o)) checkName(k, 'option');
    checkNoCredential({ ...o, fetch: undefined, location: undefined }, '');
    for (const k of Object.keys(o)) if (!OPTIONS.has(k)) fail(`unknown option ${JSON.stringify(k)}`);
    if (o.headers !== undefined) checkHeaders(o.headers);
    this.headers = { ...o.headers };
    this.location = o.location ?? (globalThis as { location?: PageLocation }).location;
    const f = o.fetch ?? globalThis.fetch;
    if (typeof f !== 'function') fail('no fetch: pass `fetch`');
    this.fetch = f.bind(globalThis);
    this.base = this.sameOriginPath(o.base ?? BFF_BASE);
  }

  /** The base as a path of the page's origin; an absolute URL of another origin is refused. */
  private sameOriginPath(base: string): string {
    if (typeof base !== 'string' || base === '') fail('base must be a path such as /bff');
    // `//host/…` is a URL of another host, not a path.
    if (base.startsWith('/') && !base.startsWith('//') && !base.includes('\\')) return base.replace(/\/+$/, '');
    let url: URL;
    try {
      // A scheme-relative `//host/…` is read against the page, so it is refused as another origin.
      url = new URL(base, base.startsWith('//') ? this.location?.origin ?? 'https://another-origin.invalid' : undefined);
    } catch {
      return fail('base must be a path such as /bff, or an absolute URL of the page\'s origin');
    }
    if (this.location === undefined || url.origin !== this.location.origin) {
      throw new BffBrowserError('origin_refused', `the BFF base ${url.origin} is not the page's origin${this.location ? ` (${this.location.origin})` : ''}: the browser package calls only its same-origin BFF`);
    }
    if (url.search || url.hash) fail('base must carry no query or fragment');
    return url.pathname.replace(/\/+$/, '');
  }

  private path(route: keyof typeof BFF_ROUTES, id?: string): string {
    let p = BFF_ROUTES[route] as string;
    if (id !== undefined) {
      if (typeof id !== 'string' || !ID.test(id)) fail('an id is 1 to 64 of A-Z a-z 0-9 _ -');
      p = p.replace(':id', id);
    }
    return this.base + p;
  }

  private async call<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: { json?: unknown; bytes?: Blob | ArrayBuffer | Uint8Array; contentType?: string }, extra: Record<string, string> = {}): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', ...this.headers, ...extra, [BFF_CSRF_HEADER]: BFF_CSRF_VALUE };
    let payload: string | Blob | ArrayBuffer | Uint8Array | undefined;
    if (body?.json !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body.json);
    } else if (body?.bytes !== undefined) {
      headers['content-type'] = body.contentType!;
      payload = body.bytes;
    }
    let res: Response;
    try {
      // `cache` is a browser's RequestInit member (Node's fetch types lack it).
      const init = { method, headers, credentials: 'same-origin', cache: 'no-store', redirect: 'error', ...(payload !== undefined ? { body: payload } : {}) };
      res = await this.fetch(path, init as RequestInit);
    } catch (err) {
      throw new BffBrowserError('unavailable', `no answer from the BFF (${method} ${path})${method === 'GET' ? '' : ': the outcome is unknown'}`, { cause: err });
    }
    const text = await res.text().catch(() => '');
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (res.ok) {
      if (res.status === 204) return undefined as T;
      if (json === undefined || json === null || typeof json !== 'object') throw new BffBrowserError('bad_response', `the BFF's answer to ${method} ${path} is not JSON`, { status: res.status });
      return json as T;
    }
    const e = (json ?? {}) as { code?: unknown; error?: unknown };
    const apiCode = typeof e.code === 'string' ? e.code : undefined;
    const message = typeof e.error === 'string' ? e.error : `${method} ${path}: ${res.status}`;
    if (res.status === 401 && apiCode === 'signed_out') throw new BffBrowserError('signed_out', message, { status: 401, apiCode });
    if (res.status >= 500) throw new BffBrowserError('unavailable', message, { status: res.status, ...(apiCode ? { apiCode } : {}) });
    throw new BffBrowserError('refused', message, { status: res.status, ...(apiCode ? { apiCode } : {}) });
  }

  private query(q: PageQuery & { kind?: string } | undefined, allowed: string[]): string {
    if (q === undefined) return '';
    if (q === null || typeof q !== 'object') fail('the query must be an object');
    checkNoCredential(q, 'query');
    const s = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) {
      if (!allowed.includes(k)) fail(`unknown query parameter ${JSON.stringify(k)}`);
      if (v === undefined) continue;
      if (k === 'limit' ? !(Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 100) : typeof v !== 'string') fail(`query parameter ${k} is of the wrong shape`);
      s.set(k, String(v));
    }
    const text = s.toString();
    return text ? `?${text}` : '';
  }

  private navigate(path: string): void {
    if (!this.location) fail('no page location to navigate');
    this.location.assign(path);
  }

  // ---- Session launch and status -------------------------------------------------------------------

  /** Sends the browser to the BFF's sign-in (a top-level navigation); it comes back to the page signed in. */
  signIn(...args: unknown[]): void {
    if (args.length) {
      checkNoCredential(args, 'signIn()');
      fail('signIn() takes no argument: the BFF begins the sign-in and keeps its state');
    }
    this.navigate(this.path('signIn'));
  }

  /** Sandbox only, where the BFF offers it: signs the browser in as the application's demo persona. */
  signInSandboxDemo(...args: unknown[]): Promise<SessionStatus> {
    if (args.length) {
      checkNoCredential(args, 'signInSandboxDemo()');
      fail('signInSandboxDemo() takes no argument');
    }
    return this.call('POST', this.path('signInSandboxDemo'), { json: {} });
  }

  /** Whether the browser's cookie has a member session behind it. */
  session(): Promise<SessionStatus> {
    return this.call('GET', this.path('session'));
  }

  /** Ends this sign-in; `{ everywhere: true }` every sign-in of the member in the application. */
  signOut(o: { everywhere?: boolean } = {}): Promise<{ signed_out: true; revoked_sessions: number | null }> {
    checkNoCredential(o, 'signOut()');
    for (const k of Object.keys(o)) if (k !== 'everywhere') fail(`signOut() takes { everywhere }, not ${JSON.stringify(k)}`);
    return this.call('POST', this.path('signOut'), { json: { everywhere: o.everywhere === true } });
  }

  // ---- Enrolment, profile and avatar ---------------------------------------------------------------

  enrolment(): Promise<Enrolment> {
    return this.call('GET', this.path('enrolment'));
  }

  profile(): Promise<Profile> {
    return this.call('GET', this.path('profile'));
  }

  /** The member's avatar, or null when none is set. */
  async avatar(): Promise<Avatar | null> {
    try {
      return await this.call<Avatar>('GET', this.path('avatar'));
    } catch (err) {
      if (err instanceof BffBrowserError && err.status === 404 && err.apiCode === 'not_found') return null;
      throw err;
    }
  }

  /** Uploads a PNG, JPEG, GIF or WebP image (at most 2 MiB) as the member's avatar. */
  setAvatar(image: Blob | ArrayBuffer | Uint8Array, contentType: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp'): Promise<Avatar> {
    if (typeof image === 'string') checkNoCredential(image, 'setAvatar() image');
    if (!(image instanceof ArrayBuffer || ArrayBuffer.isView(image) || (typeof Blob !== 'undefined' && image instanceof Blob))) fail('setAvatar() takes the image bytes (a Blob, ArrayBuffer or Uint8Array)');
    if (!['image/png', 'image/jpeg', 'image/gif', 'image/webp'].includes(contentType)) fail('the avatar is a PNG, JPEG, GIF or WebP image');
    return this.call('PUT', this.path('avatar'), { bytes: image, contentType });
  }

  removeAvatar(): Promise<void> {
    return this.call('DELETE', this.path('avatar'));
  }

  // ---- Balances and history ------------------------------------------------------------------------

  balance(): Promise<Json> {
    return this.call('GET', this.path('balance'));
  }

  transactions(q?: PageQuery & { kind?: string }): Promise<Page> {
    return this.call('GET', this.path('transactions') + this.query(q, ['cursor', 'limit', 'kind']));
  }

  /** Sandbox bank: the savings and checking balances. */
  bankBalance(): Promise<Json> {
    return this.call('GET', this.path('bankBalance'));
  }

  bankTransactions(q?: PageQuery): Promise<Page> {
    return this.call('GET', this.path('bankTransactions') + this.query(q, ['cursor', 'limit']));
  }

  // ---- Consents, verification, data exports --------------------------------------------------------

  consents(): Promise<Json> {
    return this.call('GET', this.path('consents'));
  }

  /** Accepts the current version of every current policy, as `consents()` lists them. */
  acceptConsents(accepted: { policy: string; version: string }[]): Promise<Json> {
    checkNoCredential(accepted, 'acceptConsents()');
    if (!Array.isArray(accepted) || accepted.some((a) => a === null || typeof a !== 'object' || Object.keys(a).some((k) => k !== 'policy' && k !== 'version') || typeof a.policy !== 'string' || typeof a.version !== 'string')) {
      fail('acceptConsents() takes [{ policy, version }]');
    }
    return this.call('POST', this.path('consents'), { json: { accepted } });
  }

  verification(): Promise<Json> {
    return this.call('GET', this.path('verification'));
  }

  /**
   * Asks for a copy of the member's data. `idempotencyKey` (default a fresh one) makes a repeat after a
   * lost answer return the same export instead of asking again.
   */
  requestDataExport(o: { idempotencyKey?: string } = {}): Promise<DataExport> {
    checkNoCredential(o, 'requestDataExport()');
    for (const k of Object.keys(o)) if (k !== 'idempotencyKey') fail(`requestDataExport() takes { idempotencyKey }, not ${JSON.stringify(k)}`);
    const key = o.idempotencyKey ?? crypto.randomUUID();
    if (!/^[\x21-\x7e]{1,255}$/.test(key)) fail('idempotencyKey is 1 to 255 printable ASCII characters');
    return this.call('POST', this.path('dataExports'), { json: { format: 'json' } }, { 'idempotency-key': key });
  }

  dataExport(id: string): Promise<DataExport> {
    checkNoCredential(id, 'dataExport() id');
    return this.call('GET', this.path('dataExport', id));
  }

  // ---- Self wallets --------------------------------------------------------------------------------

  wallets(q?: PageQuery): Promise<Page> {
    return this.call('GET', this.path('wallets') + this.query(q, ['cursor', 'limit']));
  }

  walletReadiness(): Promise<Json> {
    return this.call('GET', this.path('walletReadiness'));
  }

  /** Links the hosted vault the customer created for the member, and derives its wallets on `chains`. */
  provisionWallet(o: { vaultId: string; chains: string[]; idempotencyKey?: string }): Promise<Json> {
    checkNoCredential(o, 'provisionWallet()');
    if (o === null || typeof o !== 'object' || typeof o.vaultId !== 'string' || !Array.isArray(o.chains) || o.chains.some((c) => typeof c !== 'string')) fail('provisionWallet() takes { vaultId, chains }');
    for (const k of Object.keys(o)) if (!['vaultId', 'chains', 'idempotencyKey'].includes(k)) fail(`provisionWallet() takes { vaultId, chains, idempotencyKey }, not ${JSON.stringify(k)}`);
    const key = o.idempotencyKey ?? crypto.randomUUID();
    return this.call('POST', this.path('walletProvision'), { json: { vault_id: o.vaultId, chains: o.chains } }, { 'idempotency-key': key });
  }

  // ---- Account Center ------------------------------------------------------------------------------

  /** Asks the BFF for an Account Center handoff and sends the browser there; it comes back to the BFF. */
  async openAccountCenter(): Promise<void> {
    const { url } = await this.call<{ url: string }>('POST', this.path('accountCenter'), { json: {} });
    if (typeof url !== 'string' || !/^https?:\/\//.test(url)) throw new BffBrowserError('bad_response', 'the BFF answered no Account Center address');
    this.navigate(url);
  }

  /** What the last Account Center visit changed (`changes`, `factors`), or null before any. */
  async accountCenterResult(): Promise<Json | null> {
    const r = await this.call<{ result: Json | null }>('GET', this.path('accountCenter'));
    return r.result;
  }
}
