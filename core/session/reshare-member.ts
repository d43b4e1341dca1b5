// A member of a reshare session: the coordinator numbers the union of the old and new committees and
// the nodes' reshare protocol runs over the same numbering.

export interface ReshareMember {
  party: number;
  /** Id in the old committee, when this member deals. */
  oldId?: number;
  /** Id in the new committee, when this member receives. */
  newId?: number;
}
