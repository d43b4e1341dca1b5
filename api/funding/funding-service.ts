// Funding (fiat in, stablecoin out) and off-ramp (stablecoin in, fiat out) requests of a workspace's
// account holders (docs/platform/funding.md). Requests move through the transition tables of
// funding-states.ts; each transition runs under the request's lock against the stored state
// (compare-and-set), and writes in one batch the new state, the ledger entries of the money it moves
// (api/ledger/platform-ledger.ts, idempotent by source) and its webhook event. `advance` drives a request
// as far as it can go now and is safe to call any number of times, from any caller: after creation, on
// the rail's callback, and from the sweep (`runDue`) that recovers a lost callback or a crash.
import type { Hex } from 'viem';
import { EVM_NETWORKS } from '../../core/chains/evm/evm-networks.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import type { CollectionName } from '../store/collection.ts';
import { pageOf, type PageResult } from '../store/pagination.ts';
import type { Actor } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { Envelope } from '../webhooks/delivery-engine.ts';
import type { PaymentRail, RailTransfer } from '../rails/payment-rail.ts';
import type { RailDirectory } from '../gateways/gateway-service.ts';
import {
  fiatAsset, holderFiat, holderStablecoin, issuerReserve, issuerSupply, railClearing, railInFlight, type Posting,
} from '../ledger/platform-ledger.ts';
import { reconcileStablecoin, type ReconcileReturnType } from '../ledger/reconciliation.ts';
import { ACCOUNT_HOLDERS, ACCOUNT_HOLDER_VAULTS } from '../account-holders/collections.ts';
import { HOLDER_ID } from '../account-holders/account-holder-service.ts';
import type { AccountHolderRecord } from '../account-holders/account-holder-records.ts';
import { filteredWalk } from '../account-holders/filtered-walk.ts';
import { WALLETS } from '../vaults/collections.ts';
import type { WalletRecord } from '../vaults/records.ts';
import { walletState } from '../wallets/wallet-view.ts';
import { TRANSACTIONS } from '../transactions/collections.ts';
import type { TransactionRecord } from '../transactions/records.ts';
import {
  fundingMayBecome, offRampMayBecome,
  type FundingFailureReason, type FundingStatus, type OffRampFailureReason, type OffRampStatus,
} from './funding-states.ts';
import type { FundingRequestRecord, OffRampRequestRecord } from './funding-records.ts';
import { FUNDING_REQUESTS, OFF_RAMP_REQUESTS, REQUEST_KEYS, TRANSFER_CLAIMS } from './collections.ts';
import { bodyFingerprint } from '../idempotency.ts';
import { centsToUnits, unitsToCents, type StablecoinIssuer } from './stablecoin-issuer.ts';
import type { MoneyFlowDeps } from '../ledger/money-flow-deps.ts';

export const FUNDING_ID = /^fnd_[0-9a-f]{26}$/;
export const OFF_RAMP_ID = /^ofr_[0-9a-f]{26}$/;

export interface FundingServiceOptions extends MoneyFlowDeps {
  /** The service's fiat rail; none configured: creating a request is 503 funding_unavailable (reads still work). */
  rail: PaymentRail | undefined;
  /**
   * The workspaces' integration gateways (docs/platform/gateways.md): a workspace with an active gateway
   * moves its fiat there instead of through `rail`.
   */
  gateways?: RailDirectory | undefined;
  /** The stablecoin issuer of a chain, if the chain has one. */
  issuer: (chain: string) => StablecoinIssuer | undefined;
  /** How long an off-ramp waits for the holder's transfer (API_OFF_RAMP_WINDOW_SEC). */
  offRampWindowMs: number;
  /** Where the sweep reports a request it could not advance (ids and error codes only). */
  log?: { warn(obj: object, msg: string): void } | undefined;
  clock: () => number;
}

export interface CreateFundingInput { account_holder_id: string; wallet_id: string; fiat_amount: string; currency: string }
export interface CreateOffRampInput { account_holder_id: string; wallet_id: string; stablecoin_amount: string; currency: string }
export interface RequestFilters { account_holder_id?: string | undefined; status?: string | undefined }

const SYSTEM: Envelope['actor'] = { type: 'system', id: 'funding' };
const FUNDING_FINAL: readonly FundingStatus[] = ['completed', 'failed', 'returned'];
const OFF_RAMP_FINAL: readonly OffRampStatus[] = ['completed', 'failed', 'returned', 'expired'];
const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);

