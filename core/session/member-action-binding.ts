// The member-action binding a signing request may carry (docs/platform/member-actions.md): the action a
// member-action proof answers and the action's salt. The nonce built from them lives in
// core/auth/member-action.ts; here only the shape every decoder checks.

/** A member action id: `mac_` and 43 base64url characters (256 random bits). */
export const MEMBER_ACTION_ID = /^mac_[A-Za-z0-9_-]{43}$/;
/** Bytes of the salt the API draws for each action. */
export const MEMBER_ACTION_SALT_BYTES = 32;

/** What the API forwards to the nodes beside the ID token. */
export interface MemberActionBinding {
  actionId: string;
  salt: Uint8Array;
}
