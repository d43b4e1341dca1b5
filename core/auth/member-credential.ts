// Passkey member-action proofs (docs/platform/member-actions.md "Passkey proofs"). A member approves one
// action with a WebAuthn assertion whose challenge is the action's nonce (core/auth/member-action.ts);
// the authenticator's public key is vouched for by a **member credential**: a JWT signed under the JWK
// Set the organization registered for end-user auth (the same customer-signed registration that ID
// tokens verify under, docs/end-user-auth.md), naming the member, the passkey and where it may be used.
//
// Neither the API nor the coordinator holds a key that signs either part: the credential needs the
// customer's identity key, the assertion needs the member's authenticator, and the assertion's challenge
// commits to the action id, the salt and the exact intent bytes every node is asked to sign.
//
// One exception, chosen by the customer (docs/end-user-auth.md "Account Center passkeys"): a tenant
// whose customer-signed registration names an `account_center` opt-in also accepts credentials signed
// by the service's Account Center key it names, for passkeys on the Account Center's origin only. Without
// that entry a credential under the service's key verifies under nothing the node holds.
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet, type JWK } from 'jose';
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

/**
 * A tenant's opt-in to passkeys enrolled on the service's Account Center, as its customer-signed
 * end-user-auth registration names it: the service's credential key for the organization (a public JWK,
 * Ed25519 or P-256, with a `kid` none of the customer's keys has) and the Account Center's origin.
 */
export interface AccountCenterOptIn { jwk: JWK; origin: string }

/** The registration a member credential verifies under. */
export interface CredentialConfig { jwks: JSONWebKeySet; audience: string; accountCenter?: AccountCenterOptIn | undefined }

/** What is wrong with an `account_center` opt-in of a registration whose customer keys are `jwks`, or undefined. */
export function accountCenterOptInProblem(v: unknown, jwks: { keys: { kid?: unknown }[] }): string | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'account_center must be an object {jwk, origin}';
  const { jwk, origin, ...rest } = v as Record<string, unknown>;
  if (Object.keys(rest).length) return `account_center has unknown members: ${Object.keys(rest).join(', ')}`;
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) return 'account_center.jwk must be a public JWK';
  const kid = (jwk as { kid?: unknown }).kid;
  if (typeof kid !== 'string' || kid.length < 1 || kid.length > 128) return 'account_center.jwk.kid must be a string of 1 to 128 characters';
  if (jwks.keys.some((k) => k.kid === kid)) return 'account_center.jwk.kid is also the kid of a key in jwks: the Account Center key must be told apart from the customer\'s';
  const alg = (jwk as { alg?: unknown }).alg;
  if (alg !== undefined && alg !== 'EdDSA' && alg !== 'ES256') return 'account_center.jwk.alg must be EdDSA or ES256';
  try {
    coseKey(jwk as Record<string, unknown>);
  } catch {
    return 'account_center.jwk must be an Ed25519 (OKP) or P-256 (EC) public key';
  }
  const problem = originProblem(origin);
  return problem ? `account_center.origin: ${problem}` : undefined;
}

/** What a verified member credential says. */
export interface MemberCredential {
  subject: string;
  credentialId: Uint8Array;
  /** The passkey's public key as a COSE_Key (what a WebAuthn verifier takes). */
  publicKey: Uint8Array;
  rpId: string;
  origins: string[];
  /** Where the passkey was enrolled: on the customer's side, or on the service's Account Center (the opt-in). */
  enrolledAt: 'customer' | 'account_center';
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
export async function verifyMemberCredential(config: CredentialConfig, token: string, nowSeconds: number): Promise<MemberCredential> {
  // A credential naming the opted-in Account Center key verifies under that key alone; any other under
  // the customer's keys alone. Without the opt-in there is no Account Center key to name.
  let headerKid: unknown;
  try {
    headerKid = decodeProtectedHeader(token).kid;
  } catch {
    throw new PasskeyProofError('bad_end_user_token', 'member credential is not a JWS');
  }
  const ac = config.accountCenter;
  const viaAccountCenter = ac !== undefined && typeof headerKid === 'string' && headerKid === ac.jwk.kid;
  let payload;
  try {
    ({ payload } = await jwtVerify(token, createLocalJWKSet(viaAccountCenter ? { keys: [ac.jwk] } : config.jwks), {
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
  // The service's key vouches only for passkeys of its own page: answered on the Account Center's origin
  // alone, its host as RP ID. It cannot vouch for a passkey on the customer's origin.
  if (viaAccountCenter && (origins.length !== 1 || origins[0] !== ac.origin || rpId !== new URL(ac.origin).hostname)) {
    throw new PasskeyProofError('bad_end_user_token', 'member credential: an Account Center credential names the registered Account Center origin only, and its host as RP ID');
  }
  return { subject: payload.sub!, credentialId, publicKey, rpId, origins: origins as string[], enrolledAt: viaAccountCenter ? 'account_center' : 'customer' };
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
export async function verifyPasskeyProof(config: CredentialConfig, credentialToken: string, intentSha256Hex: string, subject: string | null, nowSeconds: number, binding: MemberActionBinding & { passkey: PasskeyAssertion }): Promise<void> {
  const problem = passkeyAssertionProblem(binding.passkey);
  if (problem) throw new PasskeyProofError('bad_end_user_token', problem);
  const credential = await verifyMemberCredential(config, credentialToken, nowSeconds);
  if (subject !== null && credential.subject !== subject) throw new PasskeyProofError('wrong_end_user', 'the member credential names another subject than the vault is bound to');
  const a = binding.passkey;
  const nonce = memberActionNonceFor(binding, intentSha256Hex);
  if (nonce === undefined) throw new PasskeyProofError('member_action_mismatch', 'member-action proof: this intent is not one of the batch the member approved');
  await verifyCredentialAssertion(credential, a, nonce, 'the passkey assertion\'s challenge does not commit to this action and intent');
}

/**
 * An assertion by the credential's passkey whose challenge is `challenge` (base64url): of type
 * webauthn.get, not made in a cross-origin frame, on one of the credential's origins and its RP ID,
 * with user presence and verification, signed by its key. Throws PasskeyProofError: member_action_mismatch
 * (with `mismatch` as its message) for another challenge, bad_end_user_token otherwise.
 */
export async function verifyCredentialAssertion(credential: MemberCredential, a: PasskeyAssertion, challenge: string, mismatch: string): Promise<void> {
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
  const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64url');
  const id = b64(a.credentialId);
  let challengeMatched = false;
  let verified: boolean;
  try {
    ({ verified } = await verifyAuthenticationResponse({
      response: { id, rawId: id, type: 'public-key', clientExtensionResults: {}, response: { authenticatorData: b64(a.authenticatorData), clientDataJSON: b64(a.clientDataJson), signature: b64(a.signature) } },
      expectedChallenge: (c: string) => (challengeMatched = sameText(c, challenge)),
      expectedOrigin: credential.origins,
      expectedRPID: credential.rpId,
      expectedType: 'webauthn.get',
      credential: { id, publicKey: credential.publicKey as Uint8Array<ArrayBuffer>, counter: 0 },
      requireUserVerification: true,
    }));
  } catch (err) {
    if (!challengeMatched && /challenge/i.test((err as Error).message)) throw new PasskeyProofError('member_action_mismatch', mismatch);
    throw new PasskeyProofError('bad_end_user_token', `the passkey assertion does not verify: ${(err as Error).message}`);
  }
  if (!verified) throw new PasskeyProofError('bad_end_user_token', 'the passkey assertion\'s signature does not verify');
}