/** What the API answers: the record without its tenancy, format and internal fields. */
export function fundingView(r: FundingRequestRecord) {
  const { v: _v, tenant: _t, workspace: _w, mint, ...rest } = r;
  return { ...rest, mint_tx_hash: mint?.tx_hash ?? null };
}

export function offRampView(r: OffRampRequestRecord) {
  const { v: _v, tenant: _t, workspace: _w, ...rest } = r;
  return rest;
}

type Kind = 'funding' | 'off_ramp';
const indexOf = (kind: Kind, r: { id: string; workspace: string; account_holder_id: string; status: string }): string[] => {
  const final = (kind === 'funding' ? FUNDING_FINAL : OFF_RAMP_FINAL) as readonly string[];
  return [`${r.workspace}\x00all\x00${r.id}`, `${r.workspace}\x00holder\x00${r.account_holder_id}\x00${r.id}`, ...(final.includes(r.status) ? [] : [`open\x00${r.id}`])];
};

export class FundingService {
  constructor(private readonly o: FundingServiceOptions) {
    o.rail?.onSettlement((t) => this.onRailTransfer(t, o.rail!.name));
    o.gateways?.onSettlement((t, rail) => this.onRailTransfer(t, rail));
  }

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  /** The rail a workspace's new transfers go to: its active gateway, else the service's rail. */
  private async railFor(scope: Scope & { environment: string }): Promise<PaymentRail> {
    const gateway = await this.o.gateways?.forWorkspace(scope);
    if (gateway) return gateway;
    return this.serviceRail(scope.environment);
  }

  /** The rail a request was made on, for its in-flight transfer; undefined while it cannot be called (a disabled gateway). */
  private async railNamed(name: string): Promise<PaymentRail | undefined> {
    if (this.o.rail?.name === name) return this.o.rail;
    return this.o.gateways?.named(name);
  }

  private serviceRail(environment: string): PaymentRail {
    const rail = this.o.rail;
    if (!rail) throw new CustodyError('funding_unavailable', 'no payment rail is configured on this service');
    // As the Hosted Auth demo persona: a sandbox double never serves a production workspace.
    if (rail.sandbox && environment !== 'sandbox') throw new CustodyError('sandbox_only', 'the sandbox payment rail serves sandbox workspaces only');
    return rail;
  }

  /** The holder (422 when not the workspace's) and the wallet it names (422 unless one of the holder's linked wallets). */
  private async holderWallet(scope: Scope, holderId: string, walletId: string): Promise<{ holder: AccountHolderRecord; wallet: WalletRecord }> {
    const holder = HOLDER_ID.test(holderId) ? await ACCOUNT_HOLDERS.in(this.o.store).get(holderId) : undefined;
    if (!holder || holder.workspace !== scope.workspace || holder.tenant !== scope.tenant) throw invalid('account_holder_id', 'no such account holder in this workspace');
    if (holder.status === 'closed') throw new CustodyError('account_holder_closed', 'the account holder is closed');
    if (holder.status !== 'active') throw new CustodyError('account_holder_not_active', `the account holder is ${holder.status}; money moves for active (verified) holders only`);
    const link = await ACCOUNT_HOLDER_VAULTS.in(this.o.store).get(holder.id);
    const org = link && link.workspace === scope.workspace ? await this.o.links.orgOfWorkspace(scope) : undefined;
    const wallet = org !== undefined && org === link?.org && link.wallets.some((w) => w.wallet_id === walletId) ? await WALLETS.in(this.o.store).get(walletId) : undefined;
    if (!wallet || wallet.org !== org || wallet.address_type !== 'evm') throw invalid('wallet_id', 'not an EVM wallet of the account holder');
    if (walletState(wallet) === 'decommissioned') throw new CustodyError('wallet_decommissioned', `wallet ${wallet.id} is decommissioned`);
    return { holder, wallet };
  }

  /** The stablecoin contract issued on `chain` (API_FUNDING_STABLECOINS), if any: what a holder's balance reads there. */
  stablecoinOf(chain: string): Hex | undefined {
    return this.o.issuer(chain)?.token;
  }

  private issuerOf(chain: string): StablecoinIssuer {
    const issuer = this.o.issuer(chain);
    if (!issuer) throw invalid('wallet_id', `no stablecoin is issued on ${chain} here`);
    return issuer;
  }

  // ── Funding requests ───────────────────────────────────────────────────────────────────────────────

