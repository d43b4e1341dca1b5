// Escrows of a workspace's account holders (docs/platform/escrows.md): a payer holder's stablecoin held
// by the TokenEscrow contract on chain until the payer releases it to the payee holder, or it is refunded.
// The API never moves the funds and never signs: it answers the exact calls the payer's wallet makes,
// follows the contract at finality (the sweep, `runDue`), records the money in the platform ledger and
// emits webhooks. Every transition runs under the escrow's lock against the stored state
// (compare-and-set) and writes in one batch the new state, its history entry, its ledger entries
// (idempotent by source) and its webhook event.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import type { Hex } from 'viem';
import { EVM_NETWORKS } from '../../core/chains/evm/evm-networks.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { decodeIntent } from '../../core/intents/intent.ts';
import type { Op } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { pageOf, type PageResult } from '../store/pagination.ts';
import type { Actor } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { Envelope } from '../webhooks/delivery-engine.ts';
import { holderStablecoin, type Posting } from '../ledger/platform-ledger.ts';
import { ACCOUNT_HOLDERS, ACCOUNT_HOLDER_VAULTS } from '../account-holders/collections.ts';
import { HOLDER_ID } from '../account-holders/account-holder-service.ts';
import type { AccountHolderRecord } from '../account-holders/account-holder-records.ts';
import { filteredWalk } from '../account-holders/filtered-walk.ts';
import { WALLETS } from '../vaults/collections.ts';
import type { WalletRecord } from '../vaults/records.ts';
import { walletState } from '../wallets/wallet-view.ts';
import { TRANSACTIONS } from '../transactions/collections.ts';
import { bodyFingerprint } from '../idempotency.ts';
import { purposeLock, type MemberActions } from '../member-auth/member-actions.ts';
import { ESCROW_FINAL, escrowMayBecome, type EscrowStatus } from './escrow-states.ts';
import type { EscrowEventRecord, EscrowEventType, EscrowRecord } from './escrow-records.ts';
import { ESCROWS, ESCROW_ACTIONS, ESCROW_EVENTS, ESCROW_KEYS } from './collections.ts';
import type { EscrowChain, EscrowLog, OnchainEscrow } from './escrow-chain.ts';
import { fundingCalls, onchainEscrowId, releaseCall, type EscrowCall } from './token-escrow.ts';
import type { MoneyFlowDeps } from '../ledger/money-flow-deps.ts';

export const ESCROW_ID = /^esc_[0-9a-f]{26}$/;

/** The ledger account holding an escrow's funds while the contract holds them. */
export const escrowAccount = (escrowId: string, asset: string) => `escrow/${escrowId}/${asset}`;

/** What member-actions offers the escrow service: reading and revoking a member's approval. */
export type ActionRevoker = Pick<MemberActions, 'batchTransactions' | 'revoke'>;

/**
 * The escrow's lock: every change of its state holds it, and member-actions holds it around the
 * authorizer's check and the commit of a member's approval, so a cancel and an approval never interleave.
 */
export const escrowLock = (id: string) => purposeLock('escrow', id);

export interface EscrowServiceOptions extends MoneyFlowDeps {
  /** The escrow contract of a chain (API_ESCROW_CONTRACTS), if it has one. */
  escrow: (chain: string) => EscrowChain | undefined;
  /** The stablecoin of a chain (API_FUNDING_STABLECOINS): what an escrow holds there. */
  stablecoin: (chain: string) => Hex | undefined;
  /** How long an escrow waits for its deposit before it expires (API_ESCROW_FUNDING_WINDOW_SEC). */
  fundingWindowMs: number;
  /** Member actions approving escrow calls; set once the member-action service exists (api/app.ts). */
  actions?: ActionRevoker | undefined;
  log?: { warn(obj: object, msg: string): void } | undefined;
  clock: () => number;
}

export interface CreateEscrowInput {
  payer_account_holder_id: string;
  payer_wallet_id: string;
  payee_account_holder_id: string;
  payee_wallet_id?: string | undefined;
  amount: string;
  refundable_after: string;
  description?: string | undefined;
}

export interface EscrowFilters { status?: string | undefined; payer_account_holder_id?: string | undefined; payee_account_holder_id?: string | undefined }

