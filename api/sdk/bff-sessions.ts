// The BFF helper's member sessions and staged sign-in (platform-api.md "BFF helper and browser rules",
// "Confidential exchange rules" 7, 9 and 10; docs/platform/bff.md). A browser holds an opaque session
// reference in the durable cookie; behind it, in the BFF store, sealed with AES-256-GCM, sit the member
// session id and the single-use refresh credential.
//
// - Refresh and sign-out of one reference run under the store's lock for it, so across every BFF
//   instance sharing the store one refresh spends the credential, and the rotated one is stored before
//   anyone is answered. A refresh the API calls replayed or invalid signs the reference out.
// - Sign-in is a transaction: `beginSignIn` (challenge, stable exchange_id, flow cookie), then
//   `completeSignIn`, which durably stages the proof before the first exchange call, retries with the
//   same exchange_id and proof after a lost answer (the API returns the committed session within 600 s),
//   lets an identical callback resume a staged attempt or find a completed one, and fails closed when
//   the outcome cannot be known before staging.
// - With `oidc` (bff-oidc.ts), beginSignIn also builds the provider's authorization URL (PKCE S256,
//   state, the challenge's nonce) and keeps its state and verifier in the sealed transaction record;
//   completeSignIn then takes the provider's callback URL, checks its state and redeems its code.
// - With `hosted` (a Hosted Auth application, docs/platform/hosted-auth.md), beginHostedSignIn asks the
//   API for its sign-in page (state, PKCE S256) and completeSignIn takes the page's callback URL, checks
//   its state, stages the one-time result and exchanges it with the verifier.
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { CustodyApiError } from './client.ts';
import { SdkError } from './sdk-error.ts';
import { BffError } from './bff-error.ts';
import { clearFlowCookie, clearSessionCookie, serializeFlowCookie, serializeSessionCookie, FLOW_COOKIE_MAX_AGE, FLOW_COOKIE_MAX_AGE_LIMIT } from './bff-cookies.ts';
import type { BffLockOptions, BffStore } from './bff-store.ts';
import type { MemberAuthClient, MemberContext, MemberSessionGrant } from './member-auth-client.ts';
import { BffOidcError, type BffOidcClient } from './bff-oidc.ts';

export interface BffSessionsOptions {
  client: MemberAuthClient;
  store: BffStore;
  /** 32 bytes (a mounted secret): every store record is sealed under it (rule 9's encrypted transaction store). */
  storeKey: Uint8Array;
  /** Milliseconds since the epoch; the API's expiry times are compared with it. */
  now?: () => number;
  lock?: Partial<BffLockOptions>;
  /** Life of a started or staged sign-in transaction, seconds (default 600, the flow cookie's). */
  transactionTtlSec?: number;
  /** How long a completed transaction answers an identical callback, seconds (default 600, the API's recovery window). */
  completedTtlSec?: number;
  /** Exchange calls per completeSignIn when answers are lost (default 3), and the pause between them. */
  exchangeAttempts?: number;
  retryDelayMs?: number;
  /** A session this close to its expiry is refreshed before use, seconds (default 30). */
  refreshSkewSec?: number;
  /**
   * The BFF's client at its OpenID provider (`await BffOidcClient.discover(...)`): beginSignIn then
   * returns the authorization URL, and completeSignIn takes the callback URL (`{ callbackUrl }`).
   */
  oidc?: BffOidcClient;
  /**
   * A Hosted Auth application (the service's own sign-in page): `redirectUri` is the application's
   * `result_callback_url`, exactly. beginHostedSignIn then returns the page's URL, and completeSignIn
   * takes the callback URL the page redirected the browser to (`{ callbackUrl }`).
   */
  hosted?: { redirectUri: string };
}

/** What a BFF route may use of a member session: its id goes only to the API, as X-Member-Session-Id. */
export interface ActiveSession {
  sessionId: string;
  memberId: string;
  applicationId: string;
  expiresAt: string;
}

export interface BeginSignInResult {
  transactionId: string;
  /** Send as the `nonce` parameter of the OpenID authentication request (already in `authorizationUrl`). */
  nonce: string;
  /** With `oidc` configured: where to redirect the browser (code flow, PKCE S256, state and nonce). */
  authorizationUrl?: string;
  /** Set-Cookie of the flow cookie. */
  flowCookie: string;
}

