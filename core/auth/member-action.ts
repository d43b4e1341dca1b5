// Member-action proofs (docs/platform/member-actions.md, platform-api.md "Fresh human authorization for
// member actions"): a fresh OIDC ID token from the customer's identity provider whose `nonce` commits to
// one member action and the exact intent bytes it authorizes. The API picks the action id and a random
// salt, the provider signs the nonce into the token, and every signer node recomputes the nonce from the
// binding (action id, salt) the API forwards and the intent bytes it is asked to sign: a token for
// another intent, action or salt names another nonce, and the API cannot make the provider sign one.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { MEMBER_ACTION_BATCH_MAX, MEMBER_ACTION_ID, MEMBER_ACTION_SALT_BYTES, type MemberActionBinding } from '../session/member-action-binding.ts';

export { MEMBER_ACTION_BATCH_MAX, MEMBER_ACTION_ID, MEMBER_ACTION_SALT_BYTES, type MemberActionBinding };

/** Domain tag of the nonce hash: no other hash of this system starts with these bytes. */
export const MEMBER_ACTION_TAG = 'custody/member-action/v1';
/** Domain tag of a batch action's nonce: a batch nonce and a one-intent nonce never share an input. */
export const MEMBER_ACTION_BATCH_TAG = 'custody/member-action-batch/v1';
/**
 * How old a member-action proof may be at a node, seconds: its `iat` and its `auth_time` (the human's
 * sign-in) both within this of the node's clock. Fixed, so no API setting can stretch it.
 */
export const MEMBER_PROOF_MAX_AGE_S = 600;


/** The binding's problem, or undefined when its fields are well formed. */
export function memberActionProblem(b: MemberActionBinding): string | undefined {
  if (typeof b.actionId !== 'string' || !MEMBER_ACTION_ID.test(b.actionId)) return 'memberAction.actionId is not a member action id (mac_ and 43 base64url characters)';
  if (!(b.salt instanceof Uint8Array) || b.salt.length !== MEMBER_ACTION_SALT_BYTES) return `memberAction.salt is not ${MEMBER_ACTION_SALT_BYTES} bytes`;
  if (b.batch !== undefined) {
    if (!Array.isArray(b.batch) || b.batch.length < 1 || b.batch.length > MEMBER_ACTION_BATCH_MAX) return `memberAction.batch holds 1 to ${MEMBER_ACTION_BATCH_MAX} intent digests`;
    if (b.batch.some((d) => !(d instanceof Uint8Array) || d.length !== 32)) return 'memberAction.batch: every entry is a 32-byte SHA-256 digest';
    if (new Set(b.batch.map((d) => bytesToHex(d))).size !== b.batch.length) return 'memberAction.batch: an intent digest appears twice';
  }
  return undefined;
}

/** tag ‖ u16be(len id) ‖ id ‖ salt: the prefix both nonces share (each under its own tag). */
function noncePrefix(tag: string, actionId: string, salt: Uint8Array): Uint8Array[] {
  const id = utf8ToBytes(actionId);
  if (id.length > 0xffff || salt.length !== MEMBER_ACTION_SALT_BYTES) throw new Error('member action nonce: malformed input');
  return [utf8ToBytes(tag), new Uint8Array([id.length >> 8, id.length & 0xff]), id, salt];
}

const nonceOf = (parts: Uint8Array[]) => {
  const buf = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    buf.set(p, at);
    at += p.length;
  }
  return Buffer.from(sha256(buf)).toString('base64url');
};

/**
 * base64url(SHA-256(tag ‖ u16be(len id) ‖ id ‖ salt ‖ SHA-256(intent))): 43 characters, a valid OIDC
 * nonce. Every part is fixed-length or length-prefixed, so no two inputs share an encoding.
 */
export function memberActionNonce(actionId: string, salt: Uint8Array, intentSha256Hex: string): string {
  const digest = hexToBytes(intentSha256Hex);
  if (digest.length !== 32) throw new Error('member action nonce: malformed input');
  return nonceOf([...noncePrefix(MEMBER_ACTION_TAG, actionId, salt), digest]);
}

/**
 * A batch action's nonce: base64url(SHA-256(batch tag ‖ u16be(len id) ‖ id ‖ salt ‖ u8(n) ‖ d_1 ‖ … ‖ d_n))
 * over the ordered SHA-256 digests of the n intents the member approves at once. The count is fixed
 * width and each digest 32 bytes, so the list has one encoding; its own tag keeps it apart from the
 * one-intent nonce even for n = 1.
 */
export function memberActionBatchNonce(actionId: string, salt: Uint8Array, digestsHex: readonly string[]): string {
  const digests = digestsHex.map((h) => hexToBytes(h));
  if (digests.length < 1 || digests.length > MEMBER_ACTION_BATCH_MAX || digests.some((d) => d.length !== 32)) throw new Error('member action nonce: malformed batch');
  return nonceOf([...noncePrefix(MEMBER_ACTION_BATCH_TAG, actionId, salt), new Uint8Array([digests.length]), ...digests]);
}

/**
 * The nonce a proof must carry for the binding to authorize the intent with this SHA-256, or undefined
 * when the binding is a batch that does not hold the intent. Call after memberActionProblem.
 */
export function memberActionNonceFor(b: MemberActionBinding, intentSha256Hex: string): string | undefined {
  if (b.batch === undefined) return memberActionNonce(b.actionId, b.salt, intentSha256Hex);
  const list = b.batch.map((d) => bytesToHex(d));
  if (!list.includes(intentSha256Hex.toLowerCase())) return undefined;
  return memberActionBatchNonce(b.actionId, b.salt, list);
}

/** Whether two strings are equal, in time that depends on their length only. */
export function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
