// Examples for the OpenAPI document (docs/api-reference.md): written by hand, by operationId, where a
// realistic value matters to a reader; otherwise built from the schema by `exampleOf`. Each one is
// validated against its own schema in test/api/openapi-generators.unit.ts.
type Json = Record<string, unknown>;

export const EXAMPLES: Readonly<Record<string, { request?: unknown; response?: unknown }>> = {
  postWebhookEndpoints: {
    request: { url: 'https://hooks.example.com/custody', events: ['payment.confirmed', 'webhook.test'], description: 'payments backend' },
  },
  postAccountHolders: {
    request: { type: 'individual', given_name: 'Ada', family_name: 'Lovelace', email: 'ada@example.com', reference: 'crm-1042' },
  },
  postNodes: {
    request: { kind: 'self', node_id: 'n3f9a1c2b7d4e8f0a6b5c', signing_key: '8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c', encryption_key: '2f8c6129d816cf51c374bc7f08c3e63ed156cf78aefb4a6550d97b87997977ee', label: 'rack-2' },
  },
  // The code from the authenticator app, for the action it unlocks (docs/platform/tenancy.md).
  postMfaVerifications: { request: { code: '492039', action: 'rotate_secret:whe_01' } },
  // PKCE S256: the challenge is base64url(SHA-256(verifier)), 43 characters (RFC 7636).
  postMemberAuthHostedAuthorizations: {
    request: { redirect_uri: 'https://app.example.com/auth/callback', state: 'af0ifjsldkj', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' },
  },
  postAccountCenterHandoffs: {
    request: { return_url: 'https://app.example.com/settings/security', state: 'af0ifjsldkj', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' },
  },
  postVaults: {
    request: { tier: 'hosted', name: 'treasury' },
  },
};

/** Strings tried, in order, for a string schema with a pattern. */
const PATTERN_CANDIDATES = [
  'example', 'ab', 'a', '0x' + 'ab'.repeat(20), 'ab'.repeat(32), '0x' + 'ab'.repeat(32), '1000000', '1', 'https://example.com',
  '2026-01-01', '2026-01-01T00:00:00.000Z', 'EXAMPLE', 'sandbox', 'ab'.repeat(16), '0x' + 'ab'.repeat(65), 'ab'.repeat(64), 'AAAA', 'ex_01',
  'example.com', '#336699', 'example-1', 'en', 'USD', 'US', 'example_1', 'a.b', '0', 'ab'.repeat(20), 'ab'.repeat(33),
];

const FORMATS: Record<string, string> = {
  'date-time': '2026-01-01T00:00:00.000Z', date: '2026-01-01', email: 'ada@example.com', uri: 'https://example.com/', url: 'https://example.com/',
  uuid: '00000000-0000-4000-8000-000000000000', hostname: 'example.com', ipv4: '192.0.2.1',
};

function stringOf(s: Json): string | undefined {
  const min = typeof s.minLength === 'number' ? s.minLength : 0;
  const max = typeof s.maxLength === 'number' ? s.maxLength : Infinity;
  const fits = (v: string) => v.length >= min && v.length <= max && (typeof s.pattern !== 'string' || new RegExp(s.pattern, 'u').test(v));
  if (typeof s.format === 'string' && FORMATS[s.format] && fits(FORMATS[s.format]!)) return FORMATS[s.format];
  for (const v of ['example', ...PATTERN_CANDIDATES]) if (fits(v)) return v;
  if (typeof s.pattern !== 'string') return 'x'.repeat(Math.max(min, 1));
  return undefined;
}

/** A value that satisfies `schema` (the document's JSON Schema subset), or undefined when none is found. */
export function exampleOf(schema: Json | undefined, depth = 0): unknown {
  if (!schema || depth > 12) return undefined;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (schema.examples && Array.isArray(schema.examples)) return schema.examples[0];
  if ('default' in schema) return schema.default;
  for (const k of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(schema[k])) {
      const alts = (schema[k] as Json[]).slice().sort((a, b) => Number(a.type === 'null') - Number(b.type === 'null'));
      for (const alt of alts) { const v = exampleOf(alt, depth + 1); if (v !== undefined) return v; }
      return undefined;
    }
  }
  if (Array.isArray(schema.allOf)) {
    const parts = (schema.allOf as Json[]).map((s) => exampleOf(s, depth + 1));
    if (parts.some((p) => p === undefined)) return undefined;
    return parts.every((p) => typeof p === 'object' && p !== null && !Array.isArray(p)) ? Object.assign({}, ...parts) : parts[0];
  }
  const type = Array.isArray(schema.type) ? (schema.type as string[]).find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object': case undefined: {
      if (type === undefined && !schema.properties) return type === undefined ? {} : undefined;
      const out: Json = {};
      const required = new Set((schema.required as string[] | undefined) ?? []);
      for (const [k, s] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) {
        const v = exampleOf(s, depth + 1);
        if (v === undefined) { if (required.has(k)) return undefined; continue; }
        out[k] = v;
      }
      return out;
    }
    case 'array': {
      const n = typeof schema.minItems === 'number' ? schema.minItems : 1;
      const maxItems = typeof schema.maxItems === 'number' ? schema.maxItems : Infinity;
      const count = Math.min(Math.max(n, 1), maxItems);
      if (count === 0) return [];
      const item = exampleOf(schema.items as Json, depth + 1);
      if (item === undefined) return n === 0 ? [] : undefined;
      if (schema.uniqueItems && count > 1) return undefined;
      return Array.from({ length: count }, () => item);
    }
    case 'string': return stringOf(schema);
    case 'integer': case 'number': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : 1;
      const max = typeof schema.maximum === 'number' ? schema.maximum : Infinity;
      return Math.min(Math.max(min, 1), max);
    }
    case 'boolean': return true;
    case 'null': return null;
    default: return undefined;
  }
}
