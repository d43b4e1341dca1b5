// The signing request's fields: the coordinator's sign input and the nodes' sign session parameters
// both extend them, so the two sides cannot drift apart. Bytes stay bytes from the API's gRPC call to
// the node's checks (session-contract.ts carries them as blob sections).

import type { MemberActionBinding } from './member-action-binding.ts';

export type SignScheme = 'ecdsa' | 'taproot' | 'bip340';

export const SIGN_SCHEMES: readonly SignScheme[] = ['ecdsa', 'taproot', 'bip340'];

/** What a signing request carries for the nodes to check (coordinator input, session parameters). */
export interface SignFields {
  /** BIP-32 path below the key (nodes derive only non-hardened steps). */
  path: number[];
  scheme: SignScheme;
  /** 32-byte digests to sign, 1 to 256; every node recomputes each from the intent and template. */
  digests: Uint8Array[];
  // The authorization (coordinator.proto `Authorization`), checked by every node:
  /** Canonical intent bytes (docs/intents.md). */
  intent: Uint8Array;
  /** The customer's 64-byte Ed25519 signature over the intent. */
  intentSignature: Uint8Array;
  /** The API key that signed it. */
  apiKeyId: string;
  /** The service's choices the intent leaves open (nonce and fees, or the unsigned transaction), versioned bytes. */
  template: Uint8Array;
  /** A hosted vault's end-user token naming the intent; empty when none. */
  endUserToken: string;
  /**
   * With a member-action proof as `endUserToken`: the action it answers and the action's salt, from
   * which each node recomputes the proof's nonce (core/auth/member-action.ts).
   */
  memberAction?: MemberActionBinding;
  /** The organization's trust log (encoded entries), applied before anything is checked. */
  trustLog?: Uint8Array[];
  /**
   * A vault under a policy (docs/policies.md): the intent's link of the vault's intent chain, signed by
   * the same API key as the intent.
   */
  chainLink?: Uint8Array;
  /** The vault's links before it, oldest first, each with its intent, as far back as the window needs. */
  chain?: { link: Uint8Array; intent: Uint8Array }[];
  /** Approvals collected for the intent under the vault's policy. */
  approvals?: SessionApproval[];
}

/** An approval as the session carries it (core/policy/policy-approval.ts `Approval`, passed through unread). */
export interface SessionApproval {
  approver_id: string;
  signature: string;
  passkey?: { credential: string; credential_id: string; authenticator_data: string; client_data_json: string; signature: string };
}
