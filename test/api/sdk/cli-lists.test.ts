// The lists from the SDK and the command line (docs/sdk.md): listVaults, listWallets and listTransactions
// answer one page, allPages walks them all; `vault list`, `wallet list` and `tx list` (child processes
// against the API on a loopback port) print a page, the next with --cursor, every item with --all, and
// refuse bad options before any request.
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { allPages, CustodyClient, type Transaction, type Vault } from '../../../api/sdk/client.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';
import { runCli, type Run } from './run-cli.ts';

// Each command is a fresh Node process that loads the SDK; on a busy machine that takes seconds.
t.setTimeout(300_000);

const dir = mkdtempSync(join(tmpdir(), 'cli-lists-'));
const store = await RecordStore.open(join(dir, 'db'));
let ms = Date.now();
const now = () => new Date(ms++);
const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 5, vaultsPerOrg: 5 }, now });
const transactions = new TransactionService({ vaults, hasBackend: () => true, now });
const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api', 'silent'), vaults, transactions });
await app.listen({ host: '127.0.0.1', port: 0 });
const port = (app.server.address() as { port: number }).port;
t.teardown(async () => {
  await app.close();
  await store.close();
});

const secret = ed25519.utils.randomSecretKey();
const { org, key } = await vaults.createOrg('Acme', bytesToHex(ed25519.getPublicKey(secret)));
const secretFile = join(dir, 'key.hex');
writeFileSync(secretFile, bytesToHex(secret) + '\n', { mode: 0o600 });
const settings = { CUSTODY_URL: `http://127.0.0.1:${port}`, CUSTODY_ORGANIZATION: org.id, CUSTODY_KEY_ID: key.id, CUSTODY_SECRET_KEY_FILE: secretFile };
const client = new CustodyClient({ baseUrl: settings.CUSTODY_URL, organization: org.id, keyId: key.id, secretKey: secret });

// Three vaults (two active), three wallets of the first, five transactions from them.
const made: VaultRecord[] = [];
for (let i = 0; i < 3; i++) {
  const v = await vaults.createVault(org.id, { tier: 'hosted', name: `v${i}` });
  made.push(i < 2 ? { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)) } : v);
  await store.batch([vaults.vaultOp(made[i]!)]);
}
const v0 = made[0]!;
const wallets = [
  await client.createWallet(v0.id, { chain: 'evm-local' }), await client.createWallet(v0.id, { chain: 'bitcoin-regtest' }), await client.createWallet(v0.id, { chain: 'evm-local', account_index: 1 }),
];
const evm = wallets.filter((w) => w.chain === 'evm-local');
const sent: Transaction[] = [];
for (let i = 0; i < 5; i++) sent.push(await client.sendEvm({ wallet: evm[i % 2]!, to: '0x00000000000000000000000000000000000000a1', amount: 1n, idempotencyKey: `list-${i}` }));

type ListRun = Run<{ data: { id: string; state?: string }[]; next_cursor: string | null; has_more: boolean }>;
const cli = (args: string[]): Promise<ListRun> => runCli(args, settings);
const ids = (r: ListRun) => r.out.data?.map((x) => x.id);

t.test('SDK: a list method answers one page; allPages walks every page in order', async (t) => {
  const page = await client.listVaults({ limit: 2 });
  t.same(page.data.map((v: Vault) => v.id), made.slice(0, 2).map((v) => v.id));
  t.equal(page.has_more, true);
  t.same((await client.listVaults({ limit: 2, cursor: page.next_cursor! })).data.map((v) => v.id), [made[2]!.id]);
  const walked = [];
  for await (const tx of allPages((cursor) => client.listTransactions({ vault_id: v0.id, limit: 2, ...(cursor ? { cursor } : {}) }))) walked.push(tx.id);
  t.same(walked, sent.map((x) => x.id), 'five transactions over three pages');
  const walletsWalked = [];
  for await (const w of allPages((cursor) => client.listWallets(v0.id, { chain: 'evm-local', limit: 1, ...(cursor ? { cursor } : {}) }))) walletsWalked.push(w.id);
  t.same(walletsWalked, evm.map((w) => w.id));
  t.same((await client.listVaults({ state: 'creating' })).data.map((v) => v.id), [made[2]!.id], 'filters travel in the query');
  await t.rejects(client.listTransactions({ cursor: 'garbage' }), { name: 'CustodyApiError', status: 400, code: 'invalid_cursor' });
});

