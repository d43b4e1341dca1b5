// End to end with real processes (coordinator, three service nodes, the API) and a real anvil: one
// customer made by the operator command is an organization and a tenant; the customer registers a webhook
// endpoint through the platform API with a bearer key of its linked workspace, sends an EVM transaction
// through the vault API with its API key, and the endpoint receives `vault.created`, `vault.activated` and
// the transaction's broadcast, confirmation and finality for exactly that vault and transaction, signed as
// the SDK's verifier checks, each shaped as the catalog says (catalog-receipt.ts).
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { createWalletClient, http, parseEther, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { Cluster, waitUntil } from '../cluster/cluster-harness.ts';
import { startAnvil } from '../chains/anvil.ts';
import { admin, mining } from './stack.ts';
import { CustodyClient } from '../../api/sdk/client.ts';
import { verifyWebhook, type WebhookEvent } from '../../api/sdk/webhook-receiver.ts';
import { elsewhereIn, received } from '../api/webhooks/catalog-receipt.ts';
import { receiver, type Received } from '../support/loopback-receiver.ts';

t.setTimeout(300_000);

/** The vault and transaction events this journey produces with real nodes and a chain (four are rows of the catalog-events test: ELSEWHERE). */
const SUBSCRIBED = ['vault.created', 'vault.activated', 'vault.wallet.created', 'transaction.broadcast', 'transaction.confirmed', 'transaction.final'] as const;

t.test('a transaction sent with the customer\'s API key reaches the endpoint its workspace key registered as transaction.confirmed', async (t) => {
  const cluster = new Cluster();
  const anvil = await startAnvil();
  t.teardown(async () => {
    if (process.env.E2E_LOG_DIR) for (const p of cluster.procs) writeFileSync(join(process.env.E2E_LOG_DIR, `${p.name}.log`), p.raw.join('\n'));
    await cluster.stop();
    await anvil.stop();
  });

  // The operator makes the customer (offline, before the API holds the store) and a developer key of its
  // linked workspace.
  const secretKey = ed25519.utils.randomSecretKey();
  const operator = ed25519.utils.randomSecretKey();
  const operatorFile = join(cluster.dir, 'operator.key');
  writeFileSync(operatorFile, bytesToHex(operator), { mode: 0o600 });
  const customer = admin(cluster, ['org', 'create', '--name', 'Acme', '--external-id', 'crm-7', '--public-key', bytesToHex(ed25519.getPublicKey(secretKey))], { API_OPERATOR_KEY_FILE: operatorFile });
  t.match(customer, { organization: /^org_/, api_key_id: /./, tenant: /^ten_/, sandbox_workspace: /^wks_/, production_workspace: /^wks_/, created: true });
  t.equal(customer.events_workspace, customer.sandbox_workspace, 'a sandbox API sends the organization\'s events to the sandbox workspace');
  const again = admin(cluster, ['org', 'create', '--name', 'Acme', '--external-id', 'crm-7', '--public-key', bytesToHex(ed25519.getPublicKey(secretKey))], { API_OPERATOR_KEY_FILE: operatorFile });
  t.same({ ...again, created: true }, customer, 'the same command again returns the same customer, created false');
  const { bearer_token: bearer } = admin(cluster, ['key', 'create', '--workspace', customer.sandbox_workspace!, '--role', 'developer']);

  const nodeEnv = { NODE_OPERATOR_KEYS: bytesToHex(ed25519.getPublicKey(operator)) };
  await cluster.startCoordinator({ COORDINATOR_HEARTBEAT_MS: '2000' });
  await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => cluster.startNode(n, nodeEnv)));
  await cluster.startApi({ API_CHAIN_BACKENDS: `evm-local=${anvil.url}`, API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1' });
  const base = `http://127.0.0.1:${cluster.apiPort}`;

  // The customer's receiver, and its endpoint registered with the workspace bearer key.
  const { url, got } = await receiver(t);
  const platform = (method: string, path: string, body?: unknown) => fetch(`${base}/v1${path}`, {
    method, headers: { authorization: `Bearer ${bearer}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const created = await platform('POST', '/webhook-endpoints', { url, events: [...SUBSCRIBED] });
  t.equal(created.status, 201);
  const { secret } = await created.json() as { secret: string };
  const { public_key: publicKey } = await (await fetch(`${base}/v1/public/webhook-signing-key`)).json() as { public_key: string };

  // The same customer, through the vault API with its API key.
  const client = new CustodyClient({ baseUrl: base, organization: customer.organization!, keyId: customer.api_key_id!, secretKey });
  const vault = await client.waitForVault((await client.createVault({ tier: 'hosted', name: 'treasury' })).id);
  const wallet = await client.createWallet(vault.id, { chain: 'evm-local' });
  const funder = createWalletClient({ chain: foundry, transport: http(anvil.url), account: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266' as Hex });
  await anvil.publicClient.waitForTransactionReceipt({ hash: await funder.sendTransaction({ to: wallet.address as Hex, value: parseEther('1') }) });
  const accepted = await client.sendEvm({ wallet, to: '0x00000000000000000000000000000000000a11ce', amount: 1000n, idempotencyKey: 'webhook-e2e-1' });
  const tx = await mining(() => anvil.testClient.mine({ blocks: 1 }), client.waitForTransaction(accepted.id, ['final', 'failed'], { timeoutMs: 90_000 }));
  t.equal(tx.state, 'final', `the transaction is final (${tx.state} ${tx.reason ?? ''})`);

  const verified = (): WebhookEvent[] => got.map((g) => {
    const v = verifyWebhook(g.headers, g.body, { secrets: [secret], publicKey });
    if (!v.ok) throw new Error(`a delivery did not verify: ${v.reason}`);
    return v.event;
  });
  await waitUntil(async () => SUBSCRIBED.every((name) => verified().some((e) => e.type === name)), 30_000, 'every subscribed event delivered');
  const events = verified();
  const confirmed = events.filter((e) => e.type === 'transaction.confirmed');
  t.equal(confirmed.length, 1, 'delivered once');
  t.match(confirmed[0], {
    type: 'transaction.confirmed', version: 1, resource: { type: 'transaction', id: tx.id }, actor: { type: 'system', id: 'vault-api' },
    data: { transaction_id: tx.id, vault_id: vault.id, state: 'confirmed', status: 'confirmed', tx_hash: tx.tx_hash },
  }, 'the envelope names the customer\'s transaction');
  const headers = got.find((g) => g.body.includes('"transaction.confirmed"'))!.headers;
  t.equal(headers['svc-webhook-event'], 'transaction.confirmed');
  t.equal(headers['svc-webhook-event-id'], confirmed[0]!.id);
  t.ok(events.some((e) => e.type === 'vault.created' && e.resource.id === vault.id), 'vault.created for the customer\'s vault too');
  t.notOk(events.some((e) => !(SUBSCRIBED as readonly string[]).includes(e.type)), 'only the subscribed events');
  // Each received, verified, naming the customer's vault, wallet and transaction.
  const one = (type: string) => events.filter((e) => e.type === type);
  t.match(one('vault.wallet.created'), [{ data: { vault_id: vault.id, wallet_id: wallet.id, chain: 'evm-local' } }], 'vault.wallet.created');
  // The rows of the catalog-events test that need real nodes and a chain (ELSEWHERE): the shared receipt check.
  const rows: Record<string, Record<string, unknown>> = {
    'vault.activated': { vault_id: vault.id, state: 'active', public_key: vault.public_key },
    'transaction.broadcast': { transaction_id: tx.id, vault_id: vault.id, status: 'broadcast', tx_hash: tx.tx_hash },
    'transaction.confirmed': { transaction_id: tx.id, vault_id: vault.id, status: 'confirmed', tx_hash: tx.tx_hash },
    'transaction.final': { transaction_id: tx.id, vault_id: vault.id, status: 'final', tx_hash: tx.tx_hash },
  };
  const check = (g: Received) => verifyWebhook(g.headers, g.body, { secrets: [secret], publicKey });
  for (const [name, want] of Object.entries(rows)) await received(t, name, { got }, want, check);
  t.same(Object.keys(rows).sort(), elsewhereIn('test/e2e/customer-webhooks.test.ts'), 'exactly the rows the catalog test counts on');

  // The deliveries are the workspace's, readable through the platform API.
  const list = await (await platform('GET', '/webhook-deliveries')).json() as { data: { event_type: string; status: string }[] };
  t.ok(list.data.some((d) => d.event_type === 'transaction.confirmed' && d.status === 'delivered'));
});
