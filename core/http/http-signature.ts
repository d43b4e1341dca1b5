// HTTP Message Signatures (RFC 9421) with Ed25519, as this API profiles them (docs/request-signing.md).
// Structured fields are parsed and serialized by `structured-headers` (RFC 8941); this module builds the
// signature base (RFC 9421 §2.5) from the covered components and checks the profile's rules.
import { signEd25519, verifyEd25519 } from '../../common/ed25519.ts';
import { CustodyError } from '../errors/custody-error.ts';
import { parseDictionary, serializeInnerList, type InnerList, type Item, type Parameters } from 'structured-headers';

export interface SignedRequest {
  method: string;
  /** Absolute URL the client addressed (scheme, authority, path, query). */
  url: string;
  /** Lower-case header names. */
  headers: Record<string, string | string[] | undefined>;
}

/** Why a signature is refused: each an `unauthenticated` code of the registry (core/errors/error-codes.ts). */
export type SignatureReason =
  | 'malformed_signature' | 'missing_signature' | 'missing_component' | 'missing_parameter' | 'unsupported_component'
  | 'unsupported_algorithm' | 'expired' | 'not_yet_valid' | 'validity_too_long' | 'replayed' | 'bad_signature' | 'unknown_signing_key';

/** A refused request signature; its code is the reason, also kept as `reason`. */
export class SignatureError extends CustodyError {
  constructor(readonly reason: SignatureReason, message: string) {
    super(reason, message);
    this.name = 'SignatureError';
  }
}

const fail = (reason: SignatureReason, message: string): never => {
  throw new SignatureError(reason, message);
};

function header(req: SignedRequest, name: string): string | undefined {
  const v = req.headers[name];
  if (v === undefined) return undefined;
  // RFC 9421 §2.1: multiple field lines are combined with ", ".
  return (Array.isArray(v) ? v.join(', ') : v).trim();
}

/** The value of one covered component (RFC 9421 §2.1 fields, §2.2 derived components). */
export function componentValue(req: SignedRequest, name: string): string {
  const url = new URL(req.url);
  switch (name) {
    case '@method':
      return req.method.toUpperCase();
    case '@target-uri':
      return url.href;
    case '@authority':
      return url.host.toLowerCase();
    case '@scheme':
      return url.protocol.replace(':', '').toLowerCase();
    case '@path':
      return url.pathname;
    case '@query':
      return url.search || '?';
    case '@request-target':
      return url.pathname + url.search;
    default: {
      if (name.startsWith('@')) return fail('unsupported_component', `component ${name} is not supported`);
      const v = header(req, name);
      if (v === undefined) return fail('missing_component', `covered header ${name} is absent`);
      return v;
    }
  }
}

/** RFC 9421 §2.5: one line per covered component, then the @signature-params line. */
export function signatureBase(req: SignedRequest, input: InnerList): string {
  const lines: string[] = [];
  for (const [name, params] of input[0]) {
    if (typeof name !== 'string') fail('malformed_signature', 'covered components are strings');
    if (params.size) fail('unsupported_component', 'component parameters are not supported');
    lines.push(`"${name as string}": ${componentValue(req, name as string)}`);
  }
  lines.push(`"@signature-params": ${serializeInnerList(input)}`);
  return lines.join('\n');
}

export interface SignOptions {
  keyId: string;
  secretKey: Uint8Array;
  components: string[];
  created: number;
  expires?: number;
  nonce?: string;
  label?: string;
}

/** Signs a request: returns the Signature-Input and Signature header values. */
export function signRequest(req: SignedRequest, o: SignOptions): { 'signature-input': string; signature: string } {
  const params: Parameters = new Map<string, string | number>([['created', o.created]]);
  if (o.expires !== undefined) params.set('expires', o.expires);
  if (o.nonce !== undefined) params.set('nonce', o.nonce);
  params.set('keyid', o.keyId);
  params.set('alg', 'ed25519');
  const input: InnerList = [o.components.map((c): Item => [c, new Map()]), params];
  const base = signatureBase(req, input);
  const sig = signEd25519(new TextEncoder().encode(base), o.secretKey);
  const label = o.label ?? 'sig';
  return { 'signature-input': `${label}=${serializeInnerList(input)}`, signature: `${label}=:${Buffer.from(sig).toString('base64')}:` };
}

