// Hosted-tier end-user tokens (docs/end-user-auth.md): a JWT from the customer's identity provider,
// verified with `jose` against the JWK Set and audience the organization registered, naming the vault's
// bound subject and the SHA-256 of the exact intent bytes it authorizes. The API and the nodes run this
// same check, so neither can sign a hosted vault's transaction without the end user.
import { createLocalJWKSet, importJWK, jwtVerify, type JWK, type JSONWebKeySet } from 'jose';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { CustodyError } from '../errors/custody-error.ts';
import { isValidEd25519PublicKey } from '../../common/ed25519.ts';
import { MEMBER_PROOF_MAX_AGE_S, memberActionNonceFor, memberActionProblem, sameText, type MemberActionBinding } from './member-action.ts';
import { PasskeyProofError, verifyPasskeyProof, type AccountCenterOptIn } from './member-credential.ts';

export const END_USER_ALGORITHMS = ['ES256', 'EdDSA', 'RS256', 'PS256'];
/** Longest accepted token lifetime (exp - iat), seconds: a token authorizes one signature, soon. */
export const MAX_TOKEN_LIFETIME_S = 900;
const SKEW_S = 30;
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth'];

export interface EndUserAuthConfig {
  jwks: { keys: JWK[] };
  audience: string;
  /** The tenant's Account Center passkey opt-in, when its registration names one (member-credential.ts). */
  accountCenter?: AccountCenterOptIn;
}

/** A refused end-user token; its code (kind `refused`) is the reason, also kept as `reason`. */
export class EndUserTokenError extends CustodyError {
  constructor(readonly reason: 'end_user_token_required' | 'bad_end_user_token' | 'wrong_end_user' | 'token_intent_mismatch' | 'member_action_mismatch' | 'member_proof_stale', message: string) {
    super(reason, message);
    this.name = 'EndUserTokenError';
  }
}

/** Checks a JWK Set a customer registers: 1 to 20 public keys of the accepted kinds, each importable. */
export async function validateJwks(jwks: unknown): Promise<string | undefined> {
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length < 1 || keys.length > 20) return 'jwks.keys must hold 1 to 20 keys';
  for (const [i, k] of keys.entries()) {
    if (typeof k !== 'object' || k === null || Array.isArray(k)) return `jwks.keys[${i}] is not a JWK`;
    if (PRIVATE_MEMBERS.some((m) => m in k)) return `jwks.keys[${i}] holds private key material; register public keys only`;
    const jwk = k as JWK;
    if (!['EC', 'OKP', 'RSA'].includes(String(jwk.kty))) return `jwks.keys[${i}].kty must be EC, OKP or RSA`;
    if (jwk.alg !== undefined && !END_USER_ALGORITHMS.includes(jwk.alg)) return `jwks.keys[${i}].alg ${jwk.alg} is not accepted (${END_USER_ALGORITHMS.join(', ')})`;
    const alg = jwk.alg ?? (jwk.kty === 'OKP' ? 'EdDSA' : jwk.kty === 'RSA' ? 'RS256' : 'ES256');
    // The import below takes any 32 bytes as an Ed25519 key; a point off the curve or of small order is none.
    if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519' && !(typeof jwk.x === 'string' && /^[A-Za-z0-9_-]{43}$/.test(jwk.x) && isValidEd25519PublicKey(new Uint8Array(Buffer.from(jwk.x, 'base64url'))))) {
      return `jwks.keys[${i}].x is not a valid Ed25519 public key (off the curve, of small order, or not canonically encoded)`;
    }
    try {
      await importJWK(jwk, alg);
    } catch (err) {
      return `jwks.keys[${i}] is not a usable ${alg} key: ${(err as Error).message}`;
    }
  }
  return undefined;
}

export const intentSha256 = (intent: Uint8Array) => bytesToHex(sha256(intent));

/**
 * Verifies `token` for one intent. `subject` is the vault's bound end user, when it has one.
 * With `memberAction`, the token is a member-action proof (core/auth/member-action.ts): a fresh OIDC ID
 * token whose nonce commits to the action and the intent, or, when the binding carries a passkey
 * assertion, the member credential that names the passkey (core/auth/member-credential.ts); without
 * it, a token naming `intent_sha256`. Throws EndUserTokenError; never includes the token in a message.
 */
