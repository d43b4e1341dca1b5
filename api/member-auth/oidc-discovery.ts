// JWKS discovery for a BYO OIDC application (OpenID Connect Discovery 1.0 sections 4 and 4.3): the
// discovery document is fetched from `<issuer>/.well-known/openid-configuration`, its `issuer` must equal
// the configured issuer exactly, and its `jwks_uri` must hold a JWKS that jose reads, with at least one
// signing key. Both requests go out through the webhooks' SSRF-safe client (api/webhooks/outbound-http.ts):
// the same destination policy and allow-list, no redirects followed, bounded bodies. Failures name a
// category, never the remote error text.
import { createLocalJWKSet, importJWK, calculateJwkThumbprint, type JWK } from 'jose';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { OutboundHttp } from '../webhooks/outbound-http.ts';
import { checkIssuer, discoveryUrlOf, normalizeRedirectUrl } from './exact-urls.ts';
import type { Environment } from '../tenancy/tenancy-service.ts';

/** The largest discovery document or JWKS read; a longer one is refused, not cut. */
export const MAX_DISCOVERY_BYTES = 64 * 1024;

/** What discovery established about an issuer; stored on the application (no key material kept). */
export interface DiscoveredIssuer {
  jwks_uri: string;
  /** RFC 7638 thumbprints of the JWKS's signing keys when discovered, to see a key rotation later. */
  jwks_thumbprints: string[];
}

/** The JWS algorithm a key without `alg` is imported for, by its type and curve. */
function defaultAlg(jwk: JWK): string | undefined {
  if (jwk.kty === 'RSA') return 'RS256';
  if (jwk.kty === 'EC') return ({ 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' } as Record<string, string>)[jwk.crv ?? ''];
  if (jwk.kty === 'OKP') return jwk.crv === 'Ed25519' ? 'EdDSA' : undefined;
  return undefined;
}

export async function getJson(http: OutboundHttp, url: string, what: string): Promise<Record<string, unknown>> {
  const r = await http.get(url, { accept: 'application/json' });
  if (r.error && r.error !== 'http_status') throw new CustodyError('oidc_discovery_failed', `the ${what} could not be fetched (${r.error}) from ${url}`);
  if (r.status_code !== 200) throw new CustodyError('oidc_discovery_failed', `the ${what} at ${url} answered ${r.status_code ?? 'nothing'}, not 200 (redirects are not followed)`);
  const body = r.response_body ?? '';
  if (Buffer.byteLength(body) > MAX_DISCOVERY_BYTES) throw new CustodyError('oidc_discovery_invalid', `the ${what} at ${url} is larger than ${MAX_DISCOVERY_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new CustodyError('oidc_discovery_invalid', `the ${what} at ${url} is not JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new CustodyError('oidc_discovery_invalid', `the ${what} at ${url} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

/**
 * Fetches and checks the issuer's discovery document and JWKS. `http` must read at least
 * MAX_DISCOVERY_BYTES + 1 bytes of a body, so that a longer one is seen as such.
 */
export async function discoverIssuer(http: OutboundHttp, issuer: string, environment: Environment): Promise<DiscoveredIssuer> {
  checkIssuer(issuer, environment);
  const doc = await getJson(http, discoveryUrlOf(issuer), 'discovery document');
  if (doc.issuer !== issuer) {
    throw new CustodyError('oidc_discovery_invalid', `the discovery document names issuer ${JSON.stringify(typeof doc.issuer === 'string' ? doc.issuer.slice(0, 200) : doc.issuer ?? null)}, not exactly ${issuer}`);
  }
  if (typeof doc.jwks_uri !== 'string') throw new CustodyError('oidc_discovery_invalid', 'the discovery document has no jwks_uri');
  let jwksUri: string;
  try {
    jwksUri = normalizeRedirectUrl(doc.jwks_uri, environment, 'jwks_uri').url;
  } catch (err) {
    throw new CustodyError('oidc_discovery_invalid', `the discovery document's ${(err as Error).message}`);
  }
  const jwks = await getJson(http, jwksUri, 'JWKS');
  try {
    // jose checks the set's shape; each signing key is then imported, so a key jose cannot use fails here, not at the first proof.
    createLocalJWKSet(jwks as { keys: JWK[] });
  } catch {
    throw new CustodyError('oidc_discovery_invalid', `the JWKS at ${jwksUri} is not a JSON Web Key Set`);
  }
  if ((jwks.keys as JWK[]).some((k) => 'd' in k || 'k' in k)) throw new CustodyError('oidc_discovery_invalid', `the JWKS at ${jwksUri} publishes private or symmetric key material`);
  const signing = (jwks.keys as JWK[]).filter((k) => k.use !== 'enc' && (k.key_ops === undefined || k.key_ops.includes('verify')));
  const thumbprints: string[] = [];
  for (const jwk of signing) {
    const alg = jwk.alg ?? defaultAlg(jwk);
    if (!alg) continue;
    try {
      await importJWK(jwk, alg);
      thumbprints.push(await calculateJwkThumbprint(jwk));
    } catch {
      // A key jose cannot import is skipped; the set must still hold one it can.
    }
  }
  if (thumbprints.length === 0) throw new CustodyError('oidc_discovery_invalid', `the JWKS at ${jwksUri} has no public signing key jose can use`);
  return { jwks_uri: jwksUri, jwks_thumbprints: thumbprints.sort() };
}
