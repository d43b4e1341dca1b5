// The stored shape of the Hosted Account Center (platform-api.md "Confidential exchange rules" 13;
// docs/platform/account-center.md): a handoff is one visit of one hosted member, begun by the BFF from
// that member's session, bound to the application, its publishable key, the BFF principal and the
// session family; it carries context only (which member must authenticate), never authority. Every
// secret the browser or the BFF holds (flow cookie, email code, result code) is stored as a digest.
import { collection } from '../store/collection.ts';
import type { Environment } from '../tenancy/tenancy-service.ts';

export const ACCOUNT_CENTER_COLLECTIONS = {
  /** handoff id → AccountCenterHandoffRecord; index `<retire_after>` for a sweep. */
  handoffs: collection<AccountCenterHandoffRecord>('member_auth_account_center_handoffs'),
  /** sha256(result code) → the handoff it finishes. */
  results: collection<{ handoff: string }>('member_auth_account_center_results'),
} as const;

/** Lifetimes and bounds, seconds unless named otherwise (docs/platform/account-center.md "Limits"). */
export const ACCOUNT_CENTER_LIMITS = {
  /** From the handoff to Finish: the whole visit. */
  handoff: 900,
  /** The result must be exchanged within this. */
  result: 120,
  /** A passkey registration challenge lives this long, and is used once. */
  passkeyChallenge: 300,
  /** Passkeys per member. */
  passkeysPerMember: 5,
  /** A finished handoff is kept this long after its end, so a replayed result is recognized. */
  retain: 86_400,
} as const;

export const HANDOFF_ID = /^hac_[A-Za-z0-9_-]{43}$/;
export const ACCOUNT_CENTER_RESULT = /^acr_[A-Za-z0-9_-]{43}$/;

/**
 * pending → code_sent → (totp →) authenticated → finished → exchanged; locked after too many wrong codes.
 * Factor changes happen only in `authenticated`.
 */
export type HandoffStatus = 'pending' | 'code_sent' | 'totp' | 'authenticated' | 'finished' | 'exchanged' | 'locked';

/** What a visit changed, in the order it happened (the exchange's answer). */
export type AccountCenterChange = 'totp_enrolled' | 'totp_removed' | 'recovery_codes_generated' | 'passkey_enrolled' | 'member_action_approved';

/** A WebAuthn assertion as the page posts it and the exchange answers it (base64url parts). */
export interface PasskeyAssertionFields { id: string; authenticator_data: string; client_data_json: string; signature: string }

export interface AccountCenterHandoffRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  environment: Environment;
  application: string;
  application_version: number;
  publishable_key: string;
  principal: string;
  /** The session family the BFF began the handoff from: only it may exchange the result. */
  family: string;
  /** The expected hosted subject: the only member who can authenticate here. */
  member_id: string;
  /** The application's origin (CSP form-action, with the return URL's). */
  origin: string;
  return_url: string;
  state: string;
  code_challenge: string;
  status: HandoffStatus;
  created_at: string;
  expires_at: string;
  flow_cookie_sha256: string | null;
  /** Whether the typed address was the expected member's (never shown: no enumeration). */
  eligible: boolean;
  code_sha256: string | null;
  code_expires_at: string | null;
  codes_sent: number;
  last_code_sent_at: string | null;
  attempts: number;
  authenticated_at: string | null;
  /** A TOTP secret (hex) being enrolled, until a current code confirms it. */
  pending_totp: string | null;
  changes: AccountCenterChange[];
  /** A passkey registration under way: its options (what the page runs) and challenge, used once. */
  pending_passkey?: { options: string; challenge: string; expires_at: string } | null;
  /**
   * An approval visit (docs/platform/member-actions.md "On the Account Center"): the member action whose
   * nonce the member's Account Center passkey signs here; no factor changes on such a visit.
   */
  member_action_id?: string;
  /** The approval the member gave on the page, which the exchange hands to the BFF for passkey/complete. */
  approval?: { credential: string; assertion: PasskeyAssertionFields } | null;
  result_sha256: string | null;
  result_expires_at: string | null;
  exchanged_at: string | null;
  retire_after: string;
}

export const handoffRetireIndex = (h: Pick<AccountCenterHandoffRecord, 'retire_after'>) => [h.retire_after];