export async function verifyEndUserToken(config: EndUserAuthConfig, token: string | undefined, intent: Uint8Array, subject: string | null, nowSeconds: number, memberAction?: MemberActionBinding): Promise<void> {
  if (!token) throw new EndUserTokenError('end_user_token_required', 'this hosted vault needs an end-user token for each transaction');
  if (token.length > 16_384) throw new EndUserTokenError('bad_end_user_token', 'end-user token is too long');
  if (memberAction?.passkey) {
    const problem = memberActionProblem(memberAction);
    if (problem) throw new EndUserTokenError('member_action_mismatch', problem);
    try {
      return await verifyPasskeyProof({ jwks: config.jwks as JSONWebKeySet, audience: config.audience, accountCenter: config.accountCenter }, token, intentSha256(intent), subject, nowSeconds, { ...memberAction, passkey: memberAction.passkey });
    } catch (err) {
      if (err instanceof PasskeyProofError) throw new EndUserTokenError(err.reason, err.message);
      throw err;
    }
  }
  if (memberAction) return verifyMemberProof(config, token, intent, subject, nowSeconds, memberAction);
  let payload;
  try {
    ({ payload } = await jwtVerify(token, createLocalJWKSet(config.jwks as JSONWebKeySet), {
      audience: config.audience,
      algorithms: END_USER_ALGORITHMS,
      requiredClaims: ['exp', 'iat', 'intent_sha256'],
      clockTolerance: SKEW_S,
      currentDate: new Date(nowSeconds * 1000),
    }));
  } catch (err) {
    throw new EndUserTokenError('bad_end_user_token', `end-user token does not verify: ${(err as Error).message}`);
  }
  // A future iat would stretch the lifetime bound: iat an hour ahead, exp 15 minutes after that.
  if (payload.iat! > nowSeconds + SKEW_S) throw new EndUserTokenError('bad_end_user_token', 'end-user token was issued in the future ("iat")');
  if (payload.exp! - payload.iat! > MAX_TOKEN_LIFETIME_S) throw new EndUserTokenError('bad_end_user_token', `end-user token lives longer than ${MAX_TOKEN_LIFETIME_S} s`);
  if (subject !== null && payload.sub !== subject) throw new EndUserTokenError('wrong_end_user', 'end-user token names another subject than the vault is bound to');
  if (payload['intent_sha256'] !== intentSha256(intent)) throw new EndUserTokenError('token_intent_mismatch', 'end-user token authorizes another intent');
}

/**
 * A member-action proof: signature under the registered JWKS, the registered audience, not expired; its
 * `nonce` the one the binding and this intent give; `iat` and `auth_time` within MEMBER_PROOF_MAX_AGE_S
 * and not in the future; the bound subject. No lifetime bound (an ID token often lives an hour): the
 * freshness of `iat` and `auth_time` bounds its use instead. A token naming `intent_sha256` is the other
 * kind and is refused here, so neither kind can pass for the other.
 */
async function verifyMemberProof(config: EndUserAuthConfig, token: string, intent: Uint8Array, subject: string | null, nowSeconds: number, binding: MemberActionBinding): Promise<void> {
  const problem = memberActionProblem(binding);
  if (problem) throw new EndUserTokenError('member_action_mismatch', problem);
  const expected = memberActionNonceFor(binding, intentSha256(intent));
  if (expected === undefined) throw new EndUserTokenError('member_action_mismatch', 'member-action proof: this intent is not one of the batch the member approved');
  let payload;
  try {
    ({ payload } = await jwtVerify(token, createLocalJWKSet(config.jwks as JSONWebKeySet), {
      audience: config.audience,
      algorithms: END_USER_ALGORITHMS,
      requiredClaims: ['exp', 'iat', 'sub', 'nonce', 'auth_time'],
      clockTolerance: SKEW_S,
      currentDate: new Date(nowSeconds * 1000),
    }));
  } catch (err) {
    throw new EndUserTokenError('bad_end_user_token', `member-action proof does not verify: ${(err as Error).message}`);
  }
  if (payload['intent_sha256'] !== undefined) throw new EndUserTokenError('member_action_mismatch', 'a token naming intent_sha256 is not a member-action proof');
  const authTime = payload['auth_time'];
  if (typeof authTime !== 'number' || !Number.isFinite(authTime)) throw new EndUserTokenError('bad_end_user_token', 'member-action proof: auth_time is not a number');
  for (const [what, at] of [['iat', payload.iat!], ['auth_time', authTime]] as const) {
    if (at > nowSeconds + SKEW_S) throw new EndUserTokenError('member_proof_stale', `member-action proof: ${what} is in the future`);
    if (nowSeconds - at > MEMBER_PROOF_MAX_AGE_S + SKEW_S) throw new EndUserTokenError('member_proof_stale', `member-action proof: ${what} is more than ${MEMBER_PROOF_MAX_AGE_S} s old`);
  }
  if (subject !== null && payload.sub !== subject) throw new EndUserTokenError('wrong_end_user', 'member-action proof names another subject than the vault is bound to');
  const nonce = payload['nonce'];
  if (typeof nonce !== 'string' || !sameText(nonce, expected)) {
    throw new EndUserTokenError('member_action_mismatch', 'member-action proof: its nonce does not commit to this action and intent');
  }
}
