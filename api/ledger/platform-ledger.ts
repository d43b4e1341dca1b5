// The platform ledger (docs/platform/funding.md "Ledger"): double-entry and append-only, for the money the
// funding flows move between holders, the payment rail and the stablecoin issuer. A posting moves one
// amount of one asset from a debited account to a credited one, so every entry balances by
// construction. An entry is keyed by its source (the resource and the transition that moved the money),
// and is written only when absent, in the same batch as the state change that causes it, as the wallet
// ledger does (api/wallets/wallet-ledger.ts): a transition processed again writes nothing twice. Entries
// are never updated or deleted; a reversal is a new entry.
//
// Accounts (`account` strings):
//   holder/<holder id>/fiat/<currency>           fiat the platform holds for the holder
//   holder/<holder id>/stablecoin/<asset>        stablecoin in the holder's wallet, by the flows seen here
//   rail/<rail>/clearing/<currency>              the rail's settlement account (cash received or paid)
//   rail/<rail>/in_flight/<currency>             payouts submitted to the rail, not settled yet
//   issuer/reserve/<currency>                    fiat backing the issued stablecoin
//   issuer/supply/<asset>                        stablecoin issued (minted less redeemed)
//   holder/<holder id>/bank/<savings|checking>/<currency>   the holder's accounts at the sandbox bank
//   sandbox_bank/deposits/<currency>             the sandbox bank's counter-account (opening deposits)
// A balance is credits less debits: a holder's accounts are positive, the rail's and issuer's
// counter-accounts negative by the same total.
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { LEDGER_ENTRIES } from './collections.ts';

export interface Posting {
  debit: string;
  credit: string;
  /** `fiat:<currency>` or `<chain>:<token contract>`. */
  asset: string;
  /** Base units (cents, token units), positive. */
  amount: bigint;
}

/** An entry as stored (collection `platform_ledger_entries`); version 1. */
export interface LedgerEntryRecord {
  v: 1;
  /** `ple_` and the source key: one entry per source, ever. */
  id: string;
  source: string;
  tenant: string;
  workspace: string;
  /** The resource whose transition moved the money (`fnd_…`, `ofr_…`). */
  resource_id: string;
  postings: { debit: string; credit: string; asset: string; amount: string }[];
  created_at: string;
}

export const ledgerEntryId = (source: string) => `ple_${source}`;

export const holderFiat = (holder: string, currency: string) => `holder/${holder}/fiat/${currency}`;
export const holderStablecoin = (holder: string, asset: string) => `holder/${holder}/stablecoin/${asset}`;
export const railClearing = (rail: string, currency: string) => `rail/${rail}/clearing/${currency}`;
export const railInFlight = (rail: string, currency: string) => `rail/${rail}/in_flight/${currency}`;
export const issuerReserve = (currency: string) => `issuer/reserve/${currency}`;
export const issuerSupply = (asset: string) => `issuer/supply/${asset}`;
export const fiatAsset = (currency: string) => `fiat:${currency}`;
export const holderBank = (holder: string, account: 'savings' | 'checking', currency: string) => `holder/${holder}/bank/${account}/${currency}`;
export const sandboxBankDeposits = (currency: string) => `sandbox_bank/deposits/${currency}`;

/** Index entries of an entry: one per account it touches, `account/<account>/<entry id>`, and the workspace's. */
function indexOf(e: LedgerEntryRecord): string[] {
  const accounts = new Set(e.postings.flatMap((p) => [p.debit, p.credit]));
  return [...[...accounts].map((a) => `account/${a}/${e.id}`), `workspace/${e.workspace}/${e.id}`];
}

export class PlatformLedger {
  constructor(private readonly store: RecordRepository, private readonly clock: () => number = Date.now) {}

