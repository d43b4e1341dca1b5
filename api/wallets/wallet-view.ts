// A wallet as both APIs answer it (core/api-schemas/vaults.ts `Wallet`): the stored record without its
// organization, with the state a record stored before decommissioning existed reads as.
import type { WalletRecord, WalletState } from '../vaults/records.ts';

export const walletState = (w: WalletRecord): WalletState => w.state ?? 'active';

export function walletView(w: WalletRecord) {
  const { org: _org, state: _state, decommissioned_at: _at, ...fields } = w;
  return { ...fields, state: walletState(w), decommissioned_at: w.decommissioned_at ?? null };
}
