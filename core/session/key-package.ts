// The public package of a key epoch: the result of key generation and reshare that every party and the
// coordinator may know. The protocols produce it; the coordinator stores it and hands it back to the
// nodes in reshare parameters, so both declare it from here. Its points stay hex: the protocols own
// that form.
import { dict, hex, int, list, MAX_UINT32, record, text } from './shape.ts';

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

/** At most this many parties in a package, a session or a reshare (the protocols allow fewer). */
export const MAX_SESSION_PARTIES = 64;

const PARTY_KEY = /^[1-9][0-9]{0,9}$/;

/** Reads a key package from a decoded value: every field present, typed and of its length (session-contract.ts). */
export function readKeyPackage(v: unknown, what = 'pkg'): KeyPackage {
  const o = record(v, what, ['keyId', 'epoch', 'threshold', 'parties', 'groupKey', 'verificationShares', 'groupCommitment', 'chainCode']);
  // Built field by field in the protocols' order: packages are compared by their JSON.
  return {
    keyId: text(o.keyId, `${what}.keyId`, 128, 1),
    epoch: int(o.epoch, `${what}.epoch`, 0, MAX_UINT32),
    threshold: int(o.threshold, `${what}.threshold`, 1, MAX_SESSION_PARTIES),
    parties: list(o.parties, `${what}.parties`, MAX_SESSION_PARTIES, (x, w) => int(x, w, 1, MAX_UINT32), 1),
    groupKey: hex(o.groupKey, `${what}.groupKey`, 33),
    verificationShares: dict(o.verificationShares, `${what}.verificationShares`, MAX_SESSION_PARTIES, PARTY_KEY, (x, w) => hex(x, w, 33)),
    groupCommitment: list(o.groupCommitment, `${what}.groupCommitment`, MAX_SESSION_PARTIES, (x, w) => hex(x, w, 33), 1),
    chainCode: hex(o.chainCode, `${what}.chainCode`, 32),
  };
}
