// What the OpenAPI document adds to the routes' own schemas so that client generators and linters can use
// it (docs/api-reference.md), applied once to the whole document by @fastify/swagger's `transformObject`
// in api/app.ts, so no route file has to carry it: an operationId for every operation (one rule, a few
// overrides), a description for every operation, the error body named in `components` and referenced by
// every error response, the request headers (Idempotency-Key, the request signature) and response
// headers (X-Request-Id, Retry-After) where they apply, an example for every request body and success
// response, and the webhook payloads as OpenAPI 3.1 `webhooks`. test/api/openapi-generators.unit.ts
// lints the result and generates a client from it.
import { EVENT_TYPES } from '../webhooks/event-catalog.ts';
import { DESCRIPTIONS } from './descriptions.ts';
import { EXAMPLES, exampleOf } from './examples.ts';

type Json = Record<string, unknown>;
export interface OpenApiDocument extends Json {
  paths: Record<string, Record<string, Json>>;
  components?: Json & { schemas?: Record<string, Json>; securitySchemes?: Record<string, Json> };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

/** Operation ids that the rule would make awkward, by `METHOD /path`; each still unique (the test checks). */
export const OPERATION_ID_OVERRIDES: Readonly<Record<string, string>> = {
  'GET /healthz': 'getLiveness',
  'GET /readyz': 'getReadiness',
  'GET /v1/account-center/passkey.js': 'getAccountCenterPasskeyScript',
};

function camel(words: string[]): string {
  return words.filter((w) => w.length > 0).map((w, i) => (i === 0 ? w.toLowerCase() : w[0]!.toUpperCase() + w.slice(1).toLowerCase())).join('');
}

/**
 * The operationId rule (docs/api-reference.md): the method in lower case, then each segment of the path
 * after `/v1`, split on `-`, `_` and `.` and capitalized; a path parameter `{x}` becomes `ByX`.
 * `GET /v1/webhook-endpoints/{id}` is `getWebhookEndpointsById`, `POST /v1/webhook-endpoints/{id}/rotate`
 * is `postWebhookEndpointsByIdRotate`. Method and path are unique, so the ids are; an override replaces
 * the few that read badly.
 */
export function operationIdOf(method: string, path: string): string {
  const override = OPERATION_ID_OVERRIDES[`${method.toUpperCase()} ${path}`];
  if (override) return override;
  const words = [method.toLowerCase()];
  for (const segment of path.replace(/^\/v1(?=\/|$)/, '').split('/').filter(Boolean)) {
    const param = /^\{(.+)\}$/.exec(segment);
    const parts = (param ? param[1]! : segment).split(/[-_.]|(?=[A-Z])/);
    words.push(...(param ? ['by', ...parts] : parts));
  }
  return camel(words);
}

const ERROR_REF = { $ref: '#/components/schemas/Error' };
const ERROR_TEXT: Record<string, string> = {
  400: 'Bad request: malformed input (`invalid_request`)',
  401: 'No credential, or an invalid one (`unauthorized`)',
  403: 'The credential may not do this (`forbidden`, a missing permission or MFA proof)',
  404: 'No such record, or another workspace\'s (`not_found`)',
  409: 'A conflict with the record\'s state, or an Idempotency-Key reused with another body',
  412: 'A precondition (If-Match) no longer holds',
  422: 'A refused value; `fields` names each field and why (`validation_failed`)',
  428: 'A precondition is required (If-Match)',
  429: 'Too many requests (`rate_limited`); retry after `Retry-After` seconds',
  500: 'Internal error (`internal`)',
  502: 'A dependency answered badly (the chain, a rail, a signer node)',
  503: 'A dependency is unavailable; retry later',
};

/** How the vault API's request is signed, as header parameters; the `httpSignature` scheme carries `Signature`. */
function signatureHeaders(required: boolean, body: boolean): Json[] {
  const why = required ? 'Required on every vault-API request' : 'Required with `svc_live_` keys for a change (the production signature)';
  return [
    { name: 'Signature-Input', in: 'header', required: false, schema: { type: 'string' },
      description: `${why}: the RFC 9421 signature parameters (covered components, created, expires, nonce, keyid). Added with \`Signature\` by the signer (docs/request-signing.md); declared optional so a generated client can leave it to a middleware.` },
    ...(body ? [{ name: 'Content-Digest', in: 'header', required: false, schema: { type: 'string' },
      description: `${why} with a body: the RFC 9530 digest of the body (\`sha-256=:…:\`), covered by the signature.` }] : []),
  ];
}

/** The operations that read an Idempotency-Key, by `METHOD /path`: `true` when it is required. */
export const IDEMPOTENCY: Readonly<Record<string, boolean>> = {
  'POST /v1/vaults': false, 'POST /v1/webhook-endpoints': false, 'POST /v1/webhook-endpoints/{id}/test': false, 'PUT /v1/branding': false,
  'POST /v1/account-holders': false, 'POST /v1/account-holders/self/wallet-provision': false, 'POST /v1/account-holders/self/bank-transfers': false,
  'POST /v1/account-holders/self/data-exports': false, 'POST /v1/contacts': false, 'POST /v1/wallets/{walletId}/decommission': false,
  'POST /v1/integration-gateways': false, 'POST /v1/integration-gateways/{id}/conformance': false, 'POST /v1/onboarding/setup': false,
  'POST /v1/tenant/member-auth/applications/{id}/members': false, 'POST /v1/tenant/member-auth/allowed-origins': false,
  'POST /v1/tenant/member-auth/redirect-urls': false, 'PUT /v1/tenant/member-auth/application': false, 'POST /v1/tenant/member-auth/applications/hosted': false,
  'POST /v1/payments': true, 'POST /v1/escrows': true, 'POST /v1/escrows/{id}/cancel': true, 'POST /v1/payment-requests': true,
  'POST /v1/payment-requests/{id}/approve': true, 'POST /v1/funding-requests': true, 'POST /v1/off-ramp-requests': true, 'POST /v1/fee-schedules': true,
  'POST /v1/tokenization/authorities': true, 'POST /v1/tokenization/authorities/{id}/proof-challenge': true, 'POST /v1/tokenization/authorities/{id}/proof': false,
  'POST /v1/tokenization/authorities/control-safes': true, 'POST /v1/tokenization/tokens/{id}/deploy/resume': true, 'POST /v1/tokenization/tokens/{id}/policy-mint': true,
  'POST /v1/tokenization/tokens/{id}/operations/{opId}/signatures': false, 'POST /v1/tokenization/tokens/{id}/operations/{opId}/module-signature': false,
  'POST /v1/tokenization/tokens/{id}/nft-transfers/build': false, 'POST /v1/tokenization/tokens/{id}/nft-transfers': true,
  'POST /v1/tokenization/tokens/{id}/gasless/transfer-request': false, 'POST /v1/tokenization/tokens/{id}/gasless/relay': true,
  'POST /v1/rwa/tokens/{id}/documents/upload-url': true, 'POST /v1/rwa/tokens/{id}/documents/confirm': true, 'POST /v1/rwa/tokens/{id}/document-entitlements': true,
  'POST /v1/rwa/schema-rebinds': true, 'POST /v1/rwa/schema-rebinds/{id}/dry-run': false, 'POST /v1/rwa/schema-rebinds/{id}/attest': false, 'POST /v1/rwa/schema-rebinds/{id}/commit': false,
  'POST /v1/rwa/tokens/{id}/schema-binding': true, 'POST /v1/rwa/tokens/{id}/fields/{fieldPath}': true, 'POST /v1/rwa/tokens/{id}/fields/{fieldPath}/attested-entry': true,
  'POST /v1/rwa/tokens/{id}/attesters': true, 'POST /v1/rwa/asset-schemas/{id}/compile-preview': false,
  'POST /v1/rwa/tokens/{id}/distributions': true, 'POST /v1/rwa/tokens/{id}/distributions/{distId}/execute': false,
  'POST /v1/rwa/tokens/{id}/corporate-actions': true, 'POST /v1/rwa/tokens/{id}/corporate-actions/{caId}/advance': false,
  'POST /v1/rwa/tokens/{id}/witnesses': false, 'POST /v1/rwa/tokens/{id}/log/witness': false,
};

/** Whether an operation reads Idempotency-Key (and requires it): the table, else what its own text says. */
function idempotencyOf(name: string, op: Json): { required: boolean } | undefined {
  if (name in IDEMPOTENCY) return { required: IDEMPOTENCY[name]! };
  const text = `${String(op.summary ?? '')} ${String(op.description ?? '')}`;
  if (!/Idempotency-Key/.test(text) || name.startsWith('GET ')) return undefined;
  return { required: /Idempotency-Key (is )?required/i.test(text) };
}

const REQUEST_ID = { description: 'The id of this request, as the API logs it; quote it when reporting a problem.', schema: { type: 'string' } };
const RETRY_AFTER = { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 0 } };
const RATE_LIMIT_POLICY = { description: 'The request budgets this request was counted on (draft-ietf-httpapi-ratelimit-headers), e.g. `"address";q=2400;w=60, "key";q=1200;w=60`: the requests `q` per window of `w` seconds (docs/operations.md "Rate limits").', schema: { type: 'string' } };
const RATE_LIMIT = { description: 'What is left of each budget, e.g. `"address";r=2391;t=42, "key";r=0;t=42`: `r` requests until the window ends in `t` seconds.', schema: { type: 'string' } };
/** Operations no request budget counts (the probes); every other one may answer 429 rate_limited. */
const UNLIMITED = new Set(['GET /healthz', 'GET /readyz']);

