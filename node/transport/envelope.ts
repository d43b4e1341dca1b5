// End-to-end protection of node-to-node payloads (DESIGN.md "Transport"). The coordinator relays these
// envelopes as opaque bytes: it can drop or delay them, but not read a direct payload, and not forge,
// alter, redirect or replay any payload without the recipient noticing and naming the failure.
//
// Direct (one recipient): key = HKDF-SHA256(ikm = X25519(sender static, recipient static), salt = session
// id, info = domain ‖ header ‖ key salt ‖ sender_pub ‖ recipient_pub), with 32 fresh random bytes of key
// salt per envelope, so no two envelopes share a key; ChaCha20-Poly1305 with a zero nonce and the header
// as associated data. The static-static secret is computed once per peer (NodeIdentity.agree), which
// takes the X25519 work off every envelope. Broadcast: the payload in the clear. Both: the sender's
// Ed25519 signature over domain ‖ header ‖ key salt ‖ SHA-256(body).
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { randomBytes } from 'node:crypto';
import { lengthPrefixed } from '../../core/codec/transcript.ts';
import { verifyEd25519 } from '../../common/ed25519.ts';
import { chacha20Poly1305 } from '../../common/aead.ts';
import type { NodeIdentity, PublicIdentity } from '../runtime/identity.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';

export const ENVELOPE_VERSION = 2;
const SIGN_DOMAIN = 'mpc/v2/envelope/sign';
const KEY_DOMAIN = 'mpc/v2/envelope/key';
const SALT_BYTES = 32;
const ZERO_NONCE = new Uint8Array(12);

export interface EnvelopeHeader {
  version: number;
  sessionId: Uint8Array;
  round: number;
  from: string;
  /** Recipient node id, or '' for a broadcast. */
  to: string;
}

export interface Envelope extends EnvelopeHeader {
  /** Fresh random key salt (direct envelopes), or empty. */
  keySalt: Uint8Array;
  /** Ciphertext (direct) or plaintext (broadcast). */
  body: Uint8Array;
  signature: Uint8Array;
}

/**
 * An envelope that fails its checks. `culprit` is the claimed sender, for the log; the session host
 * blames the relay, not that party (session-host.ts), so it is not among the error's culprits.
 */
export class EnvelopeError extends CustodyError {
  declare readonly code: 'bad_version' | 'wrong_session' | 'wrong_recipient' | 'bad_signature' | 'decrypt_failed' | 'malformed_envelope';
  constructor(
    code: EnvelopeError['code'],
    readonly culprit: string,
    message: string,
  ) {
    super(code, message);
    this.name = 'EnvelopeError';
  }
}

function headerBytes(h: EnvelopeHeader): Uint8Array {
  return lengthPrefixed([new Uint8Array([h.version]), h.sessionId, u32(h.round), h.from, h.to]);
}

function u32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n);
  return b;
}

function signedBytes(h: EnvelopeHeader, keySalt: Uint8Array, body: Uint8Array): Uint8Array {
  // The body is hashed first so large payloads are not copied into the signed message.
  return lengthPrefixed([SIGN_DOMAIN, headerBytes(h), keySalt, sha256(body)]);
}

function deriveKey(shared: Uint8Array, h: EnvelopeHeader, keySalt: Uint8Array, senderKey: Uint8Array, recipientKey: Uint8Array): Uint8Array {
  return hkdf(sha256, shared, h.sessionId, lengthPrefixed([KEY_DOMAIN, headerBytes(h), keySalt, senderKey, recipientKey]), 32);
}

/** Encrypts and signs a payload for one recipient. */
export function sealDirect(sender: NodeIdentity, recipient: PublicIdentity, h: Omit<EnvelopeHeader, 'version' | 'from' | 'to'>, payload: Uint8Array): Envelope {
  const header: EnvelopeHeader = { version: ENVELOPE_VERSION, sessionId: h.sessionId, round: h.round, from: sender.nodeId, to: recipient.nodeId };
  const keySalt = new Uint8Array(randomBytes(SALT_BYTES));
  const key = deriveKey(sender.agree(recipient.encryptionKey), header, keySalt, sender.encryptionKey, recipient.encryptionKey);
  const body = chacha20Poly1305.seal(key, ZERO_NONCE, headerBytes(header), payload);
  key.fill(0);
  return { ...header, keySalt, body, signature: sender.sign(signedBytes(header, keySalt, body)) };
}

/** Signs a payload for every party of the session. */
export function sealBroadcast(sender: NodeIdentity, h: Omit<EnvelopeHeader, 'version' | 'from' | 'to'>, payload: Uint8Array): Envelope {
  const header: EnvelopeHeader = { version: ENVELOPE_VERSION, sessionId: h.sessionId, round: h.round, from: sender.nodeId, to: '' };
  const keySalt = new Uint8Array(0);
  return { ...header, keySalt, body: payload, signature: sender.sign(signedBytes(header, keySalt, payload)) };
}

/**
 * Verifies an envelope from `senderKey` for this node in `sessionId` and returns the payload.
 * Throws EnvelopeError naming the claimed sender on any failure.
 */
export function open(me: NodeIdentity, sender: PublicIdentity, sessionId: Uint8Array, env: Envelope): Uint8Array {
  const culprit = env.from;
  if (env.version !== ENVELOPE_VERSION) throw new EnvelopeError('bad_version', culprit, `envelope version ${env.version} is not spoken here`);
  if (env.from !== sender.nodeId) throw new EnvelopeError('malformed_envelope', culprit, 'envelope sender does not match the expected party');
  if (!equalBytes(env.sessionId, sessionId)) throw new EnvelopeError('wrong_session', culprit, 'envelope belongs to another session');
  if (env.to !== '' && env.to !== me.nodeId) throw new EnvelopeError('wrong_recipient', culprit, 'envelope is addressed to another node');
  if (!verifyEd25519(env.signature, signedBytes(env, env.keySalt, env.body), sender.signingKey)) throw new EnvelopeError('bad_signature', culprit, 'envelope signature does not verify');
  if (env.to === '') return env.body;
  if (env.keySalt.length !== SALT_BYTES) throw new EnvelopeError('malformed_envelope', culprit, 'direct envelope lacks its key salt');
  let shared: Uint8Array;
  try {
    shared = me.agree(sender.encryptionKey);
  } catch {
    throw new EnvelopeError('malformed_envelope', culprit, 'sender encryption key is not a valid X25519 point');
  }
  const key = deriveKey(shared, env, env.keySalt, sender.encryptionKey, me.encryptionKey);
  try {
    return chacha20Poly1305.open(key, ZERO_NONCE, headerBytes(env), env.body);
  } catch {
    throw new EnvelopeError('decrypt_failed', culprit, 'envelope does not decrypt');
  } finally {
    key.fill(0);
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}