  /**
   * The request an Idempotency-Key already created (the same body), or undefined; another body is 409.
   * The caller holds the key's lock (api/idempotency.ts), so the look-up and the creation do not race.
   */
  private async priorRequest(scope: Scope, operation: string, key: string, input: unknown): Promise<string | undefined> {
    const prior = await REQUEST_KEYS.in(this.o.store).get(`${scope.workspace}\x00${operation}\x00${key}`);
    if (!prior) return undefined;
    if (prior.fingerprint !== bodyFingerprint(input)) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
    return prior.id;
  }

  private keyOp(scope: Scope, operation: string, key: string, input: unknown, id: string): Op {
    return REQUEST_KEYS.putOp(`${scope.workspace}\x00${operation}\x00${key}`, { v: 1, id, fingerprint: bodyFingerprint(input) });
  }

  async createFunding(scope: Scope & { environment: string }, actor: Actor, input: CreateFundingInput, idempotencyKey: string): Promise<FundingRequestRecord> {
    const rail = await this.railFor(scope);
    const prior = await this.priorRequest(scope, 'create_funding_request', idempotencyKey, input);
    if (prior) return this.getFunding(scope, prior);
    if (!rail.currencies.includes(input.currency)) throw invalid('currency', `the rail moves ${rail.currencies.join(', ')}`);
    const { holder, wallet } = await this.holderWallet(scope, input.account_holder_id, input.wallet_id);
    const issuer = this.issuerOf(wallet.chain);
    const now = this.iso();
    const r: FundingRequestRecord = {
      v: 1, id: newId('fnd', this.o.clock()), tenant: scope.tenant, workspace: scope.workspace, account_holder_id: holder.id, wallet_id: wallet.id,
      chain: wallet.chain, address: wallet.address, asset: issuer.asset, status: 'pending', fiat_amount: BigInt(input.fiat_amount).toString(),
      currency: input.currency, stablecoin_amount: centsToUnits(BigInt(input.fiat_amount)).toString(), rail: rail.name, rail_transfer_id: null,
      failure_reason: null, return_reason: null, mint: null, created_at: now, updated_at: now, completed_at: null,
    };
    await this.o.store.batch([
      FUNDING_REQUESTS.putOp(r.id, r, { index: indexOf('funding', r) }),
      this.keyOp(scope, 'create_funding_request', idempotencyKey, input, r.id),
      this.o.audit.op(scope, actor, 'funding_request.create', r.id, null, fundingView(r)),
    ]);
    // Submitted at once; a failure here leaves it pending, and the sweep submits it (the rail dedupes by reference).
    await this.advanceFunding(r.id).catch(() => undefined);
    return (await FUNDING_REQUESTS.in(this.o.store).get(r.id))!;
  }

  async getFunding(scope: Scope, id: string): Promise<FundingRequestRecord> {
    const r = FUNDING_ID.test(id) ? await FUNDING_REQUESTS.in(this.o.store).get(id) : undefined;
    if (!r || r.workspace !== scope.workspace || r.tenant !== scope.tenant) throw new CustodyError('not_found', `no funding request ${id}`);
    return r;
  }

  async listFunding(scope: Scope, f: RequestFilters, cursor: string | undefined, limit: number): Promise<PageResult<ReturnType<typeof fundingView>>> {
    const page = await this.list<FundingRequestRecord>(FUNDING_REQUESTS, 'funding_requests', scope, f, cursor, limit);
    return { ...page, data: page.data.map(fundingView) };
  }

  private async list<T extends { id: string; workspace: string; account_holder_id: string; status: string }>(c: CollectionName<T>, name: string, scope: Scope, f: RequestFilters, cursor: string | undefined, limit: number): Promise<PageResult<T>> {
    const filters = { ...f };
    const after = this.o.cursors.decode(cursor, name, scope.workspace, filters);
    const prefix = f.account_holder_id ? `${scope.workspace}\x00holder\x00${f.account_holder_id}\x00` : `${scope.workspace}\x00all\x00`;
    const keep = (r: T) => r.workspace === scope.workspace && (!f.status || r.status === f.status) && (!f.account_holder_id || r.account_holder_id === f.account_holder_id);
    const out = await filteredWalk(this.o.store, c, prefix, after, limit, keep);
    return pageOf(this.o.cursors, out, limit, name, scope.workspace, filters);
  }