/**
 * An ID token already redeemed; the callback's key (its code and state) and how to redeem it once; or,
 * with `oidc` configured, the URL the provider redirected the browser to (its query is what counts).
 */
export type SignInCallback = string | { callbackKey: string; redeem: () => Promise<string> } | { callbackUrl: string | URL };

export interface BeginHostedSignInResult {
  transactionId: string;
  /** The service's sign-in page for this transaction: redirect the browser there (303). */
  authorizationUrl: string;
  /** Set-Cookie of the flow cookie. */
  flowCookie: string;
}

export interface CompleteSignInResult {
  reference: string;
  memberId: string;
  /** Set-Cookie headers: the durable session cookie, and the flow cookie's removal. */
  sessionCookie: string;
  clearFlowCookie: string;
  /**
   * `none`: a first answer; `api`: the API returned the committed session again (a lost answer);
   * `transaction`: a completed transaction answered an identical callback without calling the API.
   */
  recovered: 'none' | 'api' | 'transaction';
}

interface SessionRecord {
  v: 1;
  kind: 'session';
  session_id: string;
  refresh_credential: string;
  expires_at: string;
  refresh_expires_at: string;
  member_id: string;
  application_id: string;
}

/** The provider's authorization request of a transaction begun with `oidc`: its state and PKCE verifier. */
interface OidcTx { state: string; code_verifier: string }
interface StartedTx { v: 1; kind: 'tx'; state: 'started'; exchange_id: string; nonce: string; created_at: string; oidc?: OidcTx }
interface StagedTx { v: 1; kind: 'tx'; state: 'staged'; exchange_id: string; nonce: string; created_at: string; callback_sha256: string; id_token: string; reference: string }
interface CompletedTx { v: 1; kind: 'tx'; state: 'completed'; exchange_id?: string; callback_sha256: string; reference: string; member_id: string }
/** A Hosted Auth sign-in: the state and PKCE verifier of the page's authorization, then its staged result. */
interface HostedStartedTx { v: 1; kind: 'tx'; state: 'started'; mode: 'hosted'; created_at: string; hosted_state: string; code_verifier: string }
interface HostedStagedTx { v: 1; kind: 'tx'; state: 'staged'; mode: 'hosted'; created_at: string; callback_sha256: string; code: string; code_verifier: string; reference: string }
type TxRecord = StartedTx | StagedTx | CompletedTx | HostedStartedTx | HostedStagedTx;
const HOSTED_RESULT = /^hrc_[A-Za-z0-9_-]{43}$/;

const DEFAULT_LOCK: BffLockOptions = { leaseMs: 60_000, waitMs: 15_000 };
// Answers after which the API did decide: the refresh credential or the session will never work again.
const SIGNED_OUT = new Set(['refresh_replayed', 'refresh_invalid', 'member_session_invalid', 'member_binding_inactive']);

const b64u = (b: Uint8Array) => Buffer.from(b).toString('base64url');
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();
const sha256hex = (s: string) => sha256(s).toString('hex');
/** Equality of two secrets without an early exit: their digests are compared in constant time. */
const sameSecret = (a: string, b: string) => timingSafeEqual(sha256(a), sha256(b));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The `nonce` claim of a compact JWT, read without verifying it: the API verifies; this only binds the callback to its transaction. */
function nonceOf(idToken: string): string | undefined {
  const part = idToken.split('.')[1];
  if (!part) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as { nonce?: unknown };
    return typeof claims.nonce === 'string' ? claims.nonce : undefined;
  } catch {
    return undefined;
  }
}

/** The query of the provider's callback; a path with its query (`req.url`) is taken as it is. */
function callbackParams(u: string | URL): URLSearchParams {
  if (typeof u !== 'string') return u.searchParams;
  try {
    return new URL(u, 'http://callback.invalid').searchParams;
  } catch {
    throw new BffError('transaction_conflict', 'the callback URL does not parse: nothing redeemed');
  }
}

