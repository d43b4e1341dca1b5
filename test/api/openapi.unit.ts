// The OpenAPI document (GET /openapi.json, page at /docs): every operation, of both APIs, has a summary,
// a tag the document declares, and an explicit security requirement naming its declared schemes (the
// request signature for the vault API, the workspace bearer key for the platform API); the public
// operations, listed here, say they need nothing. Every tokenization operation, whatever its path under
// /v1/tokenization or /v1/rwa, also answers its errors with the error body. A new route without them fails here.
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../api/app.ts';
import { loadApiConfig } from '../../api/config.ts';
import { createLogger } from '../../common/logger.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { TransactionService } from '../../api/transactions/transaction-service.ts';
import { createPlatform } from '../../api/platform.ts';

/** Operations anyone may call: liveness, the public branding bundle and webhook key, the logo upload and read, the Hosted Auth page. */
const PUBLIC = new Set([
  'GET /healthz', 'GET /readyz',
  'GET /v1/public/branding', 'GET /v1/public/webhook-signing-key',
  'PUT /v1/uploads/{prefix}/{name}', 'GET /v1/objects/{prefix}/{name}',
  // An integration gateway's callback, authenticated by the gateway's own signature (docs/platform/gateways.md).
  'POST /v1/gateway-callbacks/{id}',
  // An avatar's presigned GET with the embedded object store (docs/platform/account-holders.md).
  'GET /v1/downloads/{prefix}/{name}',
  // The Hosted Auth page: the member's browser, with the flow cookie and CSRF token (docs/platform/hosted-auth.md).
  'GET /v1/hosted-auth/{id}', 'POST /v1/hosted-auth/{id}/email', 'POST /v1/hosted-auth/{id}/code', 'POST /v1/hosted-auth/{id}/resend', 'POST /v1/hosted-auth/{id}/totp',
  // Lost-all-factor recovery on the same page, and the Account Center page (docs/platform/account-center.md).
  'POST /v1/hosted-auth/{id}/lost', 'POST /v1/hosted-auth/{id}/recovery-code', 'POST /v1/hosted-auth/{id}/recovery-email', 'POST /v1/hosted-auth/{id}/recovery-enrol',
  'POST /v1/hosted-auth/{id}/recovery-codes', 'POST /v1/hosted-auth/{id}/recovery-ack', 'POST /v1/hosted-auth/{id}/recovery-accept',
  'GET /v1/account-center/{id}', 'POST /v1/account-center/{id}/email', 'POST /v1/account-center/{id}/code', 'POST /v1/account-center/{id}/resend',
  'POST /v1/account-center/{id}/totp', 'POST /v1/account-center/{id}/enrol', 'POST /v1/account-center/{id}/enrol-confirm', 'POST /v1/account-center/{id}/remove',
  'POST /v1/account-center/{id}/recovery-codes', 'POST /v1/account-center/{id}/finish',
  // Account Center passkeys: the script, enrolment and approval visits.
  'GET /v1/account-center/passkey.js', 'POST /v1/account-center/{id}/passkey', 'POST /v1/account-center/{id}/passkey-finish', 'POST /v1/account-center/{id}/approve',
]);
const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);

interface Operation { summary?: unknown; tags?: unknown; security?: unknown; requestBody?: unknown; responses?: Record<string, unknown> }
interface Doc {
  openapi: string;
  info: { description?: string };
  tags?: { name: string; description?: string }[];
  components: { securitySchemes: Record<string, { description?: string }> };
  paths: Record<string, Record<string, Operation>>;
}

/** The vault API, the platform API, or both, each as its own app: the document of each. */
async function documentOf(t: Test, apis: { vault?: boolean; platform?: boolean }): Promise<{ doc: Doc; app: Awaited<ReturnType<typeof buildApp>> }> {
  const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
  const store = await RecordStore.open(dir);
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 1, vaultsPerOrg: 1 } });
  const app = await buildApp({
    config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api-test', 'silent'),
    ...(apis.vault ? { vaults, transactions: new TransactionService({ vaults, hasBackend: () => true }) } : {}),
    ...(apis.platform ? { platform: await createPlatform(store, { objectDir: join(dir, 'objects') }) } : {}),
  });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  return { doc: (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as Doc, app };
}

