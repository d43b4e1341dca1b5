// Nodes run one ECDSA session per OT pair at a time and refuse (after a short wait) a session over a
// pair that is busy (node/runtime/ot-pair-locks.ts). The coordinator keeps to that rule so that honest
// traffic is never refused: each ECDSA session takes a signer subset none of whose pairs is in use,
// and waits for one when every subset has a busy pair. A 2-of-3 vault so runs three sessions at once.

import { BusySet } from '../../common/busy-set.ts';

type Member = { nodeId: string; index: number };

export class OtPairScheduler {
  private readonly pairs = new BusySet();

  /**
   * The first `size` members of `candidates` (in their order, over subsets) that `accept` takes and whose pairs are all free,
   * taken until the returned release is called; waits up to `waitMs` for one, then returns undefined.
   */
  async take<M extends Member>(keyId: string, candidates: M[], size: number, waitMs: number, accept: (subset: M[]) => boolean = () => true): Promise<{ signers: M[]; release: () => void } | undefined> {
    const held = await this.pairs.take(() => {
      const signers = this.freeSubset(keyId, candidates, size, accept);
      return signers && { value: signers, names: pairNames(keyId, signers) };
    }, waitMs);
    return held && { signers: held.value, release: held.release };
  }

  private freeSubset<M extends Member>(keyId: string, candidates: M[], size: number, accept: (subset: M[]) => boolean): M[] | undefined {
    if (candidates.length < size) return undefined;
    // Subsets in lexicographic order of position; committees are small (at most a few dozen subsets).
    let tried = 0;
    const pick: number[] = Array.from({ length: size }, (_, i) => i);
    for (;;) {
      const subset = pick.map((i) => candidates[i]!);
      if (accept(subset) && !pairNames(keyId, subset).some((n) => this.pairs.isBusy(n))) return subset;
      if (++tried >= 256) return undefined;
      let i = size - 1;
      while (i >= 0 && pick[i] === candidates.length - size + i) i--;
      if (i < 0) return undefined;
      pick[i]!++;
      for (let j = i + 1; j < size; j++) pick[j] = pick[j - 1]! + 1;
    }
  }
}

function pairNames(keyId: string, members: Member[]): string[] {
  const ids = members.map((m) => m.index).sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < ids.length; i++) for (let j = i + 1; j < ids.length; j++) out.push(`${keyId}/${ids[i]}-${ids[j]}`);
  return out;
}
