// Members' passkeys as approvers (docs/policies.md "Members' passkeys"). A member approver approves an
// intent with a WebAuthn assertion whose challenge is the intent approval message (the vault, the policy
// version and the intent hash), by a passkey its member credential vouches for: a JWT under the JWK Set
// the organization registered for end-user auth in its customer-signed trust log, naming the member (its
// `sub`, which the policy names) and the passkey (core/auth/member-credential.ts). Neither the API nor the
// coordinator holds a key that makes either part. Checked here, asynchronously, before the evaluator.
import { hexToBytes } from '@noble/hashes/utils.js';
import { PasskeyProofError, passkeyAssertionProblem, verifyCredentialAssertion, verifyMemberCredential, type CredentialConfig } from '../auth/member-credential.ts';
import type { PasskeyAssertion } from '../session/member-action-binding.ts';
import { passkeyApprovalChallenge, type Approval, type PasskeyApprovalProof } from './policy-approval.ts';
import type { PolicyDocument } from './policy-document.ts';

const HEX = /^(?:[0-9a-f]{2})+$/;

function assertionOf(p: PasskeyApprovalProof): PasskeyAssertion | undefined {
  const parts = [p.credential_id, p.authenticator_data, p.client_data_json, p.signature];
  if (!parts.every((x) => typeof x === 'string' && HEX.test(x))) return undefined;
  return { credentialId: hexToBytes(p.credential_id), authenticatorData: hexToBytes(p.authenticator_data), clientDataJson: hexToBytes(p.client_data_json), signature: hexToBytes(p.signature) };
}

/**
 * The ids of the member approvers whose passkey approvals of `message` verify: the credential under
 * `config` names the member the policy names, and the assertion (its passkey, origins and RP ID, user
 * verified) answers the challenge of `message`. Anything else is left out, with why in `problems`.
 */
export async function verifyPasskeyApprovals(policy: PolicyDocument, message: Uint8Array, approvals: readonly Approval[], config: CredentialConfig | undefined, nowSeconds: number): Promise<{ verified: Set<string>; problems: Map<string, string> }> {
  const verified = new Set<string>();
  const problems = new Map<string, string>();
  const challenge = passkeyApprovalChallenge(message);
  for (const a of approvals) {
    const member = policy.approvers?.find((x) => x.id === a.approver_id)?.member;
    if (member === undefined || a.passkey === undefined) continue;
    if (!config) {
      problems.set(a.approver_id, 'the organization has no end-user auth registration: no member credential verifies');
      continue;
    }
    const assertion = assertionOf(a.passkey);
    const problem = assertion ? passkeyAssertionProblem(assertion) : 'the passkey approval\'s parts are not hex';
    if (problem || !assertion) {
      problems.set(a.approver_id, problem ?? 'malformed');
      continue;
    }
    try {
      const credential = await verifyMemberCredential(config, a.passkey.credential, nowSeconds);
      if (credential.subject !== member) throw new PasskeyProofError('wrong_end_user', `the member credential names another member than approver ${a.approver_id}`);
      await verifyCredentialAssertion(credential, assertion, challenge, 'the passkey assertion\'s challenge is not this intent\'s approval message');
      verified.add(a.approver_id);
    } catch (err) {
      if (!(err instanceof PasskeyProofError)) throw err;
      problems.set(a.approver_id, err.message);
    }
  }
  return { verified, problems };
}
