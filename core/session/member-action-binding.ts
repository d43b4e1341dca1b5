// The member-action binding a signing request may carry (docs/platform/member-actions.md): the action a
// member-action proof answers and the action's salt, and for a passkey proof the WebAuthn assertion.
// The nonce built from them lives in core/auth/member-action.ts; here only the shape every decoder checks.

/** A member action id: `mac_` and 43 base64url characters (256 random bits). */
export const MEMBER_ACTION_ID = /^mac_[A-Za-z0-9_-]{43}$/;
/** Bytes of the salt the API draws for each action. */
export const MEMBER_ACTION_SALT_BYTES = 32;
/** Most intents one batch action may approve (a payment's principal and fee transfers, an escrow's calls). */
export const MEMBER_ACTION_BATCH_MAX = 8;

/** Bounds of a WebAuthn assertion's parts, bytes (authenticator data: 37 plus extensions). */
export const PASSKEY_LIMITS = { credentialId: 1023, authenticatorData: 1024, clientDataJson: 2048, signature: 512 } as const;

/**
 * A WebAuthn assertion (navigator.credentials.get) whose challenge is the action's nonce: the member's
 * passkey answer, made by an authenticator whose public key a customer-signed credential names
 * (core/auth/member-credential.ts).
 */
export interface PasskeyAssertion {
  credentialId: Uint8Array;
  authenticatorData: Uint8Array;
  clientDataJson: Uint8Array;
  signature: Uint8Array;
}

/** What the API forwards to the nodes beside the proof (an ID token, or a passkey's credential). */
export interface MemberActionBinding {
  actionId: string;
  salt: Uint8Array;
  passkey?: PasskeyAssertion;
  /**
   * A batch action: the SHA-256 of every intent the member approved at once, in order (1 to
   * MEMBER_ACTION_BATCH_MAX, pairwise distinct). The nonce then commits to the whole list, and a node
   * signs an intent only when its own digest is one of them. Absent for an action of one intent.
   */
  batch?: Uint8Array[];
}
