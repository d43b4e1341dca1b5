// Contacts (docs/platform/account-holders.md "Contacts") through the app on a real store: create with
// Idempotency-Key under an account holder, list, search by email or phone hash, read, PATCH with If-Match
// (and its race), delete; another tenant's contact is 404, a key without the permission 403 before the
// body is read, refused input changes nothing.
import t from 'tap';
import { createHash } from 'node:crypto';
import { setupPlatform } from '../setup-platform.ts';
import { WEBHOOK_EVENTS } from '../../../api/webhooks/collections.ts';
import type { Envelope } from '../../../api/webhooks/delivery-engine.ts';

const sha = (v: string) => createHash('sha256').update(v, 'utf8').digest('hex');

t.test('contacts: CRUD, search by hash, If-Match, tenancy, permissions', async (t) => {
  const s = await setupPlatform(t);
  const brand = await s.platform.tenancy.createKey(s.sandbox.id, 'brand_manager');
  const other = await s.platform.tenancy.createTenant('Globex');
  const otherOwner = await s.platform.tenancy.createKey(other.sandbox.id, 'owner');
  const h = (await s.call('POST', '/v1/account-holders', { type: 'individual', given_name: 'Ada', family_name: 'Lovelace' })).json();
  const h2 = (await s.call('POST', '/v1/account-holders', { type: 'business', legal_name: 'Acme Ltd' })).json();
  const foreignHolder = (await s.call('POST', '/v1/account-holders', { type: 'business', legal_name: 'Globex' }, otherOwner.token)).json();

  const made = await s.call('POST', '/v1/contacts', { account_holder_id: h.id, name: 'Charles Babbage', email: 'Charles@Engine.test' }, s.owner.token, { 'idempotency-key': 'c1' });
  t.equal(made.statusCode, 201, made.body);
  const c = made.json();
  t.match(c, { id: /^con_/, account_holder_id: h.id, email: 'charles@engine.test', email_hash: sha('charles@engine.test'), phone: null, version: 1 });
  t.equal(made.headers.etag, '"1"');
  t.equal((await s.call('POST', '/v1/contacts', { account_holder_id: h.id, name: 'Charles Babbage', email: 'Charles@Engine.test' }, s.owner.token, { 'idempotency-key': 'c1' })).json().id, c.id, 'replayed');
  t.equal((await s.call('POST', '/v1/contacts', { account_holder_id: h.id, name: 'Other', email: 'x@y.test' }, s.owner.token, { 'idempotency-key': 'c1' })).json().code, 'idempotency_key_reused');
  const c2 = (await s.call('POST', '/v1/contacts', { account_holder_id: h2.id, name: 'Grace', phone: '+15555550111' })).json();
  const c3 = (await s.call('POST', '/v1/contacts', { account_holder_id: h2.id, name: 'Charles at Acme', email: 'charles@engine.test' })).json();

  const bad: [unknown, number][] = [
    [{ account_holder_id: h.id, name: 'No way to reach' }, 422],
    [{ account_holder_id: h.id, name: 'X', email: 'nope' }, 422],
    [{ account_holder_id: h.id, name: 'X', phone: '555-0100' }, 422],
    [{ account_holder_id: foreignHolder.id, name: 'X', email: 'a@b.test' }, 422],
    [{ account_holder_id: h.id, name: 'X', email: 'a@b.test', notes: 'x' }, 400],
    [{ name: 'X', email: 'a@b.test' }, 400],
  ];
  for (const [body, status] of bad) t.equal((await s.call('POST', '/v1/contacts', body)).statusCode, status, JSON.stringify(body));
  t.equal((await s.call('GET', '/v1/contacts?limit=100')).json().data.length, 3, 'refused requests created nothing');
  const denied = await s.app.inject({ method: 'POST', url: '/v1/contacts', headers: { authorization: `Bearer ${s.viewer.token}`, 'content-type': 'application/json' }, payload: '{nope' });
  t.equal(denied.json().code, 'role_denied', '403 before the body is read');
  t.equal((await s.call('GET', '/v1/contacts', undefined, brand.token)).statusCode, 403);

  const ids = (r: { json(): { data: { id: string }[] } }) => r.json().data.map((x) => x.id);
  t.same(ids(await s.call('GET', '/v1/contacts', undefined, s.viewer.token)), [c.id, c2.id, c3.id]);
  t.same(ids(await s.call('GET', `/v1/contacts?account_holder_id=${h2.id}`)), [c2.id, c3.id]);
  t.same(ids(await s.call('POST', '/v1/contacts/search', { email_hash: sha('charles@engine.test') }, s.viewer.token)), [c.id, c3.id]);
  t.same(ids(await s.call('POST', '/v1/contacts/search', { email_hash: sha('charles@engine.test'), account_holder_id: h2.id })), [c3.id]);
  t.same(ids(await s.call('POST', '/v1/contacts/search', { phone_hash: sha('+15555550111') })), [c2.id]);
  const p1 = (await s.call('POST', '/v1/contacts/search', { email_hash: sha('charles@engine.test'), limit: 1 })).json();
  t.equal(p1.has_more, true);
  t.same((await s.call('POST', '/v1/contacts/search', { email_hash: sha('charles@engine.test'), limit: 1, cursor: p1.next_cursor })).json().data.map((x: { id: string }) => x.id), [c3.id]);
  t.equal((await s.call('POST', '/v1/contacts/search', { phone_hash: sha('+15555550111'), cursor: p1.next_cursor })).json().code, 'cursor_filter_mismatch');
  for (const body of [{}, { email_hash: 'ABC' }, { email_hash: sha('a'), phone_hash: sha('b') }, { email: 'charles@engine.test' }]) {
    t.equal((await s.call('POST', '/v1/contacts/search', body)).statusCode, 400, JSON.stringify(body));
  }
  t.same((await s.call('POST', '/v1/contacts/search', { email_hash: sha('charles@engine.test') }, otherOwner.token)).json().data, [], 'another tenant finds nothing');

  // Another tenant's contact is 404 everywhere.
  t.equal((await s.call('GET', `/v1/contacts/${c.id}`, undefined, otherOwner.token)).statusCode, 404);
  t.equal((await s.call('PATCH', `/v1/contacts/${c.id}`, { name: 'X' }, otherOwner.token, { 'if-match': '"1"' })).statusCode, 404);
  t.equal((await s.call('DELETE', `/v1/contacts/${c.id}`, undefined, otherOwner.token)).statusCode, 404);

  const patch = (body: unknown, m?: string) => s.call('PATCH', `/v1/contacts/${c.id}`, body, s.owner.token, m ? { 'if-match': m } : {});
  t.equal((await patch({ name: 'X' })).statusCode, 428);
  t.equal((await patch({ name: 'X' }, '"9"')).statusCode, 412);
  t.equal((await patch({ email: null }, '"1"')).statusCode, 422, 'a contact keeps an email or a phone');
  t.equal((await patch({ account_holder_id: h2.id }, '"1"')).statusCode, 400, 'the holder is fixed');
  t.equal((await s.call('GET', `/v1/contacts/${c.id}`)).json().version, 1, 'refusals changed nothing');
  const race = await Promise.all(['A', 'B'].map((name) => patch({ name, phone: '+447700900999' }, '"1"')));
  t.same(race.map((r) => r.statusCode).sort(), [200, 412], 'one of two racing changes wins');
  const now = (await s.call('GET', `/v1/contacts/${c.id}`)).json();
  t.match(now, { version: 2, phone_hash: sha('+447700900999') });
  t.same(ids(await s.call('POST', '/v1/contacts/search', { phone_hash: sha('+447700900999') })), [c.id], 'the new phone is searchable');
  const moved = await patch({ email: 'babbage@engine.test' }, '"2"');
  t.equal(moved.json().email_hash, sha('babbage@engine.test'));
  t.same(ids(await s.call('POST', '/v1/contacts/search', { email_hash: sha('charles@engine.test') })), [c3.id], 'the old hash no longer finds it');

  t.equal((await s.call('DELETE', `/v1/contacts/${c.id}`, undefined, s.viewer.token)).statusCode, 403);
  t.equal((await s.call('DELETE', `/v1/contacts/${c.id}`)).statusCode, 204);
  t.equal((await s.call('GET', `/v1/contacts/${c.id}`)).statusCode, 404);
  t.same(ids(await s.call('POST', '/v1/contacts/search', { phone_hash: sha('+447700900999') })), [], 'gone from the search too');

  const actions = (await s.platform.audit.list(s.sandbox.id)).filter((a) => a.resource_id === c.id).map((a) => a.action);
  t.same(actions, ['contact.create', 'contact.update', 'contact.update', 'contact.delete']);
  const events: Envelope[] = [];
  for await (const e of WEBHOOK_EVENTS.in(s.store).all()) if ((e as Envelope).type === 'contact.created') events.push(e as Envelope);
  t.equal(events.length, 0, 'a contact\'s creation is the caller\'s answer: no webhook event (docs/platform/events.md)');

  await s.call('PATCH', `/v1/account-holders/${h2.id}`, { status: 'closed' }, s.owner.token, { 'if-match': '"1"' });
  t.equal((await s.call('POST', '/v1/contacts', { account_holder_id: h2.id, name: 'Late', email: 'l@x.test' })).json().code, 'account_holder_closed');
});
