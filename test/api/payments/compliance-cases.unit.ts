// Compliance cases (docs/platform/payments.md "Compliance cases"): a payment created past a failed review
// check (accept_review: true) opens one manual_review case; the case closes once, when the payment is
// decided (approved: submitted; canceled; failed), its reason stored and audited but not in the event.
// A payment without a failed review check, and a refused one, open nothing.
import t, { type Test } from 'tap';
import { paymentsApp, withMember, ASSET } from './payments-app.ts';
import { COMPLIANCE_CASES } from '../../../api/payments/collections.ts';
import type { ComplianceCaseRecord } from '../../../api/payments/compliance-cases.ts';
import { AUDIT_LOG } from '../../../api/tenancy/collections.ts';

async function setup(t: Test) {
  const s = await paymentsApp(t, { clock: () => Date.now() });
  const m = await withMember(t, s);
  const payee = await s.holder();
  const cur = (await s.bearer('GET', `/v1/account-holders/${payee.id}`)).json();
  t.equal((await s.bearer('PATCH', `/v1/account-holders/${payee.id}`, { verification_status: 'expired' }, s.acme.owner, { 'if-match': `"${cur.version}"` })).statusCode, 200);
  let n = 0;
  const create = (extra: Record<string, unknown> = {}, to = payee.id) => s.bearer('POST', '/v1/payments', { source_wallet_id: m.ada.wallet.id, destination: { account_holder_id: to }, amount: '1000000', asset: ASSET, ...extra }, s.acme.owner, { 'idempotency-key': `cc-${++n}` });
  const cases = async () => {
    const out: ComplianceCaseRecord[] = [];
    for await (const c of COMPLIANCE_CASES.in(s.store).all()) out.push(c);
    return out;
  };
  const caseEvents = async () => [...(await m.hooks('compliance.case.opened')), ...(await m.hooks('compliance.case.resolved'))];
  return { ...m, payee, create, cases, caseEvents };
}

t.test('a reviewed payment opens a case; its approval closes it once as approved, the reason withheld', async (t) => {
  const s = await setup(t);
  const r = await s.create({ accept_review: true });
  t.equal(r.statusCode, 201, r.body);
  const p = r.json();
  const [open] = await s.cases();
  t.match(open, { id: /^cas_[0-9a-f]{26}$/, case_type: 'manual_review', state: 'open', subject: { type: 'payment', id: p.id }, account_holder_id: s.ada.id, closed_reason: null });
  t.same(await s.hooks('compliance.case.opened'), [{ case_id: open!.id, case_type: 'manual_review', state: 'open', account_holder_id: s.ada.id, payment_id: p.id }]);

  const a = await s.approve(p);
  for (const i of a.intents) t.equal((await s.submit(i, a.signing)).statusCode, 202);
  await s.service.runDue();
  t.equal((await s.get(p.id)).status, 'submitted');
  const [closed] = await s.cases();
  t.match(closed, { id: open!.id, state: 'closed', closed_reason: 'approved' });
  t.same(await s.hooks('compliance.case.resolved'), [{ case_id: open!.id, case_type: 'manual_review', state: 'closed', account_holder_id: s.ada.id, payment_id: p.id }], 'the closed reason is not sent');
  const audited: { action: string; resource_id: string; after: unknown }[] = [];
  for await (const e of AUDIT_LOG.in(s.store).all()) if (e.resource_id === open!.id) audited.push(e);
  t.same(audited.map((e) => e.action), ['compliance_case.open', 'compliance_case.close']);
  t.match(audited[1]!.after, { state: 'closed', closed_reason: 'approved' }, 'the audit log keeps the reason');

  for (const x of (await s.get(p.id)).transactions) await s.end(x.transaction_id, 'final');
  await s.service.runDue();
  t.equal((await s.get(p.id)).status, 'confirmed');
  t.equal((await s.hooks('compliance.case.resolved')).length, 1, 'resolved once: confirmation closes nothing more');
});

t.test('a payment with no failed review check opens no case; a refused one opens none and changes nothing', async (t) => {
  const s = await setup(t);
  t.equal((await s.create({}, s.bob.id)).statusCode, 201, 'a payee whose verification is current');
  t.same(await s.cases(), []);
  const before = { payments: (await s.bearer('GET', '/v1/payments')).json().data.length, events: (await s.caseEvents()).length };
  const refused = await s.create();
  t.match([refused.statusCode, refused.json().code], [403, 'forbidden'], 'review without accept_review');
  t.same(await s.cases(), [], 'no case');
  t.same({ payments: (await s.bearer('GET', '/v1/payments')).json().data.length, events: (await s.caseEvents()).length }, before, 'no payment, no case event');
});

t.test('a canceled reviewed payment closes its case as canceled', async (t) => {
  const s = await setup(t);
  const p = (await s.create({ accept_review: true })).json();
  t.equal((await s.bearer('POST', `/v1/payments/${p.id}/cancel`)).statusCode, 200);
  t.match(await s.cases(), [{ state: 'closed', closed_reason: 'canceled', subject: { id: p.id } }]);
  t.equal((await s.hooks('compliance.case.resolved')).length, 1);
});
