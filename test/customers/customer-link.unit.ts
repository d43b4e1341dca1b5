// One customer is one organization (vault API) and one tenant with its workspaces (platform API), made
// together in one batch and found from either side; creation is idempotent by external id (else name)
// and refuses another first key; an organization and a tenant made separately are linked by the operator.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { createCustomer } from '../../api/customers/create-customer.ts';
import { decodeTrustEntry, signBootstrap, verifyBootstrap } from '../../core/trust/trust-entry.ts';
import { setupCustomers, newPublicKey } from './setup-customers.ts';

t.test('createCustomer makes the organization, its rooted first key, the tenant, both workspaces and the link', async (t) => {
  const s = await setupCustomers(t);
  const pub = newPublicKey();
  const made = await createCustomer(s.services, { name: 'Acme', publicKey: pub, externalId: 'crm-42', operatorSecretKey: s.operator });
  t.equal(made.created, true);
  t.equal(made.customer.org, made.organization.id);
  t.equal(made.customer.tenant, made.tenant.id);
  t.equal(made.customer.workspace, made.sandbox.id, 'a sandbox deployment sends the organization\'s events to the sandbox workspace');
  t.equal(made.sandbox.environment, 'sandbox');
  t.equal(made.production.environment, 'production');
  t.same((await s.vaults.activeKey(made.apiKeyId))?.org, made.organization.id, 'the first API key authenticates for the organization');
  const log = await s.vaults.trustLog(made.organization.id);
  const first = decodeTrustEntry(log[0]!);
  t.equal(first.kind, 'bootstrap', 'the trust log starts with the operator bootstrap');
  if (first.kind === 'bootstrap') {
    t.equal(first.publicKey, pub);
    t.ok(verifyBootstrap(first, [bytesToHex(ed25519.getPublicKey(s.operator))]));
  }
  t.equal((await s.links.byOrg(made.organization.id))?.id, made.customer.id, 'found from the organization');
  t.equal((await s.links.byTenant(made.tenant.id))?.id, made.customer.id, 'found from the tenant');
  t.equal((await s.links.byWorkspace(made.sandbox))?.id, made.customer.id, 'the sandbox workspace is the linked one');
  t.equal(await s.links.byWorkspace(made.production), undefined, 'the production workspace is not');
  // Bearer keys of the linked workspace work as for any tenant.
  const bearer = await s.platform.tenancy.createKey(made.sandbox.id, 'developer');
  t.equal((await s.platform.tenancy.authenticate(bearer.token))?.tenant, made.tenant.id);
});

t.test('a second create with the same external id returns the customer it made; another public key is refused', async (t) => {
  const s = await setupCustomers(t);
  const pub = newPublicKey();
  const a = await createCustomer(s.services, { name: 'Acme', publicKey: pub, externalId: 'crm-1', operatorSecretKey: s.operator });
  const b = await createCustomer(s.services, { name: 'Acme renamed', publicKey: pub.toUpperCase(), externalId: 'crm-1', operatorSecretKey: s.operator });
  t.equal(b.created, false);
  t.same([b.customer.id, b.organization.id, b.apiKeyId, b.tenant.id, b.sandbox.id, b.production.id], [a.customer.id, a.organization.id, a.apiKeyId, a.tenant.id, a.sandbox.id, a.production.id]);
  await t.rejects(createCustomer(s.services, { name: 'Acme', publicKey: newPublicKey(), externalId: 'crm-1', operatorSecretKey: s.operator }),
    { code: 'conflict', message: /exists with another first API key/ });
  // Without an external id, the name is the key.
  const c = await createCustomer(s.services, { name: 'Globex', publicKey: pub, operatorSecretKey: s.operator });
  const d = await createCustomer(s.services, { name: 'Globex', publicKey: pub, operatorSecretKey: s.operator });
  t.same([c.created, d.created, d.organization.id], [true, false, c.organization.id]);
  let orgs = 0;
  for await (const _ of s.store.all('orgs')) orgs++;
  let tenants = 0;
  for await (const _ of s.store.all('tenants')) tenants++;
  t.same([orgs, tenants], [2, 2], 'two customers, two organizations, two tenants');
});

t.test('concurrent creates with one external id make one customer', async (t) => {
  const s = await setupCustomers(t);
  const pub = newPublicKey();
  const all = await Promise.all(Array.from({ length: 8 }, () => createCustomer(s.services, { name: 'Acme', publicKey: pub, externalId: 'same', operatorSecretKey: s.operator })));
  t.equal(all.filter((x) => x.created).length, 1);
  t.equal(new Set(all.map((x) => x.organization.id)).size, 1);
});

t.test('bad input and a missing operator root make nothing', async (t) => {
  const s = await setupCustomers(t);
  await t.rejects(createCustomer(s.services, { name: 'Acme', publicKey: newPublicKey() }), { code: 'invalid_request', message: /bootstrap/ });
  await t.rejects(createCustomer(s.services, { name: 'Acme', publicKey: 'zz', operatorSecretKey: s.operator }), { code: 'invalid_request' });
  await t.rejects(createCustomer(s.services, { name: 'Acme', publicKey: newPublicKey(), externalId: 'has space', operatorSecretKey: s.operator }), { code: 'invalid_request' });
  await t.rejects(createCustomer(s.services, { name: '', publicKey: newPublicKey(), operatorSecretKey: s.operator }), { code: 'invalid_request' });
  for (const c of ['orgs', 'tenants', 'customers', 'workspaces']) {
    let n = 0;
    for await (const _ of s.store.all(c)) n++;
    t.equal(n, 0, `no ${c}`);
  }
});

t.test('a bootstrap signed elsewhere roots the organization it names', async (t) => {
  const s = await setupCustomers(t);
  const pub = newPublicKey();
  const entry = signBootstrap('org_0123456789abcdef01234567', pub, 1_700_000_000, s.operator);
  const made = await createCustomer(s.services, { name: 'Acme', publicKey: pub, bootstrap: { orgId: 'org_0123456789abcdef01234567', entry } });
  t.equal(made.organization.id, 'org_0123456789abcdef01234567');
  t.same(await s.vaults.trustLog(made.organization.id), [entry]);
});

t.test('an organization and a tenant made separately keep working and are linked by the operator', async (t) => {
  const s = await setupCustomers(t);
  const { org } = await s.vaults.createOrg('Old Co', newPublicKey(), 'bootstrap', s.operator);
  const { tenant, sandbox } = await s.platform.tenancy.createTenant('Old Co');
  t.equal(await s.links.byOrg(org.id), undefined, 'unlinked at first');
  const c = await s.links.linkExisting(org.id, tenant.id, 'sandbox', { externalId: 'old-1' });
  t.same([c.org, c.tenant, c.workspace, c.first_public_key], [org.id, tenant.id, sandbox.id, null]);
  await t.rejects(s.links.linkExisting(org.id, tenant.id, 'sandbox'), { code: 'conflict' }, 'an organization is linked once');
  const other = await s.platform.tenancy.createTenant('Other');
  await t.rejects(s.links.linkExisting(org.id, other.tenant.id, 'sandbox'), { code: 'conflict', message: /organization .* already linked/ });
  await t.rejects(s.links.linkExisting('org_missing', other.tenant.id, 'sandbox'), { code: 'not_found' });
  // A create with the linked external id returns that customer; no first key was recorded, so any key matches.
  const again = await createCustomer(s.services, { name: 'Old Co', publicKey: newPublicKey(), externalId: 'old-1', operatorSecretKey: s.operator });
  t.same([again.created, again.organization.id], [false, org.id]);
});