/** No answer, or an answer that does not say what the API did: the exchange may have been committed. */
function ambiguous(err: unknown): boolean {
  if (err instanceof SdkError) return err.code === 'network' || err.code === 'bad_response';
  return err instanceof CustodyApiError && err.status >= 500;
}

export class BffSessions {
  private readonly now: () => number;
  private readonly lock: BffLockOptions;
  private readonly txTtlMs: number;
  private readonly completedTtlMs: number;
  private readonly attempts: number;
  private readonly retryDelayMs: number;
  private readonly skewMs: number;

  constructor(private readonly o: BffSessionsOptions) {
    if (o.storeKey.length !== 32) throw new SdkError('invalid_config', 'storeKey must be 32 bytes (AES-256-GCM)');
    this.now = o.now ?? Date.now;
    this.lock = { ...DEFAULT_LOCK, ...o.lock };
    this.txTtlMs = (o.transactionTtlSec ?? FLOW_COOKIE_MAX_AGE) * 1000;
    this.completedTtlMs = (o.completedTtlSec ?? 600) * 1000;
    this.attempts = Math.max(1, o.exchangeAttempts ?? 3);
    this.retryDelayMs = o.retryDelayMs ?? 200;
    this.skewMs = (o.refreshSkewSec ?? 30) * 1000;
    if (o.hosted) {
      if (o.oidc) throw new SdkError('invalid_config', 'one BffSessions signs in with one kind of application: `oidc` (BYO OIDC) or `hosted` (Hosted Auth), not both');
      let u: URL | undefined;
      try { u = new URL(o.hosted.redirectUri); } catch { u = undefined; }
      if (!u || u.hash || !/^https?:$/.test(u.protocol)) throw new SdkError('invalid_config', 'hosted.redirectUri must be the application\'s result_callback_url: an absolute http(s) URL without a fragment');
    }
    const txTtl = this.txTtlMs / 1000;
    if (!Number.isInteger(txTtl) || txTtl < 60 || txTtl > FLOW_COOKIE_MAX_AGE_LIMIT) throw new SdkError('invalid_config', `transactionTtlSec must be 60 to ${FLOW_COOKIE_MAX_AGE_LIMIT} (the flow cookie's life)`);
    if (!(this.completedTtlMs > 0 && this.completedTtlMs <= 3_600_000)) throw new SdkError('invalid_config', 'completedTtlSec must be 1 to 3600: a completed transaction is kept for a bounded time');
    // A lease that ran out while its holder is still at the API would let a second refresh spend the
    // same credential (a replay: the API revokes the sign-in). It must outlast the calls made under it.
    const worst = o.client.timeoutMs * this.attempts + this.retryDelayMs * this.attempts * this.attempts + (o.oidc?.timeoutMs ?? 0);
    if (this.lock.leaseMs <= worst) throw new SdkError('invalid_config', `lock.leaseMs (${this.lock.leaseMs}) must exceed the calls made under the lock (${worst} ms: timeoutMs × exchangeAttempts plus the pauses${o.oidc ? ', plus the provider\'s code redemption' : ''})`);
  }