t.test('CLI: vault list, wallet list and tx list print pages, follow --cursor and walk with --all', async (t) => {
  const [first, all, active, walletList, txList, txAll] = await Promise.all([
    cli(['vault', 'list', '--limit', '2']),
    cli(['vault', 'list', '--all', '--limit', '1']),
    cli(['vault', 'list', '--state', 'active', '--tier', 'hosted']),
    cli(['wallet', 'list', v0.id, '--chain', 'evm-local']),
    cli(['tx', 'list', '--vault', v0.id, '--state', 'created', '--limit', '3']),
    cli(['tx', 'list', '--wallet', evm[1]!.id, '--all', '--limit', '1']),
  ]);
  for (const r of [first, all, active, walletList, txList, txAll]) t.equal(r.code, 0, r.stdout);
  t.same(ids(first), made.slice(0, 2).map((v) => v.id));
  t.equal(first.out.has_more, true);
  const next = await cli(['vault', 'list', '--limit', '2', '--cursor', first.out.next_cursor!]);
  t.equal(next.code, 0);
  t.same(next.out, { data: next.out.data, next_cursor: null, has_more: false });
  t.same(ids(next), [made[2]!.id], '--cursor prints the next page');
  t.same(all.out, { data: all.out.data, next_cursor: null, has_more: false }, '--all prints one last page');
  t.same(ids(all), made.map((v) => v.id), 'with every vault, in order');
  t.same(ids(active), made.slice(0, 2).map((v) => v.id));
  t.same(ids(walletList), evm.map((w) => w.id));
  t.same(ids(txList), sent.slice(0, 3).map((x) => x.id));
  t.equal(txList.out.has_more, true);
  t.same(ids(txAll), sent.filter((x) => x.wallet_id === evm[1]!.id).map((x) => x.id));
});

t.test('CLI: bad options are usage errors before any request; the API\'s refusals exit 4 (not found) or 6 (invalid)', async (t) => {
  const usage: [string, string[], RegExp][] = [
    ['unknown vault state', ['vault', 'list', '--state', 'gone'], /--state must be one of creating, active/],
    ['unknown tier', ['vault', 'list', '--tier', 'cold'], /--tier must be one of/],
    ['limit 0', ['tx', 'list', '--limit', '0'], /--limit must be 1 to 100/],
    ['limit 101', ['vault', 'list', '--limit', '101'], /--limit must be 1 to 100/],
    ['limit not an integer', ['wallet', 'list', v0.id, '--limit', '2.5'], /--limit must be a non-negative base-10 integer/],
    ['unknown chain', ['wallet', 'list', v0.id, '--chain', 'dogecoin'], /--chain must be one of/],
    ['unknown transaction state', ['tx', 'list', '--state', 'pending'], /--state must be one of awaiting_approval, created, checks/],
    ['no vault id', ['wallet', 'list'], /wallet list takes <vaultId>/],
    ['an option of another list', ['vault', 'list', '--chain', 'evm-local'], /does not take --chain/],
  ];
  const refused: [string, string[], number, string][] = [
    ['unknown vault', ['wallet', 'list', 'vlt_missing'], 404, 'not_found'],
    ['made-up cursor', ['tx', 'list', '--cursor', 'garbage'], 400, 'invalid_cursor'],
  ];
  const runs = await Promise.all([...usage, ...refused].map(([, args]) => cli(args)));
  usage.forEach(([what, , message], i) => {
    t.equal(runs[i]!.code, 2, what);
    t.match(runs[i]!.err, { code: 'usage', status: null, error: message }, what);
    t.equal(runs[i]!.stdout, '', `${what}: nothing on stdout`);
  });
  refused.forEach(([what, , status, code], i) => {
    const r = runs[usage.length + i]!;
    t.equal(r.code, status === 404 ? 4 : 6, what);
    t.match(r.err, { status, code }, what);
  });
});
