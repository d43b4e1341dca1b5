// The workspace's payment flows in one list (platform-api.md catalog: GET /transactions, "all payment-flow
// kinds"; docs/platform/payments.md "GET /v1/transactions with a bearer key"): its funding and off-ramp
// requests and its payments, oldest first by (created_at, id), under one cursor with a position per source
// (api/store/merged-page.ts). Payment requests and escrows join as sources when they exist.
import type { RecordRepository } from '../store/record-repository.ts';
import type { CursorCodec, PageResult } from '../store/pagination.ts';
import type { Scope } from '../tenancy/scope.ts';
import { mergeHeads, type Head, type Positions } from '../store/merged-page.ts';
import { FUNDING_REQUESTS, OFF_RAMP_REQUESTS } from '../funding/collections.ts';
import { fundingItem, offRampItem, sortKey, type HolderTransaction } from '../account-holders/holder-activity.ts';
import { PAYMENTS } from './collections.ts';
import type { PaymentRecord } from './payment-records.ts';

export const PAYMENT_FLOW_KINDS = ['funding', 'off_ramp', 'payment'] as const;
export type PaymentFlowKind = (typeof PAYMENT_FLOW_KINDS)[number];

/** One flow as the workspace sees it: the holder's view of it, and whose it is. */
export type PaymentFlow = Omit<HolderTransaction, 'kind'> & { kind: PaymentFlowKind; account_holder_id: string };

type Source = 'f' | 'o' | 'p';
const SOURCE_OF: Record<PaymentFlowKind, Source> = { funding: 'f', off_ramp: 'o', payment: 'p' };

/**
 * A payment as a flow: the payer's, `out` to an address and `internal` between two holders of the
 * workspace; seen from one holder (the `account_holder_id` filter) `in` for its payee. `amount` is the
 * principal; the fees are in the payment (`reference.payment_id`).
 */
export function paymentItem(r: PaymentRecord, holder: string | undefined): PaymentFlow {
  const incoming = holder !== undefined && holder === r.payee.account_holder_id && holder !== r.payer.account_holder_id;
  return {
    id: r.id, kind: 'payment', status: r.status, account_holder_id: incoming ? holder : r.payer.account_holder_id, amount: r.amount, asset: r.asset, currency: null, fiat: null,
    direction: incoming ? 'in' : holder === undefined && r.payee.account_holder_id ? 'internal' : 'out', wallet_id: incoming && r.payee.wallet_id ? r.payee.wallet_id : r.payer.wallet_id,
    created_at: r.created_at, updated_at: r.updated_at, reference: { payment_id: r.id },
  };
}
const LIST = 'payment_flows';

export interface PaymentFlowFilters { kind?: PaymentFlowKind | undefined; account_holder_id?: string | undefined }

export class PaymentFlows {
  constructor(private readonly o: { store: RecordRepository; cursors: CursorCodec }) {}

  /** A page of the workspace's flows, optionally of one kind or one account holder; the cursor is bound to both. */
  async page(scope: Scope, f: PaymentFlowFilters, cursor: string | undefined, limit: number): Promise<PageResult<PaymentFlow>> {
    const filters = { kind: f.kind, account_holder_id: f.account_holder_id };
    const after = this.o.cursors.decode(cursor, LIST, scope.workspace, filters);
    const positions = after === undefined ? {} : (JSON.parse(after) as Positions<Source>);
    const sources: Source[] = f.kind ? [SOURCE_OF[f.kind]] : ['f', 'o', 'p'];
    const streams = await Promise.all(sources.map((s) => this.read(s, scope, f.account_holder_id, positions[s], limit + 1)));
    const { items, hasMore, next } = mergeHeads(streams, limit, sortKey, positions);
    return { data: items, has_more: hasMore, next_cursor: hasMore ? this.o.cursors.encode(LIST, scope.workspace, filters, JSON.stringify(next)) : null };
  }

  /** Up to `n` flows of one source after `position`, by their time-ordered ids, through the workspace's (or the holder's) index. */
  private async read(source: Source, scope: Scope, holder: string | undefined, position: string | undefined, n: number): Promise<Head<Source, PaymentFlow>[]> {
    const prefix = holder ? `${scope.workspace}\x00holder\x00${holder}\x00` : `${scope.workspace}\x00all\x00`;
    const mine = (r: { tenant: string; workspace: string }) => r.tenant === scope.tenant && r.workspace === scope.workspace;
    if (source === 'f') {
      const rs = await FUNDING_REQUESTS.in(this.o.store).byIndexAfter(prefix, position, n);
      return rs.filter(mine).map((r) => ({ source, position: r.id, item: { ...fundingItem(r), kind: 'funding', account_holder_id: r.account_holder_id } }));
    }
    if (source === 'p') {
      const ps = await PAYMENTS.in(this.o.store).byIndexAfter(prefix, position, n);
      return ps.filter(mine).map((r) => ({ source, position: r.id, item: paymentItem(r, holder) }));
    }
    const rs = await OFF_RAMP_REQUESTS.in(this.o.store).byIndexAfter(prefix, position, n);
    return rs.filter(mine).map((r) => ({ source, position: r.id, item: { ...offRampItem(r), kind: 'off_ramp', account_holder_id: r.account_holder_id } }));
  }
}
