// What every ECDSA presigning run on this node holds (docs/sessions.md "Threshold ECDSA"): the OT pair
// {this node, peer} with every other signer, one run per pair at a time, and the OT material read after
// the pairs are held, so every retirement that landed before is seen. Shared by the signing session
// (presigning then the online round) and the presigning session (entries for the pool).
import { SessionRefused, type SessionContext } from '../session-host.ts';
import type { EcdsaOtSetup } from '../../protocols/ecdsa/ot-setup.ts';
import type { OtPairLocks } from '../ot-pair-locks.ts';
import type { VaultShareStore } from '../../storage/vault-shares.ts';

/** How long an ECDSA session waits for a run over the same OT pair to end before refusing. */
export const OT_PAIR_WAIT_MS = 3_000;

export interface HeldOtPairs {
  peers: number[];
  ot: EcdsaOtSetup;
  release: () => void;
}

export async function holdOtPairs(vault: VaultShareStore, otLocks: OtPairLocks, ctx: SessionContext, keyId: string): Promise<HeldOtPairs> {
  const peers = ctx.parties.map((x) => x.index).filter((i) => i !== ctx.myIndex);
  const release = await otLocks.acquire(keyId, peers, OT_PAIR_WAIT_MS);
  try {
    const ot = await vault.ot(keyId);
    if (!ot) throw new SessionRefused('no_ot_setup', 'no OT setup for this key epoch yet');
    const missing = peers.filter((i) => !ot.peers[String(i)]);
    if (missing.length) throw new SessionRefused('no_ot_setup', `no OT material with parties ${missing.join(',')} yet; a setup of those pairs is needed`);
    const retired = peers.filter((i) => ot.retired.includes(i));
    if (retired.length) throw new SessionRefused('ot_retired', `OT material with parties ${retired.join(',')} was retired after an abort; a new setup is needed`);
    return { peers, ot, release };
  } catch (err) {
    release();
    throw err;
  }
}
