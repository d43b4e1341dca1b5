// GET /v1/vaults (docs/vault-api.md "Lists"): the organization's vaults oldest first, in pages of the
// platform API's envelope, filtered by state and tier; never another organization's vault, also not
// through its cursor; and every bad query refused with 400, naming the parameter, changing nothing.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { vaultApp } from './vault-app.ts';
import { enrolSelfNode } from './enrolled-node.ts';
import { refusesBadLimits, refusesForgedCursors, tickingClock, walk } from './list-walk.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';

async function setup(t: Parameters<typeof vaultApp>[0]) {
  const s = await vaultApp(t, { limits: { apiKeysPerOrg: 3, vaultsPerOrg: 20 }, now: tickingClock() });
  await enrolSelfNode(s.vaults, s.org.id);
  // Ten vaults of A, made one after another: hosted and self interleaved, every third made active.
  const made: VaultRecord[] = [];
  for (let i = 0; i < 10; i++) {
    const r = await s.call('POST', '/v1/vaults', { tier: i % 3 === 1 ? 'self' : 'hosted', name: `v${i}` });
    t.equal(r.statusCode, 202, r.body);
    let v = (await s.store.get<VaultRecord>('vaults', r.json().id))!;
    if (i % 3 === 0) {
      v = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: '00'.repeat(32) };
      await s.store.batch([s.vaults.vaultOp(v)]);
    }
    made.push(v);
  }
  // Organization B, with vaults of its own made between A's in time.
  const secretB = ed25519.utils.randomSecretKey();
  const b = await s.vaults.createOrg('Other', bytesToHex(ed25519.getPublicKey(secretB)));
  const credsB = { keyId: b.key.id, secretKey: secretB };
  const madeB = [await s.vaults.createVault(b.org.id, { tier: 'hosted' }), await s.vaults.createVault(b.org.id, { tier: 'hosted', name: 'b2' })];
  return { ...s, made, madeB, credsB };
}

t.test('a walk in small pages lists every vault of the organization once, oldest first', async (t) => {
  const { call, made, madeB, credsB } = await setup(t);
  for (const limit of [1, 3, 4, 10, 100]) {
    const w = await walk(t, call, '/v1/vaults', limit);
    t.same(w.ids, made.map((v) => v.id), `limit ${limit}: each vault once, in creation order`);
    t.equal(w.pages, Math.max(1, Math.ceil(made.length / limit)), `limit ${limit}: no empty last page`);
  }
  const all = (await call('GET', '/v1/vaults')).json();
  t.equal(all.data.length, 10, 'the default limit (25) holds all ten');
  t.same({ next_cursor: all.next_cursor, has_more: all.has_more }, { next_cursor: null, has_more: false });
  // Less `signing`, which only GET /v1/vaults/{id} asks the coordinator for (docs/vault-api.md "Signing readiness").
  const { signing, ...one } = (await call('GET', `/v1/vaults/${made[3]!.id}`)).json() as Record<string, unknown>;
  t.not(signing, undefined, 'GET /v1/vaults/{id} has signing');
  t.notOk('signing' in all.data[3], 'an item has no signing');
  t.same(all.data[3], one, 'an item is the vault as GET /v1/vaults/{id} shows it, less signing');
  t.notOk(JSON.stringify(all).includes('"org"'), 'the organization is not shown');

  const b = await walk(t, call, '/v1/vaults', 1, credsB);
  t.same(b.ids, madeB.map((v) => v.id), 'B sees its own two vaults, none of A\'s');
});

