// Every platform operation that takes a JSON body, read from the app's own OpenAPI document, answers a
// body with two fields of the wrong JSON type by naming both (docs/platform/errors.md): `400
// invalid_request` with each field by its JSON name in `fields` and in the message, and no framework
// path (`body/…`). Operations that check a credential, a permission or an id first (401, 403, 404, a
// missing member header) are counted apart. A new operation is
// covered without being named here.
import t from 'tap';
import { setupPlatform } from './setup-platform.ts';

interface Schema { type?: string | string[]; properties?: Record<string, Schema>; anyOf?: Schema[]; oneOf?: Schema[] }
interface Operation { requestBody?: { content?: Record<string, { schema?: Schema }> }; security?: Record<string, unknown>[] }

/** A value of the wrong JSON type for a property with one plain type, or undefined when it has none. */
function wrongValue(s: Schema): unknown {
  const type = Array.isArray(s.type) ? undefined : s.type;
  switch (type) {
    case 'string': return 12345;
    case 'integer': case 'number': return 'not-a-number';
    case 'boolean': return 'yes';
    case 'object': return 7;
    case 'array': return 7;
    default: return undefined;
  }
}

t.test('a body with two fields of the wrong type: both named, on every operation that reaches its schema', async (t) => {
  const s = await setupPlatform(t);
  const doc = (await s.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, Operation>> };
  let checked = 0;
  const before: string[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['post', 'put', 'patch'].includes(method)) continue;
      // Bearer-key operations only: the vault API's signed requests have their own test (validation-fields.unit.ts).
      if (!(op.security ?? []).some((r) => 'bearer' in r || 'bearerAuth' in r || 'BearerAuth' in r)) continue;
      const schema = op.requestBody?.content?.['application/json']?.schema;
      const props = Object.entries(schema?.properties ?? {}).map(([name, p]) => [name, wrongValue(p)] as const).filter(([, v]) => v !== undefined);
      if (props.length < 2) continue;
      const body = Object.fromEntries(props.slice(0, 2));
      const url = path.replace(/\{[^}]+\}/g, 'x');
      const r = await s.call(method.toUpperCase() as 'POST' | 'PUT' | 'PATCH', url, body, s.owner.token, { 'idempotency-key': `walk-${checked}-${method}-${path}`.slice(0, 64).replace(/[^A-Za-z0-9_-]/g, '-') });
      const a = r.json() as { error: string; code: string; fields?: { field: string; reason: string }[] };
      // A member session, an id or a permission checked first (auth before input: docs/platform/errors.md).
      // A member's routes refuse a missing member credential header (400, member-auth.md "Credentials on
      // every call") before the body, too.
      if (r.statusCode === 401 || r.statusCode === 404 || r.statusCode === 403 || (r.statusCode === 400 && /^X-[A-Za-z-]+ is required/.test(a.error))) {
        before.push(`${method.toUpperCase()} ${path}: ${r.statusCode} ${a.code}`);
        continue;
      }
      checked++;
      const what = `${method.toUpperCase()} ${path}`;
      t.equal(r.statusCode, 400, `${what}: 400 (${a.code})`);
      t.equal(a.code, 'invalid_request', `${what}: invalid_request`);
      const named = (a.fields ?? []).map((f) => f.field);
      for (const [name] of props.slice(0, 2)) {
        t.ok(named.includes(name), `${what}: names ${name} (${named.join(', ')})`);
        t.ok(a.error.includes(`${name}:`), `${what}: the message names ${name}`);
      }
      t.notMatch(a.error, /\b(body|querystring|params)\//, `${what}: no framework path`);
    }
  }
  t.ok(checked >= 40, `${checked} operations reached their schema; ${before.length} looked something up first`);
  t.comment(`looked up first: ${before.join('; ')}`);
});
