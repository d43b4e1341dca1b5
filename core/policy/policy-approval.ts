// Approvals (docs/policies.md "Approvals"): an approver's Ed25519 signature over a domain-separated hash
// that binds the vault, the policy version in force and the exact intent (or, for a policy change, the
// new policy's hash). An approval of one intent, vault or policy version is nothing for another.
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { lengthPrefixed } from '../codec/transcript.ts';
import { verifyEd25519 } from '../../common/ed25519.ts';

export interface Approval {
  approver_id: string;
  /** A key approver's Ed25519 signature, 128 hex characters; empty for a member's passkey approval. */
  signature: string;
  /** A member approver's passkey approval (docs/policies.md "Members' passkeys"). */
  passkey?: PasskeyApprovalProof;
}

/**
 * A member's approval with a passkey: its member credential (a JWT under the organization's end-user
 * auth keys, naming the member and the passkey) and a WebAuthn assertion whose challenge is the approval
 * message, base64url. Bytes in lower-case hex.
 */
export interface PasskeyApprovalProof {
  credential: string;
  credential_id: string;
  authenticator_data: string;
  client_data_json: string;
  signature: string;
}

/** The WebAuthn challenge of a passkey approval of `message`: its 32 bytes, base64url. */
export function passkeyApprovalChallenge(message: Uint8Array): string {
  return Buffer.from(message).toString('base64url');
}

const HEX32 = /^[0-9a-f]{64}$/;

/** The 32 bytes an approver signs to approve intent `intentHash` (SHA-256 of its bytes, hex) under policy `policyVersion`. */
export function intentApprovalMessage(vaultId: string, policyVersion: number, intentHash: string): Uint8Array {
  if (!HEX32.test(intentHash)) throw new Error('intent hash must be 32 bytes of lower-case hex');
  return sha256(lengthPrefixed(['custody/policy-approval/intent/v1', vaultId, policyVersion, hexToBytes(intentHash)]));
}

/**
 * The 32 bytes an approver signs to reject intent `intentHash` under policy `policyVersion`: the API ends
 * the transaction `rejected` on it. Nodes never need it (an intent not approved is not signed anyway); its
 * own domain keeps a rejection from ever counting as an approval.
 */
export function intentRejectionMessage(vaultId: string, policyVersion: number, intentHash: string): Uint8Array {
  if (!HEX32.test(intentHash)) throw new Error('intent hash must be 32 bytes of lower-case hex');
  return sha256(lengthPrefixed(['custody/policy-rejection/intent/v1', vaultId, policyVersion, hexToBytes(intentHash)]));
}

/** The 32 bytes an approver signs to approve replacing policy `fromVersion` with the policy hashing to `policyHash`. */
export function policyChangeApprovalMessage(vaultId: string, fromVersion: number, policyHash: string): Uint8Array {
  if (!HEX32.test(policyHash)) throw new Error('policy hash must be 32 bytes of lower-case hex');
  return sha256(lengthPrefixed(['custody/policy-approval/change/v1', vaultId, fromVersion, hexToBytes(policyHash)]));
}

/** Signs an approval (the SDK's job; the approver's secret never reaches the service). */
export function signApproval(approverId: string, message: Uint8Array, secretKey: Uint8Array): Approval {
  return { approver_id: approverId, signature: bytesToHex(ed25519.sign(message, secretKey)) };
}

export function verifyApproval(a: Approval, message: Uint8Array, publicKeyHex: string): boolean {
  if (!/^[0-9a-f]{128}$/.test(a.signature)) return false;
  return verifyEd25519(hexToBytes(a.signature), message, hexToBytes(publicKeyHex));
}
