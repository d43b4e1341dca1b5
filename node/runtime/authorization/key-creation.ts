// What a node checks before it joins a key generation (docs/trust.md): the carried trust log applies,
// and the customer's signed creation request (POST /v1/vaults) asks for this tier. For a hosted key it
// fixes the end-user binding stored with the share: tokens are required when the organization has an
// end-user auth config at this moment, and the request's end_user_subject, if any, is the only end
// user who can authorize its signatures.
import { SessionRefused } from '../session-host.ts';
import type { ErrorCode } from '../../../core/errors/error-codes.ts';
import { applyCarriedLog } from './carried-log.ts';
import type { TrustRegistry } from './trust-registry.ts';
import { TrustEntryError, type CommitteeBinding, type CreationProof } from './trust-state.ts';
import type { EndUserBinding } from './sign-authorizer.ts';
import { TIER_NAMES, type TierName } from '../../../core/tiers.ts';

export interface KeyCreationRequest {
  owner: string;
  tier: unknown;
  trustLog?: readonly Uint8Array[] | undefined;
  /** The encoded POST /v1/vaults request entry; absent or empty when none. */
  creationRequest?: Uint8Array | undefined;
}

export interface KeyCreationGrant extends CommitteeBinding {
  tier: TierName;
  endUser?: EndUserBinding;
  /** Hash of the creation request, bound to the key so one request creates one key. */
  creationHash?: string;
}

const refuse = (code: ErrorCode, message: string): never => {
  throw new SessionRefused(code, message);
};

export async function authorizeKeyCreation(trust: TrustRegistry, req: KeyCreationRequest): Promise<KeyCreationGrant> {
  if (typeof req.tier !== 'string' || !TIER_NAMES.includes(req.tier as TierName)) refuse('bad_params', 'the key generation names no valid tier');
  const tier = req.tier as TierName;
  const org = await applyCarriedLog(trust, req.owner, req.trustLog);
  let proof: CreationProof | undefined;
  if (req.creationRequest !== undefined && req.creationRequest.length > 0) {
    if (!(req.creationRequest instanceof Uint8Array)) refuse('bad_creation_request', 'the creation request is an encoded entry');
    try {
      proof = await trust.creationProof(req.owner, req.creationRequest);
    } catch (err) {
      if (err instanceof TrustEntryError) return refuse('bad_creation_request', err.message);
      throw err;
    }
    if (proof.tier !== tier) refuse('bad_creation_request', `the customer asked for a ${proof.tier} vault, not ${tier}`);
  }
  // An organization rooted by an operator bootstrap creates keys only on its own signed request.
  // Organizations the node knows only from NODE_API_KEYS_FILE, or not at all, keep the older rule
  // (the coordinator's word) until their log reaches the node.
  if (!proof && org.bootstrap) {
    refuse('bad_creation_request', `a ${tier} key of ${req.owner} needs the customer's signed creation request`);
  }
  const grant: KeyCreationGrant = {
    tier, ...(proof ? { creationHash: proof.hash } : {}),
    // What the customer bound of the committee; the session host checks the parties against it.
    ...(proof?.committee ? { committee: proof.committee } : {}), ...(proof?.customerNode ? { customerNode: proof.customerNode } : {}),
  };
  if (tier === 'hosted' && (org.endUser || proof?.endUserSubject !== undefined)) {
    grant.endUser = { required: org.endUser !== undefined, ...(proof?.endUserSubject !== undefined ? { subject: proof.endUserSubject } : {}) };
  }
  return grant;
}