const SYSTEM: Envelope['actor'] = { type: 'system', id: 'escrow' };
const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);
/** refund_after bounds: at least a minute ahead, at most a year (the contract takes any uint64). */
const REFUNDABLE_MIN_MS = 60_000;
const REFUNDABLE_MAX_MS = 366 * 86_400_000;

/** An escrow as stored (the record, named for what the service reads back). */
export type StoredEscrow = EscrowRecord;

interface Prepared { ops: Op[]; scope: Scope; event: { type: string; resource: { type: string; id: string }; actor: Envelope['actor']; data: Record<string, unknown> } | undefined }

export interface EscrowView extends Omit<EscrowRecord, 'v' | 'tenant' | 'workspace' | 'org' | 'from_block'> {
  calls: { funding: [EscrowCall, EscrowCall]; release: EscrowCall };
}

/** What the API answers: the record without its tenancy and internal fields, with the exact calls of the payer's wallet. */
export function escrowView(r: StoredEscrow): EscrowView {
  const { v: _v, tenant: _t, workspace: _w, org: _o, from_block: _b, ...rest } = r;
  const contract = r.contract as Hex;
  const terms = { escrowId: r.escrow_id as Hex, token: r.token as Hex, payee: r.payee_address as Hex, amount: BigInt(r.amount), refundableAfter: BigInt(Date.parse(r.refundable_after) / 1000) };
  return { ...rest, calls: { funding: fundingCalls(contract, terms), release: releaseCall(contract, r.escrow_id as Hex) } };
}

export function escrowEventView(e: EscrowEventRecord) {
  const { v: _v, workspace: _w, ...rest } = e;
  return rest;
}

const indexOf = (r: EscrowRecord): string[] => [
  `${r.workspace}\x00all\x00${r.id}`,
  `${r.workspace}\x00payer\x00${r.payer_account_holder_id}\x00${r.id}`,
  `${r.workspace}\x00payee\x00${r.payee_account_holder_id}\x00${r.id}`,
  ...(ESCROW_FINAL.includes(r.status) ? [] : [`open\x00${r.id}`]),
];

/** Whether the contract's escrow is exactly this one's terms (anyone can deposit under any id; only the exact one counts). */
function sameTerms(r: EscrowRecord, e: OnchainEscrow): boolean {
  return e.state !== 'none' && e.token === r.token && e.payer === r.payer_address && e.payee === r.payee_address
    && e.amount === BigInt(r.amount) && e.refundableAfter === BigInt(Date.parse(r.refundable_after) / 1000);
}

export class EscrowService {
  constructor(private readonly o: EscrowServiceOptions) {}

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  /** Member actions, once api/app.ts built them. */
  useActions(actions: ActionRevoker): void {
    this.o.actions = actions;
  }

  /** A holder of the workspace, active; 422 naming `field` when not the workspace's. */
  private async holder(scope: Scope, id: string, field: string): Promise<AccountHolderRecord> {
    const h = HOLDER_ID.test(id) ? await ACCOUNT_HOLDERS.in(this.o.store).get(id) : undefined;
    if (!h || h.workspace !== scope.workspace || h.tenant !== scope.tenant) throw invalid(field, 'no such account holder in this workspace');
    if (h.status === 'closed') throw new CustodyError('account_holder_closed', `the account holder ${h.id} is closed`);
    if (h.status !== 'active') throw new CustodyError('account_holder_not_active', `the account holder ${h.id} is ${h.status}; money moves for active (verified) holders only`);
    return h;
  }

  /** The holder's linked EVM wallet `walletId`, or (none given) its wallet on `chain`; 422 naming `field` otherwise. */
  private async holderWallet(scope: Scope, holderId: string, walletId: string | undefined, chain: string | undefined, field: string): Promise<{ wallet: WalletRecord; org: string }> {
    const link = await ACCOUNT_HOLDER_VAULTS.in(this.o.store).get(holderId);
    const org = link && link.workspace === scope.workspace ? await this.o.links.orgOfWorkspace(scope) : undefined;
    const id = walletId ?? link?.wallets.find((w) => w.chain === chain)?.wallet_id;
    const wallet = org !== undefined && org === link?.org && id !== undefined && link.wallets.some((w) => w.wallet_id === id) ? await WALLETS.in(this.o.store).get(id) : undefined;
    if (!wallet || wallet.org !== org || wallet.address_type !== 'evm') throw invalid(field, walletId ? 'not an EVM wallet of the account holder' : `the account holder has no wallet on ${chain}`);
    if (walletState(wallet) === 'decommissioned') throw new CustodyError('wallet_decommissioned', `wallet ${wallet.id} is decommissioned`);
    return { wallet, org: org! };
  }

