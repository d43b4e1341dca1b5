// The outbox relay: a linked organization's vault and transaction events reach the webhook engine in the
// linked workspace with the envelope the catalog documents, under their outbox id; an unlinked
// organization's events are parked and released by the link; events without a catalog name are
// consumed. A relay process killed in the middle and started again loses no event and emits none twice.
import t from 'tap';
import { spawn } from 'node:child_process';
import { resolve, join } from 'node:path';
import { createCustomer } from '../../api/customers/create-customer.ts';
import { EventRelay, webhookTypeOf, failureCode } from '../../api/customers/event-relay.ts';
import { createLogger } from '../../common/logger.ts';
import type { DeliveryRecord, Envelope } from '../../api/webhooks/delivery-engine.ts';
import type { EventRecord } from '../../api/vaults/records.ts';
import { setupCustomers, newPublicKey } from './setup-customers.ts';
import { PROGRAM_LAUNCHER, programArgs } from '../support/program.ts';

const log = createLogger('relay', 'silent');
const actor = { type: 'operator' as const, id: 'test' };

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

t.test('webhook names: catalog events pass, a rejection is transaction.failed, the rest have none', async (t) => {
  t.equal(webhookTypeOf('transaction.confirmed'), 'transaction.confirmed');
  t.equal(webhookTypeOf('vault.created'), 'vault.created');
  t.equal(webhookTypeOf('transaction.rejected'), 'transaction.failed');
  for (const n of ['transaction.checks', 'api_key.created', 'vault.reshare.pending', 'node.enrolled']) t.equal(webhookTypeOf(n), undefined, n);
  for (const n of ['transaction.final', 'vault.failed']) t.equal(webhookTypeOf(n), n, `${n} is relayed`);
});

t.test('a failure is delivered with its enumerated code, not the words after it', async (t) => {
  t.equal(failureCode('dropped: nonce 3 was used by another transaction of the wallet, final at depth 64; this one can never be included'), 'dropped');
  t.equal(failureCode('signers refused: bad_template: refused by node-b: malformed EVM template'), 'signers_refused');
  t.equal(failureCode('rejected_by_approver'), 'rejected_by_approver');
  t.equal(failureCode('Something Else: with words'), 'failed', 'no code: the generic one');
});