  /**
   * The one way a funding request changes: under its lock, from the stored state, only along the
   * transition table; otherwise nothing is written and the stored record is answered (a duplicate
   * callback, a second worker). `moves` are the ledger postings of the transition, keyed by its source.
   */
  private async transitionFunding(id: string, to: FundingStatus, patch: Partial<FundingRequestRecord>, moves: (r: FundingRequestRecord) => Posting[] = () => []): Promise<{ record: FundingRequestRecord; changed: boolean }> {
    return this.o.store.exclusive(`funding:${id}`, async () => {
      const before = (await FUNDING_REQUESTS.in(this.o.store).get(id))!;
      if (!fundingMayBecome(before.status, to)) return { record: before, changed: false };
      const now = this.iso();
      const after: FundingRequestRecord = { ...before, ...patch, status: to, updated_at: now, completed_at: FUNDING_FINAL.includes(to) ? now : null };
      const scope = { tenant: after.tenant, workspace: after.workspace };
      const ops: Op[] = [
        FUNDING_REQUESTS.putOp(after.id, after, { index: indexOf('funding', after), unindex: indexOf('funding', before).filter((i) => !indexOf('funding', after).includes(i)) }),
        ...(await this.o.ledger.entryOps(scope, `${after.id}/${before.status}-${to}`, after.id, moves(after))),
      ];
      const resource = { type: 'funding_request', id: after.id };
      const event = to === 'completed'
        ? { type: 'funding_request.completed', resource, actor: SYSTEM, data: { funding_request_id: after.id, account_holder_id: after.account_holder_id, status: after.status, fiat_amount: after.fiat_amount, currency: after.currency, stablecoin_amount: after.stablecoin_amount, asset: after.asset } }
        : to === 'failed' || to === 'returned'
          ? { type: 'funding_request.failed', resource, actor: SYSTEM, data: { funding_request_id: after.id, account_holder_id: after.account_holder_id, status: after.status, reason: after.failure_reason ?? after.return_reason ?? 'unknown', fiat_amount: after.fiat_amount, currency: after.currency } }
          : undefined;
      if (event) await this.o.deliveries.emitAll(scope, [event], ops);
      else await this.o.store.batch(ops);
      return { record: after, changed: true };
    });
  }

  /** Applies what the rail says of the pull. */
  private async fundingRailOutcome(r: FundingRequestRecord, t: RailTransfer): Promise<void> {
    if (t.direction !== 'pull' || t.reference !== r.id) return;
    if (r.status === 'pending') {
      if (t.status === 'failed') await this.transitionFunding(r.id, 'failed', { rail_transfer_id: t.id, failure_reason: t.reason as FundingFailureReason });
      else await this.transitionFunding(r.id, 'fiat_settling', { rail_transfer_id: t.id });
      r = (await FUNDING_REQUESTS.in(this.o.store).get(r.id))!;
    }
    if (r.status !== 'fiat_settling') return;
    if (t.status === 'settled') {
      const fiat = fiatAsset(r.currency);
      // The fiat is the holder's once the rail settles it.
      await this.transitionFunding(r.id, 'minting', {}, (x) => [{ debit: railClearing(x.rail, x.currency), credit: holderFiat(x.account_holder_id, x.currency), asset: fiat, amount: BigInt(x.fiat_amount) }]);
    } else if (t.status === 'failed') {
      await this.transitionFunding(r.id, 'failed', { failure_reason: t.reason as FundingFailureReason });
    } else if (t.status === 'returned') {
      // Returned before it settled here: nothing was credited, nothing is minted.
      await this.transitionFunding(r.id, 'returned', { return_reason: t.reason });
    }
  }

  /**
   * Drives a funding request as far as it goes now: submits the pull, reads the rail's outcome, signs,
   * broadcasts and follows the issuer's mint. Safe to repeat at any point.
   */
  async advanceFunding(id: string): Promise<FundingRequestRecord> {
    let r = (await FUNDING_REQUESTS.in(this.o.store).get(id))!;
    if (r.status === 'pending' || r.status === 'fiat_settling') {
      const rail = await this.railNamed(r.rail);
      if (!rail) return r;
      const t = r.rail_transfer_id ? await rail.transfer(r.rail_transfer_id) : await rail.submitPull({ reference: r.id, amount: BigInt(r.fiat_amount), currency: r.currency, account_holder_id: r.account_holder_id });
      if (t) await this.fundingRailOutcome(r, t);
      r = (await FUNDING_REQUESTS.in(this.o.store).get(id))!;
    }
    if (r.status === 'minting') r = await this.mint(r);
    return r;
  }

