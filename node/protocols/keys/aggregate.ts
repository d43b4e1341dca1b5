// Combining Feldman dealings into one key: the shared polynomial's commitment is the sum of the
// dealers' commitments, each party's verification share is that commitment evaluated at its id, and a
// receiver's share is the sum of what it was dealt. Used by the DKG and by reshare.
import { Fn, G, Point, evalCommitment, parsePoint, pointHex, type Point as P } from '../math/curve.ts';
import { ProtocolAbort } from '../../../core/errors/protocol-errors.ts';

export interface Aggregate {
  groupCommitment: string[];
  verificationShares: Record<string, string>;
  /** The receiver's share, when `dealt` was given. */
  share?: bigint;
}

/**
 * `commitments`: each dealer's Feldman commitment (t points); `receivers`: ids to compute verification
 * shares for; `dealt`: the shares this party received (one per dealer, reduced scalars), checked against its
 * verification share.
 */
export function aggregateDealings(commitments: string[][], receivers: number[], threshold: number, dealt?: { me: number; shares: bigint[] }): Aggregate {
  const gc: P[] = Array.from({ length: threshold }, () => Point.ZERO);
  for (const C of commitments) {
    if (C.length !== threshold) throw new ProtocolAbort('bad_commitment', [], 'a dealing has the wrong length');
    C.forEach((c, k) => {
      gc[k] = gc[k]!.add(parsePoint(c, `commitment ${k}`));
    });
  }
  if (gc[0]!.is0()) throw new ProtocolAbort('degenerate_key', [], 'group key is the identity');
  const verificationShares: Record<string, string> = {};
  for (const j of receivers) verificationShares[String(j)] = pointHex(evalCommitment(gc, BigInt(j)));
  const out: Aggregate = { groupCommitment: gc.map(pointHex), verificationShares };
  if (dealt) {
    const x = dealt.shares.reduce((acc, s) => Fn.add(acc, s), 0n);
    if (pointHex(G.multiply(x)) !== verificationShares[String(dealt.me)]) throw new ProtocolAbort('inconsistent_share', [], 'own share does not match its verification share');
    out.share = x;
  }
  return out;
}