  private async priorEscrow(scope: Scope, key: string, input: unknown): Promise<string | undefined> {
    const prior = await ESCROW_KEYS.in(this.o.store).get(`${scope.workspace}\x00create_escrow\x00${key}`);
    if (!prior) return undefined;
    if (prior.fingerprint !== bodyFingerprint(input)) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
    return prior.id;
  }

  private eventOp(r: EscrowRecord, type: EscrowEventType, actor: { type: string; id: string }, extra: Partial<EscrowEventRecord> = {}): Op {
    const e: EscrowEventRecord = { v: 1, id: newId('ese', this.o.clock()), escrow_id: r.id, workspace: r.workspace, type, status: r.status, actor, tx_hash: null, block_number: null, member_action_id: null, at: this.iso(), ...extra };
    return ESCROW_EVENTS.putOp(e.id, e, { index: [`escrow/${r.id}/${e.id}`] });
  }

  /** Ops recording a member's approval of an escrow's calls (the authorizer's, committed with the member action). */
  approvalOps(r: EscrowRecord, purpose: 'funding' | 'release', actionId: string, memberId: string): Op[] {
    return [
      ESCROW_ACTIONS.putOp(`${r.id}/${actionId}`, { v: 1, escrow_id: r.id, action_id: actionId, purpose, org: r.org, created_at: this.iso() }, { index: [`escrow/${r.id}/`] }),
      this.eventOp(r, purpose === 'funding' ? 'funding_approved' : 'release_approved', { type: 'member', id: memberId }, { member_action_id: actionId }),
    ];
  }

  // ── Operations ──────────────────────────────────────────────────────────────────────────────────────

  async create(scope: Scope, actor: Actor, input: CreateEscrowInput, idempotencyKey: string): Promise<StoredEscrow> {
    if (!EVM_NETWORKS.some((n) => this.o.escrow(n.chain))) throw new CustodyError('unavailable', 'no escrow contract is configured on this service (API_ESCROW_CONTRACTS)');
    const prior = await this.priorEscrow(scope, idempotencyKey, input);
    if (prior) return this.get(scope, prior);
    const nowMs = this.o.clock();
    const refundable = Date.parse(input.refundable_after);
    if (!Number.isFinite(refundable) || refundable % 1000 !== 0) throw invalid('refundable_after', 'a date-time in whole seconds');
    if (refundable < nowMs + REFUNDABLE_MIN_MS || refundable > nowMs + REFUNDABLE_MAX_MS) throw invalid('refundable_after', 'between a minute and a year from now');
    if (input.payer_account_holder_id === input.payee_account_holder_id) throw invalid('payee_account_holder_id', 'the payee must be another account holder than the payer');
    const payer = await this.holder(scope, input.payer_account_holder_id, 'payer_account_holder_id');
    const payee = await this.holder(scope, input.payee_account_holder_id, 'payee_account_holder_id');
    const { wallet: from, org } = await this.holderWallet(scope, payer.id, input.payer_wallet_id, undefined, 'payer_wallet_id');
    const { wallet: to } = await this.holderWallet(scope, payee.id, input.payee_wallet_id, from.chain, 'payee_wallet_id');
    if (to.chain !== from.chain) throw invalid('payee_wallet_id', `not on the payer wallet's chain ${from.chain}`);
    if (to.address.toLowerCase() === from.address.toLowerCase()) throw invalid('payee_wallet_id', 'the payee wallet is the payer wallet');
    const chain = this.o.escrow(from.chain);
    const token = this.o.stablecoin(from.chain);
    if (!chain) throw new CustodyError('unavailable', `no escrow contract is configured on ${from.chain} (API_ESCROW_CONTRACTS)`);
    if (!token) throw invalid('payer_wallet_id', `no stablecoin is issued on ${from.chain} here`);
    const id = newId('esc', nowMs);
    const now = this.iso(nowMs);
    const r: StoredEscrow = {
      v: 1, id, tenant: scope.tenant, workspace: scope.workspace, org, chain: from.chain, contract: chain.contract.toLowerCase(), escrow_id: onchainEscrowId(id),
      asset: `${from.chain}:${token.toLowerCase()}`, token: token.toLowerCase(), payer_account_holder_id: payer.id, payer_wallet_id: from.id, payer_address: from.address.toLowerCase(),
      payee_account_holder_id: payee.id, payee_wallet_id: to.id, payee_address: to.address.toLowerCase(), amount: BigInt(input.amount).toString(),
      refundable_after: this.iso(refundable), funding_deadline: this.iso(nowMs + this.o.fundingWindowMs), status: 'awaiting_funding',
      deposit_tx_hash: null, deposit_block: null, settlement_tx_hash: null, settlement_block: null, refunded_by: null, description: input.description ?? null,
      created_at: now, updated_at: now, funded_at: null, completed_at: null, from_block: Number(await chain.tip()),
    };
    // No webhook for the creation: it is the caller's own answer (docs/platform/events.md); the escrow's
    // outcomes (released, cancelled) are the events.
    await this.o.deliveries.emitAll(scope, [], [
      ESCROWS.putOp(id, r, { index: indexOf(r) }),
      ESCROW_KEYS.putOp(`${scope.workspace}\x00create_escrow\x00${idempotencyKey}`, { v: 1, id, fingerprint: bodyFingerprint(input) }),
      this.eventOp(r, 'created', { type: actor.type, id: actor.id }),
      this.o.audit.op(scope, actor, 'escrow.create', id, null, escrowView(r)),
    ]);
    return r;
  }

