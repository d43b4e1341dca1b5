// The member-session payloads of the member-auth operations (docs/platform/member-auth.md), as the API
// answers them and the SDK's BFF helper reads them: one definition for both sides of the wire.

/** What exchange and refresh return; the exchange's is what a recovery returns again, byte for byte. */
export interface MemberSessionGrant {
  session_id: string;
  refresh_credential: string;
  expires_at: string;
  refresh_expires_at: string;
  application_id: string;
  member: { id: string; created: boolean };
}

/** The safe member context of GET /member-auth/session: no token, no provider claim beyond the member id. */
export interface MemberContext {
  member: { id: string };
  application: { id: string; kind: 'byo_oidc' | 'hosted'; version: number };
  workspace: string;
  environment: string;
  session: { expires_at: string; refresh_expires_at: string; authenticated_at: string; created_at: string };
  acr: string | null;
  amr: string[];
  /** Hosted members only: until when lost-all-factor recovery restricts member actions (null: not restricted). */
  restricted_until?: string | null;
}
