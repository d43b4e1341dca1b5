// Token metadata (docs/platform/rwa.md "Documents and metadata") from the token records and a fields reader
// over a plain map (the fields part keeps the real values): the ERC-721 / ERC-1155 metadata JSON with
// ERC-1155's `{id}` substitution, the placeholder before reveal, the ERC-7572 contract document, declared
// relationships and their checks; bad ids, an ERC-20's per-token metadata and another tenant's token refused.
import t from 'tap';
import { putToken, setupDocuments } from './documents-fixture.ts';

t.test('metadata: ERC-721 and ERC-1155 documents, placeholder before reveal, contract metadata', async (t) => {
  const s = await setupDocuments(t);
  const deed = await putToken(s.store, s.scope);
  const units = await putToken(s.store, s.scope, { kind: 'erc1155', name: null, symbol: null, base_uri: null, uri: 'https://example.test/units/{id}.json' });
  const bond = await putToken(s.store, s.scope, { kind: 'erc20', name: 'Bond', symbol: 'BND', decimals: 18, base_uri: null });
  s.fields.fields.set(deed, {
    'metadata.description': 'A deed to 1 Main St', 'metadata.image': 'ipfs://deed.png', 'metadata.external_url': 'https://example.test/deed',
    'metadata.placeholder.image': 'ipfs://sealed.png', 'property.area_m2': 120, 'property.city': 'Lisbon', 'property.tags': ['a', 'b'],
  });
  s.fields.fields.set(units, { 'metadata.revealed': true, 'metadata.image': 'https://example.test/img/{id}.png', 'fund.nav': '1.02', 'metadata.banner_image': 'ipfs://banner.png' });

  const m = (await s.call('GET', `/v1/rwa/tokens/${deed}/metadata`, undefined, s.viewer.token)).json();
  t.match(m, { token_id: deed, kind: 'erc721', name: 'Deed', symbol: 'DEED', description: 'A deed to 1 Main St', image: 'ipfs://deed.png', revealed: false, token_uri_template: 'https://example.test/deed/{decimal id}' });
  t.same(m.attributes, [{ trait_type: 'property.area_m2', value: 120 }, { trait_type: 'property.city', value: 'Lisbon' }, { trait_type: 'property.tags', value: '["a","b"]' }], 'every other public field, sorted');

  // Not revealed: every instance shows the placeholder.
  const ph = (await s.call('GET', `/v1/rwa/tokens/${deed}/placeholder`, undefined, s.viewer.token)).json();
  t.same(ph, { name: 'Deed', description: 'Not revealed yet.', image: 'ipfs://sealed.png', attributes: [] });
  t.same((await s.call('GET', `/v1/rwa/tokens/${deed}/metadata/7`, undefined, s.viewer.token)).json(), { ...ph, name: 'Deed #7' });
  // Revealed: the ERC-721 metadata JSON.
  s.fields.fields.get(deed)!['metadata.revealed'] = true;
  t.same((await s.call('GET', `/v1/rwa/tokens/${deed}/metadata/7`, undefined, s.viewer.token)).json(), {
    name: 'Deed #7', description: 'A deed to 1 Main St', image: 'ipfs://deed.png', external_url: 'https://example.test/deed',
    attributes: [{ trait_type: 'property.area_m2', value: 120 }, { trait_type: 'property.city', value: 'Lisbon' }, { trait_type: 'property.tags', value: '["a","b"]' }],
  });

  // ERC-1155: `{id}` is the id as 64 lower-case hex digits; the id may be given either way.
  const hex = (314592).toString(16).padStart(64, '0');
  const doc = (await s.call('GET', `/v1/rwa/tokens/${units}/metadata/314592`, undefined, s.viewer.token)).json();
  t.same(doc, { name: `${units} #314592`, description: null, image: `https://example.test/img/${hex}.png`, attributes: [{ trait_type: 'fund.nav', value: '1.02' }], decimals: 0 });
  t.same((await s.call('GET', `/v1/rwa/tokens/${units}/metadata/${hex}`, undefined, s.viewer.token)).json(), doc, 'the {id} form names the same instance');
  t.equal((await s.call('GET', `/v1/rwa/tokens/${units}/metadata`, undefined, s.viewer.token)).json().token_uri_template, 'https://example.test/units/{id}.json');

  // Bad ids, an ERC-20, another tenant.
  for (const bad of ['-1', '1.5', '0x12', `1${'0'.repeat(78)}`, 'abc']) t.equal((await s.call('GET', `/v1/rwa/tokens/${units}/metadata/${bad}`, undefined, s.viewer.token)).statusCode, 422, bad);
  const erc20 = await s.call('GET', `/v1/rwa/tokens/${bond}/metadata/1`, undefined, s.viewer.token);
  t.equal(erc20.statusCode, 422);
  t.match(erc20.json().error, /ERC-20/);
  t.equal((await s.call('GET', `/v1/rwa/tokens/${bond}/instances`, undefined, s.viewer.token)).statusCode, 422, 'an ERC-20 has no instances');
  for (const p of ['metadata', 'metadata/1', 'placeholder', 'instances', 'relationships']) t.equal((await s.call('GET', `/v1/rwa/tokens/${deed}/${p}`, undefined, s.otherOwner.token)).statusCode, 404, `${p}: another tenant`);
  t.equal((await s.call('GET', `/v1/rwa/contracts/${deed}/contract-metadata`, undefined, s.otherOwner.token)).statusCode, 404, 'contract metadata: another tenant');

  // ERC-7572: the contract's document; the admin Safe is its collaborator.
  t.same((await s.call('GET', `/v1/rwa/contracts/${units}/contract-metadata`, undefined, s.viewer.token)).json(), {
    name: units, image: 'https://example.test/img/{id}.png', banner_image: 'ipfs://banner.png', collaborators: ['0x2222222222222222222222222222222222222222'],
  });
  t.same((await s.call('GET', `/v1/rwa/contracts/${bond}/contract-metadata`, undefined, s.viewer.token)).json(), { name: 'Bond', symbol: 'BND', collaborators: ['0x2222222222222222222222222222222222222222'] });

  // Without a chain configured here, instances cannot be read: 503, not a guess.
  t.equal((await s.call('GET', `/v1/rwa/tokens/${deed}/instances`, undefined, s.viewer.token)).statusCode, 503);
});

