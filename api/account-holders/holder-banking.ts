// The sandbox bank (docs/platform/account-holders.md "Sandbox bank"): a double of a partner bank at
// which each account holder has a savings and a checking account in USD, kept on the platform ledger
// (api/ledger/platform-ledger.ts) as `holder/<id>/bank/savings/USD` and `holder/<id>/bank/checking/USD`
// against the bank's counter-account `sandbox_bank/deposits/USD`. The accounts open on the holder's first
// banking call with a fixed opening deposit, an entry keyed by its source so it is written once. A
// transfer between the two accounts is one ledger entry, written under the holder's lock after the
// balance is read inside it, with its Idempotency-Key and its audit entry in the same batch.
import { createHash } from 'node:crypto';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { collection } from '../store/collection.ts';
import { newId } from '../store/ids.ts';
import type { CursorCodec, PageResult } from '../store/pagination.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import { bodyFingerprint } from '../idempotency.ts';
import { fiatAsset, holderBank, sandboxBankDeposits, type LedgerEntryRecord, type PlatformLedger } from '../ledger/platform-ledger.ts';
import { LEDGER_ENTRIES } from '../ledger/collections.ts';
import { SANDBOX_MAGIC_AMOUNTS } from '../rails/sandbox-rail.ts';
import type { AccountHolderRecord } from './account-holder-records.ts';

export type BankAccount = 'savings' | 'checking';
export const BANK_ACCOUNTS: readonly BankAccount[] = ['savings', 'checking'];
export const BANK_CURRENCY = 'USD';

/** What the sandbox bank is and what a new holder finds in it. */
export const SANDBOX_BANK = {
  name: 'Sandbox Bank',
  // A well-known test routing number (valid ABA checksum), routed nowhere.
  routing_number: '110000000',
  /** Cents credited when the accounts open: 1,000.00 USD in checking, nothing in savings. */
  opening_deposit: { checking: 100_000n, savings: 0n } as Readonly<Record<BankAccount, bigint>>,
} as const;

export const BANK_TRANSFER_ID = /^btr_[0-9a-f]{26}$/;

/** `<holder id> NUL <Idempotency-Key>` → the transfer it made, written in the transfer's batch. */
interface TransferKeyRecord { v: 1; id: string; fingerprint: string }
const TRANSFER_KEYS = collection<TransferKeyRecord>('holder_bank_transfer_keys');

export interface BankBalance { balance: string; currency: string }
export interface BankTransfer { id: string; from: BankAccount; to: BankAccount; amount: string; currency: string; status: 'completed'; created_at: string }
export interface BankTransaction {
  id: string;
  account: BankAccount;
  direction: 'credit' | 'debit';
  amount: string;
  currency: string;
  kind: 'opening_deposit' | 'transfer';
  /** The other account of the entry: the holder's other account, or `sandbox_bank` for the opening deposit. */
  counterparty_account: BankAccount | 'sandbox_bank';
  created_at: string;
}
export interface TransferInput { from: BankAccount; to: BankAccount; amount: string; currency: string }

// Sources sort as the entries happened: `account-opening` before every `transfer/btr_…` (time-ordered ids).
const openingSource = (holder: string) => `bank/${holder}/account-opening`;
const transferSource = (holder: string, id: string) => `bank/${holder}/transfer/${id}`;
/** The opening deposit's reference: the holder id's digits under its own prefix. */
const openingRef = (holder: string) => `bop_${holder.slice(holder.indexOf('_') + 1)}`;

const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);

/** The last 4 digits of the holder's account number: derived from the holder id, stable, never a real number. */
export function accountLast4(holder: string, account: BankAccount): string {
  const h = createHash('sha256').update(`sandbox-bank\x00${holder}\x00${account}`).digest();
  return String(h.readUInt32BE(0) % 10_000).padStart(4, '0');
}

/** The funding rail's magic amounts (api/rails/sandbox-rail.ts), as the sandbox banking context lists them. */
export function railMagicAmounts(): { amount: string; currency: string; outcome: string; reason: string }[] {
  return Object.entries(SANDBOX_MAGIC_AMOUNTS).map(([amount, m]) => ({ amount, currency: BANK_CURRENCY, outcome: m.outcome, reason: m.reason }));
}

