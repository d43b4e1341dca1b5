// Whether a vault can sign now, as GET /v1/vaults/{vaultId} shows it (docs/vault-api.md "Signing
// readiness"): the coordinator that holds the vault knows which committee members are attached and which
// ECDSA OT pairs have material; the API asks it, briefly, and says `unknown` when it does not answer.
import type { EcdsaReadiness } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import type { CoordinatorShards } from '../coordinator/coordinator-shards.ts';
import type { VaultRecord } from './records.ts';

export interface SigningView {
  ecdsa: 'ready' | 'unavailable' | 'unknown';
  reason: 'members_detached' | 'ot_pairs_missing' | 'coordinator_unreachable' | null;
  detached_members: string[];
  missing_pairs: string[];
  message: string | null;
}

/** How long GET /v1/vaults/{vaultId} waits for the coordinator's answer before it says `unknown`. */
export const SIGNING_READINESS_TIMEOUT_MS = 1_000;

/** The coordinator's readiness of an active vault as the API shows it. */
export function signingView(r: EcdsaReadiness): SigningView {
  const reason = r.reason === 'members_detached' || r.reason === 'ot_pairs_missing' ? r.reason : null;
  return { ecdsa: r.ready ? 'ready' : 'unavailable', reason: r.ready ? null : reason, detached_members: [...r.detached], missing_pairs: [...r.missingPairs], message: r.message || null };
}

/** Null for a vault that is not active (its `state` and `problem` say why it cannot sign). */
export async function signingReadiness(coordinators: CoordinatorShards | undefined, v: VaultRecord): Promise<SigningView | null> {
  if (v.state !== 'active') return null;
  const unknown: SigningView = { ecdsa: 'unknown', reason: 'coordinator_unreachable', detached_members: [], missing_pairs: [], message: 'the coordinator holding this vault did not answer' };
  if (!coordinators) return unknown;
  try {
    const info = (await coordinators.forVault(v).getVault({ vaultId: v.id }, { deadline: Date.now() + SIGNING_READINESS_TIMEOUT_MS })).vault;
    return info?.ecdsa ? signingView(info.ecdsa) : unknown;
  } catch {
    return unknown;
  }
}