t.test('relationships: declared by the `relationships` field, each checked for existence, chain and reciprocity', async (t) => {
  const s = await setupDocuments(t);
  const parent = await putToken(s.store, s.scope, { kind: 'erc20', name: 'Fund' });
  const classA = await putToken(s.store, s.scope, { kind: 'erc20', name: 'Class A' });
  const classB = await putToken(s.store, s.scope, { kind: 'erc20', name: 'Class B' });
  const elsewhere = await putToken(s.store, s.scope, { kind: 'erc20', chain: 'evm-sepolia', chain_id: 11155111 });
  const foreign = await putToken(s.store, s.otherScope, { kind: 'erc20' });
  s.fields.fields.set(parent, { relationships: [{ relation: 'child', token_id: classA }, { relation: 'child', token_id: classB }] });
  s.fields.fields.set(classA, { relationships: [{ relation: 'parent', token_id: parent }, { relation: 'share_class', token_id: classB }, { relation: 'share_class', token_id: elsewhere }, { relation: 'share_class', token_id: foreign }, { relation: 'cousin', token_id: parent }] });
  s.fields.fields.set(classB, { relationships: [{ relation: 'share_class', token_id: classA }] });
  s.fields.fields.set(elsewhere, { relationships: [{ relation: 'share_class', token_id: classA }] });

  const r = (await s.call('GET', `/v1/rwa/tokens/${classA}/relationships`, undefined, s.viewer.token)).json();
  t.equal(r.on_chain, null, 'the chain is not read here');
  t.same(r.data.map((d: { relation: string; token_id: string; consistent: boolean; checks: unknown }) => [d.relation, d.token_id, d.consistent, d.checks]), [
    ['parent', parent, true, { exists: true, same_chain: true, on_chain: null, reciprocal: true }],
    ['share_class', classB, true, { exists: true, same_chain: true, on_chain: null, reciprocal: true }],
    ['share_class', elsewhere, false, { exists: true, same_chain: false, on_chain: null, reciprocal: true }],
    // Another tenant's token is answered as one that does not exist.
    ['share_class', foreign, false, { exists: false, same_chain: false, on_chain: false, reciprocal: false }],
  ], 'an unknown relation is left out');
  t.notOk(JSON.stringify(r).includes(s.otherScope.workspace), 'nothing of the other tenant shows');
  const p = (await s.call('GET', `/v1/rwa/tokens/${parent}/relationships`, undefined, s.viewer.token)).json();
  t.same(p.data.map((d: { consistent: boolean }) => d.consistent), [true, false], 'class B does not name the fund as its parent');
});