function schemaOfContent(r: Json): Json | undefined {
  return ((r.content as Record<string, Json> | undefined)?.['application/json'])?.schema as Json | undefined;
}

/** The webhook envelope every delivery POSTs (api/webhooks/delivery-engine.ts), `data` per event. */
function webhookEnvelope(type: string, data: Json): Json {
  return {
    type: 'object', required: ['id', 'type', 'version', 'created_at', 'resource', 'actor', 'data', 'delivery'],
    properties: {
      id: { type: 'string', description: 'The event id, the same on every attempt (deduplicate on it)' },
      type: { const: type }, version: { type: 'integer' }, created_at: { type: 'string', format: 'date-time' },
      resource: { type: 'object', required: ['type', 'id'], properties: { type: { type: 'string' }, id: { type: 'string' } } },
      actor: { type: 'object', required: ['type', 'id'], properties: { type: { type: 'string' }, id: { type: 'string' } } },
      data,
      delivery: { type: 'object', required: ['id', 'sent_at'], properties: { id: { type: 'string', description: 'This attempt\'s id (`wha_…`)' }, sent_at: { type: 'string', format: 'date-time' } } },
    },
  };
}

const WEBHOOK_HEADERS: Json[] = [
  { name: 'SVC-Webhook-Signature', in: 'header', required: true, schema: { type: 'string' }, description: 'Space-separated `v1,<base64 HMAC-SHA256>` of the raw body, one per valid endpoint secret (two during a rotation overlap) (docs/platform/webhooks.md).' },
  { name: 'SVC-Webhook-Signature-Ed25519', in: 'header', required: true, schema: { type: 'string' }, description: '`v1a,<base64 Ed25519>` of the raw body under the key at GET /v1/public/webhook-signing-key.' },
  { name: 'SVC-Webhook-Event', in: 'header', required: true, schema: { type: 'string' }, description: 'The event type (the body\'s `type`).' },
  { name: 'SVC-Webhook-Event-Id', in: 'header', required: true, schema: { type: 'string' }, description: 'The event id (the body\'s `id`).' },
  { name: 'SVC-Webhook-Delivery-Id', in: 'header', required: true, schema: { type: 'string' }, description: 'This attempt\'s id.' },
  { name: 'SVC-Webhook-Timestamp', in: 'header', required: true, schema: { type: 'string' }, description: 'Unix seconds when sent; not signed: freshness is the signed `delivery.sent_at`.' },
];

