// The stored shape of Hosted Auth (platform-api.md "Confidential exchange rules" 11 and 12;
// docs/platform/hosted-auth.md): hosted members (their own identity space, never linked to a BYO OIDC
// binding, never found by email across applications), authorizations (one ceremony each) and the index
// of one-time results. Every secret a browser or the BFF holds (flow cookie, email code, result code) is
// stored as a digest only: SHA-256 for the 256-bit ones, HMAC-SHA-256 under a server key for the
// six-digit email code, which is too short for a bare hash.
import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { collection } from '../store/collection.ts';
import type { Environment } from '../tenancy/tenancy-service.ts';

export const HOSTED_COLLECTIONS = {
  /** member id → HostedMemberRecord; index `<application> NUL <member id>` (the tenant's list). */
  members: collection<HostedMemberRecord>('member_auth_hosted_members'),
  /** `<application> NUL sha256(normalized email)` → the member's id: one member per address and application. */
  memberEmails: collection<{ id: string }>('member_auth_hosted_member_emails'),
  /** authorization id → HostedAuthorizationRecord; index `<retire_after>` for a sweep. */
  authorizations: collection<HostedAuthorizationRecord>('member_auth_hosted_authorizations'),
  /** sha256(result code) → the authorization it completes. */
  results: collection<{ authorization: string }>('member_auth_hosted_results'),
} as const;

/** Lifetimes and bounds (docs/platform/hosted-auth.md "Limits"). Seconds unless named otherwise. */
export const HOSTED_LIMITS = {
  /** From begin-authorization to the result: the whole ceremony. */
  authorization: 600,
  /** An email code's life (capped by the authorization's). */
  emailCode: 600,
  /** Wrong email codes, then TOTP codes, before the authorization is locked. */
  attempts: 5,
  /** Email codes one authorization may send (the first and two resends). */
  codesPerAuthorization: 3,
  /** Between two codes of one authorization. */
  resendInterval: 30,
  /** The one-time result must be exchanged within this. */
  result: 120,
  /** A finished authorization is kept this long after its end, so a replayed result is recognized. */
  retain: 86_400,
  /** `state` length, characters. */
  state: 512,
  /** Hosted members per application. */
  members: 10_000,
} as const;

export const AUTHORIZATION_ID = /^hau_[A-Za-z0-9_-]{43}$/;
export const RESULT_CODE = /^hrc_[A-Za-z0-9_-]{43}$/;
export const MEMBER_ID = /^hsub_[0-9a-f]{26}$/;
/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
export const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
/** base64url(SHA-256(verifier)), unpadded: exactly 43 characters. */
export const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** `state`: opaque to us, but printable ASCII only, so it survives a URL and a log line unescaped. */
export const STATE = /^[\x21-\x7e]{1,512}$/;

export const sha256hex = (s: string): string => createHash('sha256').update(s).digest('hex');
export const newToken = (prefix: string): string => `${prefix}${randomBytes(32).toString('base64url')}`;

/** A six-digit code from the crypto RNG (uniform: randomInt rejects, never takes a modulus). */
export const newEmailCode = (): string => randomInt(0, 1_000_000).toString().padStart(6, '0');

/**
 * Constant-time equality of two strings of ours (digests, tokens, base64url), byte for byte as UTF-8;
 * different lengths are unequal. Not `sameDigest`, which reads hex and would stop at the first non-hex
 * character of a base64url string.
 */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** RFC 7636 S256: BASE64URL(SHA256(ASCII(code_verifier))), compared in constant time. */
export function pkceMatches(verifier: string, challenge: string): boolean {
  return sameSecret(createHash('sha256').update(verifier, 'ascii').digest('base64url'), challenge);
}

