// The stored shape of member authentication (platform-api.md "Member-session artifacts", "Confidential
// exchange rules" 1-11; docs/platform/member-auth.md "Member sessions"): proof challenges, accepted proofs,
// member bindings, session families, sessions, refresh credentials and exchange records. Every secret a
// caller holds (challenge nonce, session id, refresh credential) is stored as its SHA-256 only; the one
// record that must give a secret back (the exchange, for recovery after a lost acknowledgement) is sealed
// with AES-256-GCM (exchange-cipher.ts).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { collection } from '../store/collection.ts';

export const SESSION_COLLECTIONS = {
  /** sha256(nonce) → ChallengeRecord; index `<retire_after>` for the sweep. */
  challenges: collection<ChallengeRecord>('member_auth_challenges'),
  /** proofKey(issuer, token) → AcceptedProofRecord; index `<retire_after>`. */
  acceptedProofs: collection<AcceptedProofRecord>('member_auth_accepted_proofs'),
  /** bindingKey(workspace, namespace, issuer, subject) → MemberBindingRecord; index `<workspace> NUL <member id>`. */
  bindings: collection<MemberBindingRecord>('member_auth_bindings'),
  /** family id → SessionFamilyRecord; index `<application> NUL <member id> NUL <family id>`. */
  families: collection<SessionFamilyRecord>('member_auth_session_families'),
  /** sha256(session id) → MemberSessionRecord. */
  sessions: collection<MemberSessionRecord>('member_auth_sessions'),
  /** sha256(refresh credential) → RefreshCredentialRecord. */
  refresh: collection<RefreshCredentialRecord>('member_auth_refresh_credentials'),
  /** `<workspace> NUL <application> NUL <exchange_id>` → ExchangeRecord; index `<retire_after>`. */
  exchanges: collection<ExchangeRecord>('member_auth_exchanges'),
} as const;

/** Lifetimes, in seconds (docs/platform/member-auth.md "Lifetimes"). */
export const LIFETIMES = {
  /** A challenge's nonce must come back in a proof within this. */
  challenge: 300,
  /**
   * How long an expired or used challenge and an accepted proof are kept (rule 8): at least as long as any
   * proof bound to them could still pass its own checks (the longest max_proof_age_sec), plus clock skew.
   */
  replayWindow: 86_400 + 60,
  /** A session id (the access credential) is valid this long; refresh gives a new one. */
  session: 900,
  /** A refresh credential is usable this long after it was issued... */
  refresh: 14 * 86_400,
  /** ...and never past this much after the sign-in (the family's absolute end). */
  family: 30 * 86_400,
  /** A repeated exchange_id with the same proof returns the same session within this (rule 9). */
  exchangeRecovery: 600,
  /** Leeway for the proof's exp, iat and auth_time against our clock. */
  clockTolerance: 30,
} as const;

export const SESSION_ID = /^mss_[A-Za-z0-9_-]{43}$/;
export const REFRESH_CREDENTIAL = /^mrc_[A-Za-z0-9_-]{43}$/;
export const EXCHANGE_ID = /^[A-Za-z0-9._~-]{16,128}$/;

export const sha256hex = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Compares two hex digests in constant time (both are ours, so equal lengths mean equal formats). */
export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** A fresh 256-bit secret with its prefix: a nonce, a session id or a refresh credential. */
export const newSecret = (prefix: string): string => `${prefix}${randomBytes(32).toString('base64url')}`;

/**
 * What makes two proofs the same proof: the issuer and the signed part of the compact JWS. The signature
 * is left out on purpose: an ECDSA signature can be re-encoded (s → n − s) without the key, and that must
 * not make a used proof look new.
 */
export function proofKey(issuer: string, compactJws: string): string {
  const signed = compactJws.slice(0, compactJws.lastIndexOf('.'));
  return sha256hex(`proof-v1\x00${issuer}\x00${signed}`);
}

/** A member's identity: (issuer, subject) inside the application's pinned provider namespace, never an email. */
export function bindingKey(workspace: string, namespace: string, issuer: string, subject: string): string {
  return sha256hex(`binding-v1\x00${workspace}\x00${namespace}\x00${issuer}\x00${subject}`);
}

export interface ChallengeRecord {
  v: 1;
  nonce_sha256: string;
  tenant: string;
  workspace: string;
  application: string;
  created_at: string;
  expires_at: string;
  consumed_at: string | null;
  retire_after: string;
}

export interface AcceptedProofRecord { v: 1; id: string; tenant: string; workspace: string; application: string; family: string; accepted_at: string; retire_after: string }

export type BindingStatus = 'active' | 'disabled';

export interface MemberBindingRecord {
  v: 1;
  key: string;
  member_id: string;
  tenant: string;
  workspace: string;
  provider_namespace: string;
  issuer: string;
  subject: string;
  status: BindingStatus;
  created_at: string;
  updated_at: string;
}

/** Who may use a family's sessions and refresh credentials: exactly the caller that created it (rules 5, 7). */
export interface CallerBinding {
  tenant: string;
  workspace: string;
  application: string;
  publishable_key: string;
  /** The workspace bearer key (the BFF principal). */
  principal: string;
}

/** One sign-in: the sessions and refresh credentials that descend from one accepted proof. */
export interface SessionFamilyRecord extends CallerBinding {
  v: 1;
  id: string;
  member_id: string;
  binding: string;
  status: 'active' | 'revoked';
  /** sha256 of the one session id currently valid in the family. */
  current_session: string;
  created_at: string;
  /** The family's absolute end: no refresh goes past it. */
  expires_at: string;
  revoked_at: string | null;
  /** result_replay: a Hosted Auth result was exchanged twice (hosted-authorizations.ts); member_disabled: the tenant disabled the BYO member (member-bindings.ts). */
  revoked_reason: 'sign_out' | 'sign_out_all' | 'refresh_replay' | 'result_replay' | 'member_recovery' | 'member_disabled' | null;
  /** auth_time (or iat) of the proof, ISO. */
  authenticated_at: string;
  acr: string | null;
  amr: string[];
}

export interface MemberSessionRecord extends CallerBinding {
  v: 1;
  family: string;
  member_id: string;
  binding: string;
  /** The application's version when the session was made: any later change ends it (rule 5). */
  application_version: number;
  created_at: string;
  expires_at: string;
  /** When the refresh credential issued with this session stops working. */
  refresh_expires_at: string;
}

export interface RefreshCredentialRecord extends CallerBinding {
  v: 1;
  family: string;
  /** sha256 of the session it was issued with. */
  session: string;
  status: 'active' | 'consumed';
  issued_at: string;
  expires_at: string;
  consumed_at: string | null;
  /**
   * Set when the refresh that consumed it named a `refresh_id`: the grant it returned, sealed
   * (exchange-cipher.ts), so that the same refresh repeated after a lost answer gets the same session
   * until `until`, rather than being taken for a replay.
   */
  retry?: { id: string; sealed: string; until: string };
}

export interface ExchangeRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  application: string;
  principal: string;
  publishable_key: string;
  proof_key: string;
  family: string;
  created_at: string;
  recover_until: string;
  retire_after: string;
  /** The session result, sealed (exchange-cipher.ts); bound to this record's id and proof. */
  sealed: string;
}

/** The wire payloads, defined once for the API and the SDK. */
export type { MemberSessionGrant as SessionGrant, MemberContext } from '../../core/api-schemas/member-sessions.ts';

export const retireIndex = (iso: string) => [iso];
