// Asset schemas through the API (docs/platform/rwa.md "Asset schemas"): JSON Schema draft 2020-12 compiled by
// ajv, drafts that change and published versions that never do, forks from a published version, the four
// templates, compile-preview's on-chain / committed / off-chain split; every refusal a clear status and code
// with nothing stored (read back), another workspace's schema 404, and the permissions of Tokenization I.
import t from 'tap';
import { schemaApp } from './schema-fixture.ts';
import { riskyPattern } from '../../../api/rwa/schema/asset-schema-compiler.ts';

const bond = (extra: Record<string, unknown> = {}) => ({
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    isin: { type: 'string', pattern: '^[A-Z]{2}[A-Z0-9]{9}[0-9]$', 'x-visibility': 'public' },
    coupon: { type: 'object', 'x-visibility': 'public', properties: { rate_bps: { type: 'integer', minimum: 0 }, frequency: { enum: ['annual', 'quarterly'] } }, required: ['rate_bps'] },
    rating: { type: 'string', maxLength: 10, 'x-visibility': 'committed' },
    paying_agent: { type: 'string' },
    ...extra,
  },
  required: ['isin', 'coupon'],
  additionalProperties: false,
});

t.test('templates: a bond, an equity share class, a fund unit and a real-estate interest, each compiling with fields on and off chain', async (t) => {
  const s = await schemaApp(t);
  const res = await s.call('GET', '/v1/rwa/asset-schemas/templates', undefined, s.acme.viewer);
  t.equal(res.statusCode, 200);
  const data = res.json().data as { id: string; fields: { path: string; visibility: string }[] }[];
  t.same(data.map((x) => x.id), ['bond', 'equity_share_class', 'fund_unit', 'real_estate_interest']);
  for (const tpl of data) {
    const vis = new Set(tpl.fields.map((f) => f.visibility));
    t.ok(vis.has('public') && vis.has('committed') && vis.has('private'), `${tpl.id}: public, committed and private fields`);
  }
  t.ok(data[0]!.fields.some((f) => f.path === 'coupon.rate_bps' && f.visibility === 'public'), 'nested fields inherit their object\'s visibility');
  // A draft from a template is a schema of the workspace, origin recorded.
  const d = await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/draft', { template: 'bond' });
  t.equal(d.statusCode, 200);
  t.same(d.json().schema.origin, { template: 'bond' });
  t.equal(d.json().schema.name, 'Bond');
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/x-bond/draft', { template: 'nope' })).json().code, 'validation_failed');
});

t.test('a draft changes, a published version never does; a fork starts a new draft from a published version', async (t) => {
  const s = await schemaApp(t);
  const d1 = await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/draft', { name: 'Acme bond', json_schema: bond() });
  t.equal(d1.statusCode, 200, d1.body);
  t.match(d1.json(), { schema: { id: 'acme-bond', versions: 1, draft_version: 1, latest_published: null }, version: { version: 1, status: 'draft' } });
  // Drafting again replaces the open draft: still version 1, another document.
  const d2 = await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/draft', { json_schema: bond({ seniority: { enum: ['senior', 'junior'] } }) });
  t.match(d2.json(), { schema: { versions: 1, draft_version: 1 }, version: { version: 1, status: 'draft' } });
  t.not(d2.json().version.sha256, d1.json().version.sha256);
  // Publishing what was not reviewed is refused.
  const wrong = await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/publish', { expect_sha256: d1.json().version.sha256 });
  t.equal(wrong.statusCode, 409);
  t.equal((await s.call('GET', '/v1/rwa/asset-schemas/acme-bond')).json().version.status, 'draft', 'a refused publish leaves the draft');
  const p = await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/publish', { version: 1, expect_sha256: d2.json().version.sha256 });
  t.equal(p.statusCode, 200, p.body);
  t.match(p.json(), { schema: { draft_version: null, latest_published: 1 }, version: { version: 1, status: 'published', sha256: d2.json().version.sha256 } });
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/publish', {})).statusCode, 409, 'nothing left to publish');

  // A draft after publishing opens version 2; version 1 stays exactly as published.
  const d3 = await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/draft', { json_schema: bond({ maturity: { type: 'string', format: 'date', 'x-visibility': 'public' } }) });
  t.match(d3.json(), { schema: { versions: 2, draft_version: 2, latest_published: 1 }, version: { version: 2, status: 'draft' } });
  const v1 = await s.call('GET', '/v1/rwa/asset-schemas/acme-bond?version=1');
  t.match(v1.json().version, { version: 1, status: 'published', sha256: d2.json().version.sha256, published_at: String });
  t.same(v1.json().version.json_schema, bond({ seniority: { enum: ['senior', 'junior'] } }));
  t.same(v1.json().versions.map((v: { version: number; status: string }) => [v.version, v.status]), [[1, 'published'], [2, 'draft']]);
  t.equal((await s.call('GET', '/v1/rwa/asset-schemas/acme-bond')).json().version.version, 2, 'the default version is the draft');
  t.equal((await s.call('GET', '/v1/rwa/asset-schemas/acme-bond?version=3')).statusCode, 404);

  // Fork: not from a draft; into a new schema from a published version; not over an open draft.
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/fork', { version: 2, into: 'other' })).statusCode, 409, 'a draft is not forked');
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/fork', {})).statusCode, 409, 'a fork into this schema waits for its open draft');
  const f = await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/fork', { version: 1, into: 'acme-bond-eu' });
  t.equal(f.statusCode, 200, f.body);
  t.match(f.json(), { schema: { id: 'acme-bond-eu', versions: 1, draft_version: 1, origin: { schema_id: 'acme-bond', version: 1 } }, version: { status: 'draft', sha256: d2.json().version.sha256, forked_from: { schema_id: 'acme-bond', version: 1 } } });
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/fork', { version: 1, into: 'acme-bond-eu' })).statusCode, 409, 'into an existing schema is refused');

  // Upload-publish: published at once; refused while a draft is open.
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/upload-publish', { json_schema: bond() })).statusCode, 409);
  const up = await s.call('POST', '/v1/rwa/asset-schemas/fund-a/upload-publish', { name: 'Fund A', json_schema: bond() });
  t.equal(up.statusCode, 200, up.body);
  t.match(up.json(), { schema: { id: 'fund-a', versions: 1, draft_version: null, latest_published: 1 }, version: { status: 'published' } });

  const list = await s.call('GET', '/v1/rwa/asset-schemas?limit=2', undefined, s.acme.viewer);
  t.same(list.json().data.map((x: { id: string }) => x.id), ['acme-bond', 'acme-bond-eu']);
  t.equal(list.json().has_more, true);
  const next = await s.call('GET', `/v1/rwa/asset-schemas?limit=2&cursor=${list.json().next_cursor}`, undefined, s.acme.viewer);
  t.same(next.json().data.map((x: { id: string }) => x.id), ['fund-a']);
});

