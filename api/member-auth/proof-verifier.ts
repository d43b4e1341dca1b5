// Verification of a BYO OIDC provider proof, an ID token (OpenID Connect Core 1.0 section 3.1.3.7;
// platform-api.md "Confidential exchange rules" 4 and 11): its signature under the issuer's published
// JWKS, and its iss, aud (and azp), exp, iat, auth_time, nonce, acr and amr against the application's
// registered configuration, never against anything the caller says. The JWKS is fetched through the
// same SSRF-safe client as discovery (never jose's own fetch, which would ignore the destination policy)
// and cached per jwks_uri; an unknown `kid` refetches it once, so a provider's key rotation works.
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, errors as joseErrors, type JWK, type JWTPayload } from 'jose';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { OutboundHttp } from '../webhooks/outbound-http.ts';
import type { ByoOidcSettings } from './member-auth-records.ts';
import { LIFETIMES } from './member-session-records.ts';
import { getJson } from './oidc-discovery.ts';

/** Asymmetric algorithms only: `none` and the HMAC family (keyed with something public) are never accepted. */
export const PROOF_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

/** The largest ID token taken (compact JWS). */
export const MAX_PROOF_BYTES = 16 * 1024;

const JWKS_FRESH_MS = 5 * 60_000;
const JWKS_REFETCH_MIN_MS = 30_000;

/** The claims of a verified proof that the exchange uses. */
export interface VerifiedProof {
  issuer: string;
  subject: string;
  nonce: string;
  /** auth_time when present, else iat (seconds). */
  authenticatedAt: number;
  expiresAt: number;
  acr: string | null;
  amr: string[];
}

const refused = (why: string) => new CustodyError('proof_invalid', `the provider proof was refused: ${why}`);

type KeySet = ReturnType<typeof createLocalJWKSet>;

export class ProofVerifier {
  private readonly cache = new Map<string, { set: KeySet; at: number }>();
  constructor(private readonly http: OutboundHttp, private readonly clock: () => number) {}

  private async keys(jwksUri: string, force: boolean): Promise<KeySet> {
    const now = this.clock();
    const hit = this.cache.get(jwksUri);
    if (hit && now - hit.at < (force ? JWKS_REFETCH_MIN_MS : JWKS_FRESH_MS)) return hit.set;
    let jwks: Record<string, unknown>;
    try {
      jwks = await getJson(this.http, jwksUri, 'JWKS');
    } catch (err) {
      // A provider that cannot be reached makes the proof unverifiable now, not invalid.
      throw new CustodyError('oidc_discovery_failed', (err as Error).message, { cause: err });
    }
    const keys = Array.isArray(jwks.keys) ? (jwks.keys as JWK[]).filter((k) => typeof k === 'object' && k !== null && !('d' in k) && !('k' in k) && k.use !== 'enc') : [];
    const set = createLocalJWKSet({ keys });
    this.cache.set(jwksUri, { set, at: now });
    return set;
  }

  /** Verifies `token` for `byo`; throws proof_invalid naming the failed check (never the token's content). */
  async verify(token: string, byo: ByoOidcSettings): Promise<VerifiedProof> {
    if (token.length > MAX_PROOF_BYTES || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token)) throw refused('not a compact JWS');
    let header;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      throw refused('the header is not readable');
    }
    // An access token (RFC 9068 at+jwt) or a logout token is not an identity proof, even if signed by the issuer.
    if (header.typ !== undefined && header.typ.toUpperCase() !== 'JWT') throw refused(`typ ${JSON.stringify(header.typ).slice(0, 40)} is not an ID token`);
    const options = {
      issuer: byo.issuer,
      audience: byo.audience,
      algorithms: [...PROOF_ALGORITHMS],
      clockTolerance: LIFETIMES.clockTolerance,
      currentDate: new Date(this.clock()),
      requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat', 'nonce'],
    };
    let payload: JWTPayload;
    try {
      try {
        ({ payload } = await jwtVerify(token, await this.keys(byo.jwks_uri, false), options));
      } catch (err) {
        if (!(err instanceof joseErrors.JWKSNoMatchingKey)) throw err;
        ({ payload } = await jwtVerify(token, await this.keys(byo.jwks_uri, true), options));
      }
    } catch (err) {
      if (err instanceof CustodyError) throw err;
      throw refused(describe(err));
    }
    const now = this.clock() / 1000;
    const aud = payload.aud;
    if (Array.isArray(aud) && aud.length > 1 && payload.azp !== byo.audience) throw refused('several audiences and azp is not the registered audience');
    if (typeof payload.sub !== 'string' || payload.sub.length === 0 || payload.sub.length > 255) throw refused('sub is missing or longer than 255 characters');
    if (typeof payload.nonce !== 'string' || payload.nonce.length === 0) throw refused('nonce is missing: ask for a challenge and send its nonce in the authentication request');
    const authTime = payload.auth_time;
    if (authTime !== undefined && (typeof authTime !== 'number' || !Number.isFinite(authTime))) throw refused('auth_time is not a number');
    const authenticatedAt = typeof authTime === 'number' ? authTime : payload.iat!;
    if (authenticatedAt > now + LIFETIMES.clockTolerance) throw refused('auth_time is in the future');
    if (now - authenticatedAt > byo.max_proof_age_sec + LIFETIMES.clockTolerance) throw refused(`stale: the member authenticated more than max_proof_age_sec (${byo.max_proof_age_sec} s) ago`);
    const acr = typeof payload.acr === 'string' ? payload.acr : null;
    if (byo.required_acr.length > 0 && (acr === null || !byo.required_acr.includes(acr))) throw refused('acr is not one the application requires');
    const amr = Array.isArray(payload.amr) ? payload.amr.filter((x): x is string => typeof x === 'string') : [];
    const missing = byo.required_amr.filter((m) => !amr.includes(m));
    if (missing.length > 0) throw refused(`amr lacks ${missing.join(', ')}`);
    return { issuer: byo.issuer, subject: payload.sub, nonce: payload.nonce, authenticatedAt, expiresAt: payload.exp!, acr, amr };
  }
}

/** The failed check, in words that carry nothing of the token. */
function describe(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'expired (exp)';
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `${err.claim} ${err.reason === 'check_failed' ? 'does not match the registered configuration' : err.reason.replace(/_/g, ' ')}`;
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'the signing algorithm is not allowed';
  if (err instanceof joseErrors.JWKSNoMatchingKey) return "no key of the issuer's JWKS matches";
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'the signature does not verify';
  if (err instanceof joseErrors.JWTInvalid || err instanceof joseErrors.JWSInvalid) return 'malformed';
  return 'it does not verify';
}
