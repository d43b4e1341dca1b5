// The five BYO OIDC member-auth operations (platform-api.md "Member-auth operations (server-only)",
// "Confidential exchange rules" 1, 2, 7, 9 and 10; docs/platform/member-auth.md "Member sessions") as a
// customer BFF calls them: workspace bearer key and X-SVC-Publishable-Key on every call,
// X-Member-Session-Id on the session calls, and for a production key (svc_live_) the RFC 9421
// signature of the POSTs (docs/request-signing.md). Server-side only: it holds the bearer key, and what
// it returns (session ids, refresh credentials) must stay in the BFF store, never in a browser.
import { Transport } from './transport.ts';
import type { AnswerHeaders } from './http-attempt.ts';
import { signedHeaders, type ApiCredentials } from './request-signer.ts';
import { SdkError } from './sdk-error.ts';
import { BffError } from './bff-error.ts';
import { passkeyAssertionBody, type AuthenticationResponseJson } from './member-credential.ts';
import type { MemberContext, MemberSessionGrant } from '../../core/api-schemas/member-sessions.ts';

export type { MemberContext, MemberSessionGrant };

export interface MemberAuthClientOptions {
  /** Origin of the API, e.g. https://api.example.com (paths are under /v1). */
  baseUrl: string;
  /** The workspace bearer key (svc_test_… or svc_live_…); a `member_auth`-role key is enough. */
  apiKey: string;
  /** The application's publishable key (pk_test_… or pk_live_…). */
  publishableKey: string;
  /** The Ed25519 request-signing key of the bearer key; required for a production (svc_live_) key. */
  signing?: ApiCredentials;
  /** Per call; a call that runs out is a `network` error, whose outcome is unknown (default 10 000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
  /** The longest answer body read, in bytes (default 32 MiB); a longer answer is a `bad_response` error. */
  maxResponseBytes?: number;
}

/** What the exchange and the refresh return: keep all of it server-side. */

export interface MemberChallenge { nonce: string; expires_at: string; application_id: string }


export interface ExchangeResult {
  grant: MemberSessionGrant;
  /** The API answered a repeat of an exchange it had committed (header Member-Exchange-Recovered). */
  recovered: boolean;
}

const PATHS = {
  challenges: '/v1/member-auth/proof/challenges',
  exchange: '/v1/member-auth/proof/exchange',
  session: '/v1/member-auth/session',
  refresh: '/v1/member-auth/refresh',
  signOut: '/v1/member-auth/sign-out',
  memberActions: '/v1/member-actions',
  completeMemberAction: '/v1/member-actions/external/complete',
  completeWithPasskey: '/v1/member-actions/passkey/complete',
  hostedBegin: '/v1/member-auth/hosted/authorizations',
  hostedExchange: '/v1/member-auth/hosted/authorizations/exchange',
  hostedDemo: '/v1/member-auth/hosted/authorizations/sandbox-demo',
} as const;

/** POST /v1/member-auth/hosted/authorizations: where to send the browser, for 10 minutes. */
export interface HostedAuthorization {
  id: string;
  authorization_url: string;
  expires_at: string;
  application_id: string;
}

/** POST /v1/member-actions: the action, and what the member's fresh OpenID authentication request must carry. */
export interface MemberActionStart {
  id: string;
  status: 'pending_proof';
  kind: 'transaction.sign' | 'transaction.sign_batch';
  wallet_id: string;
  /** The (first) intent's SHA-256; a batch lists all of them in `intents_sha256`, in the nonce's order. */
  intent_sha256: string;
  intents_sha256?: string[];
  purpose?: { type: 'payment' | 'escrow'; id: string };
  expires_at: string;
  /**
   * BYO OIDC: send nonce, max_age and prompt (and acr_values) as authentication request parameters.
   * A passkey approval (either application): the nonce is the WebAuthn challenge, base64url.
   */
  proof: { nonce: string; max_age?: number; prompt?: 'login'; acr_values?: string; required_amr?: string[] };
}

/**
 * A completed member action. `signing_session.id` goes to POST /v1/transactions as
 * `member_signing_session` (CustodyClient `memberSigningSession`), once; `signing_url` only locates its
 * status and carries no authority.
 */
export interface MemberActionCompletion {
  id: string;
  status: 'completed';
  signing_session: { id: string; signing_url: string; expires_at: string };
}

const API_KEY = /^svc_(test|live)_\S+$/;
const PUBLISHABLE_KEY = /^pk_(test|live)_[A-Za-z0-9_-]+$/;

