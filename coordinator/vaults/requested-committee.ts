// What a customer's signed creation or reshare request asks of the committee (docs/trust.md
// "Committees"): the node ids it was shown and its own node. The coordinator reads them only to seat
// that committee; it verifies nothing here, since every node verifies the request itself and refuses
// any other committee.
import { decodeTrustEntry } from '../../core/trust/trust-entry.ts';

export interface RequestedCommittee {
  nodeIds?: string[];
  customerNodeId?: string;
}

const NODE_ID = /^n[0-9a-f]{20}$/;

/** The committee hints of an encoded request entry; empty when there are none or it does not parse. */
export function requestedCommittee(request: Uint8Array | undefined): RequestedCommittee {
  if (!request?.length) return {};
  try {
    const entry = decodeTrustEntry(request);
    if (entry.kind !== 'request' || !entry.body.length) return {};
    const body = JSON.parse(new TextDecoder().decode(entry.body)) as { committee?: unknown; customer_node?: { node_id?: unknown } };
    const out: RequestedCommittee = {};
    if (Array.isArray(body.committee) && body.committee.every((x) => typeof x === 'string' && NODE_ID.test(x))) out.nodeIds = [...(body.committee as string[])];
    const id = body.customer_node?.node_id;
    if (typeof id === 'string' && NODE_ID.test(id)) out.customerNodeId = id;
    return out;
  } catch {
    return {};
  }
}