function webhooks(): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const e of EVENT_TYPES) {
    const data: Json = { type: 'object', properties: Object.fromEntries(Object.entries(e.example_payload).map(([k, v]) => [k, { type: typeof v === 'number' ? 'number' : typeof v }])) };
    const example = {
      id: 'evt_01', type: e.name, version: e.version, created_at: '2026-01-01T00:00:00.000Z',
      resource: { type: e.domain, id: Object.values(e.example_payload).find((v) => typeof v === 'string') ?? 'res_01' },
      actor: { type: 'system', id: 'platform' }, data: e.example_payload,
      delivery: { id: 'wha_01', sent_at: '2026-01-01T00:00:01.000Z' },
    };
    out[e.name] = {
      post: {
        operationId: camel(['webhook', ...e.name.split(/[._-]/)]), summary: `The ${e.name} event`, tags: ['webhooks'],
        description: `${e.description}${e.sensitive ? ' Sensitive: carries identifiers and enumerated states only.' : ''}${e.deprecated_at ? ` Deprecated since ${e.deprecated_at}.` : ''} POSTed to each endpoint subscribed to it, signed (docs/platform/events.md, docs/platform/webhooks.md).`,
        ...(e.deprecated_at ? { deprecated: true } : {}),
        parameters: WEBHOOK_HEADERS,
        requestBody: { required: true, content: { 'application/json': { schema: webhookEnvelope(e.name, data), example } } },
        responses: { 200: { description: 'Any 2xx within 10 seconds acknowledges the delivery; anything else is retried with backoff.' } },
        security: [],
      },
    };
  }
  return out;
}