function operations(doc: Doc): [string, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).filter(([m]) => METHODS.has(m)).map(([m, op]): [string, Operation] => [`${m.toUpperCase()} ${path}`, op]));
}

/**
 * What is wrong with each operation's summary, tags and security, one line each (empty when nothing).
 * `scheme`: the scheme every alternative of a non-public operation must name.
 */
function problems(doc: Doc, scheme: string): string[] {
  const declaredTags = new Set((doc.tags ?? []).map((tag) => tag.name));
  const schemes = new Set(Object.keys(doc.components.securitySchemes));
  const out: string[] = [];
  for (const [name, op] of operations(doc)) {
    if (typeof op.summary !== 'string' || op.summary.trim().length < 10) out.push(`${name}: no summary`);
    const tags = Array.isArray(op.tags) ? (op.tags as unknown[]) : [];
    if (!tags.some((tag) => typeof tag === 'string' && declaredTags.has(tag))) out.push(`${name}: no declared tag (has ${JSON.stringify(op.tags)})`);
    if (!Array.isArray(op.security)) {
      out.push(`${name}: no security requirement`);
      continue;
    }
    const security = op.security as Record<string, unknown>[];
    if (PUBLIC.has(name)) {
      if (security.length > 0) out.push(`${name}: public, but requires ${JSON.stringify(security)}`);
      continue;
    }
    if (security.length === 0) out.push(`${name}: security [] (public) but not listed as public in this test`);
    for (const alternative of security) {
      const names = Object.keys(alternative);
      if (names.length === 0) out.push(`${name}: an empty alternative makes it public`);
      for (const n of names) if (!schemes.has(n)) out.push(`${name}: undeclared scheme ${n}`);
      if (!names.includes(scheme)) out.push(`${name}: an alternative without ${scheme}: ${JSON.stringify(alternative)}`);
    }
  }
  return out;
}

t.test('every vault-API operation has a summary, a declared tag and the request signature', async (t) => {
  const { doc } = await documentOf(t, { vault: true });
  t.ok(operations(doc).length > 20, 'the vault API is documented');
  t.same(problems(doc, 'httpSignature'), [], 'no operation lacks them');
  for (const [name, op] of operations(doc)) {
    if (!PUBLIC.has(name)) t.same(op.security, [{ httpSignature: [] }], `${name} is signed, and needs nothing else`);
  }
});

t.test('every platform-API operation has a summary, a declared tag and the bearer key', async (t) => {
  const { doc } = await documentOf(t, { platform: true });
  t.ok(operations(doc).length > 20, 'the platform API is documented');
  t.same(problems(doc, 'bearer'), [], 'no operation lacks them');
  const ops = new Map(operations(doc));
  t.same(ops.get('GET /v1/webhook-endpoints')?.security, [{ bearer: [] }], 'a read needs the bearer key');
  t.same(ops.get('POST /v1/webhook-endpoints')?.security, [{ bearer: [] }, { bearer: [], httpSignature: [] }], 'a change needs the bearer key, and a signature in production');
  t.same(ops.get('POST /v1/webhook-endpoints/{id}/rotate')?.security, [{ bearer: [], mfaToken: [] }, { bearer: [], httpSignature: [], mfaToken: [] }], 'the secret rotation needs an MFA proof too');
});