  private eventData(r: EscrowRecord): Record<string, unknown> {
    return { escrow_id: r.id, status: r.status, amount: r.amount, asset: r.asset, payer_account_holder_id: r.payer_account_holder_id, payee_account_holder_id: r.payee_account_holder_id };
  }

  async get(scope: Scope, id: string): Promise<StoredEscrow> {
    const r = ESCROW_ID.test(id) ? (await ESCROWS.in(this.o.store).get(id)) as StoredEscrow | undefined : undefined;
    if (!r || r.workspace !== scope.workspace || r.tenant !== scope.tenant) throw new CustodyError('not_found', `no escrow ${id}`);
    return r;
  }

  /** The stored escrow by id, whatever its workspace (the authorizer checks the workspace itself). */
  async byId(id: string): Promise<StoredEscrow | undefined> {
    return ESCROW_ID.test(id) ? (await ESCROWS.in(this.o.store).get(id)) as StoredEscrow | undefined : undefined;
  }

  async list(scope: Scope, f: EscrowFilters, cursor: string | undefined, limit: number): Promise<PageResult<EscrowView>> {
    const filters = { ...f };
    const after = this.o.cursors.decode(cursor, 'escrows', scope.workspace, filters);
    const prefix = f.payer_account_holder_id ? `${scope.workspace}\x00payer\x00${f.payer_account_holder_id}\x00`
      : f.payee_account_holder_id ? `${scope.workspace}\x00payee\x00${f.payee_account_holder_id}\x00` : `${scope.workspace}\x00all\x00`;
    const keep = (r: EscrowRecord) => r.workspace === scope.workspace && (!f.status || r.status === f.status)
      && (!f.payer_account_holder_id || r.payer_account_holder_id === f.payer_account_holder_id) && (!f.payee_account_holder_id || r.payee_account_holder_id === f.payee_account_holder_id);
    const out = await filteredWalk(this.o.store, ESCROWS, prefix, after, limit, keep);
    const page = pageOf(this.o.cursors, out, limit, 'escrows', scope.workspace, filters);
    return { ...page, data: page.data.map((r) => escrowView(r as StoredEscrow)) };
  }

  /** GET /escrows/{id}/events: the escrow's history, oldest first. */
  async events(scope: Scope, id: string, cursor: string | undefined, limit: number): Promise<PageResult<ReturnType<typeof escrowEventView>>> {
    const r = await this.get(scope, id);
    const after = this.o.cursors.decode(cursor, 'escrow_events', scope.workspace, { escrow: r.id });
    const out = await ESCROW_EVENTS.in(this.o.store).byIndexAfter(`escrow/${r.id}/`, after, limit + 1);
    const page = pageOf(this.o.cursors, out, limit, 'escrow_events', scope.workspace, { escrow: r.id });
    return { ...page, data: page.data.map(escrowEventView) };
  }

