// Three API processes on one PostgreSQL database, with the coordinator, three service nodes and a real
// anvil (docs/api-storage.md "Several instances"). A stream of EVM transfers from one wallet is submitted
// through all three instances, with a webhook endpoint subscribed to their confirmations, and one
// instance is SIGKILLed mid-stream. Every transfer reaches a final state exactly once: nonces 0..n-1 each
// used once, the chain holds exactly n transactions from the wallet and its balance fell by exactly what
// they sent and paid; every transaction.confirmed event reaches the endpoint, each stored once with one
// delivery row; a receipt twice can only be a delivery the killed instance had in flight (at least once,
// deduplicated by its event id).
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { createWalletClient, http, parseEther, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import pg from 'pg';
import { Cluster, waitUntil, type LogLine, type Proc } from '../cluster/cluster-harness.ts';
import { startAnvil } from '../chains/anvil.ts';
import { newDatabase, startPostgres } from '../support/postgres.ts';
import { admin, mining, startApiInstance } from './stack.ts';
import { CustodyClient } from '../../api/sdk/client.ts';
import { verifyWebhook } from '../../api/sdk/webhook-receiver.ts';

t.setTimeout(300_000);
const TRANSFERS = 6;
const BOB = '0x00000000000000000000000000000000000000b0' as Hex;

t.test('three API instances on one database, one SIGKILLed mid-stream: every transfer final once, every event delivered', async (t) => {
  const cluster = new Cluster();
  const server = await startPostgres();
  const anvil = await startAnvil();
  t.teardown(async () => {
    if (process.env.E2E_LOG_DIR) for (const p of cluster.procs) writeFileSync(join(process.env.E2E_LOG_DIR, `${p.name}.log`), p.raw.join('\n'));
    await cluster.stop();
    await anvil.stop();
    await server.stop();
  });
  const url = await newDatabase(server, 'three');

  // The customer, made by the operator command on the shared database.
  const secretKey = ed25519.utils.randomSecretKey();
  const operator = ed25519.utils.randomSecretKey();
  const operatorFile = join(cluster.dir, 'operator.key');
  writeFileSync(operatorFile, bytesToHex(operator), { mode: 0o600 });
  const db = { API_DATABASE_URL: url };
  const customer = admin(cluster, ['org', 'create', '--name', 'Acme', '--public-key', bytesToHex(ed25519.getPublicKey(secretKey))], { ...db, API_OPERATOR_KEY_FILE: operatorFile });
  const { bearer_token: bearer } = admin(cluster, ['key', 'create', '--workspace', customer.sandbox_workspace!, '--role', 'developer'], db);

  await cluster.startCoordinator({ COORDINATOR_HEARTBEAT_MS: '2000' });
  await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => cluster.startNode(n, { NODE_OPERATOR_KEYS: bytesToHex(ed25519.getPublicKey(operator)) })));
  const apis: { proc: Proc; base: string; client: CustodyClient }[] = [];
  for (const name of ['api-1', 'api-2', 'api-3']) {
    // A short lease: the killed instance's job is taken over after 6 s, not the default 15.
    const { proc, base } = await startApiInstance(cluster, name, { ...db, API_CHAIN_BACKENDS: `evm-local=${anvil.url}`, API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1', API_JOB_LEASE_MS: '6000' });
    apis.push({ proc, base, client: new CustodyClient({ baseUrl: base, organization: customer.organization!, keyId: customer.api_key_id!, secretKey }) });
  }

  // The customer's receiver, registered through the first instance.
  const received: { eventId: string; type: string; transaction: string }[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const v = verifyWebhook(req.headers, Buffer.concat(chunks).toString('utf8'), { secrets: [secret], publicKey });
      if (v.ok) received.push({ eventId: v.event.id, type: v.event.type, transaction: v.event.resource.id });
      res.writeHead(v.ok ? 200 : 400).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    receiver.closeAllConnections();
    receiver.close(() => r());
  }));
  const created = await fetch(`${apis[0]!.base}/v1/webhook-endpoints`, {
    method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, events: ['transaction.confirmed'] }),
  });
  t.equal(created.status, 201);
  const { secret } = await created.json() as { secret: string };
  const { public_key: publicKey } = await (await fetch(`${apis[0]!.base}/v1/public/webhook-signing-key`)).json() as { public_key: string };

  // A vault made through the second instance (its key generation runs on whichever instance claims it).
  const vault = await apis[0]!.client.waitForVault((await apis[1]!.client.createVault({ tier: 'hosted', name: 'treasury' })).id);
  const wallet = await apis[2]!.client.createWallet(vault.id, { chain: 'evm-local' });
  const funder = createWalletClient({ chain: foundry, transport: http(anvil.url), account: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266' as Hex });
  await anvil.publicClient.waitForTransactionReceipt({ hash: await funder.sendTransaction({ to: wallet.address as Hex, value: parseEther('1') }) });
  const before = await anvil.publicClient.getBalance({ address: wallet.address as Hex });

  // The stream. Transfers 0..2 through instances 1 and 2; once they are out, transfer 3 through
  // instance 3, which as a rule claims its job at once (the accepting instance is poked; the others
  // poll). Whichever instance holds it is SIGKILLed while it signs: the job's lease holds the wallet's
  // later transfers back until it runs out, and another instance resumes it. The rest go through the
  // instances left.
  const send = (api: (typeof apis)[number], i: number) => api.client.sendEvm({ wallet, to: BOB, amount: 1000n + BigInt(i), idempotencyKey: `stream-${i}` });
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await send(apis[i % 2]!, i)).id);
  await mining(() => anvil.testClient.mine({ blocks: 1 }), Promise.all(ids.map((id) => apis[0]!.client.waitForTransaction(id, ['broadcast', 'confirmed', 'final'], { timeoutMs: 60_000 }))));
  const held = (await send(apis[2]!, 3)).id;
  ids.push(held);
  const signing = (l: LogLine) => l.msg === 'transaction advanced' && l.transaction === held && l.state === 'checks';
  const holder = await Promise.any(apis.map((a) => a.proc.waitFor(signing, 20_000, 'the transfer claimed').then(() => a)));
  await holder.proc.kill('SIGKILL');
  t.notOk(holder.proc.lines.some((l) => l.transaction === held && l.state === 'signed'), `${holder.proc.name} was killed holding the transfer, before it was signed`);
  const alive = apis.filter((a) => a !== holder);
  for (let i = 4; i < TRANSFERS; i++) ids.push((await send(alive[i % 2]!, i)).id);
  const finals = await mining(() => anvil.testClient.mine({ blocks: 1 }),
    Promise.all(ids.map((id) => alive[0]!.client.waitForTransaction(id, ['confirmed', 'final', 'failed', 'rejected'], { timeoutMs: 150_000 }))));
  t.same(finals.map((x) => x.state).filter((s) => s !== 'confirmed' && s !== 'final'), [], 'every transfer confirmed');

  // Exactly once on chain.
  const txs = await Promise.all(finals.map((x) => anvil.publicClient.getTransaction({ hash: x.tx_hash as Hex })));
  t.same(txs.map((x) => x.nonce).sort((a, b) => a - b), Array.from({ length: TRANSFERS }, (_, i) => i), 'nonces 0..n-1, each once');
  t.equal(await anvil.publicClient.getTransactionCount({ address: wallet.address as Hex }), TRANSFERS, 'the chain holds exactly n transactions from the wallet');
  const receipts = await Promise.all(finals.map((x) => anvil.publicClient.getTransactionReceipt({ hash: x.tx_hash as Hex })));
  const spent = txs.reduce((sum, x) => sum + x.value, 0n) + receipts.reduce((sum, r) => sum + r.gasUsed * r.effectiveGasPrice, 0n);
  t.equal(await anvil.publicClient.getBalance({ address: wallet.address as Hex }), before - spent, 'the balance fell by exactly what the n transfers sent and paid');

  // Every event delivered; stored once, with one delivery row each.
  await waitUntil(() => new Set(received.filter((r) => r.type === 'transaction.confirmed').map((r) => r.transaction)).size === TRANSFERS, 60_000, 'every confirmation delivered');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  t.teardown(() => c.end());
  const events = (await c.query<{ id: string; n: number }>(
    "SELECT value->'resource'->>'id' AS id, count(*)::int AS n FROM records WHERE collection = 'webhook_events' AND value->>'type' = 'transaction.confirmed' GROUP BY 1",
  )).rows;
  t.equal(events.length, TRANSFERS, 'one transaction.confirmed event per transfer');
  t.ok(events.every((e) => e.n === 1), 'none stored twice');
  const deliveries = (await c.query<{ status: string; n: number }>(
    "SELECT value->>'status' AS status, count(*)::int AS n FROM records WHERE collection = 'webhook_deliveries' AND value->>'event_type' = 'transaction.confirmed' GROUP BY 1",
  )).rows;
  t.same(deliveries, [{ status: 'delivered', n: TRANSFERS }], 'one delivery row per event, each delivered');
  const twice = received.length - new Set(received.map((r) => r.eventId)).size;
  t.ok(twice <= 8, `a receipt twice only for a delivery in flight at the kill, at most one endpoint's limit (${twice})`);
  const jobs = (await c.query<{ state: string; n: number }>('SELECT state, count(*)::int AS n FROM jobs GROUP BY 1 ORDER BY 1')).rows;
  t.notOk(jobs.some((j) => j.state === 'dead'), `no job given up (${JSON.stringify(jobs)})`);
});
