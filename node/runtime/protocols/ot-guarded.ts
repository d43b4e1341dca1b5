// Wraps an ECDSA presigning run so that its OT material is used only while the node's own stored
// record says it may be (DKLs23 over KOS; GHSA-7f6p-phw2-8253). Before any message derived from the
// OT state leaves, the pair record is read again from the store (a pair whose material was retired or
// replaced stops the run); after an abort, the pairs it concerns are retired there, by peer and pair
// setup id, merged under the key's lock, before the abort is reported. An abort that names no peer (or
// only this node) retires every peer of the run: a tampered extension may hide behind a failure this
// node cannot pin on anyone.
import { currentPairId, isRetired, type VaultShareStore } from '../../storage/vault-shares.ts';
import type { PartyProtocol, Step } from '../party-protocol.ts';

export interface OtGuard {
  vault: VaultShareStore;
  keyId: string;
  me: number;
  /** The other signers of the run. */
  peers: number[];
  /** Per peer, the setup id of the pair material the run uses. */
  pairIds: Record<string, string>;
}

/** The pair setup ids of the material `peers` use in `ot`. */
export const pairIdsOf = (ot: { peers: Record<string, { setupId: string }> }, peers: number[]): Record<string, string> =>
  Object.fromEntries(peers.map((p) => [String(p), ot.peers[String(p)]!.setupId]));

export function otGuarded(run: PartyProtocol, g: OtGuard): PartyProtocol {
  const stillUsable = async (step: Step): Promise<Step> => {
    if (step.kind === 'abort') {
      const named = step.culprits.filter((c) => c !== g.me && g.peers.includes(c));
      await g.vault.retireOtPairs(g.keyId, (named.length ? named : g.peers).map((peer) => ({ peer, setupId: g.pairIds[String(peer)]! })));
      return step;
    }
    if (!step.out.length) return step;
    const rec = await g.vault.otRetirement(g.keyId);
    const superseded = rec !== undefined && g.peers.some((p) => currentPairId(rec, p) !== g.pairIds[String(p)]);
    const retired = rec && !superseded ? g.peers.filter((p) => isRetired(rec, p, g.pairIds[String(p)]!)) : [];
    if (superseded || retired.length) {
      // Nothing of this step leaves: the material it used may not serve any more.
      run.dispose();
      return { kind: 'abort', code: 'ot_retired', message: superseded ? 'OT material of the run was replaced during it' : `OT material with parties ${retired.join(',')} was retired during the run`, culprits: [] };
    }
    return step;
  };
  return {
    start: async () => stillUsable(await run.start()),
    deliver: async (from, round, payload, broadcast) => stillUsable(await run.deliver(from, round, payload, broadcast)),
    dispose: () => run.dispose(),
  };
}
