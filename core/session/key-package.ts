// The public package of a key epoch: the result of key generation and reshare that every party and the
// coordinator may know. The protocols produce it; the coordinator stores it and hands it back to the
// nodes in reshare parameters, so both declare it from here.

export interface KeyPackage {
  keyId: string;
  epoch: number;
  threshold: number;
  parties: number[];
  /** Compressed group public key Y. */
  groupKey: string;
  /** Compressed verification share X_j = x_j·G of every party. */
  verificationShares: Record<string, string>;
  /** Σ of every dealer's Feldman commitment: coefficient k of the shared polynomial, times G. */
  groupCommitment: string[];
  /** 32 bytes hex, jointly random. */
  chainCode: string;
}
