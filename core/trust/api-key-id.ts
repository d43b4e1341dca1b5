// API key ids derived from the key itself (docs/trust.md): the API names a key record with this id and
// every signer node computes the same id from the registration request it verifies, so the two agree
// without being told. Domain-separated and length-prefixed, so no other hash in the system collides.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { lengthPrefixed } from '../codec/transcript.ts';

export const API_KEY_ID_DOMAIN = 'custody/api-key-id/v1';
const ORG = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
export const API_KEY_ID = /^key_[0-9a-f]{24}$/;

/** `key_` + the first 24 hex characters of SHA-256(len ‖ domain ‖ len ‖ org ‖ len ‖ public key). */
export function apiKeyId(org: string, publicKeyHex: string): string {
  if (!ORG.test(org)) throw new TypeError('organization is not a valid identifier');
  if (!/^[0-9a-fA-F]{64}$/.test(publicKeyHex)) throw new TypeError('an API key is a 32-byte Ed25519 public key in hex');
  return 'key_' + bytesToHex(sha256(lengthPrefixed([API_KEY_ID_DOMAIN, org, hexToBytes(publicKeyHex.toLowerCase())]))).slice(0, 24);
}
