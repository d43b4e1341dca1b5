// Payment quotes (docs/platform/fees.md "Quote"): POST /v1/payments/quote prices a payment and runs its
// compliance checks without moving anything. A quote is stored, never changed, and expires after 60 s;
// the payment that follows names it (and with it the fee schedule its tenant fee came from). A quote
// writes no audit entry and changes no other record.
import * as bitcoin from 'bitcoinjs-lib';
import { isAddress } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Policy } from '../../core/api-schemas/policy.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import type { Scope } from '../tenancy/scope.ts';
import { FieldValidationError, type FieldError } from '../validation.ts';
import type { CustomerLinks } from '../customers/customer-links.ts';
import { VAULTS, WALLETS } from '../vaults/collections.ts';
import type { WalletRecord } from '../vaults/records.ts';
import { chainInfo } from '../vaults/wallet-address.ts';
import { walletState } from '../wallets/wallet-view.ts';
import { ACCOUNT_HOLDERS, ACCOUNT_HOLDER_VAULTS, VAULT_ACCOUNT_HOLDERS } from '../account-holders/collections.ts';
import type { AccountHolderRecord } from '../account-holders/account-holder-records.ts';
import { checkPolicy } from '../policy/policy.ts';
import { MAX_UINT256, parseAsset, parseBaseUnits } from '../fees/base-units.ts';
import { matchRule, ruleFee, ruleOfJson, type PaymentKind } from '../fees/fee-rule.ts';
import type { FeeSchedules } from '../fees/fee-schedules.ts';
import type { PlatformFee } from '../fees/platform-fee.ts';
import { complianceStatus, fail, pass, type Check, type ComplianceStatus } from './compliance.ts';
import { PAYMENT_QUOTES } from './collections.ts';

/** How long a quote can be named by a payment. */
export const QUOTE_TTL_MS = 60_000;
/** How long a quote is kept after it expires (for support and a payment naming it late), then deleted. */
export const QUOTE_RETENTION_MS = 86_400_000;

/** A quote's index entries: its workspace's, and the time it may be deleted (`retire`, for pruneQuotes). */
const quoteIndex = (q: Pick<PaymentQuoteRecord, 'workspace' | 'id' | 'expires_at'>) => [`${q.workspace}\x00${q.id}`, `retire\x00${q.expires_at}\x00${q.id}`];

/**
 * Deletes at most `batch` quotes whose expiry is more than QUOTE_RETENTION_MS past, oldest first: a quote
 * decides nothing after it expires, so keeping it a day is enough. Returns how many went.
 */
export async function pruneQuotes(store: RecordRepository, now: number, batch = 500): Promise<number> {
  const due = (await PAYMENT_QUOTES.in(store).byIndex('retire\x00', batch)).filter((q) => Date.parse(q.expires_at) + QUOTE_RETENTION_MS < now);
  if (due.length) await store.batch(due.map((q) => PAYMENT_QUOTES.delOp(q.id, quoteIndex(q))));
  return due.length;
}

export type QuoteDestination = { account_holder_id: string; wallet_id: string | null; address: string | null } | { address: string };

export interface QuoteInput {
  kind: PaymentKind;
  source_wallet_id: string;
  destination: { account_holder_id: string } | { address: string };
  amount: string;
  asset: string;
}

export interface PaymentQuoteRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  kind: PaymentKind;
  source_wallet_id: string;
  destination: QuoteDestination;
  amount: string;
  asset: string;
  fees: { tenant: string; platform: string; total: string };
  total_debit: string;
  fee_schedule_id: string | null;
  /** The platform fee applied, as configured when the quote was made (configuration may change later). */
  platform_fee: { basis_points: number; fixed: string };
  compliance: { status: ComplianceStatus; checks: Check[] };
  expires_at: string;
  created_at: string;
}

export const quoteView = ({ v: _v, tenant: _t, workspace: _w, platform_fee: _p, ...rest }: PaymentQuoteRecord) => rest;

export interface PaymentQuotesOptions {
  store: RecordRepository;
  links: CustomerLinks;
  schedules: FeeSchedules;
  platformFee: PlatformFee;
  clock: () => number;
}

const invalid = (field: string, reason: string) => new FieldValidationError([{ field, reason }]);