t.test('every tokenization operation has a summary, its tag, the bearer key (signed in production for a change) and its error responses', async (t) => {
  // Generic over the paths, so a tokenization route added later is held to the same (docs/platform/tokenization.md).
  const { doc } = await documentOf(t, { platform: true });
  const ops = operations(doc).filter(([name]) => ['/v1/tokenization/', '/v1/rwa/'].some((prefix) => name.split(' ')[1]!.startsWith(prefix)));
  t.ok(ops.length >= 35, `the tokenization area is documented (${ops.length} operations)`);
  type Schema = { $ref?: string; required?: string[]; properties?: Record<string, unknown> };
  const named = (doc.components as { schemas?: Record<string, Schema> }).schemas ?? {};
  const errorBody = (r: unknown) => {
    const given = (r as { content?: Record<string, { schema?: Schema }> } | undefined)?.content?.['application/json']?.schema;
    // The error body is named in components (api/openapi/document.ts).
    const schema = given?.$ref ? named[given.$ref.replace('#/components/schemas/', '')] : given;
    return !!schema && ['error', 'code'].every((k) => schema.required?.includes(k) && schema.properties?.[k] !== undefined);
  };
  const out: string[] = [];
  for (const [name, op] of ops) {
    if (typeof op.summary !== 'string' || op.summary.trim().length < 10) out.push(`${name}: no summary`);
    if (!Array.isArray(op.tags) || !op.tags.includes('tokenization')) out.push(`${name}: not tagged tokenization (${JSON.stringify(op.tags)})`);
    const read = name.startsWith('GET ');
    const security = read ? [{ bearer: [] }] : [{ bearer: [] }, { bearer: [], httpSignature: [] }];
    if (JSON.stringify(op.security) !== JSON.stringify(security)) out.push(`${name}: security ${JSON.stringify(op.security)}, not ${JSON.stringify(security)}`);
    const responses = op.responses ?? {};
    if (!Object.keys(responses).some((code) => /^2\d\d$/.test(code))) out.push(`${name}: no success response`);
    // Bad input, no or a wrong key, a missing permission, another workspace's record, a refused value; a change also a conflict.
    for (const code of ['400', '401', '403', '404', '422', ...(read ? [] : ['409'])]) {
      if (!errorBody(responses[code])) out.push(`${name}: no ${code} error response with the error body`);
    }
  }
  t.same(out, [], 'no tokenization operation lacks them');
});

t.test('the document declares each tag once, uses them all, and explains signing beside the page', async (t) => {
  const { doc, app } = await documentOf(t, { vault: true, platform: true });
  t.equal(doc.openapi, '3.1.0');
  const declared = (doc.tags ?? []).map((tag) => tag.name);
  t.equal(new Set(declared).size, declared.length, 'no tag is declared twice');
  t.ok((doc.tags ?? []).every((tag) => typeof tag.description === 'string' && tag.description.length > 10), 'each tag is described');
  const used = new Set(operations(doc).flatMap(([, op]) => (Array.isArray(op.tags) ? (op.tags as string[]) : [])));
  t.same(declared.filter((name) => !used.has(name)), [], 'every declared tag names some operation');
  t.same(operations(doc).filter(([name]) => PUBLIC.has(name)).map(([name]) => name).sort(), [...PUBLIC].sort(), 'each public operation listed here exists');

  t.same(Object.keys(doc.components.securitySchemes).sort(), ['bearer', 'httpSignature', 'mfaToken']);
  t.match(doc.components.securitySchemes.httpSignature!.description, /OpenAPI cannot express the signing/, 'the signature scheme says the page cannot sign');
  const intro = doc.info.description ?? '';
  t.match(intro, /docs\/request-signing\.md/, 'the page points to the request-signing doc');
  t.match(intro, /signedHeaders\(/, 'with an SDK example');
  t.match(intro, /curl .*-H @headers\.txt/, 'and a curl one');

  const ops = new Map(operations(doc));
  t.ok(ops.get('POST /v1/vaults/{vaultId}/wallets')?.requestBody, 'operations keep their body schemas');
  t.ok(ops.get('GET /v1/api-keys')?.responses?.['200'], 'and their response schemas');
  t.match(ops.get('POST /v1/transactions')?.summary, /intent/);
  const page = await app.inject({ method: 'GET', url: '/docs/' });
  t.equal(page.statusCode, 200, '/docs serves the page');
  t.match(page.headers['content-type'], /text\/html/);
});