/** Keys the ceremony derives from one server key: the email codes' HMAC and the CSRF tokens'. */
export class HostedKeys {
  private readonly codeKey: Buffer;
  private readonly csrfKey: Buffer;
  private readonly recoveryKey: Buffer;
  constructor(serverKey: Uint8Array) {
    this.codeKey = createHmac('sha256', serverKey).update('hosted-auth-email-code-v1').digest();
    this.csrfKey = createHmac('sha256', serverKey).update('hosted-auth-csrf-v1').digest();
    this.recoveryKey = createHmac('sha256', serverKey).update('hosted-auth-recovery-code-v1').digest();
  }

  /** The stored form of a recovery code (normalized by `normalizeRecoveryCode`), bound to its member. */
  recoveryDigest(member: string, code: string): string {
    return createHmac('sha256', this.recoveryKey).update(`recovery-v1\x00${member}\x00${code}`).digest('hex');
  }

  /** The stored form of an email code, bound to its authorization and its send counter. */
  codeDigest(authorization: string, sent: number, code: string): string {
    return createHmac('sha256', this.codeKey).update(`code-v1\x00${authorization}\x00${sent}\x00${code}`).digest('hex');
  }

  /** The CSRF token of an authorization's forms: bound to it and to the browser's flow cookie. */
  csrfToken(authorization: string, flowCookie: string): string {
    return createHmac('sha256', this.csrfKey).update(`csrf-v1\x00${authorization}\x00${flowCookie}`).digest('base64url');
  }
}

/** Recovery codes: 10 characters of 31 letters and digits without look-alikes (about 49 bits), shown as `xxxxx-xxxxx`. */
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
export const RECOVERY_CODES_PER_SET = 10;
export function newRecoveryCode(): string {
  let out = '';
  for (let i = 0; i < 10; i++) out += RECOVERY_ALPHABET[randomInt(0, RECOVERY_ALPHABET.length)];
  return `${out.slice(0, 5)}-${out.slice(5)}`;
}
/** A typed recovery code in the one form we hash: lower-case, without spaces or dashes; undefined when not one. */
export function normalizeRecoveryCode(text: string | undefined): string | undefined {
  const v = (text ?? '').toLowerCase().replace(/[\s-]/g, '');
  return /^[a-z0-9]{10}$/.test(v) ? v : undefined;
}