t.test('a linked organization\'s events are emitted into its workspace, once, with the outbox id and time', async (t) => {
  const s = await setupCustomers(t);
  const c = await createCustomer(s.services, { name: 'Acme', publicKey: newPublicKey(), operatorSecretKey: s.operator });
  const scope = { tenant: c.tenant.id, workspace: c.sandbox.id };
  const { endpoint } = await s.platform.endpoints.create(scope, actor, { url: 'https://hooks.example.com/a', events: ['vault.created', 'transaction.confirmed', 'transaction.failed'] });
  // The production workspace's endpoint hears nothing of a sandbox deployment's organization.
  await s.platform.endpoints.create({ tenant: c.tenant.id, workspace: c.production.id }, actor, { url: 'https://hooks.example.com/p', events: ['vault.created'] });
  const vault = await s.vaults.createVault(c.organization.id, { tier: 'hosted', name: 'v' });
  await s.store.batch([
    s.vaults.event(c.organization.id, 'transaction.confirmed', 'transaction', 'txn_1', { transaction_id: 'txn_1', vault_id: vault.id, state: 'confirmed', confirmations: 1 }),
    s.vaults.event(c.organization.id, 'transaction.rejected', 'transaction', 'txn_2', { transaction_id: 'txn_2', vault_id: vault.id, state: 'rejected', reason: 'policy_denied' }),
    s.vaults.event(c.organization.id, 'transaction.checks', 'transaction', 'txn_1', { transaction_id: 'txn_1', state: 'checks' }),
    s.vaults.event(c.organization.id, 'vault.export.requested', 'vault', vault.id, { vault_id: vault.id, export_id: 'exp_0123456789abcdef', not_before: 0 }),
  ]);
  const outbox = await collect(s.store.all<EventRecord>('outbox'));
  t.equal(outbox.length, 5);
  const relay = new EventRelay({ store: s.store, links: s.links, deliveries: s.platform.deliveries, log, audit: s.platform.audit });
  t.same(await relay.runOnce(), { relayed: 4, parked: 0, dropped: 1 }, 'transaction.checks has no webhook event');
  const audit = (await s.platform.audit.list(c.sandbox.id)).filter((a) => a.action.startsWith('vault.'));
  t.match(audit, [{ action: 'vault.export.requested', resource_id: vault.id, actor: { type: 'system', id: 'vault-api' }, after: { export_id: 'exp_0123456789abcdef' } }], 'an export request is in the workspace\'s audit log, once');
  t.same(await collect(s.store.all('outbox')), [], 'the outbox is empty');
  t.same(await relay.runOnce(), { relayed: 0, parked: 0, dropped: 0 }, 'a second pass finds nothing');
  const events = await collect(s.store.all<Envelope & { workspace: string }>('webhook_events'));
  t.equal(events.length, 4);
  t.ok(events.every((e) => e.workspace === c.sandbox.id), 'every event in the linked workspace');
  const deliveries = await collect(s.store.all<DeliveryRecord>('webhook_deliveries'));
  t.equal(deliveries.length, 3, 'one delivery per event for the subscribed endpoint, none for production\'s');
  t.ok(deliveries.every((d) => d.endpoint_id === endpoint.id));
  const byType = new Map(deliveries.map((d) => [d.event_type, d.payload]));
  const created = outbox.find((e) => e.type === 'vault.created')!;
  t.same(byType.get('vault.created'), {
    id: created.id, type: 'vault.created', version: 1, created_at: created.created_at, resource: { type: 'vault', id: vault.id },
    actor: { type: 'system', id: 'vault-api' }, data: { vault_id: vault.id, state: 'creating', tier: 'hosted', status: 'creating' },
  }, 'the documented envelope, with the outbox event\'s id and time');
  t.match(byType.get('transaction.confirmed'), { resource: { type: 'transaction', id: 'txn_1' }, data: { transaction_id: 'txn_1', state: 'confirmed', status: 'confirmed', confirmations: 1 } });
  t.match(byType.get('transaction.failed'), { type: 'transaction.failed', data: { state: 'rejected', status: 'rejected', reason: 'policy_denied' } }, 'a rejection is delivered as transaction.failed');
});

t.test('an unlinked organization\'s events are parked, and released in order when the operator links it', async (t) => {
  const s = await setupCustomers(t);
  const { org } = await s.vaults.createOrg('Old Co', newPublicKey(), 'bootstrap', s.operator);
  const { tenant, sandbox } = await s.platform.tenancy.createTenant('Old Co');
  await s.platform.endpoints.create({ tenant: tenant.id, workspace: sandbox.id }, actor, { url: 'https://hooks.example.com/a', events: ['vault.created', 'vault.frozen'] });
  const v1 = await s.vaults.createVault(org.id, { tier: 'hosted' });
  const v2 = await s.vaults.createVault(org.id, { tier: 'hosted' });
  const relay = new EventRelay({ store: s.store, links: s.links, deliveries: s.platform.deliveries, log });
  t.same(await relay.runOnce(), { relayed: 0, parked: 2, dropped: 0 });
  t.equal((await collect(s.store.all('outbox_parked'))).length, 2, 'kept, not dropped');
  t.same(await collect(s.store.all('webhook_events')), [], 'nothing emitted while unlinked');
  await s.links.linkExisting(org.id, tenant.id, 'sandbox');
  t.same(await relay.runOnce(), { relayed: 2, parked: 0, dropped: 0 });
  const deliveries = (await collect(s.store.all<DeliveryRecord>('webhook_deliveries'))).sort((a, b) => a.id.localeCompare(b.id));
  t.same(deliveries.map((d) => d.payload.resource.id), [v1.id, v2.id], 'released in their original order');
  t.same(await collect(s.store.all('outbox_parked')), []);
});

t.test('events keep their creation order in the outbox, within a millisecond and when the wall clock steps back', async (t) => {
  const s = await setupCustomers(t);
  const { org } = await s.vaults.createOrg('Clock Co', newPublicKey(), 'bootstrap', s.operator);
  const realNow = Date.now;
  let fake = realNow() + 60_000;
  Date.now = () => (fake -= 1_000); // every reading a second earlier than the one before
  const made: string[] = [];
  try {
    for (let i = 0; i < 5; i++) made.push((await s.vaults.createVault(org.id, { tier: 'hosted' })).id);
  } finally {
    Date.now = realNow;
  }
  const outbox = (await collect(s.store.all<EventRecord>('outbox'))).filter((e) => e.type === 'vault.created');
  t.same(outbox.map((e) => e.resource_id), made, 'outbox order is creation order');
});

