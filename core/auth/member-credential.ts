// Passkey member-action proofs (docs/platform/member-actions.md "Passkey proofs"). A member approves one
// action with a WebAuthn assertion whose challenge is the action's nonce (core/auth/member-action.ts);
// the authenticator's public key is vouched for by a **member credential**: a JWT signed under the JWK
// Set the organization registered for end-user auth (the same customer-signed registration that ID
// tokens verify under, docs/end-user-auth.md), naming the member, the passkey and where it may be used.
//
// Neither the API nor the coordinator holds a key that signs either part: the credential needs the
// customer's identity key, the assertion needs the member's authenticator, and the assertion's challenge
// commits to the action id, the salt and the exact intent bytes every node is asked to sign.
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { verifyAuthenticationResponse } from '@simplewebauthn/server';
import { encode } from 'cbor2';
import { p256 } from '@noble/curves/nist.js';
import { CustodyError } from '../errors/custody-error.ts';
import { isValidEd25519PublicKey } from '../../common/ed25519.ts';
import { memberActionNonceFor, sameText } from './member-action.ts';
import { PASSKEY_LIMITS, type MemberActionBinding, type PasskeyAssertion } from '../session/member-action-binding.ts';

/** The credential JWT's `typ` header: an ID token or an end-user token cannot pass for one. */
export const MEMBER_CREDENTIAL_TYP = 'member-credential+jwt';
/** Longest accepted credential lifetime (exp - iat), seconds: 400 days, as a TLS certificate. */
export const MAX_CREDENTIAL_LIFETIME_S = 400 * 24 * 3600;
/** At most this many origins per credential. */
export const MAX_CREDENTIAL_ORIGINS = 4;
const SKEW_S = 30;
const ALGORITHMS = ['ES256', 'EdDSA', 'RS256', 'PS256'];
const B64URL = /^[A-Za-z0-9_-]+$/;
const RP_ID = /^(?=.{1,253}$)(localhost|([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63})$/;

/** A refused passkey proof: `member_action_mismatch` (another action or intent), else `bad_end_user_token`. */
export class PasskeyProofError extends CustodyError {
  constructor(readonly reason: 'bad_end_user_token' | 'wrong_end_user' | 'member_action_mismatch', message: string) {
    super(reason, message);
    this.name = 'PasskeyProofError';
  }
}

/** What a verified member credential says. */
export interface MemberCredential {
  subject: string;
  credentialId: Uint8Array;
  /** The passkey's public key as a COSE_Key (what a WebAuthn verifier takes). */
  publicKey: Uint8Array;
  rpId: string;
  origins: string[];
}

/** An origin a passkey may answer on: https (http only for localhost), no path, query or fragment. */
export function originProblem(origin: unknown): string | undefined {
  if (typeof origin !== 'string' || origin.length > 255) return 'an origin is a string of at most 255 characters';
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return `${origin} is not an origin`;
  }
  if (u.origin !== origin) return `${origin} is not an origin (scheme, host and port only, as the browser writes it)`;
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && u.hostname === 'localhost')) return `${origin}: passkeys answer on https (http only on localhost)`;
  return undefined;
}

/** The credential's public JWK as a COSE_Key: P-256 (ES256) or Ed25519 (EdDSA), checked on the curve. */
function coseKey(jwk: Record<string, unknown>): Uint8Array {
  const bytes = (v: unknown, n: number, what: string) => {
    if (typeof v !== 'string' || !B64URL.test(v)) throw new PasskeyProofError('bad_end_user_token', `member credential: cnf.jwk.${what} is not base64url`);
    const b = new Uint8Array(Buffer.from(v, 'base64url'));
    if (b.length !== n) throw new PasskeyProofError('bad_end_user_token', `member credential: cnf.jwk.${what} is not ${n} bytes`);
    return b;
  };
  if (['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'].some((m) => m in jwk)) throw new PasskeyProofError('bad_end_user_token', 'member credential: cnf.jwk holds private key material');
  if (jwk['kty'] === 'EC' && jwk['crv'] === 'P-256') {
    const x = bytes(jwk['x'], 32, 'x');
    const y = bytes(jwk['y'], 32, 'y');
    const sec1 = new Uint8Array(65);
    sec1[0] = 4;
    sec1.set(x, 1);
    sec1.set(y, 33);
    try {
      p256.Point.fromBytes(sec1).assertValidity();
    } catch {
      throw new PasskeyProofError('bad_end_user_token', 'member credential: cnf.jwk is not a point of P-256');
    }
    return encode(new Map<number, number | Uint8Array>([[1, 2], [3, -7], [-1, 1], [-2, x], [-3, y]]));
  }
  if (jwk['kty'] === 'OKP' && jwk['crv'] === 'Ed25519') {
    const x = bytes(jwk['x'], 32, 'x');
    if (!isValidEd25519PublicKey(x)) throw new PasskeyProofError('bad_end_user_token', 'member credential: cnf.jwk is not a valid Ed25519 public key');
    return encode(new Map<number, number | Uint8Array>([[1, 1], [3, -8], [-1, 6], [-2, x]]));
  }
  throw new PasskeyProofError('bad_end_user_token', 'member credential: cnf.jwk must be an EC P-256 or OKP Ed25519 public key');
}

