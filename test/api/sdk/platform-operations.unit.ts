// The SDK's and CLI's table of platform operations (api/sdk/platform-operations.ts) against the OpenAPI
// document the app serves: every operation a workspace bearer key may call has its row, with the same
// operationId, method and path, body, query parameters, page shape, Idempotency-Key and 204; there is no
// row the document lacks; and the CLI's command words made from the table by its rule are unique.
import t from 'tap';
import { PLATFORM_OPERATIONS, type PlatformOperation } from '../../../api/sdk/platform-operations.ts';
import { platformCommands } from '../../../api/sdk/platform-commands.ts';
import { documentApp } from '../document-app.ts';

type Json = Record<string, unknown>;
interface Operation { operationId: string; summary?: string; security?: Json[]; parameters?: { in: string; name: string }[]; requestBody?: { content: Record<string, { schema: unknown }> }; responses: Record<string, { content?: Record<string, { schema?: { properties?: Json } }> }> }

/** The row an operation of the document should have, by the rules in the table's header. */
function rowOf(method: string, path: string, op: Operation): PlatformOperation {
  const params = op.parameters ?? [];
  const query = params.filter((p) => p.in === 'query' && p.name !== 'cursor' && p.name !== 'limit').map((p) => p.name);
  const cursorInQuery = params.some((p) => p.in === 'query' && p.name === 'cursor');
  const ok = Object.keys(op.responses).filter((c) => /^2\d\d$/.test(c));
  const page = ok.map((c) => op.responses[c]!.content?.['application/json']?.schema).some((s) => s?.properties?.has_more !== undefined && s.properties.next_cursor !== undefined);
  const cursorInBody = JSON.stringify(op.requestBody?.content['application/json']?.schema ?? {}).includes('"cursor"');
  const list = cursorInQuery ? 'query' : page ? (cursorInBody ? 'body' : 'none') : undefined;
  return {
    id: op.operationId, method: method.toUpperCase() as PlatformOperation['method'], path,
    ...(op.requestBody ? { body: true } : {}), ...(query.length ? { query } : {}), ...(list ? { list } : {}),
    ...(params.some((p) => p.in === 'header' && p.name === 'Idempotency-Key') ? { idempotent: true } : {}),
    ...(ok.length === 1 && ok[0] === '204' ? { empty: true } : {}),
    summary: String(op.summary ?? '').replace(/\.$/, ''),
  };
}

// The app is built, and closed, by a test of its own, not at the top level: the file shares its process
// with others (test/support/units.ts).
t.test('the table against the OpenAPI document the app serves', async (t) => {
  t.setTimeout(120_000);
  const { app } = await documentApp(t, 'platform-ops-');
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, Operation>> };

  const expected = new Map<string, PlatformOperation>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      if (!(op.security ?? []).some((alt) => 'bearer' in alt)) continue;
      expected.set(op.operationId, rowOf(method, path, op));
    }
  }

  t.test('every platform operation of the document has its row, and the table has no other', async (t) => {
    t.ok(expected.size > 200, `${expected.size} operations take a bearer key`);
    const rows = new Map<string, PlatformOperation>(PLATFORM_OPERATIONS.map((o) => [o.id, o]));
    t.equal(rows.size, PLATFORM_OPERATIONS.length, 'no operationId twice');
    const missing = [...expected.values()].filter((o) => !rows.has(o.id));
    t.same(missing, [], 'rows to add to api/sdk/platform-operations.ts');
    t.same([...rows.keys()].filter((id) => !expected.has(id)), [], 'rows the document no longer has');
    for (const [id, row] of rows) {
      const want = expected.get(id);
      if (want) t.same({ ...row, query: row.query ? [...row.query] : undefined }, { ...want, query: want.query }, `${id}: ${row.method} ${row.path}`);
    }
  });
});

t.test('the CLI\'s platform commands: one per operation, each command unique', async (t) => {
  const commands = platformCommands();
  t.equal(commands.length, PLATFORM_OPERATIONS.length);
  const names = commands.map((c) => c.words.join(' '));
  t.same(names.filter((n, i) => names.indexOf(n) !== i), [], 'no two the same');
  const named = new Map(commands.map((c) => [c.op.id, c.words.join(' ')]));
  // The verbs issue 43 names, as the rule makes them.
  t.same(
    ['getWebhookDeliveries', 'postWebhookDeliveriesByIdReplay', 'getBranding', 'putBranding', 'postPaymentsQuote', 'postPaymentsSimulate', 'postPayments', 'postPaymentsByIdCancel', 'getWebhookEndpointsById'].map((id) => named.get(id)),
    ['webhook-deliveries list', 'webhook-deliveries replay', 'branding get', 'branding set', 'payments quote', 'payments simulate', 'payments create', 'payments cancel', 'webhook-endpoints get'],
  );
});
