// The operator-signed roster a DKG or reshare names, through the node's roster registry.
import { SessionRefused } from '../session-host.ts';
import type { SignedRoster } from '../../../core/trust/roster.ts';
import type { NodeProtocolDeps } from './session-deps.ts';

export function acceptRoster(deps: NodeProtocolDeps, roster: Uint8Array | undefined): Promise<SignedRoster> {
  if (!deps.rosters) throw new SessionRefused('bad_roster', 'this node keeps no roster and joins no key generation or reshare');
  return deps.rosters.accept(roster);
}
