// The parameters the coordinator opens each kind of session with, carried as blobs (core/codec/blob.ts)
// of kind 'dkg-params', 'sign-params', 'reshare-params', 'ot-params' and 'epoch-params'; the nodes read
// them with the same types.
import type { KeyPackage } from './key-package.ts';
import type { ReshareMember } from './reshare-member.ts';
import type { SignFields } from './sign-fields.ts';

export interface DkgSessionParams {
  keyId: string;
  owner: string;
  epoch: number;
  threshold: number;
  tier: string;
  /** The owner's trust log (encoded entries, hex) and its signed POST /v1/vaults request (docs/trust.md). */
  trustLog?: string[];
  creationRequest?: string;
  /** The operator-signed service-node roster (core/trust/roster.ts), hex, carried unchanged. */
  roster?: string;
}

export interface SignSessionParams extends SignFields {
  keyId: string;
  epoch: number;
}

export interface ReshareSessionParams {
  keyId: string;
  owner: string;
  oldPkg: KeyPackage;
  newEpoch: number;
  newThreshold: number;
  members: ReshareMember[];
  /** Tier of the new epoch. */
  tier?: string;
  /** The operator-signed service-node roster, hex; the owner's trust log and signed reshare request, hex. */
  roster?: string;
  trustLog?: string[];
  reshareRequest?: string;
}

export interface EpochSessionParams {
  keyId: string;
  epoch: number;
}
