// The attach handshake's signed transcript (docs/transport.md). Both ends build the same bytes; the
// coordinator's per-connection id and nonce make a captured answer useless on any other connection.
import { ed25519 } from '@noble/curves/ed25519.js';
import { lengthPrefixed, utf8 } from '../../common/bytes.ts';
import { NodeKind } from '../../proto/gen/mpc/v1/node_link_pb.ts';

export const LINK_VERSION = 1;
export const ATTACH_DOMAIN = 'mpc/v1/attach';

export interface AttachTranscript {
  coordinatorId: string;
  connectionId: Uint8Array;
  nonce: Uint8Array;
  nodeId: string;
  kind: number;
  owner: string;
  signingKey: Uint8Array;
  encryptionKey: Uint8Array;
}

export function attachMessage(t: AttachTranscript): Uint8Array {
  return lengthPrefixed([
    ATTACH_DOMAIN, t.coordinatorId, t.connectionId, t.nonce, t.nodeId, utf8(String(t.kind)), t.owner, t.signingKey, t.encryptionKey,
  ]);
}

export function verifyAttach(t: AttachTranscript, signature: Uint8Array): boolean {
  try {
    return signature.length === 64 && t.signingKey.length === 32 && ed25519.verify(signature, attachMessage(t), t.signingKey);
  } catch {
    return false;
  }
}

export type NodeKindName = 'service' | 'self' | 'tee';

export const KIND_NAMES: Record<number, NodeKindName | undefined> = {
  [NodeKind.SERVICE]: 'service',
  [NodeKind.SELF]: 'self',
  [NodeKind.TEE]: 'tee',
};

export const KIND_VALUES: Record<NodeKindName, NodeKind> = { service: NodeKind.SERVICE, self: NodeKind.SELF, tee: NodeKind.TEE };
