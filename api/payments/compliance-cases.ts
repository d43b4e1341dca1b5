// Compliance cases (docs/platform/payments.md "Compliance cases"; the spec's `compliance.case.*` events).
// A payment that went ahead although a `review` check of its compliance failed (the caller sent
// accept_review: true) opens a `manual_review` case in the batch that creates the payment; the case closes
// when the payment is decided: its member's approval took effect (submitted), it was canceled, or its
// approval ended half used (failed). The case stores why it closed; the event withholds that reason, as the
// spec asks. Cases are read through their events and the audit log; there is no case operation.
import type { Op } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Envelope } from '../webhooks/delivery-engine.ts';
import { COMPLIANCE_CASES } from './collections.ts';
import type { RecordRepository } from '../store/record-repository.ts';

/** The spec's kinds of case; a payment past a review check opens `manual_review`, the only kind opened so far. */
export const CASE_TYPES = ['manual_review', 'flag', 'block', 'dispute'] as const;
export type CaseType = (typeof CASE_TYPES)[number];
export type CaseState = 'open' | 'closed';
/** Why a case closed: stored and audited, never sent in an event. */
export type CaseClosedReason = 'approved' | 'canceled' | 'failed';

export interface ComplianceCaseRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  case_type: CaseType;
  state: CaseState;
  subject: { type: 'payment'; id: string };
  account_holder_id: string;
  closed_reason: CaseClosedReason | null;
  opened_at: string;
  closed_at: string | null;
}

type Event = { type: string; resource: { type: string; id: string }; actor: Envelope['actor']; data: Record<string, unknown> };
const SYSTEM: Actor = { type: 'system', id: 'compliance' };
const subjectIndex = (c: Pick<ComplianceCaseRecord, 'subject'>) => `${c.subject.type}\x00${c.subject.id}`;

/** Ids and enums only (the spec: "ids and case-type/state enums only"). */
const eventData = (c: ComplianceCaseRecord) => ({ case_id: c.id, case_type: c.case_type, state: c.state, account_holder_id: c.account_holder_id, payment_id: c.subject.id });

export class ComplianceCases {
  constructor(private readonly store: RecordRepository, private readonly audit: AuditLog, private readonly clock: () => number) {}

  /** The ops and event that open a manual-review case for `payment`, for the batch that creates it. */
  open(payment: { id: string; tenant: string; workspace: string; payer: { account_holder_id: string } }, actor: Actor): { ops: Op[]; events: Event[] } {
    const at = new Date(this.clock()).toISOString();
    const c: ComplianceCaseRecord = {
      v: 1, id: newId('cas', this.clock()), tenant: payment.tenant, workspace: payment.workspace, case_type: 'manual_review', state: 'open',
      subject: { type: 'payment', id: payment.id }, account_holder_id: payment.payer.account_holder_id, closed_reason: null, opened_at: at, closed_at: null,
    };
    const scope = { tenant: c.tenant, workspace: c.workspace };
    return {
      ops: [COMPLIANCE_CASES.putOp(c.id, c, { index: [subjectIndex(c)] }), this.audit.op(scope, actor, 'compliance_case.open', c.id, null, { case_type: c.case_type, state: c.state, subject: c.subject })],
      events: [{ type: 'compliance.case.opened', resource: { type: 'compliance_case', id: c.id }, actor, data: eventData(c) }],
    };
  }

  /** The ops and event that close the open case of payment `paymentId`, if it has one; nothing otherwise. */
  async close(paymentId: string, reason: CaseClosedReason): Promise<{ ops: Op[]; events: Event[] }> {
    const open = (await COMPLIANCE_CASES.in(this.store).byIndex(subjectIndex({ subject: { type: 'payment', id: paymentId } }))).filter((c) => c.state === 'open');
    const ops: Op[] = [];
    const events: Event[] = [];
    for (const c of open) {
      const after: ComplianceCaseRecord = { ...c, state: 'closed', closed_reason: reason, closed_at: new Date(this.clock()).toISOString() };
      ops.push(COMPLIANCE_CASES.putOp(c.id, after, { index: [subjectIndex(c)] }));
      ops.push(this.audit.op({ tenant: c.tenant, workspace: c.workspace }, SYSTEM, 'compliance_case.close', c.id, { state: c.state }, { state: after.state, closed_reason: reason }));
      events.push({ type: 'compliance.case.resolved', resource: { type: 'compliance_case', id: c.id }, actor: SYSTEM, data: eventData(after) });
    }
    return { ops, events };
  }
}