export class HolderBanking {
  constructor(private readonly o: { store: RecordRepository; ledger: PlatformLedger; audit: AuditLog; cursors: CursorCodec; clock: () => number }) {}

  /** A sandbox double: a production workspace is 403 sandbox_only, as the Hosted Auth demo persona and the funding rail answer. */
  static refuseProduction(environment: string): void {
    if (environment !== 'sandbox') throw new CustodyError('sandbox_only', 'the sandbox bank serves sandbox workspaces only');
  }

  private lock<T>(holder: string, fn: () => Promise<T>): Promise<T> {
    return this.o.store.exclusive(`holder-bank:${holder}`, fn);
  }

  /** Writes the opening deposit when absent; the caller holds the holder's lock. */
  private async openLocked(scope: Scope, holder: AccountHolderRecord): Promise<void> {
    const postings = BANK_ACCOUNTS.filter((a) => SANDBOX_BANK.opening_deposit[a] > 0n).map((a) => ({
      debit: sandboxBankDeposits(BANK_CURRENCY), credit: holderBank(holder.id, a, BANK_CURRENCY), asset: fiatAsset(BANK_CURRENCY), amount: SANDBOX_BANK.opening_deposit[a],
    }));
    const ops = await this.o.ledger.entryOps(scope, openingSource(holder.id), openingRef(holder.id), postings);
    if (ops.length) await this.o.store.batch(ops);
  }

  /** Opens the holder's accounts on its first banking call (once, also under concurrent first calls). */
  async open(scope: Scope, holder: AccountHolderRecord): Promise<void> {
    if (await this.o.ledger.entry(openingSource(holder.id))) return;
    await this.lock(holder.id, () => this.openLocked(scope, holder));
  }

  private async balancesOf(holder: string): Promise<Record<BankAccount, bigint>> {
    const all = await this.o.ledger.balancesUnder(`holder/${holder}/bank/`);
    const of = (a: BankAccount) => all.get(holderBank(holder, a, BANK_CURRENCY))?.get(fiatAsset(BANK_CURRENCY)) ?? 0n;
    return { savings: of('savings'), checking: of('checking') };
  }

  /** Both accounts' balances in cents, opening them first. */
  async balances(scope: Scope, holder: AccountHolderRecord): Promise<Record<BankAccount, BankBalance>> {
    await this.open(scope, holder);
    const b = await this.balancesOf(holder.id);
    return { savings: { balance: b.savings.toString(), currency: BANK_CURRENCY }, checking: { balance: b.checking.toString(), currency: BANK_CURRENCY } };
  }

  /** The input's rules beyond its schema: 422 validation_failed naming the field. */
  static check(input: TransferInput): bigint {
    if (input.from === input.to) throw invalid('to', 'must be the other account than from');
    if (!/^[1-9][0-9]{0,14}$/.test(input.amount)) throw invalid('amount', 'cents as a positive integer string without leading zeros (at most 15 digits)');
    if (input.currency !== BANK_CURRENCY) throw invalid('currency', `the sandbox bank keeps ${BANK_CURRENCY} only`);
    return BigInt(input.amount);
  }

  /**
   * Moves `amount` between the holder's own accounts as one ledger entry. Under the holder's lock: the
   * Idempotency-Key's earlier transfer is answered (another body: 409), the balance is read, and the
   * entry, the key and the audit entry are written in one batch, so concurrent transfers never overdraw.
   */
  async transfer(scope: Scope, actor: Actor, holder: AccountHolderRecord, input: TransferInput, key: string): Promise<BankTransfer> {
    const amount = HolderBanking.check(input);
    const keyId = `${holder.id}\x00${key}`;
    const fingerprint = bodyFingerprint(input);
    return this.lock(holder.id, async () => {
      const prior = await TRANSFER_KEYS.in(this.o.store).get(keyId);
      if (prior) {
        if (prior.fingerprint !== fingerprint) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
        return this.transferOf(holder.id, prior.id);
      }
      await this.openLocked(scope, holder);
      const held = (await this.balancesOf(holder.id))[input.from];
      if (held < amount) throw new CustodyError('insufficient_balance', `the ${input.from} account holds ${held} cents; the transfer needs ${amount}`);
      const id = newId('btr', this.o.clock());
      const entry = await this.o.ledger.entryOps(scope, transferSource(holder.id, id), id, [
        { debit: holderBank(holder.id, input.from, BANK_CURRENCY), credit: holderBank(holder.id, input.to, BANK_CURRENCY), asset: fiatAsset(BANK_CURRENCY), amount },
      ]);
      const view: BankTransfer = { id, from: input.from, to: input.to, amount: amount.toString(), currency: BANK_CURRENCY, status: 'completed', created_at: new Date(this.o.clock()).toISOString() };
      const ops: Op[] = [
        ...entry,
        TRANSFER_KEYS.putOp(keyId, { v: 1, id, fingerprint }),
        this.o.audit.op(scope, actor, 'account_holder.bank_transfer', id, null, { account_holder_id: holder.id, ...view }),
      ];
      await this.o.store.batch(ops);
      return this.transferOf(holder.id, id);
    });
  }

