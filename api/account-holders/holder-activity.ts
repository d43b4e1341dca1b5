// Every money movement of an account holder in one list (docs/platform/account-holders.md "Transactions"):
// its funding and off-ramp requests, the vault-API transactions of its linked wallets and its sandbox bank
// entries, oldest first. Each source is walked through an index it already has, in an order that never
// changes once a record is written (funding and off-ramp ids, which are time-ordered; a wallet's
// `<created_at>/<id>` entries; the bank's ledger entry ids), and the cursor keeps one position per source.
// A page takes the oldest head of the sources, by (created_at, id), until it is full, and each position
// moves past what its source gave, so a walk repeats nothing and misses nothing that existed when it
// began, whatever arrives in any source meanwhile. No index is added: nothing needs back-filling.
import type { RecordRepository } from '../store/record-repository.ts';
import { mergeHeads, type Head as MergeHead, type Positions } from '../store/merged-page.ts';
import type { CursorCodec, PageResult } from '../store/pagination.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { CustomerLinks } from '../customers/customer-links.ts';
import { FUNDING_REQUESTS, OFF_RAMP_REQUESTS } from '../funding/collections.ts';
import type { FundingRequestRecord, OffRampRequestRecord } from '../funding/funding-records.ts';
import { TRANSACTIONS } from '../transactions/collections.ts';
import type { TransactionRecord } from '../transactions/records.ts';
import { WALLETS } from '../vaults/collections.ts';
import type { WalletRecord } from '../vaults/records.ts';
import { LEDGER_ENTRIES } from '../ledger/collections.ts';
import { holderBank, type LedgerEntryRecord } from '../ledger/platform-ledger.ts';
import type { AccountHolderRecord } from './account-holder-records.ts';
import { ACCOUNT_HOLDER_VAULTS } from './collections.ts';
import { BANK_ACCOUNTS, BANK_CURRENCY } from './holder-banking.ts';

export const ACTIVITY_KINDS = ['funding', 'off_ramp', 'wallet_transaction', 'bank_transfer'] as const;
export type ActivityKind = (typeof ACTIVITY_KINDS)[number];

/** One money movement as the holder sees it. Amounts are base-unit decimal strings. */
export interface HolderTransaction {
  /** The resource's own id (`fnd_…`, `ofr_…`, `txn_…`, `btr_…`, or the opening deposit's `bop_…`). */
  id: string;
  kind: ActivityKind;
  /** The resource's status (a vault-API transaction's state; a bank entry is `completed`). */
  status: string;
  amount: string;
  /** `<chain>:<token contract>` or `<chain>:native` when `amount` counts tokens; else null. */
  asset: string | null;
  /** ISO 4217 when `amount` counts fiat (cents); else null. */
  currency: string | null;
  /** Funding and off-ramp: the fiat side of the exchange. Null for the other kinds. */
  fiat: { amount: string; currency: string } | null;
  direction: 'in' | 'out' | 'internal';
  wallet_id?: string;
  created_at: string;
  updated_at: string;
  reference: Record<string, string>;
}

type Source = 'f' | 'o' | 'w' | 'b';
const SOURCE_OF: Record<ActivityKind, Source> = { funding: 'f', off_ramp: 'o', wallet_transaction: 'w', bank_transfer: 'b' };
type Head = MergeHead<Source, HolderTransaction>;

const LIST = 'holder_transactions';
export const sortKey = (i: Pick<HolderTransaction, 'created_at' | 'id'>) => `${i.created_at}\x00${i.id}`;

export interface HolderActivityOptions {
  /** The store of both APIs (one store: server.ts). */
  store: RecordRepository;
  links: CustomerLinks;
  cursors: CursorCodec;
}

export class HolderActivity {
  constructor(private readonly o: HolderActivityOptions) {}

  /** The holder's linked wallets of the workspace's organization (as funding and the balance use them). */
  private async wallets(scope: Scope, holder: AccountHolderRecord): Promise<WalletRecord[]> {
    const link = await ACCOUNT_HOLDER_VAULTS.in(this.o.store).get(holder.id);
    if (!link || link.workspace !== scope.workspace) return [];
    const org = await this.o.links.orgOfWorkspace(scope);
    if (org === undefined || org !== link.org) return [];
    const out: WalletRecord[] = [];
    for (const w of link.wallets) {
      const wallet = await WALLETS.in(this.o.store).get(w.wallet_id);
      if (wallet && wallet.org === org) out.push(wallet);
    }
    return out;
  }

  /**
   * A page of the holder's money movements, oldest first, optionally of one kind. The cursor holds one
   * position per source, bound to the holder and the kind filter.
   */
  async page(scope: Scope, holder: AccountHolderRecord, kind: ActivityKind | undefined, cursor: string | undefined, limit: number): Promise<PageResult<HolderTransaction>> {
    const filters = { account_holder_id: holder.id, kind };
    const after = this.o.cursors.decode(cursor, LIST, scope.workspace, filters);
    const positions = after === undefined ? {} : (JSON.parse(after) as Positions<Source>);
    const sources = (kind ? [SOURCE_OF[kind]] : (['f', 'o', 'w', 'b'] as Source[]));
    const wallets = sources.includes('w') ? await this.wallets(scope, holder) : [];
    const streams = await Promise.all(sources.map((s) => this.read(s, scope, holder, wallets, positions[s], limit + 1)));
    const { items, hasMore, next } = mergeHeads(streams, limit, sortKey, positions);
    return { data: items, has_more: hasMore, next_cursor: hasMore ? this.o.cursors.encode(LIST, scope.workspace, filters, JSON.stringify(next)) : null };
  }

