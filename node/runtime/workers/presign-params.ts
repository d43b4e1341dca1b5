// The sealed-storage form of an ECDSA presigning run's parameters, for the start step on a protocol
// worker (offloaded.ts). They hold the key share and the OT material, so they cross the thread boundary
// as sealed bytes (the same secret sections a stored key share and OT setup have), transferred and
// zeroed once read, never as a structured copy. Only the OT material of the run's own pairs goes: the
// pairs with committee members outside the signer set stay on the main thread.
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { SecretBytes } from '../../../core/codec/secret.ts';
import { InputError } from '../../../core/errors/protocol-errors.ts';
import { exposeScalar } from '../../protocols/math/curve.ts';
import { decodeOtSetup, encodeOtSetup, type PeerOt } from '../../protocols/ecdsa/ot-setup.ts';
import type { PresignParams } from '../../protocols/ecdsa/presign.ts';
import type { KeyShareParam } from '../../protocols/keys/key-package.ts';

const KIND = 'ecdsa-presign-params';

interface Sealed {
  sessionId: string;
  signers: number[];
  me: number;
  path: number[];
  key: KeyShareParam;
  /** The run's OT setup in its own sealed-storage codec (encodeOtSetup), trimmed to the run's pairs. */
  ot: Uint8Array;
}

/** Secret: for the worker's start step only; the bytes never leave the process. */
export function encodePresignParams(p: PresignParams): Uint8Array {
  const peers: Record<string, PeerOt> = {};
  for (const j of p.signers) {
    const m = p.ot.peers[String(j)];
    if (j !== p.me && m) peers[String(j)] = m;
  }
  const ot = encodeOtSetup({ ...p.ot, peers });
  try {
    return encodeBlob(KIND, { sessionId: p.sessionId, signers: p.signers, me: p.me, path: p.path, key: p.key, ot } satisfies Sealed, { secrets: true });
  } finally {
    ot.fill(0);
  }
}

export function decodePresignParams(bytes: Uint8Array): PresignParams {
  const v = decodeBlob<Sealed>(KIND, bytes, { secrets: true });
  if (typeof v !== 'object' || v === null || !(v.ot instanceof Uint8Array) || typeof v.key !== 'object' || v.key === null || !(v.key.share instanceof SecretBytes)) {
    throw new InputError('bad_encoding', 'not ECDSA presigning parameters');
  }
  exposeScalar(v.key.share, 'share');
  try {
    return { sessionId: v.sessionId, signers: v.signers, me: v.me, path: v.path, key: v.key, ot: decodeOtSetup(v.ot) };
  } finally {
    v.ot.fill(0);
  }
}