/** Refuses to run where a browser's globals exist: the bearer key must never reach browser code (rule 11). */
function assertServerSide(): void {
  const g = globalThis as { window?: unknown; document?: unknown };
  if (typeof g.window !== 'undefined' && typeof g.document !== 'undefined') {
    throw new BffError('server_only', 'the member-auth client holds the workspace bearer key and runs only on the customer server (the BFF), never in a browser');
  }
}

export class MemberAuthClient {
  private readonly transport: Transport;
  private readonly base: string;
  /** How long one call may take: the BFF's store locks must outlast the calls made under them. */
  readonly timeoutMs: number;

  constructor(private readonly o: MemberAuthClientOptions) {
    assertServerSide();
    const key = API_KEY.exec(o.apiKey);
    if (!key) throw new SdkError('invalid_config', 'apiKey must be a workspace bearer key (svc_test_… or svc_live_…)');
    const pk = PUBLISHABLE_KEY.exec(o.publishableKey);
    if (!pk) throw new SdkError('invalid_config', 'publishableKey must be an application publishable key (pk_test_… or pk_live_…)');
    if (pk[1] !== key[1]) throw new SdkError('invalid_config', `a ${key[1]} bearer key with a ${pk[1]} publishable key: both must be of one environment`);
    // Production changes are refused without the signature (401 signature_required): say so at start.
    if (key[1] === 'live' && !o.signing) throw new SdkError('invalid_config', 'a production (svc_live_) key signs its POSTs: pass `signing` with the key id and its Ed25519 secret key');
    this.base = o.baseUrl.replace(/\/$/, '');
    this.timeoutMs = o.timeoutMs ?? 10_000;
    this.transport = new Transport({ baseUrl: this.base, timeoutMs: this.timeoutMs, retry: { attempts: 1 }, ...(o.fetch ? { fetch: o.fetch } : {}), ...(o.maxResponseBytes !== undefined ? { maxResponseBytes: o.maxResponseBytes } : {}) });
  }