  /** The issuer's mint: signed once (stored before broadcast), broadcast (again, harmlessly), followed to finality. */
  private async mint(r: FundingRequestRecord): Promise<FundingRequestRecord> {
    const issuer = this.issuerOf(r.chain);
    let mint = r.mint;
    if (!mint) {
      mint = await this.o.store.exclusive(`funding:${r.id}`, async () => {
        const cur = (await FUNDING_REQUESTS.in(this.o.store).get(r.id))!;
        if (cur.mint || cur.status !== 'minting') return cur.mint;
        const signed = await issuer.signMint(cur.address as Hex, BigInt(cur.stablecoin_amount), async (m, nonceOp) => {
          const next: FundingRequestRecord = { ...cur, mint: { ...m, block_number: null }, updated_at: this.iso() };
          await this.o.store.batch([FUNDING_REQUESTS.putOp(next.id, next, { index: indexOf('funding', next) }), nonceOp]);
        });
        return { ...signed, block_number: null };
      });
      if (!mint) return (await FUNDING_REQUESTS.in(this.o.store).get(r.id))!;
    }
    const status = await issuer.mintStatus(mint.tx_hash);
    if (status.state === 'pending') {
      await issuer.broadcast(mint);
      return (await FUNDING_REQUESTS.in(this.o.store).get(r.id))!;
    }
    if (status.state === 'reverted') return (await this.transitionFunding(r.id, 'failed', { failure_reason: 'mint_reverted', mint: { ...mint, block_number: status.block_number } })).record;
    return (await this.transitionFunding(r.id, 'completed', { mint: { ...mint, block_number: status.block_number } }, (x) => [
      // The holder's fiat goes to the issuer's reserve, and the minted units from the issued supply to the holder.
      { debit: holderFiat(x.account_holder_id, x.currency), credit: issuerReserve(x.currency), asset: fiatAsset(x.currency), amount: BigInt(x.fiat_amount) },
      { debit: issuerSupply(x.asset), credit: holderStablecoin(x.account_holder_id, x.asset), asset: x.asset, amount: BigInt(x.stablecoin_amount) },
    ])).record;
  }

  // ── Off-ramp requests ──────────────────────────────────────────────────────────────────────────────

  /** GET /off-ramp-requests/burn-address: where a holder sends stablecoin to redeem it, per chain. */
  async burnAddresses(scope: Scope & { environment: string }, chain?: string): Promise<{ chain: string; asset: string; address: string }[]> {
    const rail = await this.railFor(scope);
    const out: { chain: string; asset: string; address: string }[] = [];
    for (const c of chain ? [chain] : this.chains()) {
      const issuer = this.o.issuer(c);
      const address = issuer && rail.redemptionAddress(c, issuer.asset);
      if (issuer && address) out.push({ chain: c, asset: issuer.asset, address: address.toLowerCase() });
    }
    return out;
  }

  /** Whether any chain has a stablecoin issuer here (something to reconcile). */
  hasStablecoin(): boolean {
    return this.chains().length > 0;
  }

  /** The EVM chains with a stablecoin issuer here. */
  private chains(): string[] {
    return EVM_NETWORKS.map((n) => n.chain).filter((c) => this.o.issuer(c));
  }

  async createOffRamp(scope: Scope & { environment: string }, actor: Actor, input: CreateOffRampInput, idempotencyKey: string): Promise<OffRampRequestRecord> {
    const rail = await this.railFor(scope);
    const prior = await this.priorRequest(scope, 'create_off_ramp_request', idempotencyKey, input);
    if (prior) return this.getOffRamp(scope, prior);
    if (!rail.currencies.includes(input.currency)) throw invalid('currency', `the rail moves ${rail.currencies.join(', ')}`);
    const units = BigInt(input.stablecoin_amount);
    const cents = unitsToCents(units);
    if (cents === undefined || cents === 0n) throw invalid('stablecoin_amount', 'must be a whole number of cents (a multiple of 10^16 units)');
    const { holder, wallet } = await this.holderWallet(scope, input.account_holder_id, input.wallet_id);
    const issuer = this.issuerOf(wallet.chain);
    const burn = rail.redemptionAddress(wallet.chain, issuer.asset);
    if (!burn) throw new CustodyError('funding_unavailable', `the rail redeems nothing on ${wallet.chain}`);
    const nowMs = this.o.clock();
    const now = this.iso(nowMs);
    const r: OffRampRequestRecord = {
      v: 1, id: newId('ofr', nowMs), tenant: scope.tenant, workspace: scope.workspace, account_holder_id: holder.id, wallet_id: wallet.id, chain: wallet.chain,
      address: wallet.address.toLowerCase(), asset: issuer.asset, burn_address: burn.toLowerCase(), status: 'awaiting_transfer', stablecoin_amount: units.toString(),
      fiat_amount: cents.toString(), currency: input.currency, transaction_id: null, tx_hash: null, block_number: null, rail: rail.name, rail_transfer_id: null,
      failure_reason: null, return_reason: null, expires_at: this.iso(nowMs + this.o.offRampWindowMs), created_at: now, updated_at: now, completed_at: null,
    };
    await this.o.store.batch([
      OFF_RAMP_REQUESTS.putOp(r.id, r, { index: indexOf('off_ramp', r) }),
      this.keyOp(scope, 'create_off_ramp_request', idempotencyKey, input, r.id),
      this.o.audit.op(scope, actor, 'off_ramp_request.create', r.id, null, offRampView(r)),
    ]);
    return r;
  }

