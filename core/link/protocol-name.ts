// The session kinds (proto Protocol) by name, as the coordinator and the nodes label their session
// metrics and logs: one fixed set, so a label never carries what a peer sent.
import { Protocol } from '../../proto/gen/mpc/v1/session_pb.ts';

export type ProtocolName = 'dkg' | 'sign-ecdsa' | 'sign-schnorr' | 'reshare' | 'commit-epoch' | 'abandon-epoch' | 'ot-setup' | 'presign-ecdsa' | 'unknown';

const NAMES: Record<number, ProtocolName | undefined> = {
  [Protocol.DKG]: 'dkg',
  [Protocol.SIGN_ECDSA]: 'sign-ecdsa',
  [Protocol.SIGN_SCHNORR]: 'sign-schnorr',
  [Protocol.RESHARE]: 'reshare',
  [Protocol.COMMIT_EPOCH]: 'commit-epoch',
  [Protocol.ABANDON_EPOCH]: 'abandon-epoch',
  [Protocol.OT_SETUP]: 'ot-setup',
  [Protocol.PRESIGN_ECDSA]: 'presign-ecdsa',
};

/** The kind's name; `unknown` for PROTOCOL_UNSPECIFIED or a value this build does not know. */
export function protocolName(p: Protocol): ProtocolName {
  return NAMES[p] ?? 'unknown';
}