/** Whether `address` is one the chain can pay: a 0x address (EIP-55 checksum when mixed case) or a Bitcoin address of the chain's network. */
export function addressValidFor(chain: string, address: string): boolean {
  const info = chainInfo(chain);
  if (!info) return false;
  if (info.family === 'evm') return /^0x[0-9a-fA-F]{40}$/.test(address) && isAddress(address);
  try {
    bitcoin.address.toOutputScript(address, info.bitcoinNetwork);
    return true;
  } catch {
    return false;
  }
}

export class PaymentQuotes {
  constructor(private readonly o: PaymentQuotesOptions) {}

  /** The source wallet, the workspace's linked organization's: 404 otherwise, 409 when decommissioned. */
  private async sourceWallet(scope: Scope, id: string): Promise<WalletRecord> {
    const org = await this.o.links.orgOfWorkspace(scope);
    const wallet = org === undefined ? undefined : await WALLETS.in(this.o.store).get(id);
    if (org === undefined || !wallet || wallet.org !== org) throw new CustodyError('not_found', 'no such wallet');
    if (walletState(wallet) === 'decommissioned') throw new CustodyError('wallet_decommissioned', `wallet ${wallet.id} is decommissioned; it makes no payment`);
    return wallet;
  }

  private async holder(scope: Scope, id: string): Promise<AccountHolderRecord> {
    const h = await ACCOUNT_HOLDERS.in(this.o.store).get(id);
    if (!h || h.workspace !== scope.workspace || h.tenant !== scope.tenant) throw new CustodyError('not_found', `no account holder ${id}`);
    return h;
  }

  /** The holder's active wallet on `chain` of its linked vault, or undefined. */
  private async holderWallet(h: AccountHolderRecord, chain: string, org: string): Promise<WalletRecord | undefined> {
    const link = await ACCOUNT_HOLDER_VAULTS.in(this.o.store).get(h.id);
    if (!link || link.workspace !== h.workspace || link.org !== org) return undefined;
    const ref = link.wallets.find((w) => w.chain === chain);
    const wallet = ref ? await WALLETS.in(this.o.store).get(ref.wallet_id) : undefined;
    return wallet && wallet.org === org && walletState(wallet) === 'active' ? wallet : undefined;
  }

  private static holderChecks(side: 'source' | 'destination', h: AccountHolderRecord): Check[] {
    return [
      h.status === 'active' ? pass(`${side}_holder_active`) : fail(`${side}_holder_active`, 'account_holder_not_active'),
      h.verification_status === 'verified' ? pass(`${side}_holder_verification`) : fail(`${side}_holder_verification`, 'verification_not_current'),
    ];
  }

  /**
   * In order: the input's form (422), the source wallet (404, 409), the asset and address for its chain
   * (422), the destination holder (404); then the fees and the checks, and the quote is stored.
   */
  async quote(scope: Scope, input: QuoteInput): Promise<PaymentQuoteRecord> {
    const q = await this.evaluate(scope, input);
    await PAYMENT_QUOTES.in(this.o.store).put(q.id, q, quoteIndex(q));
    return q;
  }

  /** A stored quote of the workspace, or undefined (unknown, another workspace's, or pruned). */
  async stored(scope: Scope, id: string): Promise<PaymentQuoteRecord | undefined> {
    const q = /^pqt_[0-9a-f]{26}$/.test(id) ? await PAYMENT_QUOTES.in(this.o.store).get(id) : undefined;
    return q && q.workspace === scope.workspace && q.tenant === scope.tenant ? q : undefined;
  }