t.test('a schema ajv refuses, or over the limits, is 422 asset_schema_invalid and nothing is stored', async (t) => {
  const s = await schemaApp(t);
  let deep: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < 12; i++) deep = { type: 'object', properties: { a: deep } };
  const refused: [string, unknown, RegExp][] = [
    ['an unknown keyword (strict mode)', bond({ x: { type: 'string', colour: 'red' } }), /unknown keyword/],
    ['x-visibility outside its values', bond({ x: { type: 'string', 'x-visibility': 'secret' } }), /x-visibility/],
    ['a remote $ref', bond({ x: { $ref: 'https://example.com/s.json' } }), /can't resolve reference/],
    ['another draft', { ...bond(), $schema: 'http://json-schema.org/draft-07/schema#' }, /2020-12/],
    ['a root that is not an object of properties', { type: 'string' }, /root/],
    ['a document too deep', bond({ x: deep }), /deeper/],
    ['a document too large', bond({ x: { type: 'string', description: 'x'.repeat(70_000) } }), /larger/],
    ['a pattern that may backtrack', bond({ x: { type: 'string', pattern: '^(a+)+$' } }), /quantified group/],
    ['a property name that is no field path', bond({ 'a.b': { type: 'string' } }), /property name/],
    ['a type ajv does not know', bond({ x: { type: 'strin' } }), /ajv/],
    ['an $id (a document names nothing for others)', { ...bond(), $id: 'https://json-schema.org/draft/2020-12/meta/core' }, /\$id: refused/],
    ['an anchor', bond({ x: { type: 'string', $anchor: 'x' } }), /\$anchor: refused/],
  ];
  for (const [what, doc, why] of refused) {
    const res = await s.call('POST', '/v1/rwa/asset-schemas/bad-one/draft', { json_schema: doc });
    t.equal(res.statusCode, 422, what);
    t.equal(res.json().code, 'asset_schema_invalid', what);
    t.match(res.json().error, why, what);
  }
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/bad-one/upload-publish', { json_schema: { type: 'object', properties: { a: { minimum: 'x' } } } })).json().code, 'asset_schema_invalid');
  t.equal((await s.call('GET', '/v1/rwa/asset-schemas/bad-one')).statusCode, 404, 'nothing was stored');
  // The compiler is unharmed by what it refused: a good document still compiles, also one with a $defs reference.
  const good = await s.call('POST', '/v1/rwa/asset-schemas/good-one/upload-publish', { json_schema: { ...bond({ amount: { $ref: '#/$defs/money' } }), $defs: { money: { type: 'string', pattern: '^[0-9]+$', 'x-visibility': 'public' } } } });
  t.equal(good.statusCode, 200, good.body);
  t.ok(good.json().version.fields.some((f: { path: string; visibility: string }) => f.path === 'amount' && f.visibility === 'public'), 'a field through a local $ref');
  t.same((await s.call('GET', '/v1/rwa/asset-schemas')).json().data.map((x: { id: string }) => x.id), ['good-one']);
  // Bad ids and bodies.
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/Bad_Id/draft', { json_schema: bond() })).json().code, 'validation_failed');
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/templates/draft', { json_schema: bond() })).json().code, 'validation_failed', 'the templates\' path is no schema id');
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/ok-id/draft', { json_schema: bond(), template: 'bond' })).json().code, 'validation_failed');
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/ok-id/draft', { json_schema: bond(), extra: 1 })).statusCode, 400);
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/ok-id/draft', { json_schema: bond() }, s.acme.owner, { 'idempotency-key': null })).statusCode, 400, 'Idempotency-Key required');
  // The pattern check, on its own.
  t.equal(riskyPattern('^[A-Z]{2}[0-9]+$'), undefined);
  t.equal(riskyPattern('^(ab|cd)$'), undefined, 'an alternation not quantified is fine');
  t.ok(riskyPattern('(a|aa)*'));
  t.ok(riskyPattern('((ab)*c)+'));
  t.ok(riskyPattern('(x)\\1'));
});