  // Records are sealed with the store key as associated data: one copied to another reference does not open.
  private seal(key: string, record: SessionRecord | TxRecord): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.o.storeKey, iv);
    c.setAAD(Buffer.from(key, 'utf8'));
    const ct = Buffer.concat([c.update(JSON.stringify(record), 'utf8'), c.final()]);
    return `v1.${b64u(iv)}.${b64u(ct)}.${b64u(c.getAuthTag())}`;
  }

  private open<T extends SessionRecord | TxRecord>(key: string, blob: string | undefined): T | undefined {
    if (blob === undefined) return undefined;
    const [v, iv, ct, tag] = blob.split('.');
    try {
      if (v !== 'v1' || !iv || ct === undefined || !tag) throw new Error('format');
      const d = createDecipheriv('aes-256-gcm', this.o.storeKey, Buffer.from(iv, 'base64url'));
      d.setAAD(Buffer.from(key, 'utf8'));
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      return JSON.parse(Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8')) as T;
    } catch (err) {
      throw new BffError('store_corrupt', 'a BFF store record does not open under the store key', { cause: err });
    }
  }

  private static sessionKey = (ref: string) => `bff:session:${ref}`;
  private static txKey = (id: string) => `bff:tx:${id}`;

  private async readSession(ref: string): Promise<SessionRecord | undefined> {
    const key = BffSessions.sessionKey(ref);
    return this.open<SessionRecord>(key, await this.o.store.get(key));
  }

  private async writeSession(ref: string, g: MemberSessionGrant): Promise<SessionRecord> {
    const rec: SessionRecord = {
      v: 1, kind: 'session', session_id: g.session_id, refresh_credential: g.refresh_credential, expires_at: g.expires_at,
      refresh_expires_at: g.refresh_expires_at, member_id: g.member.id, application_id: g.application_id,
    };
    const key = BffSessions.sessionKey(ref);
    // Kept as long as its refresh credential can be used: past that the member signs in again anyway.
    await this.o.store.set(key, this.seal(key, rec), Math.max(1000, Date.parse(g.refresh_expires_at) - this.now()));
    return rec;
  }

  private async readTx(id: string): Promise<TxRecord | undefined> {
    const key = BffSessions.txKey(id);
    return this.open<TxRecord>(key, await this.o.store.get(key));
  }

  private async writeTx(id: string, tx: TxRecord, ttlMs: number): Promise<void> {
    const key = BffSessions.txKey(id);
    await this.o.store.set(key, this.seal(key, tx), ttlMs);
  }

  private static view(rec: SessionRecord): ActiveSession {
    return { sessionId: rec.session_id, memberId: rec.member_id, applicationId: rec.application_id, expiresAt: rec.expires_at };
  }

  private signedOut(why: string): BffError {
    return new BffError('signed_out', `no member session behind this reference: ${why}; sign in again`);
  }

  // ---- Sign-in -------------------------------------------------------------------------------------

  /** Asks the API for a challenge and opens a transaction with a stable exchange_id. */
  async beginSignIn(): Promise<BeginSignInResult> {
    const challenge = await this.o.client.createChallenge();
    const transactionId = `bft_${b64u(randomBytes(32))}`;
    const request = this.o.oidc ? await this.o.oidc.authorizationRequest(challenge.nonce) : undefined;
    const tx: StartedTx = {
      v: 1, kind: 'tx', state: 'started', exchange_id: `bffx-${b64u(randomBytes(24))}`, nonce: challenge.nonce, created_at: new Date(this.now()).toISOString(),
      ...(request ? { oidc: { state: request.state, code_verifier: request.codeVerifier } } : {}),
    };
    const key = BffSessions.txKey(transactionId);
    if (!(await this.o.store.setIfAbsent(key, this.seal(key, tx), this.txTtlMs))) throw new SdkError('internal', 'a fresh random transaction id was already in the store');
    return {
      transactionId, nonce: challenge.nonce, flowCookie: serializeFlowCookie(transactionId, { maxAge: Math.ceil(this.txTtlMs / 1000) }),
      ...(request ? { authorizationUrl: request.url } : {}),
    };
  }

  /**
   * Hosted Auth: asks the API for its sign-in page (a fresh state and PKCE S256 pair, kept in the sealed
   * transaction record, never in a cookie) and opens a transaction; redirect the browser to
   * `authorizationUrl` with the flow cookie set. The page sends it back to `hosted.redirectUri`.
   */
  async beginHostedSignIn(): Promise<BeginHostedSignInResult> {
    const hosted = this.o.hosted;
    if (!hosted) throw new SdkError('invalid_config', 'beginHostedSignIn needs the BffSessions option `hosted` (the application\'s result_callback_url)');
    const state = b64u(randomBytes(32));
    const codeVerifier = b64u(randomBytes(32));
    const codeChallenge = createHash('sha256').update(codeVerifier, 'ascii').digest('base64url');
    const authorization = await this.o.client.beginHostedAuthorization({ redirectUri: hosted.redirectUri, state, codeChallenge });
    const transactionId = `bft_${b64u(randomBytes(32))}`;
    const tx: HostedStartedTx = { v: 1, kind: 'tx', state: 'started', mode: 'hosted', created_at: new Date(this.now()).toISOString(), hosted_state: state, code_verifier: codeVerifier };
    const key = BffSessions.txKey(transactionId);
    if (!(await this.o.store.setIfAbsent(key, this.seal(key, tx), this.txTtlMs))) throw new SdkError('internal', 'a fresh random transaction id was already in the store');
    return { transactionId, authorizationUrl: authorization.authorization_url, flowCookie: serializeFlowCookie(transactionId, { maxAge: Math.ceil(this.txTtlMs / 1000) }) };
  }

  /**
   * Completes the transaction the flow cookie names with the provider's callback. One transaction's
   * callbacks run one at a time (the store lock); a repeat of the same callback resumes or finds the
   * first one's result.
   */
  async completeSignIn(transactionId: string, callback: SignInCallback): Promise<CompleteSignInResult> {
    return this.o.store.withLock(`bff-tx:${transactionId}`, this.lock, async () => {
      const tx = await this.readTx(transactionId);
      if (!tx) throw new BffError('transaction_unknown', 'this sign-in transaction is unknown or expired: start a fresh one');
      const callbackKey = BffSessions.callbackKey(callback);
      if (tx.state === 'completed') {
        if (!timingSafeEqual(sha256(callbackKey), Buffer.from(tx.callback_sha256, 'hex'))) throw new BffError('transaction_conflict', 'this sign-in transaction was completed with another callback');
        if (!(await this.readSession(tx.reference))) throw this.signedOut('the session this sign-in created has ended');
        return this.completed(tx.reference, tx.member_id, 'transaction');
      }
      if (tx.state === 'staged') {
        if (!timingSafeEqual(sha256(callbackKey), Buffer.from(tx.callback_sha256, 'hex'))) throw new BffError('transaction_conflict', 'this sign-in transaction is staged with another callback');
        return 'mode' in tx ? this.exchangeHostedStaged(transactionId, tx) : this.exchangeStaged(transactionId, tx);
      }
      if ('mode' in tx) return this.stageHosted(transactionId, tx, callback, callbackKey);
      const idToken = await this.redeem(transactionId, tx, callback);
      const nonce = nonceOf(idToken);
      if (nonce === undefined || !sameSecret(nonce, tx.nonce)) {
        await this.o.store.delete(BffSessions.txKey(transactionId));
        throw new BffError('transaction_conflict', 'the ID token does not answer this transaction\'s challenge (nonce): start a fresh sign-in');
      }
      const staged: StagedTx = { ...tx, state: 'staged', callback_sha256: sha256hex(callbackKey), id_token: idToken, reference: `bfr_${b64u(randomBytes(32))}` };
      await this.stage(transactionId, staged);
      return this.exchangeStaged(transactionId, staged);
    });
  }

  /**
   * Writes the staged record before any exchange. Whether a failed write reached the store is unknown:
   * an exchange now could commit a session that an identical callback would not find again. Fail closed.
   */
  private async stage(transactionId: string, staged: StagedTx | HostedStagedTx): Promise<void> {
    try {
      await this.writeTx(transactionId, staged, this.txTtlMs);
    } catch (err) {
      await this.o.store.delete(BffSessions.txKey(transactionId)).catch(() => undefined);
      throw new BffError('sign_in_failed', 'the sign-in could not be staged durably; start a fresh transaction', { cause: err });
    }
  }

  /**
   * The provider's code redemption, before anything is staged. Its answer lost, the code may or may not
   * be spent at the provider and a second redemption would be refused or revoke the tokens: fail closed.
   */
  private async redeem(transactionId: string, tx: StartedTx, callback: SignInCallback): Promise<string> {
    if (typeof callback === 'string') return callback;
    if ('callbackUrl' in callback) return this.redeemAtProvider(transactionId, tx, callbackParams(callback.callbackUrl));
    try {
      return await callback.redeem();
    } catch (err) {
      await this.o.store.delete(BffSessions.txKey(transactionId));
      throw new BffError('sign_in_failed', 'the provider exchange failed before the sign-in was staged; the transaction is closed: start a fresh one', { cause: err });
    }
  }

  /** What identifies a callback: the ID token, the caller's key, or the provider callback's code and state. */
  private static callbackKey(callback: SignInCallback): string {
    if (typeof callback === 'string') return callback;
    if ('callbackKey' in callback) return callback.callbackKey;
    const q = callbackParams(callback.callbackUrl);
    return `${q.get('code') ?? ''}\n${q.get('state') ?? ''}`;
  }

  /**
   * The provider's code redemption through `oidc`. A callback whose state is not the transaction's is
   * refused before anything is redeemed, and the transaction stays open for the genuine callback (a
   * forged one cannot close another's sign-in). Past that, every failure closes it: a refused code is
   * spent or not this transaction's (PKCE), an answer that fails a check or answers another nonce is
   * not to be exchanged, and no answer at all is the ambiguity `redeem()` fails closed on.
   */
  private async redeemAtProvider(transactionId: string, tx: StartedTx, params: URLSearchParams): Promise<string> {
    const oidc = this.o.oidc;
    if (!oidc || !tx.oidc) throw new BffError('transaction_conflict', 'this sign-in transaction was not begun with the provider\'s authorization URL (BffSessions option `oidc`)');
    const state = params.get('state');
    if (state === null || !sameSecret(state, tx.oidc.state)) throw new BffError('transaction_conflict', 'the callback\'s state is not this transaction\'s: refused, nothing redeemed');
    const close = () => this.o.store.delete(BffSessions.txKey(transactionId));
    const error = params.get('error');
    if (error !== null) {
      await close();
      throw new BffError('sign_in_failed', `the provider answered the authorization request with ${/^[\x20-\x7e]{1,64}$/.test(error) ? error : 'an error'}; start a fresh sign-in`);
    }
    try {
      return await oidc.redeem(params, { state: tx.oidc.state, nonce: tx.nonce, codeVerifier: tx.oidc.code_verifier });
    } catch (err) {
      await close();
      if (err instanceof BffOidcError && err.kind === 'mismatch') throw new BffError('transaction_conflict', 'the provider\'s ID token does not answer this transaction\'s challenge (nonce): start a fresh sign-in', { cause: err });
      throw new BffError('sign_in_failed', `the provider's code redemption failed before the sign-in was staged; the transaction is closed: start a fresh one (${(err as Error).message})`, { cause: err });
    }
  }

  /**
   * Hosted Auth: the page's callback. A state that is not the transaction's is refused and the
   * transaction stays open for the genuine callback; a result of the wrong shape likewise. Then the
   * result is staged durably (with the reference to be) before the exchange, as a BYO proof is.
   */
  private async stageHosted(transactionId: string, tx: HostedStartedTx, callback: SignInCallback, callbackKey: string): Promise<CompleteSignInResult> {
    if (typeof callback === 'string' || !('callbackUrl' in callback)) throw new BffError('transaction_conflict', 'a Hosted Auth sign-in completes with the callback URL the page redirected to (`{ callbackUrl }`)');
    const params = callbackParams(callback.callbackUrl);
    const state = params.get('state');
    if (state === null || !sameSecret(state, tx.hosted_state)) throw new BffError('transaction_conflict', 'the callback\'s state is not this transaction\'s: refused, nothing exchanged');
    const code = params.get('code');
    if (code === null || !HOSTED_RESULT.test(code)) throw new BffError('transaction_conflict', 'the callback carries no Hosted Auth result (code=hrc_…): refused, nothing exchanged');
    const staged: HostedStagedTx = { v: 1, kind: 'tx', state: 'staged', mode: 'hosted', created_at: tx.created_at, callback_sha256: sha256hex(callbackKey), code, code_verifier: tx.code_verifier, reference: `bfr_${b64u(randomBytes(32))}` };
    await this.stage(transactionId, staged);
    return this.exchangeHostedStaged(transactionId, staged);
  }

  /**
   * The exchange of a staged Hosted Auth result. The API keeps no answer to repeat: a result presented
   * again after a lost answer is `409 hosted_result_replayed`, and the API revokes the session the first
   * presentation made (nobody holds it). So a lost answer is retried (the first may never have arrived),
   * and a replay answer closes the transaction: the member signs in again.
   */
  private async exchangeHostedStaged(transactionId: string, tx: HostedStagedTx): Promise<CompleteSignInResult> {
    const redirectUri = this.o.hosted?.redirectUri;
    if (redirectUri === undefined) throw new BffError('transaction_conflict', 'this sign-in transaction is a Hosted Auth one; the BffSessions option `hosted` is not set');
    const call = async () => ({ grant: await this.o.client.exchangeHostedResult({ code: tx.code, codeVerifier: tx.code_verifier, redirectUri }), recovered: false });
    return this.exchangeWithRetries(transactionId, tx, call, (err) => (err.code === 'hosted_result_replayed'
      ? 'an earlier attempt\'s answer was lost and the API has revoked the session it made'
      : `the exchange was refused (${err.code})`));
  }

  /**
   * Hosted Auth in a sandbox workspace: a session of the application's demo persona
   * (POST /v1/member-auth/hosted/authorizations/sandbox-demo), under a fresh reference.
   */
  async signInSandboxDemo(): Promise<CompleteSignInResult> {
    const grant = await this.o.client.hostedSandboxDemo();
    const reference = `bfr_${b64u(randomBytes(32))}`;
    await this.writeSession(reference, grant);
    return this.completed(reference, grant.member.id, 'none');
  }

  private completed(reference: string, memberId: string, recovered: CompleteSignInResult['recovered']): CompleteSignInResult {
    return { reference, memberId, sessionCookie: serializeSessionCookie(reference), clearFlowCookie: clearFlowCookie(), recovered };
  }

  /** The exchange of a staged attempt: same exchange_id, same proof, every time (rule 9). */
  private async exchangeStaged(transactionId: string, tx: StagedTx): Promise<CompleteSignInResult> {
    return this.exchangeWithRetries(transactionId, tx, () => this.o.client.exchange(tx.exchange_id, tx.id_token), (err) => `the exchange was refused (${err.code})`);
  }

  /**
   * One staged exchange, the same request every time: a lost answer is retried (`exchangeAttempts`),
   * then `exchange_pending` with the transaction left staged, so the same callback resumes it. A decided
   * refusal (for BYO OIDC also exchange_id_reused / proof_replayed after a lost answer; for Hosted Auth
   * hosted_result_replayed) means the committed session, if any, cannot be recovered from here: the
   * transaction is closed with `sign_in_failed`, `refusal` saying why.
   */
  private async exchangeWithRetries(transactionId: string, tx: { callback_sha256: string; reference: string; exchange_id?: string }, call: () => Promise<{ grant: MemberSessionGrant; recovered: boolean }>, refusal: (err: CustodyApiError) => string): Promise<CompleteSignInResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        const { grant, recovered } = await call();
        await this.writeSession(tx.reference, grant);
        const done: CompletedTx = { v: 1, kind: 'tx', state: 'completed', ...(tx.exchange_id ? { exchange_id: tx.exchange_id } : {}), callback_sha256: tx.callback_sha256, reference: tx.reference, member_id: grant.member.id };
        await this.writeTx(transactionId, done, this.completedTtlMs);
        return this.completed(tx.reference, grant.member.id, recovered ? 'api' : 'none');
      } catch (err) {
        if (ambiguous(err)) {
          if (attempt < this.attempts) {
            await sleep(this.retryDelayMs * attempt);
            continue;
          }
          throw new BffError('exchange_pending', 'the exchange got no answer; repeat the same callback to resume it', { cause: err });
        }
        if (err instanceof CustodyApiError) {
          await this.o.store.delete(BffSessions.txKey(transactionId));
          throw new BffError('sign_in_failed', `${refusal(err)}; start a fresh sign-in`, { cause: err });
        }
        throw err;
      }
    }
  }

  // ---- Sessions ------------------------------------------------------------------------------------

  /** The reference's member session, refreshed first when it has expired (or is about to). */
  async session(reference: string): Promise<ActiveSession> {
    const rec = await this.readSession(reference);
    if (!rec) throw this.signedOut('unknown or signed out');
    if (Date.parse(rec.expires_at) - this.skewMs > this.now()) return BffSessions.view(rec);
    return this.refreshAfter(reference, rec.session_id);
  }

  /** GET /v1/member-auth/session for the reference; a session the API no longer takes is refreshed once. */
  async context(reference: string): Promise<MemberContext> {
    const s = await this.session(reference);
    try {
      return await this.o.client.getSession(s.sessionId);
    } catch (err) {
      if (!(err instanceof CustodyApiError && SIGNED_OUT.has(err.code))) throw err;
      if (err.code !== 'member_session_invalid') {
        await this.o.store.delete(BffSessions.sessionKey(reference));
        throw this.signedOut(err.code);
      }
    }
    const fresh = await this.refreshAfter(reference, s.sessionId);
    try {
      return await this.o.client.getSession(fresh.sessionId);
    } catch (err) {
      if (err instanceof CustodyApiError && SIGNED_OUT.has(err.code)) {
        await this.o.store.delete(BffSessions.sessionKey(reference));
        throw this.signedOut(err.code);
      }
      throw err;
    }
  }

  /**
   * Replaces the session `stale` with a refreshed one, under the reference's lock. A caller that waited
   * for the lock while another refreshed finds the new session and spends nothing: one refresh per
   * expiry, whatever the number of concurrent requests and instances.
   */
  async refreshAfter(reference: string, stale: string): Promise<ActiveSession> {
    return this.o.store.withLock(`bff-session:${reference}`, this.lock, async () => {
      const rec = await this.readSession(reference);
      if (!rec) throw this.signedOut('unknown or signed out');
      if (!sameSecret(rec.session_id, stale)) return BffSessions.view(rec);
      if (Date.parse(rec.refresh_expires_at) <= this.now()) {
        await this.o.store.delete(BffSessions.sessionKey(reference));
        throw this.signedOut('the refresh credential expired');
      }
      let grant: MemberSessionGrant;
      // One id for this refresh: a repeat after a lost answer gets the same session back (the API keeps it
      // 60 s), where a new refresh of a spent credential would revoke the sign-in.
      const refreshId = randomBytes(24).toString('base64url');
      try {
        grant = await this.o.client.refresh(rec.refresh_credential, refreshId).catch((err: unknown) => {
          if (err instanceof CustodyApiError) throw err;
          return this.o.client.refresh(rec.refresh_credential, refreshId);
        });
      } catch (err) {
        if (err instanceof CustodyApiError && SIGNED_OUT.has(err.code)) {
          // refresh_replayed: someone else spent this credential, and the API revoked the sign-in.
          await this.o.store.delete(BffSessions.sessionKey(reference));
          throw this.signedOut(err.code);
        }
        // No answer twice: the credential may be spent. The record stays; the next refresh either succeeds
        // or is told refresh_replayed and signs out.
        throw err;
      }
      // Stored before anyone is answered: the old credential is spent from this moment.
      return BffSessions.view(await this.writeSession(reference, grant));
    });
  }

  /**
   * Signs the reference out: the exact session's sign-in by default (rule 10), or every sign-in of the
   * member in the application. The record is removed whatever the API answers, and with it the only copy
   * of the refresh credential; `revoked_sessions` is null when the API's answer was lost (the session id
   * then lapses within its 900 s).
   */
  async signOut(reference: string, scope: 'session' | 'all' = 'session'): Promise<{ revoked_sessions: number | null; clearCookie: string }> {
    return this.o.store.withLock(`bff-session:${reference}`, this.lock, async () => {
      const rec = await this.readSession(reference);
      if (!rec) return { revoked_sessions: 0, clearCookie: clearSessionCookie() };
      try {
        const r = await this.o.client.signOut(rec.session_id, scope);
        return { revoked_sessions: r.revoked_sessions, clearCookie: clearSessionCookie() };
      } catch (err) {
        if (err instanceof CustodyApiError && SIGNED_OUT.has(err.code)) return { revoked_sessions: 0, clearCookie: clearSessionCookie() };
        if (err instanceof SdkError && err.code === 'network') return { revoked_sessions: null, clearCookie: clearSessionCookie() };
        throw err;
      } finally {
        await this.o.store.delete(BffSessions.sessionKey(reference));
      }
    });
  }
}