  async getOffRamp(scope: Scope, id: string): Promise<OffRampRequestRecord> {
    const r = OFF_RAMP_ID.test(id) ? await OFF_RAMP_REQUESTS.in(this.o.store).get(id) : undefined;
    if (!r || r.workspace !== scope.workspace || r.tenant !== scope.tenant) throw new CustodyError('not_found', `no off-ramp request ${id}`);
    return r;
  }

  async listOffRamp(scope: Scope, f: RequestFilters, cursor: string | undefined, limit: number): Promise<PageResult<ReturnType<typeof offRampView>>> {
    const page = await this.list<OffRampRequestRecord>(OFF_RAMP_REQUESTS, 'off_ramp_requests', scope, f, cursor, limit);
    return { ...page, data: page.data.map(offRampView) };
  }

  private async transitionOffRamp(id: string, to: OffRampStatus, patch: Partial<OffRampRequestRecord>, moves: (r: OffRampRequestRecord) => Posting[] = () => [], extra: (r: OffRampRequestRecord) => Promise<Op[]> = async () => []): Promise<{ record: OffRampRequestRecord; changed: boolean }> {
    return this.o.store.exclusive(`off-ramp:${id}`, async () => {
      const before = (await OFF_RAMP_REQUESTS.in(this.o.store).get(id))!;
      if (!offRampMayBecome(before.status, to)) return { record: before, changed: false };
      const now = this.iso();
      const after: OffRampRequestRecord = { ...before, ...patch, status: to, updated_at: now, completed_at: OFF_RAMP_FINAL.includes(to) ? now : null };
      const scope = { tenant: after.tenant, workspace: after.workspace };
      const ops: Op[] = [
        OFF_RAMP_REQUESTS.putOp(after.id, after, { index: indexOf('off_ramp', after), unindex: indexOf('off_ramp', before).filter((i) => !indexOf('off_ramp', after).includes(i)) }),
        ...(await extra(after)),
        ...(await this.o.ledger.entryOps(scope, `${after.id}/${before.status}-${to}`, after.id, moves(after))),
      ];
      const resource = { type: 'off_ramp_request', id: after.id };
      const event = to === 'completed'
        ? { type: 'off_ramp_request.completed', resource, actor: SYSTEM, data: { off_ramp_request_id: after.id, account_holder_id: after.account_holder_id, status: after.status, fiat_amount: after.fiat_amount, currency: after.currency, stablecoin_amount: after.stablecoin_amount, asset: after.asset } }
        : to === 'failed' || to === 'returned' || to === 'expired'
          ? { type: 'off_ramp_request.failed', resource, actor: SYSTEM, data: { off_ramp_request_id: after.id, account_holder_id: after.account_holder_id, status: after.status, reason: after.failure_reason ?? after.return_reason ?? 'no_transfer', fiat_amount: after.fiat_amount, currency: after.currency } }
          : undefined;
      if (event) await this.o.deliveries.emitAll(scope, [event], ops);
      else await this.o.store.batch(ops);
      return { record: after, changed: true };
    });
  }

