// The provider side of a BYO OIDC sign-in for the BFF helper (docs/platform/bff.md "The provider side"),
// on openid-client: discovery of the customer's own OpenID provider, the authorization URL of the code
// flow with PKCE (S256), a random `state` and the member-auth challenge's `nonce`, and the code redemption
// that checks the state, the nonce, the PKCE verifier, the issuer (also the RFC 9207 `iss` response
// parameter where the provider sends it) and the audience, and returns the ID token for the proof
// exchange. BffSessions keeps the state and the verifier in the sealed sign-in transaction record.
import * as oidc from 'openid-client';
import { SdkError } from './sdk-error.ts';

export interface BffOidcOptions {
  /** The provider's issuer identifier; its discovery document must name exactly this issuer. */
  issuer: string;
  clientId: string;
  /** The confidential client's secret (a mounted secret, never in browser code). */
  clientSecret: string;
  /** How the client authenticates at the token endpoint (default `client_secret_basic`). */
  tokenEndpointAuth?: 'client_secret_basic' | 'client_secret_post';
  /** The callback registered at the provider, exactly: the code is redeemed for it. */
  redirectUri: string;
  /** Default `openid`. */
  scope?: string;
  /** Sent as `max_age` (seconds); the ID token must then carry an `auth_time` within it. */
  maxAge?: number;
  /** Per provider request (discovery, token endpoint), seconds; default 10. */
  timeoutSec?: number;
  /** Allows an `http:` issuer: a local development provider only, never in production. */
  allowInsecureRequests?: boolean;
  /** For tests: the fetch used for the provider's endpoints. */
  fetch?: typeof fetch;
}

/** What BffSessions keeps for one authorization request, sealed in its transaction record. */
export interface BffOidcRequest {
  url: string;
  state: string;
  codeVerifier: string;
}

/**
 * Why a redemption failed. `refused`: the provider answered with an error (the code is spent, unknown,
 * or not this client's and verifier's); `mismatch`: the answer does not belong to this transaction (its
 * nonce); `invalid`: the answer failed a check (issuer, audience, signature, times) or was malformed;
 * `unreachable`: no answer, so whether the code was spent is unknown.
 */
export class BffOidcError extends Error {
  constructor(readonly kind: 'refused' | 'mismatch' | 'invalid' | 'unreachable', message: string) {
    super(message);
    this.name = 'BffOidcError';
  }
}

export class BffOidcClient {
  /** The per-request timeout, milliseconds: BffSessions counts it in the work done under its lock. */
  readonly timeoutMs: number;

  private constructor(private readonly config: oidc.Configuration, private readonly o: BffOidcOptions) {
    this.timeoutMs = (o.timeoutSec ?? 10) * 1000;
  }

  /** Reads the provider's discovery document (`<issuer>/.well-known/openid-configuration`). */
  static async discover(o: BffOidcOptions): Promise<BffOidcClient> {
    if (!o.clientId || !o.clientSecret) throw new SdkError('invalid_config', 'clientId and clientSecret are required: the BFF is a confidential client');
    let redirect: URL;
    try {
      redirect = new URL(o.redirectUri);
    } catch {
      throw new SdkError('invalid_config', 'redirectUri must be an absolute URL, the one registered at the provider');
    }
    if (redirect.search || redirect.hash) throw new SdkError('invalid_config', 'redirectUri must have no query or fragment');
    if (o.maxAge !== undefined && !(Number.isInteger(o.maxAge) && o.maxAge >= 0)) throw new SdkError('invalid_config', 'maxAge must be a whole number of seconds');
    const auth = o.tokenEndpointAuth === 'client_secret_post' ? oidc.ClientSecretPost(o.clientSecret) : oidc.ClientSecretBasic(o.clientSecret);
    try {
      const config = await oidc.discovery(new URL(o.issuer), o.clientId, { client_secret: o.clientSecret }, auth, {
        timeout: o.timeoutSec ?? 10,
        ...(o.allowInsecureRequests ? { execute: [oidc.allowInsecureRequests] } : {}),
        ...(o.fetch ? { [oidc.customFetch]: o.fetch as oidc.CustomFetch } : {}),
      });
      return new BffOidcClient(config, o);
    } catch (err) {
      throw new SdkError('invalid_config', `the provider's discovery failed: ${describe(err)}`, { cause: err });
    }
  }

  /** The issuer the discovery document confirmed. */
  get issuer(): string {
    return this.config.serverMetadata().issuer;
  }

  /** A fresh authorization request: a new state and PKCE verifier, and the challenge's nonce. */
  async authorizationRequest(nonce: string): Promise<BffOidcRequest> {
    const state = oidc.randomState();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(this.config, {
      response_type: 'code',
      redirect_uri: this.o.redirectUri,
      scope: this.o.scope ?? 'openid',
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      ...(this.o.maxAge !== undefined ? { max_age: String(this.o.maxAge) } : {}),
    });
    return { url: url.href, state, codeVerifier };
  }

  /**
   * Redeems the callback's code for the ID token. `params` are the callback's query parameters; they are
   * read against the configured redirect URI (so a BFF behind a proxy passes what it received).
   */
  async redeem(params: URLSearchParams, checks: { state: string; nonce: string; codeVerifier: string }): Promise<string> {
    const current = new URL(this.o.redirectUri);
    for (const [k, v] of params) current.searchParams.append(k, v);
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(this.config, current, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true,
        ...(this.o.maxAge !== undefined ? { maxAge: this.o.maxAge } : {}),
      });
    } catch (err) {
      throw classify(err);
    }
    if (!tokens.id_token) throw new BffOidcError('invalid', 'the token endpoint answered without an ID token');
    return tokens.id_token;
  }
}

/** A message naming the failure without carrying the provider's answer (tokens, claims) along. */
function describe(err: unknown): string {
  if (err instanceof oidc.ResponseBodyError || err instanceof oidc.AuthorizationResponseError) return `${err.error}${err.error_description ? ` (${err.error_description})` : ''}`;
  const e = err as { code?: unknown; message?: unknown };
  return `${typeof e.code === 'string' ? `${e.code}: ` : ''}${typeof e.message === 'string' ? e.message : 'unknown error'}`;
}

function classify(err: unknown): BffOidcError {
  if (err instanceof oidc.ResponseBodyError || err instanceof oidc.AuthorizationResponseError) return new BffOidcError('refused', `the provider refused: ${describe(err)}`);
  const code = (err as { code?: unknown }).code;
  if (code === 'OAUTH_JWT_CLAIM_COMPARISON_FAILED' && (err as { cause?: { cause?: { claim?: unknown } } }).cause?.cause?.claim === 'nonce') {
    return new BffOidcError('mismatch', 'the ID token answers another challenge (nonce)');
  }
  if (err instanceof oidc.ClientError || (err instanceof TypeError && code !== undefined)) return new BffOidcError('invalid', `the provider's answer failed a check: ${describe(err)}`);
  return new BffOidcError('unreachable', `no usable answer from the provider: ${describe(err)}`);
}