  /** Every movement of the holder (the data export): the pages walked to the end. */
  async all(scope: Scope, holder: AccountHolderRecord): Promise<HolderTransaction[]> {
    const out: HolderTransaction[] = [];
    let cursor: string | undefined;
    for (;;) {
      const p = await this.page(scope, holder, undefined, cursor, 100);
      out.push(...p.data);
      if (!p.next_cursor) return out;
      cursor = p.next_cursor;
    }
  }

  /** Up to `n` items of one source after `position`, in that source's own order. */
  private async read(source: Source, scope: Scope, holder: AccountHolderRecord, wallets: WalletRecord[], position: string | undefined, n: number): Promise<Head[]> {
    const mine = (r: { tenant: string; workspace: string; account_holder_id: string }) => r.tenant === scope.tenant && r.workspace === scope.workspace && r.account_holder_id === holder.id;
    const prefix = `${scope.workspace}\x00holder\x00${holder.id}\x00`;
    if (source === 'f') {
      const rs = await FUNDING_REQUESTS.in(this.o.store).byIndexAfter(prefix, position, n);
      return rs.filter(mine).map((r) => ({ source, position: r.id, item: fundingItem(r) }));
    }
    if (source === 'o') {
      const rs = await OFF_RAMP_REQUESTS.in(this.o.store).byIndexAfter(prefix, position, n);
      return rs.filter(mine).map((r) => ({ source, position: r.id, item: offRampItem(r) }));
    }
    if (source === 'w') {
      const own = new Set(wallets.map((w) => w.address.toLowerCase()));
      const heads: Head[] = [];
      for (const w of wallets) {
        const entries = await TRANSACTIONS.in(this.o.store).byIndexEntries(`wallet/${w.id}/`, position, n);
        for (const e of entries) if (e.value && e.value.org === w.org && e.value.wallet_id === w.id) heads.push({ source, position: e.position, item: walletItem(e.value, own) });
      }
      return heads.sort((a, b) => (a.position < b.position ? -1 : a.position > b.position ? 1 : 0)).slice(0, n);
    }
    const entries = new Map<string, LedgerEntryRecord>();
    for (const a of BANK_ACCOUNTS) {
      for (const e of await LEDGER_ENTRIES.in(this.o.store).byIndexAfter(`account/${holderBank(holder.id, a, BANK_CURRENCY)}/`, position, n)) {
        if (e.workspace === scope.workspace) entries.set(e.id, e);
      }
    }
    return [...entries.values()].sort((x, y) => (x.id < y.id ? -1 : 1)).slice(0, n).map((e) => ({ source, position: e.id, item: bankItem(holder.id, e) }));
  }
}

export function fundingItem(r: FundingRequestRecord): HolderTransaction {
  return {
    id: r.id, kind: 'funding', status: r.status, amount: r.stablecoin_amount, asset: r.asset, currency: null, fiat: { amount: r.fiat_amount, currency: r.currency },
    direction: 'in', wallet_id: r.wallet_id, created_at: r.created_at, updated_at: r.updated_at, reference: { funding_request_id: r.id },
  };
}

export function offRampItem(r: OffRampRequestRecord): HolderTransaction {
  return {
    id: r.id, kind: 'off_ramp', status: r.status, amount: r.stablecoin_amount, asset: r.asset, currency: null, fiat: { amount: r.fiat_amount, currency: r.currency },
    direction: 'out', wallet_id: r.wallet_id, created_at: r.created_at, updated_at: r.updated_at, reference: { off_ramp_request_id: r.id },
  };
}

/** A vault-API transaction: what it sends of its (first) asset; internal when every recipient is one of the holder's wallets. */
function walletItem(tx: TransactionRecord, own: Set<string>): HolderTransaction {
  const asset = tx.transfers[0]?.asset ?? `${tx.chain}:native`;
  const amount = tx.transfers.filter((x) => x.asset === asset).reduce((s, x) => s + BigInt(x.amount), 0n);
  const internal = tx.transfers.length > 0 && tx.transfers.every((x) => own.has(x.recipient.toLowerCase()));
  return {
    id: tx.id, kind: 'wallet_transaction', status: tx.state, amount: amount.toString(), asset, currency: null, fiat: null,
    direction: internal ? 'internal' : 'out', wallet_id: tx.wallet_id, created_at: tx.created_at, updated_at: tx.updated_at, reference: { transaction_id: tx.id },
  };
}

/** A sandbox bank entry: the opening deposit comes in from the bank; a transfer moves between the holder's own accounts. */
function bankItem(holder: string, e: LedgerEntryRecord): HolderTransaction {
  const opening = e.source.endsWith('/account-opening');
  const prefix = `holder/${holder}/bank/`;
  const amount = opening
    ? e.postings.filter((p) => p.credit.startsWith(prefix)).reduce((s, p) => s + BigInt(p.amount), 0n).toString()
    : (e.postings[0]?.amount ?? '0');
  return {
    id: e.resource_id, kind: 'bank_transfer', status: 'completed', amount, asset: null, currency: BANK_CURRENCY, fiat: null,
    direction: opening ? 'in' : 'internal', created_at: e.created_at, updated_at: e.created_at,
    reference: opening ? { opening_deposit_id: e.resource_id } : { bank_transfer_id: e.resource_id },
  };
}
