// Builds trust-log entries the way the API will: a customer's request signed as the SDK signs it
// (RFC 9421 with created, expires, nonce and keyid; Content-Digest over the body), captured as an entry.
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { contentDigest } from '../../../core/http/content-digest.ts';
import { signRequest } from '../../../core/http/http-signature.ts';
import { apiKeyId } from '../../../core/trust/api-key-id.ts';
import { requestEntry, type RequestHeaders } from '../../../core/trust/trust-entry.ts';

export const ORIGIN = 'https://api.custody.test';

export interface Signer {
  org: string;
  secret: Uint8Array;
  publicKey: string;
  keyId: string;
}

export function signer(org: string, secret: Uint8Array, keyId?: string): Signer {
  const publicKey = bytesToHex(ed25519.getPublicKey(secret));
  return { org, secret, publicKey, keyId: keyId ?? apiKeyId(org, publicKey) };
}

export interface EntryOptions {
  created?: number;
  nonce?: string;
  origin?: string;
  /** Replaces the body after signing (a tampered entry). */
  tamperBody?: Uint8Array;
}

let counter = 0;

/** A signed request as a trust-log entry. */
export function signedEntry(by: Signer, method: string, path: string, body?: unknown, o: EntryOptions = {}): Uint8Array {
  const url = (o.origin ?? ORIGIN) + path;
  const bytes = body === undefined ? new Uint8Array() : new TextEncoder().encode(JSON.stringify(body));
  const headers: Record<string, string> = {};
  if (bytes.length) {
    headers['content-type'] = 'application/json';
    headers['content-digest'] = contentDigest(bytes);
  }
  const created = o.created ?? 1_795_000_000 + counter;
  const nonce = o.nonce ?? `nonce-${String(++counter).padStart(12, '0')}`;
  const sig = signRequest({ method, url, headers }, {
    keyId: by.keyId, secretKey: by.secret, components: bytes.length ? ['@method', '@target-uri', 'content-digest'] : ['@method', '@target-uri'],
    created, expires: created + 60, nonce,
  });
  const all: RequestHeaders = { ...sig, ...headers };
  return requestEntry({ method, url, headers: all, body: o.tamperBody ?? bytes });
}
