// The stored shape of member actions (docs/platform/member-actions.md; platform-api.md "Fresh human
// authorization for member actions"): an action freezes one exact operation for one member of one BFF
// caller and waits for a fresh provider proof; a completed action yields a single-use signing session
// that POST /v1/transactions consumes. The signing session id is stored as its SHA-256; the proof it
// carries to the nodes is sealed (exchange-cipher.ts) and dropped once used.
import { collection } from '../store/collection.ts';
import type { CallerBinding } from './member-session-records.ts';

export const ACTION_COLLECTIONS = {
  /** action id → MemberActionRecord; index `<application> NUL <member id> NUL <action id>` while pending. */
  actions: collection<MemberActionRecord>('member_actions'),
  /** sha256(signing session id) → SigningSessionRecord. */
  signing: collection<SigningSessionRecord>('member_signing_sessions'),
} as const;

export const MEMBER_ACTION_LIMITS = {
  /** Seconds a begun action waits for its proof. */
  actionLifetime: 600,
  /** Seconds a signing session lives at most (the proof's own freshness may end it sooner). */
  signingLifetime: 300,
  /** Pending actions one member may have in one application at a time. */
  pendingPerMember: 5,
} as const;

export const SIGNING_SESSION_ID = /^mas_[A-Za-z0-9_-]{43}$/;

export type MemberActionKind = 'transaction.sign' | 'transaction.sign_batch';
export type MemberActionStatus = 'pending_proof' | 'completed' | 'used' | 'revoked';
/** What a batch action approves, beside its intents: a payment's transfers, an escrow's calls. */
export type PurposeType = 'payment' | 'escrow';
export const PURPOSE_TYPES: readonly PurposeType[] = ['payment', 'escrow'];

/**
 * A batch action's intents (kind transaction.sign_batch): each intent's bytes (hex) and SHA-256, in the
 * order the nonce commits to them, and the transaction POST /v1/transactions made from each (null until
 * then). `intent` and `intent_sha256` of the record repeat the first.
 */
export interface BatchIntents {
  intents: string[];
  sha256: string[];
  transaction_ids: (string | null)[];
}

export interface MemberActionRecord extends CallerBinding {
  v: 1;
  id: string;
  kind: MemberActionKind;
  /** The sign-in (session family) and member the action belongs to, and the member's binding key. */
  family: string;
  member_id: string;
  binding: string;
  /** The member's provider subject: the proof must name it. */
  subject: string;
  application_version: number;
  org: string;
  wallet_id: string;
  vault_id: string;
  /** Hex of the exact intent bytes, and their SHA-256. */
  intent: string;
  intent_sha256: string;
  /** Hex of the 32 random bytes the nonce commits to (core/auth/member-action.ts). */
  salt: string;
  status: MemberActionStatus;
  batch?: BatchIntents;
  /** The payment or escrow a batch action approves for (its authorizer checked the intents). */
  purpose?: { type: PurposeType; id: string };
  revoked_at?: string;
  created_at: string;
  expires_at: string;
  completed_at: string | null;
  /** sha256 of the signing session its completion created. */
  signing_session: string | null;
  used_at: string | null;
  transaction_id: string | null;
}

export interface SigningSessionRecord extends CallerBinding {
  v: 1;
  action_id: string;
  family: string;
  member_id: string;
  binding: string;
  org: string;
  wallet_id: string;
  vault_id: string;
  intent_sha256: string;
  salt: string;
  /** A batch action's digests and transactions; the session is `used` once every intent was submitted. */
  batch?: Omit<BatchIntents, 'intents'>;
  status: 'active' | 'used' | 'revoked';
  /** The ID token, or JSON of a passkey proof (PasskeyProofSeal), sealed to this record; null once used. */
  sealed_proof: string | null;
  /** `passkey` when the proof is a member credential and a WebAuthn assertion; absent for an ID token. */
  proof_kind?: 'passkey';
  created_at: string;
  expires_at: string;
  used_at: string | null;
  transaction_id: string | null;
}

export const pendingIndex = (a: Pick<MemberActionRecord, 'application' | 'member_id' | 'id'>) => [`${a.application}\x00${a.member_id}\x00${a.id}`];

/** What POST /v1/member-actions answers. */
export interface BegunAction {
  id: string;
  status: 'pending_proof';
  kind: MemberActionKind;
  wallet_id: string;
  intent_sha256: string;
  /** A batch action: every intent's SHA-256, in the order the nonce commits to them. */
  intents_sha256?: string[];
  purpose?: { type: PurposeType; id: string };
  expires_at: string;
  /** The nonce (also the WebAuthn challenge); for a BYO OIDC application, the authentication request's parameters. */
  proof: { nonce: string; max_age?: number; prompt?: 'login'; acr_values?: string; required_amr?: string[] };
}

/** A passkey proof as a signing session seals it: the member credential and the assertion, base64url. */
export interface PasskeyProofSeal {
  credential: string;
  assertion: { id: string; authenticator_data: string; client_data_json: string; signature: string };
}

/** What POST /v1/member-actions/external/complete answers. */
export interface CompletedAction {
  id: string;
  status: 'completed';
  signing_session: { id: string; signing_url: string; expires_at: string };
}

/** GET /v1/member-actions/signing-sessions/{id}: status and the frozen operation, nothing that authorizes. */
export interface SigningSessionView {
  status: 'active' | 'used' | 'expired' | 'revoked';
  expires_at: string;
  action_id: string;
  operation: { kind: MemberActionKind; wallet_id: string; intent_sha256: string; intents_sha256?: string[] };
  /** The transaction made from the session (a batch: from its first intent); `transaction_ids` per intent of a batch. */
  transaction_id: string | null;
  transaction_ids?: (string | null)[];
}