/**
 * Verifies a member credential JWT under the organization's registered JWK Set and audience: `typ`
 * member-credential+jwt, `sub`, `iat`, `exp` (at most 400 days apart, not expired, not issued in the
 * future), `cnf.jwk` the passkey's public key with its credential id as `kid` (RFC 7800), and
 * `webauthn: {rp_id, origins}`. Throws PasskeyProofError; never puts the token in a message.
 */
export async function verifyMemberCredential(config: { jwks: JSONWebKeySet; audience: string }, token: string, nowSeconds: number): Promise<MemberCredential> {
  let payload;
  try {
    ({ payload } = await jwtVerify(token, createLocalJWKSet(config.jwks), {
      audience: config.audience,
      algorithms: ALGORITHMS,
      typ: MEMBER_CREDENTIAL_TYP,
      requiredClaims: ['exp', 'iat', 'sub', 'cnf', 'webauthn'],
      clockTolerance: SKEW_S,
      currentDate: new Date(nowSeconds * 1000),
    }));
  } catch (err) {
    throw new PasskeyProofError('bad_end_user_token', `member credential does not verify: ${(err as Error).message}`);
  }
  if (payload.iat! > nowSeconds + SKEW_S) throw new PasskeyProofError('bad_end_user_token', 'member credential was issued in the future ("iat")');
  if (payload.exp! - payload.iat! > MAX_CREDENTIAL_LIFETIME_S) throw new PasskeyProofError('bad_end_user_token', 'member credential lives longer than 400 days');
  const jwk = (payload['cnf'] as { jwk?: unknown } | null)?.jwk;
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) throw new PasskeyProofError('bad_end_user_token', 'member credential: cnf.jwk is missing');
  const kid = (jwk as { kid?: unknown }).kid;
  if (typeof kid !== 'string' || !B64URL.test(kid)) throw new PasskeyProofError('bad_end_user_token', 'member credential: cnf.jwk.kid (the credential id, base64url) is missing');
  const credentialId = new Uint8Array(Buffer.from(kid, 'base64url'));
  if (credentialId.length < 16 || credentialId.length > PASSKEY_LIMITS.credentialId) throw new PasskeyProofError('bad_end_user_token', 'member credential: the credential id is not 16 to 1023 bytes');
  const publicKey = coseKey(jwk as Record<string, unknown>);
  const w = payload['webauthn'] as { rp_id?: unknown; origins?: unknown } | null;
  const rpId = w?.rp_id;
  if (typeof rpId !== 'string' || !RP_ID.test(rpId)) throw new PasskeyProofError('bad_end_user_token', 'member credential: webauthn.rp_id is not a domain');
  const origins = w?.origins;
  if (!Array.isArray(origins) || origins.length < 1 || origins.length > MAX_CREDENTIAL_ORIGINS) throw new PasskeyProofError('bad_end_user_token', `member credential: webauthn.origins holds 1 to ${MAX_CREDENTIAL_ORIGINS} origins`);
  for (const o of origins) {
    const problem = originProblem(o);
    if (problem) throw new PasskeyProofError('bad_end_user_token', `member credential: ${problem}`);
    // The browser only answers for an RP ID that is the origin's host or a parent domain of it.
    const host = new URL(o as string).hostname;
    if (host !== rpId && !host.endsWith(`.${rpId}`)) throw new PasskeyProofError('bad_end_user_token', `member credential: origin ${o as string} is not on ${rpId}`);
  }
  return { subject: payload.sub!, credentialId, publicKey, rpId, origins: origins as string[] };
}

