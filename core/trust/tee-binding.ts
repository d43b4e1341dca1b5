// What a TEE node's attestation document carries in `user_data` (docs/tee.md "Binding"): a tagged hash
// of the organization, the node id and both identity keys. A document with this value proves that the
// enclave measured in its PCRs holds these keys, for this organization; the node computes it at start
// and asks its enclave for a document over it, and every verifier recomputes it from the enrolment.
import { hexToBytes } from '@noble/hashes/utils.js';
import { taggedHash } from '../codec/transcript.ts';

export const TEE_BINDING_TAG = 'custody/tee-node-binding/v1';

export function teeNodeBinding(org: string, nodeId: string, signingKeyHex: string, encryptionKeyHex: string): Uint8Array {
  return taggedHash(TEE_BINDING_TAG, [org, nodeId, hexToBytes(signingKeyHex.toLowerCase()), hexToBytes(encryptionKeyHex.toLowerCase())]);
}
