// Member-action proofs (docs/platform/member-actions.md, platform-api.md "Fresh human authorization for
// member actions"): a fresh OIDC ID token from the customer's identity provider whose `nonce` commits to
// one member action and the exact intent bytes it authorizes. The API picks the action id and a random
// salt, the provider signs the nonce into the token, and every signer node recomputes the nonce from the
// binding (action id, salt) the API forwards and the intent bytes it is asked to sign: a token for
// another intent, action or salt names another nonce, and the API cannot make the provider sign one.
import { sha256 } from '@noble/hashes/sha2.js';
import { hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { MEMBER_ACTION_ID, MEMBER_ACTION_SALT_BYTES, type MemberActionBinding } from '../session/member-action-binding.ts';

export { MEMBER_ACTION_ID, MEMBER_ACTION_SALT_BYTES, type MemberActionBinding };

/** Domain tag of the nonce hash: no other hash of this system starts with these bytes. */
export const MEMBER_ACTION_TAG = 'custody/member-action/v1';
/**
 * How old a member-action proof may be at a node, seconds: its `iat` and its `auth_time` (the human's
 * sign-in) both within this of the node's clock. Fixed, so no API setting can stretch it.
 */
export const MEMBER_PROOF_MAX_AGE_S = 600;


/** The binding's problem, or undefined when its fields are well formed. */
export function memberActionProblem(b: MemberActionBinding): string | undefined {
  if (typeof b.actionId !== 'string' || !MEMBER_ACTION_ID.test(b.actionId)) return 'memberAction.actionId is not a member action id (mac_ and 43 base64url characters)';
  if (!(b.salt instanceof Uint8Array) || b.salt.length !== MEMBER_ACTION_SALT_BYTES) return `memberAction.salt is not ${MEMBER_ACTION_SALT_BYTES} bytes`;
  return undefined;
}

/**
 * base64url(SHA-256(tag ‖ u16be(len id) ‖ id ‖ salt ‖ SHA-256(intent))): 43 characters, a valid OIDC
 * nonce. Every part is fixed-length or length-prefixed, so no two inputs share an encoding.
 */
export function memberActionNonce(actionId: string, salt: Uint8Array, intentSha256Hex: string): string {
  const id = utf8ToBytes(actionId);
  const digest = hexToBytes(intentSha256Hex);
  if (id.length > 0xffff || salt.length !== MEMBER_ACTION_SALT_BYTES || digest.length !== 32) throw new Error('member action nonce: malformed input');
  const tag = utf8ToBytes(MEMBER_ACTION_TAG);
  const buf = new Uint8Array(tag.length + 2 + id.length + salt.length + digest.length);
  let at = 0;
  buf.set(tag, at);
  at += tag.length;
  buf[at++] = id.length >> 8;
  buf[at++] = id.length & 0xff;
  buf.set(id, at);
  at += id.length;
  buf.set(salt, at);
  at += salt.length;
  buf.set(digest, at);
  return Buffer.from(sha256(buf)).toString('base64url');
}

/** Whether two strings are equal, in time that depends on their length only. */
export function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