  /**
   * POST /escrows/{id}/cancel, the sender's cancel with its readiness checks: only an escrow awaiting its
   * funding, with no deposit on chain (final or not), no vault-API transaction of the payer's wallet
   * carrying its deposit, and no member approval of its funding already used. The member approvals not
   * used yet are revoked in the same batch as the cancel (under the organization's transaction lock, so
   * none is spent meanwhile).
   */
  async cancel(scope: Scope, actor: Actor, id: string): Promise<StoredEscrow> {
    const found = await this.get(scope, id);
    return this.o.store.exclusive(escrowLock(found.id), async () => {
      const r = (await ESCROWS.in(this.o.store).get(found.id)) as StoredEscrow;
      if (r.status === 'funded') {
        throw new CustodyError('invalid_transition', `the escrow is funded: its funds are in the contract and it can no longer be canceled; the payee refunds it on chain (refund(${r.payer_address}, ${r.escrow_id}) from the payee's wallet), or the payer from refundable_after (${r.refundable_after})`);
      }
      if (r.status !== 'awaiting_funding') throw new CustodyError('invalid_transition', `the escrow is ${r.status}; only an escrow awaiting funding can be canceled`);
      const chain = this.o.escrow(r.chain);
      if (!chain) throw new CustodyError('unavailable', `no escrow contract is configured on ${r.chain}`);
      const onchain = await chain.escrowAt(r.payer_address as Hex, r.escrow_id as Hex);
      if (sameTerms(r, onchain)) throw new CustodyError('invalid_transition', `the escrow's deposit is on chain (state ${onchain.state}); it becomes funded at finality: refund it on chain instead of canceling`);
      if (await this.depositSubmitted(r)) throw new CustodyError('transactions_in_flight', 'a transaction of the payer\'s wallet carries this escrow\'s deposit; wait until it is final (then refund) or failed (then cancel)');
      await this.closeRevoking(r, 'canceled', { type: actor.type, id: actor.id }, (after) => [this.o.audit.op(scope, actor, 'escrow.cancel', after.id, { status: r.status }, { status: after.status })]);
      return (await ESCROWS.in(this.o.store).get(r.id)) as StoredEscrow;
    });
  }

  /** Whether a vault-API transaction of the payer's wallet, not failed or rejected, carries this escrow's deposit call. */
  private async depositSubmitted(r: EscrowRecord): Promise<boolean> {
    const deposit = escrowView(r as StoredEscrow).calls.funding[1];
    const entries = await TRANSACTIONS.in(this.o.store).byIndexEntries(`wallet/${r.payer_wallet_id}/`, r.created_at, 1000);
    for (const { value: tx } of entries) {
      if (!tx || tx.wallet_id !== r.payer_wallet_id || tx.state === 'failed' || tx.state === 'rejected') continue;
      const intent = (() => {
        try {
          return decodeIntent(hexToBytes(tx.intent));
        } catch {
          return undefined;
        }
      })();
      if (intent?.kind === 'evm.transfer' && `0x${bytesToHex(intent.to)}` === deposit.to && `0x${bytesToHex(intent.data)}` === deposit.data) return true;
    }
    return false;
  }

  /**
   * Ends an escrow awaiting funding (canceled, expired), the caller holding its lock: first its unused
   * member approvals of the funding are revoked (each under the organization's transaction lock, so
   * none is spent meanwhile; an approval already used is 409 and nothing ends), then the end, its
   * history, audit and webhook are committed in one batch.
   */
  private async closeRevoking(r: StoredEscrow, to: 'canceled' | 'expired', actor: { type: string; id: string }, extra: (after: StoredEscrow) => Op[] = () => []): Promise<void> {
    const revoker = this.o.actions;
    const actions = (await ESCROW_ACTIONS.in(this.o.store).byIndex(`escrow/${r.id}/`, 100)).filter((a) => a.purpose === 'funding');
    const live: string[] = [];
    for (const a of actions) {
      const b = await revoker?.batchTransactions(a.action_id);
      if (!b || b.status === 'revoked') continue;
      if (b.status === 'used' || b.intents.some((i) => i.transaction_id !== null)) {
        // Partly used: the rest can still be submitted, and a used approval cannot be revoked. Wholly used:
        // its deposit is on its way unless the transaction carrying it failed.
        if (b.status !== 'used' || (await this.depositSubmitted(r))) {
          throw new CustodyError('transactions_in_flight', `the member's approval ${a.action_id} of this escrow's funding is in use: its transactions were submitted; wait until they are final (then refund) or failed`);
        }
        continue;
      }
      live.push(a.action_id);
    }
    for (const actionId of live) {
      const { usedAny } = await revoker!.revoke(r.org, actionId, async () => []);
      if (usedAny) throw new CustodyError('transactions_in_flight', `the member's approval ${actionId} of this escrow's funding was used meanwhile; wait until its transactions are final (then refund) or failed`);
    }
    await this.commit(await this.transitionOps(r, to, {}, actor, extra));
  }