  /**
   * The quote's checks and numbers without storing anything: what `quote` stores, and what a payment and
   * its dry run (api/payments/payments.ts) price and check with. `kinds` are the payment kinds accepted
   * (a payment request's payment is priced as `payment_request`).
   */
  async evaluate(scope: Scope, input: QuoteInput, kinds: readonly PaymentKind[] = ['transfer']): Promise<PaymentQuoteRecord> {
    const errors: FieldError[] = [];
    if (!kinds.includes(input.kind)) errors.push({ field: 'kind', reason: `only ${kinds.join(', ')} payments can be quoted for now` });
    const amount = parseBaseUnits(input.amount);
    if (amount === undefined || amount === 0n || amount > MAX_UINT256) errors.push({ field: 'amount', reason: 'base units from 1 to 2^256 - 1: decimal digits without leading zeros' });
    const asset = parseAsset(input.asset);
    if (!asset) errors.push({ field: 'asset', reason: 'an asset id: <chain>:native or <chain>:0x<token contract>' });
    if (errors.length) throw new FieldValidationError(errors);

    const wallet = await this.sourceWallet(scope, input.source_wallet_id);
    const info = chainInfo(wallet.chain);
    if (asset!.chain !== wallet.chain || (info?.family === 'bitcoin' && asset!.token !== 'native')) {
      throw invalid('asset', `the wallet is on ${wallet.chain}: ${wallet.chain}:native${info?.family === 'evm' ? ` or ${wallet.chain}:0x<token contract>` : ''}`);
    }
    if ('address' in input.destination && !addressValidFor(wallet.chain, input.destination.address)) throw invalid('destination.address', `not a ${wallet.chain} address`);
    const destHolder = 'account_holder_id' in input.destination ? await this.holder(scope, input.destination.account_holder_id) : undefined;

    const checks: Check[] = [];
    const sourceHolderId = (await VAULT_ACCOUNT_HOLDERS.in(this.o.store).get(wallet.vault_id))?.account_holder_id;
    const sourceHolder = sourceHolderId === undefined ? undefined : await ACCOUNT_HOLDERS.in(this.o.store).get(sourceHolderId);
    if (sourceHolder) checks.push(...PaymentQuotes.holderChecks('source', sourceHolder));
    let destination: QuoteDestination;
    if (destHolder) {
      checks.push(...PaymentQuotes.holderChecks('destination', destHolder));
      const w = await this.holderWallet(destHolder, wallet.chain, wallet.org);
      checks.push(w ? pass('destination_holder_wallet') : fail('destination_holder_wallet', 'destination_no_wallet'));
      destination = { account_holder_id: destHolder.id, wallet_id: w?.id ?? null, address: w?.address ?? null };
    } else {
      destination = { address: (input.destination as { address: string }).address };
    }

    const schedule = await this.o.schedules.inForce(scope);
    const rule = schedule && matchRule(schedule.rules, input.kind, asset!.id);
    const tenantFee = rule ? ruleFee(ruleOfJson(rule), amount!) : 0n;
    const platformFee = ruleFee(this.o.platformFee, amount!);
    const total = tenantFee + platformFee;
    const totalDebit = amount! + total;

    checks.push(await this.policyCheck(wallet, destination.address, asset!.id, totalDebit));
    checks.push(totalDebit <= MAX_UINT256 ? pass('total_within_limit') : fail('total_within_limit', 'payment_limit_exceeded'));

    const now = this.o.clock();
    const q: PaymentQuoteRecord = {
      v: 1, id: newId('pqt', now), tenant: scope.tenant, workspace: scope.workspace, kind: input.kind, source_wallet_id: wallet.id, destination,
      amount: amount!.toString(), asset: asset!.id, fees: { tenant: tenantFee.toString(), platform: platformFee.toString(), total: total.toString() },
      total_debit: totalDebit.toString(), fee_schedule_id: schedule?.id ?? null,
      platform_fee: { basis_points: this.o.platformFee.basis_points, fixed: this.o.platformFee.fixed.toString() },
      compliance: { status: complianceStatus(checks), checks }, expires_at: new Date(now + QUOTE_TTL_MS).toISOString(), created_at: new Date(now).toISOString(),
    };
    return q;
  }

  /**
   * The source vault's policy as a transaction would meet it, with the whole debit as the amount: its
   * recipient lists (when the recipient is known), asset allow list and per-transaction cap. The rolling
   * window depends on what else is in flight when the payment is submitted, and is checked then.
   */
  private async policyCheck(wallet: WalletRecord, recipient: string | null, asset: string, amount: bigint): Promise<Check> {
    const policy = ((await VAULTS.in(this.o.store).get(wallet.vault_id))?.policy ?? null) as Policy | null;
    if (!policy) return pass('vault_policy');
    const { rolling_window: _w, ...rest } = policy;
    const applied: Policy = recipient === null ? { ...rest, recipient_allowlist: undefined, recipient_denylist: undefined } : rest;
    try {
      checkPolicy(applied, [{ recipient: recipient ?? '', asset, amount }], [], this.o.clock());
      return pass('vault_policy');
    } catch (err) {
      if (err instanceof CustodyError && err.code === 'cap_exceeded') return fail('vault_policy', 'cap_exceeded');
      if (err instanceof CustodyError && err.code === 'forbidden') return fail('vault_policy', 'policy_forbidden');
      throw err;
    }
  }
}
