// A customer node identity as `npm run node-identity` prints it, and its enrolment, for API tests that
// need a self vault (a self vault seats an enrolled self node; docs/vault-api.md "Nodes").
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { nodeIdFor } from '../../../core/trust/node-id.ts';
import type { VaultService } from '../../../api/vaults/vault-service.ts';
import type { NodeRecord } from '../../../api/vaults/records.ts';

export function nodeIdentity(): { node_id: string; signing_key: string; encryption_key: string } {
  const sk = ed25519.getPublicKey(ed25519.utils.randomSecretKey());
  return { node_id: nodeIdFor(sk), signing_key: bytesToHex(sk), encryption_key: bytesToHex(x25519.getPublicKey(x25519.utils.randomSecretKey())) };
}

/** Enrols a fresh self node for `org` (without a signed request: no trust-log entry). */
export async function enrolSelfNode(vaults: VaultService, org: string): Promise<NodeRecord> {
  return (await vaults.nodes.enrol(org, { kind: 'self', ...nodeIdentity() })).node;
}