  /**
   * One call. Throws CustodyApiError on an error answer, SdkError `network` when no answer arrived
   * (the request may or may not have been processed: the callers treat that as ambiguous) and
   * `bad_response` when a success answer is not JSON.
   */
  private async call<T>(method: 'GET' | 'POST', path: string, body: unknown, sessionId?: string): Promise<{ json: T; headers: AnswerHeaders }> {
    const url = this.base + path;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.o.apiKey}`,
      'x-svc-publishable-key': this.o.publishableKey,
      ...(sessionId !== undefined ? { 'x-member-session-id': sessionId } : {}),
      ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(method === 'POST' && this.o.signing ? signedHeaders(this.o.signing, method, url, payload) : {}),
    };
    // One attempt per call: BffSessions retries the exchange under its lock, and a refresh sent twice
    // spends its credential twice (the API then revokes the sign-in).
    const r = await this.transport.send<T>({ method, path, payload, headers: () => headers, replaySafe: false });
    return { json: r.json, headers: r.headers };
  }

  /** POST /v1/member-auth/proof/challenges: the nonce to send in the OpenID authentication request. */
  async createChallenge(): Promise<MemberChallenge> {
    return (await this.call<MemberChallenge>('POST', PATHS.challenges, {})).json;
  }

  /**
   * POST /v1/member-auth/proof/exchange. `exchangeId` is stable for one proof and reused on every retry
   * until the session is returned (rule 9): a repeat within 600 s of the commit returns the same session.
   */
  async exchange(exchangeId: string, idToken: string): Promise<ExchangeResult> {
    const r = await this.call<MemberSessionGrant>('POST', PATHS.exchange, { exchange_id: exchangeId, id_token: idToken });
    return { grant: r.json, recovered: r.headers.get('member-exchange-recovered') === 'true' };
  }

  /** GET /v1/member-auth/session: validates the exact session and returns the safe member context. */
  async getSession(sessionId: string): Promise<MemberContext> {
    return (await this.call<MemberContext>('GET', PATHS.session, undefined, sessionId)).json;
  }

  /**
   * POST /v1/member-auth/refresh: spends the single-use credential for a new session and credential. With
   * `refreshId` (16 to 128 of `A-Za-z0-9._~-`, new for each refresh), the same call repeated after a lost
   * answer within 60 s gets the same session back instead of revoking the sign-in.
   */
  async refresh(refreshCredential: string, refreshId?: string): Promise<MemberSessionGrant> {
    return (await this.call<MemberSessionGrant>('POST', PATHS.refresh, { refresh_credential: refreshCredential, ...(refreshId === undefined ? {} : { refresh_id: refreshId }) })).json;
  }

  /**
   * POST /v1/member-actions: freezes one transaction (its wallet and exact intent bytes, e.g.
   * CustodyClient.evmIntent) for the member of `sessionId` and returns the nonce its fresh proof must carry.
   */
  async beginMemberAction(sessionId: string, action: { walletId: string; intent: Uint8Array }): Promise<MemberActionStart> {
    const body = { kind: 'transaction.sign', wallet_id: action.walletId, intent: Buffer.from(action.intent).toString('base64') };
    return (await this.call<MemberActionStart>('POST', PATHS.memberActions, body, sessionId)).json;
  }

  /**
   * POST /v1/member-actions with kind transaction.sign_batch: up to 8 intents of one wallet (a payment's
   * transfers, in the order of its `next_action.intents`) approved by one fresh proof; `purpose` names the
   * payment or escrow whose owner checks them. The signing session then takes each intent once.
   */
  async beginBatchMemberAction(sessionId: string, action: { walletId: string; intents: Uint8Array[]; purpose?: { type: 'payment' | 'escrow'; id: string } }): Promise<MemberActionStart> {
    const body = { kind: 'transaction.sign_batch', wallet_id: action.walletId, intents: action.intents.map((i) => Buffer.from(i).toString('base64')), ...(action.purpose ? { purpose: action.purpose } : {}) };
    return (await this.call<MemberActionStart>('POST', PATHS.memberActions, body, sessionId)).json;
  }

  /** POST /v1/member-actions/external/complete: the provider's fresh ID token for the action's nonce, for a single-use signing session. */
  async completeMemberAction(sessionId: string, actionId: string, idToken: string): Promise<MemberActionCompletion> {
    return (await this.call<MemberActionCompletion>('POST', PATHS.completeMemberAction, { action_id: actionId, id_token: idToken }, sessionId)).json;
  }

  /**
   * POST /v1/member-actions/passkey/complete: the member's passkey answer to the action's nonce (the
   * browser's PublicKeyCredential.toJSON(), passkeyAssertionBody) and the member credential the customer
   * signed for that passkey (signMemberCredential), for a single-use signing session.
   */
  async completeMemberActionWithPasskey(sessionId: string, actionId: string, credential: string, assertion: AuthenticationResponseJson): Promise<MemberActionCompletion> {
    const body = { action_id: actionId, credential, assertion: passkeyAssertionBody(assertion) };
    return (await this.call<MemberActionCompletion>('POST', PATHS.completeWithPasskey, body, sessionId)).json;
  }

  /**
   * POST /v1/member-auth/hosted/authorizations (Hosted Auth, docs/platform/hosted-auth.md): begins the
   * service's sign-in page for a Hosted application. `redirectUri` must be the application's
   * `result_callback_url` exactly; `codeChallenge` is BASE64URL(SHA-256(verifier)) (S256 only).
   */
  async beginHostedAuthorization(a: { redirectUri: string; state: string; codeChallenge: string }): Promise<HostedAuthorization> {
    const body = { redirect_uri: a.redirectUri, state: a.state, code_challenge: a.codeChallenge, code_challenge_method: 'S256' };
    return (await this.call<HostedAuthorization>('POST', PATHS.hostedBegin, body)).json;
  }

  /**
   * POST /v1/member-auth/hosted/authorizations/exchange: the page's one-time result (`hrc_…`, 120 s) for a
   * member session, with the PKCE verifier and the same redirect URI. A result presented twice is
   * `409 hosted_result_replayed`, and the API revokes the session the first presentation made.
   */
  async exchangeHostedResult(r: { code: string; codeVerifier: string; redirectUri: string }): Promise<MemberSessionGrant> {
    return (await this.call<MemberSessionGrant>('POST', PATHS.hostedExchange, { code: r.code, code_verifier: r.codeVerifier, redirect_uri: r.redirectUri })).json;
  }

  /** POST /v1/member-auth/hosted/authorizations/sandbox-demo: a session of the application's demo persona (sandbox keys only). */
  async hostedSandboxDemo(): Promise<MemberSessionGrant> {
    return (await this.call<MemberSessionGrant>('POST', PATHS.hostedDemo, {})).json;
  }

  /** POST /v1/member-auth/sign-out: the exact session's sign-in by default (rule 10), or every one of the member. */
  async signOut(sessionId: string, scope: 'session' | 'all' = 'session'): Promise<{ revoked_sessions: number }> {
    return (await this.call<{ revoked_sessions: number }>('POST', PATHS.signOut, { scope }, sessionId)).json;
  }
}
