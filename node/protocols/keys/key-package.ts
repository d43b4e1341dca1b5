// The output of key generation or reshare. The public package is what every party and the coordinator
// may know; the secret share is a distinct type that prints as <redacted> and leaves the node only in
// sealed storage.
import { InputError } from '../../../core/errors/protocol-errors.ts';
import { G, Point, exposeScalar, parsePoint, parseScalar, pointHex, secretScalar, type Point as P } from '../math/curve.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { REDACTED, SecretBytes } from '../../../core/codec/secret.ts';
import { BoundedMemo } from '../../../common/memo.ts';
import { taggedHash } from '../../../core/codec/transcript.ts';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { KeyPackage } from '../../../core/session/key-package.ts';

export class SecretShare {
  readonly #value: bigint;
  constructor(readonly id: number, value: bigint) {
    this.#value = value;
  }
  /** For protocol code only. */
  scalar(): bigint {
    return this.#value;
  }
  toJSON(): string {
    return REDACTED;
  }
  toString(): string {
    return REDACTED;
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `SecretShare(${this.id}, ${REDACTED})`;
  }
}

export interface KeyShare {
  share: SecretShare;
  pkg: KeyPackage;
}

/**
 * A stored key share as protocol parameters carry it: plain data (a run that holds it still encodes,
 * for sealed storage only), the share as a 32-byte SecretBytes.
 */
export interface KeyShareParam {
  id: number;
  share: SecretBytes;
  pkg: KeyPackage;
}

export function keyShareParam(k: KeyShare): KeyShareParam {
  return { id: k.share.id, share: secretScalar(k.share.scalar()), pkg: k.pkg };
}

/** Checks a package's internal consistency: points valid, X_j from the commitment, Y = C_0. */
export function checkKeyPackage(pkg: KeyPackage): void {
  if (pkg.groupCommitment.length !== pkg.threshold) throw new InputError('bad_package', 'group commitment length differs from the threshold');
  const C = pkg.groupCommitment.map((c, k) => parsePoint(c, `commitment ${k}`));
  if (pointHex(C[0]!) !== pkg.groupKey) throw new InputError('bad_package', 'group key is not the constant commitment');
  for (const p of pkg.parties) {
    const X = parsePoint(pkg.verificationShares[String(p)], `verification share ${p}`);
    let acc: P = Point.ZERO;
    for (let k = C.length - 1; k >= 0; k--) acc = acc.multiplyUnsafe(BigInt(p)).add(C[k]!);
    if (!acc.equals(X)) throw new InputError('bad_package', `verification share ${p} does not match the commitment`);
  }
  if (!/^[0-9a-f]{64}$/.test(pkg.chainCode)) throw new InputError('bad_package', 'chain code is 32 bytes');
}

/**
 * Sealed-storage form of a key share (secret!): the share is a secret section of the blob. Records
 * written before that hold it as 64 hex characters; decodeKeyShare reads both.
 */
export function encodeKeyShare(k: KeyShare): Uint8Array {
  return encodeBlob('key-share', { id: k.share.id, share: secretScalar(k.share.scalar()), pkg: k.pkg }, { secrets: true });
}

/**
 * Digests of encoded key shares that passed the checks below. A node loads its share for every
 * session; the checks (five square roots, a constant-time product) then run once per stored record.
 * Only a hash of the encoding is kept, never the share.
 */
const checkedShares = new BoundedMemo<true>(1024);

export function decodeKeyShare(bytes: Uint8Array): KeyShare {
  const v = decodeBlob<{ id: number; share: SecretBytes | string; pkg: KeyPackage }>('key-share', bytes, { secrets: true });
  const share = new SecretShare(v.id, v.share instanceof SecretBytes ? exposeScalar(v.share, 'share') : parseScalar(v.share, 'share'));
  // The decoded copy is not needed any more: the share lives in its SecretShare.
  if (v.share instanceof SecretBytes) v.share.zeroize();
  checkedShares.get(bytesToHex(taggedHash('custody/key-share/checked/v1', [bytes])), () => {
    checkKeyPackage(v.pkg);
    if (!G.multiply(share.scalar()).equals(parsePoint(v.pkg.verificationShares[String(v.id)], 'own verification share'))) {
      throw new InputError('bad_package', 'share does not match its verification share');
    }
    return true;
  });
  return { share, pkg: v.pkg };
}