  /**
   * The operation that writes the entry for `source`, or none when it exists (a transition processed
   * again). The caller holds the lock of the resource the source belongs to and applies the operation in
   * the batch of its state change, so the entry and the state exist together or not at all.
   */
  async entryOps(scope: { tenant: string; workspace: string }, source: string, resourceId: string, postings: Posting[]): Promise<Op[]> {
    if (!postings.length) return [];
    for (const p of postings) {
      if (p.amount <= 0n) throw new Error(`ledger posting of ${p.amount} ${p.asset}: amounts are positive`);
      if (p.debit === p.credit) throw new Error(`ledger posting from ${p.debit} to itself`);
    }
    const id = ledgerEntryId(source);
    if (await LEDGER_ENTRIES.in(this.store).get(id)) return [];
    const e: LedgerEntryRecord = {
      v: 1, id, source, tenant: scope.tenant, workspace: scope.workspace, resource_id: resourceId,
      postings: postings.map((p) => ({ debit: p.debit, credit: p.credit, asset: p.asset, amount: p.amount.toString() })),
      created_at: new Date(this.clock()).toISOString(),
    };
    return [LEDGER_ENTRIES.putOp(id, e, { index: indexOf(e) })];
  }

  async entry(source: string): Promise<LedgerEntryRecord | undefined> {
    return LEDGER_ENTRIES.in(this.store).get(ledgerEntryId(source));
  }

  /** Every entry touching `account`, in id order. */
  async entriesOf(account: string): Promise<LedgerEntryRecord[]> {
    const out: LedgerEntryRecord[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await LEDGER_ENTRIES.in(this.store).byIndexAfter(`account/${account}/`, after, 500);
      out.push(...page);
      if (page.length < 500) return out;
      after = page[page.length - 1]!.id;
    }
  }

  /** Credits less debits of `account` in `asset`. */
  async balance(account: string, asset: string): Promise<bigint> {
    let sum = 0n;
    for (const e of await this.entriesOf(account)) {
      for (const p of e.postings) {
        if (p.asset !== asset) continue;
        if (p.credit === account) sum += BigInt(p.amount);
        if (p.debit === account) sum -= BigInt(p.amount);
      }
    }
    return sum;
  }

  /**
   * Credits less debits of every account whose name starts with `prefix` (e.g. `holder/<id>/fiat/`), per
   * account and asset, read from the accounts' own index entries (an entry touching two of them counts once).
   */
  async balancesUnder(prefix: string): Promise<Map<string, Map<string, bigint>>> {
    const out = new Map<string, Map<string, bigint>>();
    const seen = new Set<string>();
    const add = (account: string, asset: string, amount: bigint) => {
      const m = out.get(account) ?? new Map<string, bigint>();
      m.set(asset, (m.get(asset) ?? 0n) + amount);
      out.set(account, m);
    };
    let after: string | undefined;
    for (;;) {
      const page = await this.store.byIndexEntries<LedgerEntryRecord>(LEDGER_ENTRIES.name, `account/${prefix}`, after, 500);
      for (const { value: e } of page) {
        if (!e || seen.has(e.id)) continue;
        seen.add(e.id);
        for (const p of e.postings) {
          if (p.credit.startsWith(prefix)) add(p.credit, p.asset, BigInt(p.amount));
          if (p.debit.startsWith(prefix)) add(p.debit, p.asset, -BigInt(p.amount));
        }
      }
      if (page.length < 500) return out;
      after = page[page.length - 1]!.position;
    }
  }

  /** The accounts of `workspace`'s entries whose name starts with `prefix` (e.g. `holder/`), each once. */
  async accounts(workspace: string, prefix: string): Promise<string[]> {
    const seen = new Set<string>();
    let after: string | undefined;
    for (;;) {
      const page = await LEDGER_ENTRIES.in(this.store).byIndexAfter(`workspace/${workspace}/`, after, 500);
      for (const e of page) for (const p of e.postings) for (const a of [p.debit, p.credit]) if (a.startsWith(prefix)) seen.add(a);
      if (page.length < 500) return [...seen].sort();
      after = page[page.length - 1]!.id;
    }
  }
}