/** A typed email address in the one form we compare: trimmed and lower-cased; undefined when not one. */
export function normalizeEmail(text: string): string | undefined {
  const v = text.trim().toLowerCase();
  if (v.length > 254 || !/^[a-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/.test(v)) return undefined;
  return v;
}

export const emailKey = (application: string, email: string): string => `${application}\x00${sha256hex(`hosted-email-v1\x00${email}`)}`;
export const memberIndex = (m: Pick<HostedMemberRecord, 'application' | 'id'>) => [`${m.application}\x00${m.id}`];

export type HostedMemberStatus = 'active' | 'disabled';

/**
 * A member of one Hosted application: identified by its hosted subject id (`hsub_…`), never by email.
 * The address is where codes go and how the tenant recognizes an invitation; two applications' members
 * with one address are two members, and none is ever a BYO OIDC binding.
 */
export interface HostedMemberRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  application: string;
  email: string;
  status: HostedMemberStatus;
  /** How it came to be: invited by the tenant, enrolled at its first verified email (open), or the sandbox demo persona. */
  source: 'invited' | 'open' | 'demo';
  demo: boolean;
  /** TOTP secret (hex), when the member has a factor. */
  totp_secret: string | null;
  /** The last TOTP time step accepted: a code is never accepted twice. */
  totp_last_step: number | null;
  /** When the current TOTP factor was confirmed (absent on records written before the Account Center). */
  totp_enrolled_at?: string | null;
  /**
   * The member's recovery codes, as HMAC-SHA-256 digests under the server key bound to the member
   * (`HostedKeys.recoveryDigest`), each with when it was used; null or absent: none generated.
   */
  recovery_codes?: RecoveryCodeDigest[] | null;
  recovery_codes_created_at?: string | null;
  /** Set by lost-all-factor recovery (rule 13): member actions are refused until then and a sign-in after it. */
  restricted_until?: string | null;
  /**
   * Passkeys enrolled on the Account Center while the tenant's opt-in was on (docs/end-user-auth.md
   * "Account Center passkeys"), each with the member credential the service signed for it.
   */
  passkeys?: HostedPasskey[];
  last_sign_in_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A passkey enrolled on the Account Center: public data only (its key, and the credential vouching for it). */
export interface HostedPasskey {
  /** The WebAuthn credential id, base64url. */
  credential_id: string;
  /** The member credential (JWT, core/auth/member-credential.ts) signed under the organization's Account Center key. */
  credential: string;
  created_at: string;
  /** The credential's `exp`: past it the passkey no longer counts at the nodes. */
  expires_at: string;
}

/** One stored recovery code: its digest (hex) and when it was used, if it was. */
export interface RecoveryCodeDigest { digest: string; used_at: string | null }

export type HostedMemberView = Pick<HostedMemberRecord, 'id' | 'email' | 'status' | 'source' | 'demo' | 'last_sign_in_at' | 'created_at' | 'updated_at'> & { totp: boolean };

export function hostedMemberView(m: HostedMemberRecord): HostedMemberView {
  return { id: m.id, email: m.email, status: m.status, source: m.source, demo: m.demo, totp: m.totp_secret !== null, last_sign_in_at: m.last_sign_in_at, created_at: m.created_at, updated_at: m.updated_at };
}

/**
 * pending → code_sent → (totp →) authenticated → exchanged; locked after too many wrong codes; refused
 * when the application requires TOTP and the member has none. Only `exchanged` follows `authenticated`.
 */
export type HostedAuthorizationStatus =
  | 'pending' | 'code_sent' | 'totp' | 'authenticated' | 'exchanged' | 'locked' | 'refused'
  // Lost-all-factor recovery (rule 13), in this order, entered from `totp` (docs/platform/account-center.md).
  | 'recovery_code' | 'recovery_email' | 'recovery_enrol' | 'recovery_codes' | 'recovery_notice';

/** What a recovery carries between its steps: the new factor and code set, applied only at the last step. */
export interface RecoveryProgress {
  /** The replacement TOTP secret (hex), until confirmed and applied. */
  secret: string;
  /** The step the confirming code used: the new factor starts after it. */
  confirmed_step: number | null;
  /** The new recovery codes' digests, once generated (shown once, in that step's answer). */
  codes: string[] | null;
  acknowledged: boolean;
}

export interface HostedAuthorizationRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  environment: Environment;
  application: string;
  /** The application's version at begin-authorization: the ceremony and the exchange recheck it. */
  application_version: number;
  publishable_key: string;
  /** The BFF bearer key that began it; only it may exchange the result. */
  principal: string;
  /** The application's origin: the only place besides the page its forms may lead (CSP form-action). */
  origin: string;
  redirect_uri: string;
  state: string;
  code_challenge: string;
  status: HostedAuthorizationStatus;
  created_at: string;
  expires_at: string;
  /** sha256 of the flow cookie the first browser to open the page got; null until then. */
  flow_cookie_sha256: string | null;
  /** The address typed, normalized; dropped once the ceremony ends. */
  email: string | null;
  /** The member the address names in the application, when there is one. */
  member_id: string | null;
  /** Whether a right code can lead anywhere: false for an address that is not invited or is disabled. */
  eligible: boolean;
  code_sha256: string | null;
  code_expires_at: string | null;
  codes_sent: number;
  last_code_sent_at: string | null;
  attempts: number;
  /** Why a refused authorization was refused (a registered error code). */
  refused_code: string | null;
  result_sha256: string | null;
  result_expires_at: string | null;
  member_created: boolean;
  amr: string[];
  authenticated_at: string | null;
  /** The session family the exchange created: a replayed result revokes it. */
  family: string | null;
  exchanged_at: string | null;
  retire_after: string;
  /** Lost-all-factor recovery in progress (absent otherwise). */
  recovery?: RecoveryProgress | null;
}

export const retireIndexOf = (a: Pick<HostedAuthorizationRecord, 'retire_after'>) => [a.retire_after];