t.test('compile-preview: which fields are public on chain, committed by hash only, off chain, and the token metadata', async (t) => {
  const s = await schemaApp(t);
  await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/upload-publish', { json_schema: bond() });
  const res = await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/compile-preview', {}, s.acme.viewer);
  t.equal(res.statusCode, 200, res.body);
  const p = res.json();
  t.same(p.on_chain, { public: ['isin', 'coupon.rate_bps', 'coupon.frequency'], committed: ['rating'] });
  t.same(p.off_chain, ['paying_agent'], 'a field without x-visibility stays off chain');
  t.same(p.token_metadata.attributes.map((a: { trait_type: string }) => a.trait_type), ['isin', 'coupon.rate_bps', 'coupon.frequency']);
  t.match(p.token_metadata.properties.commitments.rating, /^sha256\("rwa-field-commitment\/v1/);
  t.equal(p.values_valid, null);
  const withValues = await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/compile-preview', { values: { isin: 'US0378331005', coupon: { rate_bps: -1 } } }, s.acme.viewer);
  t.equal(withValues.json().values_valid, false);
  t.match(withValues.json().problems, [{ path: 'coupon.rate_bps' }]);
  t.same(withValues.json().token_metadata.attributes[0], { trait_type: 'isin', value: 'US0378331005' });
});

t.test('another workspace\'s schema is 404; reads need tokenization.read, changes tokenization.manage', async (t) => {
  const s = await schemaApp(t);
  await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/upload-publish', { json_schema: bond() });
  t.equal((await s.call('GET', '/v1/rwa/asset-schemas/acme-bond', undefined, s.globex.owner)).statusCode, 404);
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/compile-preview', {}, s.globex.owner)).statusCode, 404);
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/fork', { into: 'mine' }, s.globex.owner)).statusCode, 404);
  t.same((await s.call('GET', '/v1/rwa/asset-schemas', undefined, s.globex.owner)).json().data, []);
  // The same id in another workspace is another schema.
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/draft', { template: 'fund_unit' }, s.globex.owner)).statusCode, 200);
  t.equal((await s.call('GET', '/v1/rwa/asset-schemas/acme-bond')).json().version.status, 'published', 'Acme\'s is untouched');
  for (const key of [s.acme.viewer, s.acme.developer]) {
    const res = await s.call('POST', '/v1/rwa/asset-schemas/acme-bond/draft', { template: 'bond' }, key);
    t.equal(res.statusCode, 403);
    t.equal(res.json().code, 'role_denied');
  }
  t.equal((await s.call('GET', '/v1/rwa/asset-schemas/acme-bond')).json().schema.draft_version, null, 'a refused draft stores nothing');
  t.equal((await s.call('GET', '/v1/rwa/asset-schemas/acme-bond', undefined, s.acme.viewer)).statusCode, 200);
  t.equal((await s.call('GET', '/v1/rwa/asset-schemas', undefined, 'nope')).statusCode, 401);
  // The same Idempotency-Key and body answer the same; another body is refused.
  const a = await s.call('POST', '/v1/rwa/asset-schemas/idem/draft', { template: 'bond' }, s.acme.owner, { 'idempotency-key': 'same' });
  const b = await s.call('POST', '/v1/rwa/asset-schemas/idem/draft', { template: 'bond' }, s.acme.owner, { 'idempotency-key': 'same' });
  t.same(b.json(), a.json());
  t.equal((await s.call('POST', '/v1/rwa/asset-schemas/idem/draft', { template: 'fund_unit' }, s.acme.owner, { 'idempotency-key': 'same' })).json().code, 'idempotency_key_reused');
});
