// The attach handshake's signed transcript (docs/transport.md). Both ends build the same bytes; the
// coordinator's per-connection id and nonce make a captured answer useless on any other connection.
import { utf8 } from '../../common/bytes.ts';
import { lengthPrefixed } from '../codec/transcript.ts';
import { verifyEd25519 } from '../../common/ed25519.ts';

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
  return verifyEd25519(signature, attachMessage(t), t.signingKey);
}