/** The assertion's problem, or undefined when its parts are within bounds. */
export function passkeyAssertionProblem(a: PasskeyAssertion): string | undefined {
  for (const [k, max] of Object.entries(PASSKEY_LIMITS) as [keyof PasskeyAssertion, number][]) {
    const v = a[k];
    if (!(v instanceof Uint8Array) || v.length < 1 || v.length > max) return `memberAction.passkey.${k} is not 1 to ${max} bytes`;
  }
  if (a.authenticatorData.length < 37) return 'memberAction.passkey.authenticatorData is shorter than 37 bytes';
  return undefined;
}

/**
 * A passkey member-action proof: the credential verifies (above) and names the vault's bound subject;
 * the assertion is by that credential, of type webauthn.get, not cross-origin, on one of its origins and
 * its RP ID, with user presence and verification, signed by its key, and its challenge is the nonce the
 * binding and this intent give. An authenticator's signature counter is not checked: the nodes keep no
 * state per credential; one approval serves one intent through the nodes' intent ledger, within the
 * intent's customer-signed `not_after` (at most 24 h).
 */
export async function verifyPasskeyProof(config: { jwks: JSONWebKeySet; audience: string }, credentialToken: string, intentSha256Hex: string, subject: string | null, nowSeconds: number, binding: MemberActionBinding & { passkey: PasskeyAssertion }): Promise<void> {
  const problem = passkeyAssertionProblem(binding.passkey);
  if (problem) throw new PasskeyProofError('bad_end_user_token', problem);
  const credential = await verifyMemberCredential(config, credentialToken, nowSeconds);
  if (subject !== null && credential.subject !== subject) throw new PasskeyProofError('wrong_end_user', 'the member credential names another subject than the vault is bound to');
  const a = binding.passkey;
  if (a.credentialId.length !== credential.credentialId.length || !a.credentialId.every((b, i) => b === credential.credentialId[i])) {
    throw new PasskeyProofError('bad_end_user_token', 'the assertion is by another passkey than the member credential names');
  }
  let client: { crossOrigin?: unknown; topOrigin?: unknown };
  try {
    client = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(a.clientDataJson)) as typeof client;
  } catch {
    throw new PasskeyProofError('bad_end_user_token', 'the assertion\'s client data is not JSON');
  }
  if (client.crossOrigin === true || client.topOrigin !== undefined) throw new PasskeyProofError('bad_end_user_token', 'the assertion was made in a cross-origin frame');
  const nonce = memberActionNonceFor(binding, intentSha256Hex);
  if (nonce === undefined) throw new PasskeyProofError('member_action_mismatch', 'member-action proof: this intent is not one of the batch the member approved');
  const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64url');
  const id = b64(a.credentialId);
  let challengeMatched = false;
  let verified: boolean;
  try {
    ({ verified } = await verifyAuthenticationResponse({
      response: { id, rawId: id, type: 'public-key', clientExtensionResults: {}, response: { authenticatorData: b64(a.authenticatorData), clientDataJSON: b64(a.clientDataJson), signature: b64(a.signature) } },
      expectedChallenge: (c: string) => (challengeMatched = sameText(c, nonce)),
      expectedOrigin: credential.origins,
      expectedRPID: credential.rpId,
      expectedType: 'webauthn.get',
      credential: { id, publicKey: credential.publicKey as Uint8Array<ArrayBuffer>, counter: 0 },
      requireUserVerification: true,
    }));
  } catch (err) {
    if (!challengeMatched && /challenge/i.test((err as Error).message)) throw new PasskeyProofError('member_action_mismatch', 'the passkey assertion\'s challenge does not commit to this action and intent');
    throw new PasskeyProofError('bad_end_user_token', `the passkey assertion does not verify: ${(err as Error).message}`);
  }
  if (!verified) throw new PasskeyProofError('bad_end_user_token', 'the passkey assertion\'s signature does not verify');
}
