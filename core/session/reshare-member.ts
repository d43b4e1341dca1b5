// A member of a reshare session: the coordinator numbers the union of the old and new committees and
// the nodes' reshare protocol runs over the same numbering.
import { defined, int, MAX_UINT32, optional, record } from './shape.ts';

export interface ReshareMember {
  party: number;
  /** Id in the old committee, when this member deals. */
  oldId?: number;
  /** Id in the new committee, when this member receives. */
  newId?: number;
}

/** Reads a reshare member from a decoded value (session-contract.ts). */
export function readReshareMember(v: unknown, what: string): ReshareMember {
  const o = record(v, what, ['party'], ['oldId', 'newId']);
  return {
    party: int(o.party, `${what}.party`, 1, MAX_UINT32),
    ...defined({ oldId: optional(o, 'oldId', (x) => int(x, `${what}.oldId`, 1, MAX_UINT32)), newId: optional(o, 'newId', (x) => int(x, `${what}.newId`, 1, MAX_UINT32)) }),
  };
}