  // ── Transitions ─────────────────────────────────────────────────────────────────────────────────────

  private webhookOf(after: EscrowRecord, actor: Envelope['actor']) {
    const resource = { type: 'escrow', id: after.id };
    if (after.status === 'released') return { type: 'escrow.released', resource, actor, data: this.eventData(after) };
    if (after.status === 'refunded' || after.status === 'canceled' || after.status === 'expired') return { type: 'escrow.cancelled', resource, actor, data: this.eventData(after) };
    return undefined;
  }

  /**
   * The ops of one transition from the stored state (the caller holds the escrow's lock): the record,
   * its history entry and its ledger entry; undefined when the table does not allow it from there.
   */
  private async transitionOps(before: StoredEscrow, to: Exclude<EscrowStatus, 'awaiting_funding'>, patch: Partial<EscrowRecord>, actor: { type: string; id: string }, extra: (after: StoredEscrow) => Op[] = () => [], log?: EscrowLog): Promise<Prepared | undefined> {
    if (!escrowMayBecome(before.status, to)) return undefined;
    const now = this.iso();
    const after: StoredEscrow = { ...before, ...patch, status: to, updated_at: now, completed_at: ESCROW_FINAL.includes(to) ? now : null };
    const scope = { tenant: after.tenant, workspace: after.workspace };
    const ops: Op[] = [
      ESCROWS.putOp(after.id, after, { index: indexOf(after), unindex: indexOf(before).filter((i) => !indexOf(after).includes(i)) }),
      this.eventOp(after, to, actor, log ? { tx_hash: log.tx_hash, block_number: log.block_number } : {}),
      ...extra(after),
      ...(await this.o.ledger.entryOps(scope, `${after.id}/${before.status}-${to}`, after.id, this.moves(after, to))),
    ];
    return { ops, scope, event: this.webhookOf(after, actor.type === 'system' ? SYSTEM : { type: actor.type as Envelope['actor']['type'], id: actor.id }) };
  }

  /** The ledger postings of a transition: the funds follow the contract. */
  private moves(x: EscrowRecord, to: EscrowStatus): Posting[] {
    const amount = BigInt(x.amount);
    if (to === 'funded') return [{ debit: holderStablecoin(x.payer_account_holder_id, x.asset), credit: escrowAccount(x.id, x.asset), asset: x.asset, amount }];
    if (to === 'released') return [{ debit: escrowAccount(x.id, x.asset), credit: holderStablecoin(x.payee_account_holder_id, x.asset), asset: x.asset, amount }];
    if (to === 'refunded') return [{ debit: escrowAccount(x.id, x.asset), credit: holderStablecoin(x.payer_account_holder_id, x.asset), asset: x.asset, amount }];
    return [];
  }

  /** One transition's batch: with its webhook event when it has one (the delivery engine commits both at once). */
  private async commit(p: Prepared | undefined): Promise<void> {
    if (!p) return;
    if (p.event) await this.o.deliveries.emitAll(p.scope, [p.event], p.ops);
    else await this.o.store.batch(p.ops);
  }

  private async transition(id: string, to: Exclude<EscrowStatus, 'awaiting_funding'>, patch: Partial<EscrowRecord>, log?: EscrowLog): Promise<StoredEscrow> {
    return this.o.store.exclusive(escrowLock(id), async () => {
      const before = (await ESCROWS.in(this.o.store).get(id)) as StoredEscrow;
      await this.commit(await this.transitionOps(before, to, patch, SYSTEM, () => [], log));
      return (await ESCROWS.in(this.o.store).get(id)) as StoredEscrow;
    });
  }