/** The document with everything above added; `doc` is changed in place and returned. */
export function completeDocument(doc: OpenApiDocument): OpenApiDocument {
  doc.servers ??= [{ url: '/', description: 'This server' }];
  const info = (doc.info ??= {}) as Json;
  info.license ??= { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' };
  const components = (doc.components ??= {});
  const schemas = (components.schemas ??= {});
  schemas.Error = {
    type: 'object', required: ['error', 'code'], description: 'Every error answer (docs/platform/errors.md): a human message and a stable code; a 422 validation_failed adds `fields`.',
    properties: {
      error: { type: 'string', description: 'What went wrong, for a person' },
      code: { type: 'string', description: 'A stable slug to branch on (docs/platform/errors.md)' },
      fields: { type: 'array', items: { $ref: '#/components/schemas/FieldError' } },
    },
  };
  schemas.FieldError = { type: 'object', required: ['field', 'reason'], properties: { field: { type: 'string' }, reason: { type: 'string' } } };
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const name = `${method.toUpperCase()} ${path}`;
      const operationId = operationIdOf(method, path);
      op.operationId = operationId;
      const description = DESCRIPTIONS[operationId];
      if (typeof op.description !== 'string' || op.description.trim() === '') op.description = description ?? fallbackDescription(op, name);
      const security = (op.security ?? []) as Json[];
      const signed = security.some((alt) => 'httpSignature' in alt);
      const vaultApi = signed && security.every((alt) => 'httpSignature' in alt);
      const parameters = ((op.parameters ?? []) as Json[]);
      const has = (n: string) => parameters.some((p) => p.in === 'header' && String(p.name).toLowerCase() === n.toLowerCase());
      const idem = idempotencyOf(name, op);
      if (idem && !has('Idempotency-Key')) {
        parameters.push({ name: 'Idempotency-Key', in: 'header', required: idem.required, schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
          description: `${idem.required ? 'Required' : 'Optional'}: the same key with the same body answers the first result again without doing anything; with another body, 409 idempotency_key_reused. Per workspace and operation.` });
      }
      if (signed) for (const p of signatureHeaders(vaultApi, !!op.requestBody)) if (!has(String(p.name))) parameters.push(p);
      if (parameters.length > 0) op.parameters = parameters;
      const responses = (op.responses ??= {}) as Record<string, Json>;
      // The request budgets (api/rate-limits/rate-limits.ts) count every operation but the probes.
      if (!UNLIMITED.has(name)) responses['429'] ??= {};
      for (const [code, response] of Object.entries(responses)) {
        const status = Number(code);
        const headers = (response.headers ??= {}) as Json;
        headers['X-Request-Id'] ??= REQUEST_ID;
        if (status === 429 || status === 503) headers['Retry-After'] ??= RETRY_AFTER;
        if (status === 429 && !UNLIMITED.has(name)) {
          headers['RateLimit-Policy'] ??= RATE_LIMIT_POLICY;
          headers.RateLimit ??= RATE_LIMIT;
        }
        if (status >= 400) {
          response.description = ERROR_TEXT[code] ?? 'An error';
          response.content = { 'application/json': { schema: ERROR_REF } };
        } else if (response.description === 'Default Response') {
          response.description = status === 204 ? 'Done; no body' : status === 201 ? 'Created' : status === 202 ? 'Accepted; poll for the outcome' : 'OK';
        }
      }
      const ex = EXAMPLES[operationId];
      const body = (op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined;
      const bodyMedia = body?.['application/json'];
      if (bodyMedia && bodyMedia.example === undefined) {
        const e = ex?.request !== undefined ? ex.request : exampleOf(bodyMedia.schema as Json);
        if (e !== undefined) bodyMedia.example = e;
      }
      for (const [code, response] of Object.entries(responses)) {
        if (!/^2\d\d$/.test(code)) continue;
        const schema = schemaOfContent(response);
        if (!schema) continue;
        const media = (response.content as Record<string, Json>)['application/json']!;
        if (media.example !== undefined) continue;
        const e = ex?.response !== undefined ? ex.response : exampleOf(schema);
        if (e !== undefined) media.example = e;
      }
    }
  }
  (doc as Json).webhooks = webhooks();
  return doc;
}

/** A description from what the document knows of an operation when the table has none. */
function fallbackDescription(op: Json, name: string): string {
  const security = (op.security ?? []) as Json[];
  const who = security.length === 0 ? 'Public: no credential.'
    : security.every((alt) => 'httpSignature' in alt) ? 'Vault API: signed with an API key (docs/request-signing.md).'
      : `Platform API: the workspace bearer key${security.some((alt) => 'httpSignature' in alt) ? ', signed as well with a production key' : ''}${security.some((alt) => 'mfaToken' in alt) ? ', with a one-use MFA proof (SVC-MFA-Token)' : ''}.`;
  const summary = String(op.summary ?? name).replace(/\.$/, '');
  return `${summary}. ${who}`;
}