  /** A transfer as its ledger entry records it. */
  private async transferOf(holder: string, id: string): Promise<BankTransfer> {
    const e = await this.o.ledger.entry(transferSource(holder, id));
    const p = e?.postings[0];
    if (!e || !p) throw new CustodyError('bug', `bank transfer ${id} has no ledger entry`);
    return { id, from: accountOf(holder, p.debit)!, to: accountOf(holder, p.credit)!, amount: p.amount, currency: BANK_CURRENCY, status: 'completed', created_at: e.created_at };
  }

  /**
   * The lines of the entries touching the holder's two accounts, oldest first (the opening deposit, then
   * the transfers in the order made; within a transfer, the debited account's line first). A cursor is
   * the last line's entry and account; a walk resumes strictly after it.
   */
  async transactions(scope: Scope, holder: AccountHolderRecord, cursor: string | undefined, limit: number): Promise<PageResult<BankTransaction>> {
    const list = 'holder_bank_transactions';
    const filters = { account_holder_id: holder.id };
    const after = this.o.cursors.decode(cursor, list, scope.workspace, filters);
    await this.open(scope, holder);
    const [afterEntry, afterAccount] = after === undefined ? [undefined, undefined] : after.split(' ');
    const entries = new Map<string, LedgerEntryRecord>();
    for (const a of BANK_ACCOUNTS) {
      const page = await LEDGER_ENTRIES.in(this.o.store).byIndexAfter(`account/${holderBank(holder.id, a, BANK_CURRENCY)}/`, afterEntry, limit + 1);
      for (const e of page) entries.set(e.id, e);
    }
    const ordered = [...entries.values()].sort((x, y) => (x.id < y.id ? -1 : 1)).slice(0, limit + 1);
    // The rest of the entry the cursor stopped in (a transfer has two lines).
    const resumed = afterEntry ? await LEDGER_ENTRIES.in(this.o.store).get(afterEntry) : undefined;
    let lines = ordered.flatMap((e) => linesOf(holder.id, e));
    if (resumed) {
      const rest = linesOf(holder.id, resumed);
      lines = [...rest.slice(rest.findIndex((l) => l.line.account === afterAccount) + 1), ...lines];
    }
    const data = lines.slice(0, limit);
    const has_more = lines.length > limit;
    const last = data[data.length - 1];
    return { data: data.map((l) => l.line), has_more, next_cursor: has_more && last ? this.o.cursors.encode(list, scope.workspace, filters, `${last.entry} ${last.line.account}`) : null };
  }
}

function accountOf(holder: string, ledgerAccount: string): BankAccount | undefined {
  return BANK_ACCOUNTS.find((a) => holderBank(holder, a, BANK_CURRENCY) === ledgerAccount);
}

/** The holder's lines of one entry: the debited account's first. */
function linesOf(holder: string, e: LedgerEntryRecord): { entry: string; line: BankTransaction }[] {
  const kind = e.source.endsWith('/account-opening') ? 'opening_deposit' : 'transfer';
  const out: { entry: string; line: BankTransaction }[] = [];
  for (const p of e.postings) {
    for (const [side, direction, other] of [[p.debit, 'debit', p.credit], [p.credit, 'credit', p.debit]] as const) {
      const account = accountOf(holder, side);
      if (!account) continue;
      out.push({
        entry: e.id,
        line: {
          id: `${e.resource_id}:${account}`, account, direction, amount: p.amount, currency: BANK_CURRENCY, kind,
          counterparty_account: accountOf(holder, other) ?? 'sandbox_bank', created_at: e.created_at,
        },
      });
    }
  }
  return out;
}