  /**
   * The holder's transfer of exactly the amount from its wallet to the burn address, final on chain: a
   * final vault-API transaction of the wallet made since the request, whose receipt holds that Transfer
   * log of the stablecoin, and which no other off-ramp claimed.
   */
  private async findTransfer(r: OffRampRequestRecord): Promise<{ tx: TransactionRecord; block_number: number } | undefined> {
    const issuer = this.issuerOf(r.chain);
    const entries = await TRANSACTIONS.in(this.o.store).byIndexEntries(`wallet/${r.wallet_id}/`, r.created_at, 1000);
    for (const { value: tx } of entries) {
      if (!tx || tx.state !== 'final' || !tx.tx_hash || tx.wallet_id !== r.wallet_id) continue;
      const pays = tx.transfers.some((x) => x.asset.toLowerCase() === r.asset && x.recipient.toLowerCase() === r.burn_address && x.amount === r.stablecoin_amount);
      if (!pays || (await TRANSFER_CLAIMS.in(this.o.store).get(`${r.chain}/${tx.tx_hash.toLowerCase()}`))) continue;
      // The chain is the authority, not the record: the Transfer log must be there, final.
      const seen = await issuer.finalTransfers(tx.tx_hash);
      if (!seen || 'reverted' in seen) continue;
      if (seen.logs.some((l) => l.from === r.address && l.to === r.burn_address && l.value === BigInt(r.stablecoin_amount))) return { tx, block_number: seen.block_number };
    }
    return undefined;
  }

  /** Drives an off-ramp request as far as it goes now; safe to repeat. */
  async advanceOffRamp(id: string): Promise<OffRampRequestRecord> {
    let r = (await OFF_RAMP_REQUESTS.in(this.o.store).get(id))!;
    if (r.status === 'awaiting_transfer') {
      const found = await this.findTransfer(r);
      if (found) {
        const claim = `${r.chain}/${found.tx.tx_hash!.toLowerCase()}`;
        // The claim is checked and written under one lock for every off-ramp, so one transfer pays one request.
        await this.o.store.exclusive('off-ramp-claims', async () => {
          if (await TRANSFER_CLAIMS.in(this.o.store).get(claim)) return;
          await this.transitionOffRamp(r.id, 'transfer_confirmed', { transaction_id: found.tx.id, tx_hash: found.tx.tx_hash, block_number: found.block_number }, (x) => [
            // The units left the holder's wallet for the issuer (redeemed), and the reserve pays the holder the fiat.
            { debit: holderStablecoin(x.account_holder_id, x.asset), credit: issuerSupply(x.asset), asset: x.asset, amount: BigInt(x.stablecoin_amount) },
            { debit: issuerReserve(x.currency), credit: holderFiat(x.account_holder_id, x.currency), asset: fiatAsset(x.currency), amount: BigInt(x.fiat_amount) },
          ], async (x) => [TRANSFER_CLAIMS.putOp(claim, { v: 1, off_ramp_request_id: x.id })]);
        });
      } else if (this.o.clock() >= Date.parse(r.expires_at)) {
        await this.transitionOffRamp(r.id, 'expired', {});
      }
      r = (await OFF_RAMP_REQUESTS.in(this.o.store).get(id))!;
    }
    if (r.status === 'transfer_confirmed' || r.status === 'payout_pending') {
      const rail = await this.railNamed(r.rail);
      if (!rail) return r;
      const t = r.rail_transfer_id ? await rail.transfer(r.rail_transfer_id) : await rail.submitPush({ reference: r.id, amount: BigInt(r.fiat_amount), currency: r.currency, account_holder_id: r.account_holder_id });
      if (t) await this.offRampRailOutcome(r, t);
      r = (await OFF_RAMP_REQUESTS.in(this.o.store).get(id))!;
    }
    return r;
  }

  private async offRampRailOutcome(r: OffRampRequestRecord, t: RailTransfer): Promise<void> {
    if (t.direction !== 'push' || t.reference !== r.id) return;
    const toInFlight = (x: OffRampRequestRecord): Posting[] => [{ debit: holderFiat(x.account_holder_id, x.currency), credit: railInFlight(x.rail, x.currency), asset: fiatAsset(x.currency), amount: BigInt(x.fiat_amount) }];
    const backToHolder = (x: OffRampRequestRecord): Posting[] => [{ debit: railInFlight(x.rail, x.currency), credit: holderFiat(x.account_holder_id, x.currency), asset: fiatAsset(x.currency), amount: BigInt(x.fiat_amount) }];
    if (r.status === 'transfer_confirmed') {
      // Failed before the payout was recorded as pending: the rail refused the submission, nothing left,
      // and the fiat stays the holder's on the ledger.
      if (t.status === 'failed') await this.transitionOffRamp(r.id, 'failed', { rail_transfer_id: t.id, failure_reason: t.reason as OffRampFailureReason });
      else await this.transitionOffRamp(r.id, 'payout_pending', { rail_transfer_id: t.id }, toInFlight);
      r = (await OFF_RAMP_REQUESTS.in(this.o.store).get(r.id))!;
    }
    if (r.status !== 'payout_pending') return;
    if (t.status === 'settled') {
      await this.transitionOffRamp(r.id, 'completed', {}, (x) => [{ debit: railInFlight(x.rail, x.currency), credit: railClearing(x.rail, x.currency), asset: fiatAsset(x.currency), amount: BigInt(x.fiat_amount) }]);
    } else if (t.status === 'failed') {
      await this.transitionOffRamp(r.id, 'failed', { failure_reason: t.reason as OffRampFailureReason }, backToHolder);
    } else if (t.status === 'returned') {
      await this.transitionOffRamp(r.id, 'returned', { return_reason: t.reason }, backToHolder);
    }
  }