t.test('filters: state, tier and both; each walked in pages, in order', async (t) => {
  const { call, made, madeB } = await setup(t);
  const ids = (f: (v: VaultRecord) => boolean) => made.filter(f).map((v) => v.id);
  const cases: [string, string[]][] = [
    ['tier=self', ids((v) => v.tier === 'self')],
    ['tier=hosted', ids((v) => v.tier === 'hosted')],
    ['state=active', ids((v) => v.state === 'active')],
    ['state=creating', ids((v) => v.state === 'creating')],
    ['state=active&tier=hosted', ids((v) => v.state === 'active' && v.tier === 'hosted')],
    ['state=creating&tier=self', ids((v) => v.state === 'creating' && v.tier === 'self')],
    ['state=frozen', []],
    ['tier=customer_tee', []],
  ];
  for (const [q, want] of cases) {
    const w = await walk(t, call, `/v1/vaults?${q}`, 2);
    t.same(w.ids, want, q);
    t.notOk(w.ids.some((id) => madeB.some((v) => v.id === id)), `${q}: none of B's`);
  }
  t.ok(cases.every(([, want]) => want.length < made.length), 'every filter leaves some out');
  t.same((await call('GET', '/v1/vaults?state=frozen')).json(), { data: [], next_cursor: null, has_more: false }, 'nothing matches: an empty last page');
});

t.test('a cursor serves only its own list, filters and organization', async (t) => {
  const { call, credsB, made } = await setup(t);
  const first = (await call('GET', '/v1/vaults?tier=hosted&limit=2')).json();
  t.equal(first.has_more, true);
  const c = encodeURIComponent(first.next_cursor);
  const next = (await call('GET', `/v1/vaults?tier=hosted&limit=2&cursor=${c}`)).json();
  t.same(next.data.map((v: VaultRecord) => v.id), made.filter((v) => v.tier === 'hosted').slice(2, 4).map((v) => v.id), 'with the same filters it goes on');

  for (const q of ['tier=self', '', 'tier=hosted&state=active', 'state=creating']) {
    const r = await call('GET', `/v1/vaults?${q}&cursor=${c}`);
    t.equal(r.statusCode, 400, `filters changed to "${q}"`);
    t.equal(r.json().code, 'cursor_filter_mismatch', `filters changed to "${q}"`);
    t.match(r.json().error, /filters changed/);
  }
  const byB = await call('GET', `/v1/vaults?tier=hosted&cursor=${c}`, undefined, credsB);
  t.equal(byB.statusCode, 400, 'another organization presenting the cursor');
  t.equal(byB.json().code, 'invalid_cursor');
  const otherList = await call('GET', `/v1/vaults/${made[0]!.id}/wallets?cursor=${c}`);
  t.equal(otherList.statusCode, 400, 'the cursor on another list');
  t.equal(otherList.json().code, 'invalid_cursor');
  await refusesForgedCursors(t, call, '/v1/vaults?tier=hosted', first.next_cursor);
  t.equal((await call('GET', '/v1/vaults?cursor=')).statusCode, 200, 'an empty cursor is the first page');
});

t.test('bad queries: 400 invalid_request naming the parameter, and nothing changes', async (t) => {
  const { call, store } = await setup(t);
  const before = (await call('GET', '/v1/vaults')).json();
  const count = async () => {
    let n = 0;
    for await (const _ of store.all('vaults')) n++;
    return n;
  };
  const stored = await count();
  await refusesBadLimits(t, call, '/v1/vaults');
  for (const [what, q, names] of [
    ['an unknown state', 'state=gone', /state.*one of creating, active/], ['an empty state', 'state=', /state/],
    ['an unknown tier', 'tier=cold', /tier.*one of hosted, self, customer_tee/], ['a state given twice', 'state=active&state=frozen', /state/],
    ['an unknown parameter', 'org=org_x', /org.*Unexpected property/], ['a cursor of 1025 characters', 'cursor=' + 'c'.repeat(1025), /cursor/],
  ] as const) {
    const r = await call('GET', `/v1/vaults?${q}`);
    t.equal(r.statusCode, 400, what);
    t.equal(r.json().code, 'invalid_request', what);
    t.match(r.json().error, names, `${what}: the message names the parameter`);
  }
  t.same((await call('GET', '/v1/vaults')).json(), before, 'the list is as it was');
  t.equal(await count(), stored, 'and so is the store');
  const unsigned = await call('GET', '/v1/vaults', undefined, { keyId: 'key_nope', secretKey: ed25519.utils.randomSecretKey() });
  t.equal(unsigned.statusCode, 401, 'a list is signed like every request');
});
