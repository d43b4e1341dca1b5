// A software passkey: a credential id and a P-256 or Ed25519 key that answer navigator.credentials.get
// in the W3C WebAuthn formats (authenticator data: SHA-256 of the RP ID, flags, a zero counter; client
// data JSON; a DER ECDSA or Ed25519 signature over authData ‖ SHA-256(clientDataJSON)). Every field a
// browser or an authenticator fills in can be overridden, so tests can send what a forger would.
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concatBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import type { PasskeyAssertion } from '../../core/session/member-action-binding.ts';

const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64url');

export interface PasskeyAnswer { challenge?: string; origin?: string; rpId?: string; flags?: number; type?: string; crossOrigin?: boolean; extra?: Record<string, unknown> }

export function softwarePasskey(defaults: { rpId: string; origin: string }, kind: 'p256' | 'ed25519' = 'p256') {
  const id = new Uint8Array(randomBytes(32));
  const secret = kind === 'p256' ? p256.utils.randomSecretKey() : ed25519.utils.randomSecretKey();
  const pub = kind === 'p256' ? p256.getPublicKey(secret, false) : ed25519.getPublicKey(secret);
  /** The public key as the member credential's `cnf.jwk`, its `kid` the credential id. */
  const jwk: Record<string, string> = kind === 'p256'
    ? { kty: 'EC', crv: 'P-256', x: b64(pub.slice(1, 33)), y: b64(pub.slice(33)), kid: b64(id) }
    : { kty: 'OKP', crv: 'Ed25519', x: b64(pub), kid: b64(id) };
  /** The assertion a browser returns for `challenge` (base64url), user present and verified unless `flags` says otherwise. */
  const assert = (challenge: string, a: PasskeyAnswer = {}): PasskeyAssertion => {
    const clientDataJson = utf8ToBytes(JSON.stringify({ type: a.type ?? 'webauthn.get', challenge: a.challenge ?? challenge, origin: a.origin ?? defaults.origin, crossOrigin: a.crossOrigin ?? false, ...a.extra }));
    const authenticatorData = concatBytes(sha256(utf8ToBytes(a.rpId ?? defaults.rpId)), Uint8Array.of(a.flags ?? 0x05), Uint8Array.of(0, 0, 0, 0));
    const signed = concatBytes(authenticatorData, sha256(clientDataJson));
    const signature = kind === 'p256' ? p256.sign(signed, secret, { format: 'der' }) : ed25519.sign(signed, secret);
    return { credentialId: id, authenticatorData, clientDataJson, signature };
  };
  return { id, jwk, assert };
}
