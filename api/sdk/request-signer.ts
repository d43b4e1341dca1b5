// Client side of request signing (docs/request-signing.md): the headers an SDK adds to each request.
import { randomBytes } from 'node:crypto';
import { contentDigest } from '../../core/http/content-digest.ts';
import { signRequest } from '../../core/http/http-signature.ts';

export interface ApiCredentials {
  keyId: string;
  /** 32-byte Ed25519 secret key. */
  secretKey: Uint8Array;
}

/** Headers for one request: Content-Digest (when there is a body), Signature-Input and Signature. */
export function signedHeaders(creds: ApiCredentials, method: string, url: string, body?: string, now = Math.floor(Date.now() / 1000)): Record<string, string> {
  const headers: Record<string, string> = {};
  const components = ['@method', '@target-uri'];
  if (body !== undefined && body.length > 0) {
    headers['content-type'] = 'application/json';
    headers['content-digest'] = contentDigest(new TextEncoder().encode(body));
    components.push('content-digest');
  }
  const sig = signRequest({ method, url, headers }, {
    keyId: creds.keyId, secretKey: creds.secretKey, components, created: now, expires: now + 60, nonce: randomBytes(16).toString('hex'),
  });
  return { ...headers, ...sig };
}
