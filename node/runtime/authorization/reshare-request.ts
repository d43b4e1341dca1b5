// The customer's signed reshare request (POST /v1/vaults/{id}/reshare) as a node checks it before it
// joins a reshare (docs/trust.md "Committees"): the carried trust log applies, the request is signed
// by an active key of the owner, names this key and, when it names one, the target tier; what it binds
// of the new committee (the node ids shown, the customer's node) goes to the committee check.
import { SessionRefused } from '../session-host.ts';
import { applyCarriedLog } from './carried-log.ts';
import type { TrustRegistry } from './trust-registry.ts';
import { TrustEntryError, type CommitteeBinding, type ReshareProof } from './trust-state.ts';
import type { TierName } from '../../../core/tiers.ts';

export interface ReshareRequestInput {
  owner: string;
  keyId: string;
  /** Tier of the new epoch. */
  tier: string;
  /** The epoch the reshare deals from (the old package's). */
  fromEpoch: number;
  trustLog?: readonly Uint8Array[] | undefined;
  /** The encoded POST /v1/vaults/{id}/reshare request entry; absent or empty when none. */
  reshareRequest?: Uint8Array | undefined;
}

const refuse = (message: string): never => {
  throw new SessionRefused('bad_reshare_request', message);
};

/** What the customer's signed reshare request asks, when the session carries one. */
export interface ReshareGrant extends CommitteeBinding {
  /** Whether a customer-signed request came with the session (and verified). */
  requested: boolean;
  targetTier?: TierName;
  /** The rotation (epoch) the request was made at. */
  rotation?: number;
}

/** What the customer's request binds of the new committee; `requested: false` when the session carries none. */
export async function authorizeReshareRequest(trust: TrustRegistry, req: ReshareRequestInput): Promise<ReshareGrant> {
  // The log applies either way: the committee check reads the owner's enrolled nodes from it.
  await applyCarriedLog(trust, req.owner, req.trustLog);
  if (req.reshareRequest === undefined || req.reshareRequest.length === 0) return { requested: false };
  if (!(req.reshareRequest instanceof Uint8Array)) refuse('the reshare request is an encoded entry');
  let proof: ReshareProof;
  try {
    proof = await trust.reshareProof(req.owner, req.reshareRequest);
  } catch (err) {
    if (err instanceof TrustEntryError) return refuse(err.message);
    throw err;
  }
  if (proof.vaultId !== req.keyId) refuse(`the customer's reshare request is for ${proof.vaultId}, not ${req.keyId}`);
  if (proof.targetTier !== undefined && proof.targetTier !== req.tier) refuse(`the customer asked to move to ${proof.targetTier}, not ${req.tier}`);
  if (proof.rotation !== undefined && proof.rotation !== req.fromEpoch) refuse(`the customer's reshare request was made at rotation ${proof.rotation}; the vault is at ${req.fromEpoch}`);
  return {
    requested: true, ...(proof.targetTier ? { targetTier: proof.targetTier } : {}), ...(proof.rotation !== undefined ? { rotation: proof.rotation } : {}),
    ...(proof.committee ? { committee: proof.committee } : {}), ...(proof.customerNode ? { customerNode: proof.customerNode } : {}),
  };
}
