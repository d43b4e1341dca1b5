// GET /v1/vaults/{vaultId} says whether an active vault can sign now (docs/vault-api.md "Signing
// readiness"), from its coordinator: ready, unavailable with the reason (members detached, OT pairs
// missing) and what is missing, or unknown when the coordinator does not answer; null unless active.
import t from 'tap';
import { vaultApp } from './vault-app.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';

type App = Awaited<ReturnType<typeof vaultApp>>;

/** A vault as key generation leaves it: active, with its key. */
async function activeVault(a: App, name: string): Promise<VaultRecord> {
  const created = (await a.call('POST', '/v1/vaults', { tier: 'hosted', name })).json() as { id: string };
  const v = await a.vaults.vault(a.org.id, created.id);
  await a.store.batch([a.vaults.vaultOp({ ...v, state: 'active', public_key: '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798', chain_code: '00'.repeat(32) })]);
  return a.vaults.vault(a.org.id, v.id);
}

const readiness = { ready: false, reason: 'ot_pairs_missing', detached: ['node-2'], missingPairs: ['1-3'], message: 'cannot sign ECDSA: no attached signer subset has OT material on every pair (missing: 1-3)' };

t.test('an active vault that cannot sign says why; one that can says ready', async (t) => {
  let answer: typeof readiness | { ready: true; reason: ''; detached: string[]; missingPairs: string[]; message: '' } = readiness;
  const asked: string[] = [];
  const a = await vaultApp(t, {
    coordinator: {
      getVault: (async (req: { vaultId: string }) => {
        asked.push(req.vaultId);
        return { vault: { vaultId: req.vaultId, state: 'active', ecdsa: answer } };
      }) as never,
    },
  });
  const v = await activeVault(a, 'pairs');
  const r = await a.call('GET', `/v1/vaults/${v.id}`);
  t.equal(r.statusCode, 200, r.body);
  t.same(r.json().signing, { ecdsa: 'unavailable', reason: 'ot_pairs_missing', detached_members: ['node-2'], missing_pairs: ['1-3'], message: readiness.message });
  t.same(asked, [v.id], 'asked the vault\'s coordinator about this vault');
  answer = { ready: true, reason: '', detached: ['node-2'], missingPairs: [], message: '' };
  t.same((await a.call('GET', `/v1/vaults/${v.id}`)).json().signing, { ecdsa: 'ready', reason: null, detached_members: ['node-2'], missing_pairs: [], message: null });
  const list = (await a.call('GET', '/v1/vaults')).json() as { data: Record<string, unknown>[] };
  t.notOk('signing' in list.data[0]!, 'the list does not ask the coordinator for each vault');
});

t.test('a coordinator that does not answer: unknown, and the vault reads as before', async (t) => {
  const a = await vaultApp(t, { coordinator: { getVault: (async () => Promise.reject(new CustodyError('unavailable', 'down'))) as never } });
  const v = await activeVault(a, 'down');
  const r = await a.call('GET', `/v1/vaults/${v.id}`);
  t.equal(r.statusCode, 200);
  t.match(r.json(), { id: v.id, state: 'active', signing: { ecdsa: 'unknown', reason: 'coordinator_unreachable', detached_members: [], missing_pairs: [] } });
});

t.test('a vault that is not active has no signing readiness: its state and problem say why', async (t) => {
  let asked = 0;
  const a = await vaultApp(t, { coordinator: { getVault: (async () => (asked++, { vault: { ecdsa: readiness } })) as never } });
  const created = (await a.call('POST', '/v1/vaults', { tier: 'hosted', name: 'new' })).json() as { id: string };
  const r = await a.call('GET', `/v1/vaults/${created.id}`);
  t.match(r.json(), { state: 'creating', signing: null });
  t.equal(asked, 0, 'the coordinator is not asked');
});