t.test('a relay started after a link that stopped before releasing releases the parked events', async (t) => {
  const s = await setupCustomers(t);
  const { org } = await s.vaults.createOrg('Old Co', newPublicKey(), 'bootstrap', s.operator);
  const { tenant, sandbox } = await s.platform.tenancy.createTenant('Old Co');
  await s.vaults.createVault(org.id, { tier: 'hosted' });
  await new EventRelay({ store: s.store, links: s.links, deliveries: s.platform.deliveries, log }).runOnce();
  // The link record only, as a link interrupted before its release leaves it.
  const { ops } = s.links.linkOps({ key: 'name:Old Co', externalId: null, name: 'Old Co', org: org.id, tenant: tenant.id, workspace: sandbox, firstPublicKey: null });
  await s.store.batch(ops);
  t.same(await new EventRelay({ store: s.store, links: s.links, deliveries: s.platform.deliveries, log }).runOnce(), { relayed: 1, parked: 0, dropped: 0 });
});

t.test('a relay process killed mid-way and restarted: every event emitted exactly once', async (t) => {
  const N = 1500;
  const s = await setupCustomers(t);
  const c = await createCustomer(s.services, { name: 'Acme', publicKey: newPublicKey(), operatorSecretKey: s.operator });
  const scope = { tenant: c.tenant.id, workspace: c.sandbox.id };
  await s.platform.endpoints.create(scope, actor, { url: 'https://hooks.example.com/a', events: ['transaction.confirmed'] });
  await s.platform.endpoints.create(scope, actor, { url: 'https://hooks.example.com/b', events: ['transaction.confirmed'] });
  const ops = Array.from({ length: N }, (_, i) => s.vaults.event(c.organization.id, 'transaction.confirmed', 'transaction', `txn_${i}`, { transaction_id: `txn_${i}`, state: 'confirmed' }));
  for (let i = 0; i < N; i += 500) await s.store.batch(ops.slice(i, i + 500));
  const ids = new Set((await collect(s.store.all<EventRecord>('outbox'))).map((e) => e.id));
  t.equal(ids.size, N);
  await s.close();

  const child = join(resolve(import.meta.dirname), 'relay-child.ts');
  const run = (kill: boolean) => new Promise<string>((done) => {
    // Killed once 40 of its store batches (one per event relayed) are written: in the middle of its work.
    const p = spawn(PROGRAM_LAUNCHER, [...programArgs(child), s.dir, ...(kill ? ['40'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (kill && out.includes('paused')) p.kill('SIGKILL');
    });
    p.on('exit', () => done(out));
  });
  const first = await run(true);
  t.notMatch(first, /done/, 'the first relay was killed before it finished');

  const mid = await setupCustomers(t, s.dir);
  const left = (await collect(mid.store.all('outbox'))).length;
  const emitted = (await collect(mid.store.all('webhook_events'))).length;
  t.ok(left > 0 && left < N, `killed in the middle (${N - left} relayed, ${left} left)`);
  t.equal(emitted + left, N, 'every event is either emitted or still in the outbox: the row goes with its emission');
  await mid.close();

  const second = await run(false);
  t.match(second, /done \d+/);
  const end = await setupCustomers(t, s.dir);
  t.same(await collect(end.store.all('outbox')), [], 'the outbox is empty');
  const events = await collect(end.store.all<Envelope>('webhook_events'));
  t.equal(events.length, N, 'N events');
  t.same(new Set(events.map((e) => e.id)), ids, 'exactly the outbox events, under their own ids');
  const deliveries = await collect(end.store.all<DeliveryRecord>('webhook_deliveries'));
  t.equal(deliveries.length, 2 * N, 'one delivery per endpoint per event');
  for (const ep of new Set(deliveries.map((d) => d.endpoint_id))) {
    t.equal(new Set(deliveries.filter((d) => d.endpoint_id === ep).map((d) => d.event_id)).size, N, `endpoint ${ep}: each event once`);
  }
});
