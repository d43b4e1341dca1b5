// End-to-end protection of node-to-node payloads (DESIGN.md "Transport"). The coordinator relays these
// envelopes as opaque bytes: it can drop or delay them, but not read a direct payload, and not forge,
// alter, redirect or replay any payload without the recipient noticing and naming the failure.
//
// Direct (one recipient): a fresh ephemeral X25519 key per envelope; key = HKDF-SHA256(ikm = X25519(eph,
// recipient), salt = session id, info = domain ‖ header ‖ eph_pub ‖ recipient_pub); ChaCha20-Poly1305 with
// a zero nonce (the key is never reused) and the header as associated data. Broadcast: the payload in the
// clear. Both: the sender's Ed25519 signature over domain ‖ header ‖ eph_pub ‖ body.
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { chacha20poly1305 } from '@noble/ciphers/chacha.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { randomBytes } from 'node:crypto';
import { lengthPrefixed } from '../../common/bytes.ts';
import type { NodeIdentity, PublicIdentity } from '../runtime/identity.ts';

export const ENVELOPE_VERSION = 1;
const SIGN_DOMAIN = 'mpc/v1/envelope/sign';
const KEY_DOMAIN = 'mpc/v1/envelope/key';
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
  /** Ephemeral X25519 public key (direct envelopes), or empty. */
  ephemeral: Uint8Array;
  /** Ciphertext (direct) or plaintext (broadcast). */
  body: Uint8Array;
  signature: Uint8Array;
}

export class EnvelopeError extends Error {
  constructor(
    readonly code: 'bad_version' | 'wrong_session' | 'wrong_recipient' | 'bad_signature' | 'decrypt_failed' | 'malformed',
    readonly culprit: string,
    message: string,
  ) {
    super(message);
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

function signedBytes(h: EnvelopeHeader, ephemeral: Uint8Array, body: Uint8Array): Uint8Array {
  // The body is hashed first so large payloads are not copied into the signed message.
  return lengthPrefixed([SIGN_DOMAIN, headerBytes(h), ephemeral, sha256(body)]);
}

function deriveKey(shared: Uint8Array, h: EnvelopeHeader, ephemeral: Uint8Array, recipientKey: Uint8Array): Uint8Array {
  return hkdf(sha256, shared, h.sessionId, lengthPrefixed([KEY_DOMAIN, headerBytes(h), ephemeral, recipientKey]), 32);
}

/** Encrypts and signs a payload for one recipient. */
export function sealDirect(sender: NodeIdentity, recipient: PublicIdentity, h: Omit<EnvelopeHeader, 'version' | 'from' | 'to'>, payload: Uint8Array): Envelope {
  const header: EnvelopeHeader = { version: ENVELOPE_VERSION, sessionId: h.sessionId, round: h.round, from: sender.nodeId, to: recipient.nodeId };
  const eph = new Uint8Array(randomBytes(32));
  const ephemeral = x25519.getPublicKey(eph);
  const shared = x25519.getSharedSecret(eph, recipient.encryptionKey);
  eph.fill(0);
  const key = deriveKey(shared, header, ephemeral, recipient.encryptionKey);
  shared.fill(0);
  const body = chacha20poly1305(key, ZERO_NONCE, headerBytes(header)).encrypt(payload);
  key.fill(0);
  return { ...header, ephemeral, body, signature: sender.sign(signedBytes(header, ephemeral, body)) };
}

/** Signs a payload for every party of the session. */
export function sealBroadcast(sender: NodeIdentity, h: Omit<EnvelopeHeader, 'version' | 'from' | 'to'>, payload: Uint8Array): Envelope {
  const header: EnvelopeHeader = { version: ENVELOPE_VERSION, sessionId: h.sessionId, round: h.round, from: sender.nodeId, to: '' };
  const ephemeral = new Uint8Array(0);
  return { ...header, ephemeral, body: payload, signature: sender.sign(signedBytes(header, ephemeral, payload)) };
}

/**
 * Verifies an envelope from `senderKey` for this node in `sessionId` and returns the payload.
 * Throws EnvelopeError naming the claimed sender on any failure.
 */
export function open(me: NodeIdentity, sender: PublicIdentity, sessionId: Uint8Array, env: Envelope): Uint8Array {
  const culprit = env.from;
  if (env.version !== ENVELOPE_VERSION) throw new EnvelopeError('bad_version', culprit, `envelope version ${env.version} is not spoken here`);
  if (env.from !== sender.nodeId) throw new EnvelopeError('malformed', culprit, 'envelope sender does not match the expected party');
  if (!equalBytes(env.sessionId, sessionId)) throw new EnvelopeError('wrong_session', culprit, 'envelope belongs to another session');
  if (env.to !== '' && env.to !== me.nodeId) throw new EnvelopeError('wrong_recipient', culprit, 'envelope is addressed to another node');
  let ok = false;
  try {
    ok = env.signature.length === 64 && ed25519.verify(env.signature, signedBytes(env, env.ephemeral, env.body), sender.signingKey);
  } catch {
    ok = false;
  }
  if (!ok) throw new EnvelopeError('bad_signature', culprit, 'envelope signature does not verify');
  if (env.to === '') return env.body;
  if (env.ephemeral.length !== 32) throw new EnvelopeError('malformed', culprit, 'direct envelope lacks an ephemeral key');
  let shared: Uint8Array;
  try {
    shared = me.agree(env.ephemeral);
  } catch {
    throw new EnvelopeError('malformed', culprit, 'ephemeral key is not a valid X25519 point');
  }
  const key = deriveKey(shared, env, env.ephemeral, me.encryptionKey);
  shared.fill(0);
  try {
    return chacha20poly1305(key, ZERO_NONCE, headerBytes(env)).decrypt(env.body);
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