export interface VerifyPolicy {
  /** Components every signature must cover. */
  requiredComponents: string[];
  /** Parameters every signature must carry. */
  requiredParams: string[];
  /** Largest allowed expires - created, seconds. */
  maxValiditySeconds: number;
  /**
   * Clock skew allowed for a `created` ahead of this clock, seconds. It applies there only: `expires` is
   * hard (never accepted after it), and a signature without `expires` is too old once
   * `maxValiditySeconds` after its `created` have passed.
   */
  skewSeconds: number;
}

export interface Verified {
  keyId: string;
  label: string;
  created: number;
  expires?: number;
  nonce?: string;
  components: string[];
}

/**
 * Verifies the request's signature (exactly one label) under the key `lookup` returns for its keyid.
 * Throws SignatureError with a reason; never returns unverified.
 */
export function verifyRequest(req: SignedRequest, lookup: (keyId: string) => Uint8Array | undefined, nowSeconds: number, policy: VerifyPolicy): Verified {
  const inputHeader = header(req, 'signature-input');
  const sigHeader = header(req, 'signature');
  if (!inputHeader || !sigHeader) return fail('missing_signature', 'the request carries no Signature and Signature-Input');
  let inputs;
  let sigs;
  try {
    inputs = parseDictionary(inputHeader);
    sigs = parseDictionary(sigHeader);
  } catch {
    return fail('malformed_signature', 'Signature or Signature-Input is not a structured dictionary');
  }
  if (inputs.size !== 1 || sigs.size !== 1) fail('malformed_signature', 'exactly one signature is expected');
  const [label, input] = [...inputs.entries()][0]!;
  const sigItem = sigs.get(label);
  if (!sigItem) return fail('malformed_signature', `no Signature for label ${label}`);
  if (!Array.isArray(input[0])) return fail('malformed_signature', 'signature input is not an inner list');
  const inner = input as InnerList;
  const sigValue = (sigItem as Item)[0];
  if (!(sigValue instanceof ArrayBuffer) && !ArrayBuffer.isView(sigValue)) return fail('malformed_signature', 'signature is not a byte sequence');
  const signature = new Uint8Array(sigValue instanceof ArrayBuffer ? sigValue : (sigValue as Uint8Array));
  const params = inner[1];
  const keyId = params.get('keyid');
  const created = params.get('created');
  const expires = params.get('expires');
  const nonce = params.get('nonce');
  const alg = params.get('alg');
  for (const p of policy.requiredParams) if (!params.has(p)) fail('missing_parameter', `signature parameter ${p} is required`);
  if (typeof keyId !== 'string') return fail('malformed_signature', 'keyid must be a string');
  if (alg !== undefined && alg !== 'ed25519') fail('unsupported_algorithm', 'only ed25519 is accepted');
  if (created !== undefined && (typeof created !== 'number' || !Number.isInteger(created))) fail('malformed_signature', 'created must be an integer');
  if (expires !== undefined && (typeof expires !== 'number' || !Number.isInteger(expires))) fail('malformed_signature', 'expires must be an integer');
  if (nonce !== undefined && (typeof nonce !== 'string' || nonce.length < 16 || nonce.length > 128)) fail('malformed_signature', 'nonce must be a string of 16 to 128 characters');
  const components = inner[0].map(([c]) => String(c));
  for (const c of policy.requiredComponents) if (!components.includes(c)) fail('missing_component', `the signature must cover ${c}`);
  if (typeof created === 'number') {
    if (created > nowSeconds + policy.skewSeconds) fail('not_yet_valid', 'signature created in the future');
    if (typeof expires === 'number') {
      if (expires < created) fail('malformed_signature', 'expires precedes created');
      if (expires - created > policy.maxValiditySeconds) fail('validity_too_long', `a signature may be valid for ${policy.maxValiditySeconds} s at most`);
    } else if (nowSeconds - created > policy.maxValiditySeconds) fail('expired', 'signature too old');
  }
  // No skew after `expires`: a signature is never accepted once it has expired (docs/request-signing.md).
  if (typeof expires === 'number' && nowSeconds > expires) fail('expired', 'signature expired');
  const key = lookup(keyId);
  if (!key) return fail('unknown_signing_key', 'unknown or revoked key');
  const base = signatureBase(req, inner);
  if (!verifyEd25519(signature, new TextEncoder().encode(base), key)) fail('bad_signature', 'signature does not verify');
  return {
    keyId, label, created: created as number, components,
    ...(typeof expires === 'number' ? { expires } : {}), ...(typeof nonce === 'string' ? { nonce } : {}),
  };
}