  /**
   * Drives an escrow as far as the chain says, at finality: the contract's state of its id with exactly
   * its terms (a deposit under the id with other terms is not this escrow's), and the final logs that
   * name the transactions. An escrow never funded expires at its deadline, once nothing is deposited
   * at the latest block either. Safe to repeat.
   */
  async advance(id: string): Promise<StoredEscrow> {
    let r = (await ESCROWS.in(this.o.store).get(id)) as StoredEscrow;
    if (r.status !== 'awaiting_funding' && r.status !== 'funded') return r;
    const chain = this.o.escrow(r.chain);
    if (!chain) return r;
    const f = await chain.final(r.payer_address as Hex, r.escrow_id as Hex, BigInt(r.from_block));
    if (f && sameTerms(r, f.escrow)) {
      const log = (name: EscrowLog['name']) => f.logs.filter((l) => l.name === name).pop();
      if (r.status === 'awaiting_funding') {
        const d = log('Deposited');
        r = await this.transition(r.id, 'funded', { deposit_tx_hash: d?.tx_hash ?? null, deposit_block: d?.block_number ?? null, funded_at: this.iso() }, d);
      }
      if (r.status === 'funded' && f.escrow.state === 'released') {
        const x = log('Released');
        r = await this.transition(r.id, 'released', { settlement_tx_hash: x?.tx_hash ?? null, settlement_block: x?.block_number ?? null }, x);
      } else if (r.status === 'funded' && f.escrow.state === 'refunded') {
        const x = log('Refunded');
        r = await this.transition(r.id, 'refunded', { settlement_tx_hash: x?.tx_hash ?? null, settlement_block: x?.block_number ?? null, refunded_by: x?.by === r.payee_address ? 'payee' : 'payer' }, x);
      }
      return r;
    }
    if (r.status === 'awaiting_funding' && this.o.clock() >= Date.parse(r.funding_deadline)) {
      // A deposit not final yet still counts: the escrow waits for it rather than expiring under it.
      if (sameTerms(r, await chain.escrowAt(r.payer_address as Hex, r.escrow_id as Hex))) return r;
      const closed = await this.o.store.exclusive(escrowLock(r.id), async () => {
        const cur = (await ESCROWS.in(this.o.store).get(r.id)) as StoredEscrow;
        if (cur.status !== 'awaiting_funding') return cur;
        await this.closeRevoking(cur, 'expired', SYSTEM).catch((err: unknown) => {
          // An approval already used: its transactions may still land; the next sweep looks again.
          if (!(err instanceof CustodyError && err.code === 'transactions_in_flight')) throw err;
        });
        return (await ESCROWS.in(this.o.store).get(r.id)) as StoredEscrow;
      });
      r = closed;
    }
    return r;
  }

  /** Advances every open escrow once (the periodic sweep); returns how many it looked at. */
  async runDue(): Promise<number> {
    let n = 0;
    for (const r of await ESCROWS.in(this.o.store).byIndex('open\x00', 1000)) {
      n++;
      await this.advance(r.id).catch((err: unknown) => this.o.log?.warn({ escrow_id: r.id, category: err instanceof CustodyError ? err.code : 'error' }, 'escrow not advanced; the next sweep retries it'));
    }
    return n;
  }

  // ── Reconciliation ──────────────────────────────────────────────────────────────────────────────────

  /**
   * Each escrow account of the workspace against the contract at the final block: the ledger holds the
   * amount while the contract's escrow is funded, nothing otherwise. Reports, never corrects.
   */
  async reconcile(scope: Scope): Promise<{ lines: { escrow: string; asset: string; ledger_balance: string; chain_balance: string; difference: string }[]; differences: { escrow: string; difference: string }[] }> {
    const lines = [];
    for (const account of await this.o.ledger.accounts(scope.workspace, 'escrow/')) {
      const m = /^escrow\/(esc_[0-9a-f]{26})\/(.+)$/.exec(account);
      if (!m) continue;
      const [, id, asset] = m as unknown as [string, string, string];
      const r = (await ESCROWS.in(this.o.store).get(id)) as StoredEscrow | undefined;
      const chain = r && this.o.escrow(r.chain);
      if (!r || !chain) continue;
      const block = await chain.finalBlock();
      const e = await chain.escrowAt(r.payer_address as Hex, r.escrow_id as Hex, block);
      const onchain = sameTerms(r, e) && e.state === 'funded' ? e.amount : 0n;
      const ledger = await this.o.ledger.balance(account, asset);
      lines.push({ escrow: id, asset, ledger_balance: ledger.toString(), chain_balance: onchain.toString(), difference: (onchain - ledger).toString() });
    }
    return { lines, differences: lines.filter((l) => l.difference !== '0') };
  }
}