  // ── Reconciliation ─────────────────────────────────────────────────────────────────────────────────

  /**
   * Each holder's stablecoin ledger balance against the chain's balanceOf of its wallets
   * (api/ledger/reconciliation.ts); `differences` lists the accounts that disagree.
   */
  reconcile(scope: Scope): Promise<ReconcileReturnType> {
    const issuerOfAsset = (asset: string) => {
      const issuer = this.o.issuer(asset.slice(0, asset.indexOf(':')));
      if (!issuer || issuer.asset !== asset) throw new CustodyError('bug', `no issuer reads ${asset}`);
      return issuer;
    };
    return reconcileStablecoin({
      ledger: this.o.ledger, workspace: scope.workspace,
      blockOf: (asset) => issuerOfAsset(asset).tip(),
      balanceOf: (asset, address, block) => issuerOfAsset(asset).balanceOf(address, block),
      addressesOf: async (holder, asset) => {
        const link = await ACCOUNT_HOLDER_VAULTS.in(this.o.store).get(holder);
        if (!link || link.workspace !== scope.workspace) return [];
        const chain = asset.slice(0, asset.indexOf(':'));
        const out: string[] = [];
        for (const w of link.wallets.filter((x) => x.chain === chain)) {
          const rec = await WALLETS.in(this.o.store).get(w.wallet_id);
          if (rec) out.push(rec.address);
        }
        return out;
      },
    });
  }

  // ── The rail's callback and the sweep ──────────────────────────────────────────────────────────────

  /**
   * A rail's callback: the transfer's request moves as the outcome says; a duplicate changes nothing. Only
   * the rail a request was made on speaks for it (a gateway cannot move another rail's request).
   */
  async onRailTransfer(t: RailTransfer, rail: string): Promise<void> {
    if (FUNDING_ID.test(t.reference)) {
      const r = await FUNDING_REQUESTS.in(this.o.store).get(t.reference);
      if (!r || r.rail !== rail) return;
      await this.fundingRailOutcome(r, t);
      // The mint is the sweep's to retry: the callback has done its part once the state moved.
      if ((await FUNDING_REQUESTS.in(this.o.store).get(r.id))?.status === 'minting') await this.advanceFunding(r.id).catch(() => undefined);
    } else if (OFF_RAMP_ID.test(t.reference)) {
      const r = await OFF_RAMP_REQUESTS.in(this.o.store).get(t.reference);
      if (r && r.rail === rail) await this.offRampRailOutcome(r, t);
    }
  }

  /** Advances every open request once (the periodic sweep); returns how many it looked at. Errors leave a request for the next sweep. */
  async runDue(): Promise<number> {
    let n = 0;
    // A request that cannot move now waits for the next sweep; its id and the error's code are logged,
    // never an amount, an address or a message that could carry one.
    const failed = (kind: string, id: string) => (err: unknown) => this.o.log?.warn({ [`${kind}_id`]: id, category: err instanceof CustodyError ? err.code : 'error' }, `${kind.replace('_', ' ')} not advanced; the next sweep retries it`);
    for (const r of await FUNDING_REQUESTS.in(this.o.store).byIndex('open\x00', 1000)) {
      n++;
      await this.advanceFunding(r.id).catch(failed('funding_request', r.id));
    }
    for (const r of await OFF_RAMP_REQUESTS.in(this.o.store).byIndex('open\x00', 1000)) {
      n++;
      await this.advanceOffRamp(r.id).catch(failed('off_ramp_request', r.id));
    }
    return n;
  }

}

