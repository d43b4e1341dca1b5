// Member credentials and passkey answers, on the customer's side (docs/platform/member-actions.md
// "Passkey proofs"). The customer, and only the customer, vouches that a passkey is its member's: it signs
// a member credential (a JWT of typ member-credential+jwt) with the private key of the JWK Set it
// registered for end-user auth, once it has verified the passkey's registration on its own origin. The
// signer nodes accept a passkey approval only under such a credential.
import { SignJWT, type CryptoKey, type JWK, type KeyObject } from 'jose';
import { decode } from 'cbor2';
import { MAX_CREDENTIAL_LIFETIME_S, MEMBER_CREDENTIAL_TYP } from '../../core/auth/member-credential.ts';
import { SdkError } from './sdk-error.ts';

const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64url');

export interface MemberCredentialInput {
  /** The private key of a key in the organization's end-user-auth JWK Set, with its `kid` and algorithm. */
  key: CryptoKey | KeyObject | JWK | Uint8Array;
  kid: string;
  alg: 'ES256' | 'EdDSA' | 'RS256' | 'PS256';
  /** The audience of that registration. */
  audience: string;
  /** The member: the subject its vault is bound to (a BYO subject, or a Hosted Auth `hsub_…`). */
  subject: string;
  /** The passkey's credential id (raw bytes or base64url) and public key (COSE_Key bytes, as a registration verifier gives them, or a public JWK). */
  credentialId: Uint8Array | string;
  publicKey: Uint8Array | JWK;
  /** The RP ID the passkey was created for, and the origins (1 to 4) it may answer on. */
  rpId: string;
  origins: string[];
  /** Seconds; default 180 days, at most 400. */
  lifetimeSec?: number;
  /** Unix seconds; default now. */
  now?: number;
}

/** A COSE_Key (RFC 9053) of a passkey as a public JWK: EC2 P-256 or OKP Ed25519. */
export function coseToJwk(cose: Uint8Array): JWK {
  let m: unknown;
  try {
    m = decode(cose);
  } catch {
    throw new SdkError('usage', 'the passkey public key is not CBOR');
  }
  if (!(m instanceof Map)) throw new SdkError('usage', 'the passkey public key is not a COSE_Key');
  const get = (k: number) => m.get(k) as unknown;
  const bytes = (v: unknown) => (v instanceof Uint8Array && v.length === 32 ? b64(v) : undefined);
  if (get(1) === 2 && get(-1) === 1 && bytes(get(-2)) && bytes(get(-3))) return { kty: 'EC', crv: 'P-256', x: bytes(get(-2))!, y: bytes(get(-3))! };
  if (get(1) === 1 && get(-1) === 6 && bytes(get(-2))) return { kty: 'OKP', crv: 'Ed25519', x: bytes(get(-2))! };
  throw new SdkError('usage', 'the passkey public key is neither P-256 (ES256) nor Ed25519 (EdDSA); the signer nodes accept only those');
}

/** Signs a member credential for one passkey of one member. */
export async function signMemberCredential(c: MemberCredentialInput): Promise<string> {
  const lifetime = c.lifetimeSec ?? 180 * 86_400;
  if (!Number.isInteger(lifetime) || lifetime < 60 || lifetime > MAX_CREDENTIAL_LIFETIME_S) throw new SdkError('usage', 'lifetimeSec: 60 s to 400 days');
  if (c.origins.length < 1 || c.origins.length > 4) throw new SdkError('usage', 'origins: 1 to 4');
  const now = c.now ?? Math.floor(Date.now() / 1000);
  const id = typeof c.credentialId === 'string' ? c.credentialId : b64(c.credentialId);
  const pub = c.publicKey instanceof Uint8Array ? coseToJwk(c.publicKey) : c.publicKey;
  const jwk = pub.kty === 'EC' ? { kty: 'EC', crv: pub.crv, x: pub.x, y: pub.y, kid: id } : { kty: pub.kty, crv: pub.crv, x: pub.x, kid: id };
  return new SignJWT({ cnf: { jwk }, webauthn: { rp_id: c.rpId, origins: c.origins } })
    .setProtectedHeader({ alg: c.alg, kid: c.kid, typ: MEMBER_CREDENTIAL_TYP })
    .setSubject(c.subject).setAudience(c.audience).setIssuedAt(now).setExpirationTime(now + lifetime)
    .sign(c.key);
}

/** A browser's answer to navigator.credentials.get, as its JSON form (PublicKeyCredential.toJSON()) has it. */
export interface AuthenticationResponseJson {
  id: string;
  rawId?: string;
  type?: string;
  response: { authenticatorData: string; clientDataJSON: string; signature: string; userHandle?: string | null };
}

/** The API's `assertion` body from a browser's answer: base64url fields, the user handle dropped. */
export function passkeyAssertionBody(r: AuthenticationResponseJson): { id: string; authenticator_data: string; client_data_json: string; signature: string } {
  if (r.rawId !== undefined && r.rawId !== r.id) throw new SdkError('usage', 'the answer\'s rawId and id differ');
  return { id: r.id, authenticator_data: r.response.authenticatorData, client_data_json: r.response.clientDataJSON, signature: r.response.signature };
}
