// Distributions and corporate actions of a token (docs/platform/rwa.md "Distributions and corporate actions").
// A plan is made once from the cap table at a record block (`CapTableSource`) with integer arithmetic
// (pro-rata.ts) and recorded with its batches before anything is proposed; each batch is one Safe transaction
// of the admin Safe, a MultiSendCallOnly batch proposed through the token operation pipeline under an
// Idempotency-Key of the batch and its attempt, so a rerun after a crash finds the same operation and a batch
// is paid by one executed Safe transaction at most. A batch whose operation failed never executed (the
// pipeline records failed only when the Safe's nonce did not move for it) and is proposed again. Every payout
// and every state change is appended to the token's log.
import { erc20Abi, encodeFunctionData, getAddress, isAddress, parseAbiItem, type Address, type Hex } from 'viem';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import { newId } from '../../store/ids.ts';
import type { Actor, AuditLog } from '../../tenancy/audit-log.ts';
import { bodyFingerprint } from '../../idempotency.ts';
import type { Tokenization } from '../../tokenization/tokenization-setup.ts';
import type { TokenRecord } from '../../tokenization/records.ts';
import { encodeTokenCall } from '../../tokenization/token-calls.ts';
import { multiSendTransaction } from '../../tokenization/chain/multisend.ts';
import { infrastructureAddresses } from '../../tokenization/chain/safe-infrastructure.ts';
import { readSafeNonce } from '../../tokenization/chain/safe-transaction.ts';
import type { OperationRecord } from '../../tokenization/records.ts';
import type { CapTableSource, RwaScope, TokenLog } from '../seams.ts';
import { ACTION_KEYS, CORPORATE_ACTIONS, DISTRIBUTIONS } from './collections.ts';
import { actionMayBecome, type ActionState } from './action-states.ts';
import { ACTION_TYPES, type ActionParams, type ActionType, type CorporateActionRecord, type DistributionRecord, type PayoutBatch, type Plan, type PlanEntry } from './records.ts';
import { batchesOf, proRata, redemptionShares, splitShares, type ProRata } from './pro-rata.ts';

export const DISTRIBUTION_ID = /^dist_[0-9a-f]{26}$/;
export const CORPORATE_ACTION_ID = /^cact_[0-9a-f]{26}$/;
export const DEFAULT_BATCH_SIZE = 50;
const EXECUTION_SUCCESS = parseAbiItem('event ExecutionSuccess(bytes32 indexed txHash, uint256 payment)');
export const MAX_BATCH_SIZE = 200;

/** Where a run may be stopped in tests of crash and resume: throwing here stops it as a crash would. */
export type FaultPoint = 'after_propose';

export interface ActionServiceOptions {
  store: RecordRepository;
  audit: AuditLog;
  tokenization: Tokenization;
  /** Absent until the deployment wires them: every route then answers 503 tokenization_unavailable. */
  log?: TokenLog | undefined;
  capTable?: CapTableSource | undefined;
  clock: () => number;
  fault?: ((at: FaultPoint, batch: number) => void) | undefined;
}

export interface DistributionInput { asset?: unknown; amount?: unknown; record_block?: unknown; batch_size?: unknown }
export interface ActionInput extends DistributionInput { type?: unknown; ratio?: unknown; price_per_unit?: unknown }

const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);

function uintOf(v: unknown, field: string, positive = true): bigint {
  if (typeof v !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(v)) throw invalid(field, 'a non-negative integer as a decimal string');
  const n = BigInt(v);
  if (n >= 1n << 256n) throw invalid(field, 'above uint256');
  if (positive && n === 0n) throw invalid(field, 'must be above 0');
  return n;
}

function batchSizeOf(v: unknown): number {
  if (v === undefined) return DEFAULT_BATCH_SIZE;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_BATCH_SIZE) throw invalid('batch_size', `an integer from 1 to ${MAX_BATCH_SIZE}`);
  return v;
}

const transferCall = (asset: string, to: string, amount: bigint) => ({ to: asset, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [getAddress(to), amount] }) });

export class ActionService {
  constructor(private readonly o: ActionServiceOptions) {}

  private iso(): string {
    return new Date(this.o.clock()).toISOString();
  }

  private deps(): { log: TokenLog; capTable: CapTableSource } {
    if (!this.o.log || !this.o.capTable) throw new CustodyError('tokenization_unavailable', 'distributions and corporate actions need the token log and the cap table, which this service does not run');
    return { log: this.o.log, capTable: this.o.capTable };
  }

  private lock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    return this.o.store.exclusive(`rwa:action:${id}`, fn);
  }

  private chainOf(token: TokenRecord) {
    const c = this.o.tokenization.chain(token.chain);
    if (!c) throw new CustodyError('tokenization_unavailable', `tokenization does not run on ${token.chain} here`);
    return c;
  }

  /** The token, deployed, of a kind whose holders have units (an ERC-1155 has one cap table per id: not here). */
  private async tokenOf(scope: RwaScope, tokenId: string): Promise<TokenRecord> {
    const token = await this.o.tokenization.tokens.get(scope, tokenId);
    if (token.status !== 'deployed') throw new CustodyError('conflict', `token ${tokenId} is ${token.status}; it needs to be deployed`);
    return token;
  }

  /** A block the chain has reached; a later one is 422 naming `field`. */
  private async pastBlock(token: TokenRecord, v: unknown, field = 'record_block'): Promise<bigint> {
    const block = uintOf(v, field, false);
    const head = await this.chainOf(token).client.getBlockNumber({ cacheTime: 0 }).catch(() => { throw new CustodyError('chain_backend_error', 'reading the chain\'s head'); });
    if (block > head) throw invalid(field, `block ${block} is in the future (the chain is at ${head})`);
    return block;
  }

  /** An ERC-20 the chain knows: code at the address and balanceOf answering for the Safe. */
  private async assetOf(token: TokenRecord, v: unknown): Promise<Address> {
    if (typeof v !== 'string' || !isAddress(v, { strict: false })) throw invalid('asset', 'an ERC-20 contract address');
    const asset = getAddress(v);
    const client = this.chainOf(token).client;
    const code = await client.getCode({ address: asset }).catch(() => undefined);
    if (!code || code === '0x') throw invalid('asset', `no contract at ${asset} on ${token.chain}`);
    const ok = await client.readContract({ address: asset, abi: erc20Abi, functionName: 'balanceOf', args: [getAddress(token.safe)] }).then(() => true, () => false);
    if (!ok) throw invalid('asset', `${asset} does not answer ERC-20 balanceOf`);
    return asset.toLowerCase() as Address;
  }

  private async balancesAt(scope: RwaScope, token: TokenRecord, block: bigint): Promise<Map<Hex, bigint>> {
    return this.deps().capTable.balancesAt(scope, token.id, block);
  }

  private planOf(block: bigint, share: ProRata, batchSize: number, callsOf: (entries: PlanEntry[]) => { to: string; data: string }[]): Plan {
    const entries = share.shares.map((s) => ({ holder: s.holder, units: s.units.toString(), amount: s.amount.toString() }));
    const batches: PayoutBatch[] = batchesOf(entries, batchSize).map((e, index) => ({
      index, entries: e, calls: callsOf(e).map((c) => ({ to: c.to.toLowerCase(), data: c.data.toLowerCase() })), state: 'planned', attempt: 0, operation_id: null, tx_hash: null, failures: [], waiting: null, logged: 0,
    }));
    return { record_block: block.toString(), supply: share.supply.toString(), holders: entries.length, total: share.paid.toString(), remainder: share.remainder.toString(), batches };
  }

  private async idempotent<T>(scope: RwaScope, what: string, tokenId: string, key: string, body: unknown, find: (id: string) => Promise<T>, make: (keyOp: (id: string) => ReturnType<typeof ACTION_KEYS.putOp>) => Promise<T>): Promise<T> {
    const keyId = `${scope.workspace}\x00${what}_${tokenId}\x00${key}`;
    const fingerprint = bodyFingerprint(body);
    const check = async () => {
      const prior = await ACTION_KEYS.in(this.o.store).get(keyId);
      if (!prior) return undefined;
      if (prior.fingerprint !== fingerprint) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
      return find(prior.id);
    };
    const before = await check();
    if (before) return before;
    return this.lock(`key:${keyId}`, async () => (await check()) ?? make((id) => ACTION_KEYS.putOp(keyId, { v: 1, id, fingerprint })));
  }

  // ── Distributions ────────────────────────────────────────────────────────────────────────────────

  async createDistribution(scope: RwaScope, actor: Actor, tokenId: string, body: DistributionInput, key: string): Promise<DistributionRecord> {
    const { log } = this.deps();
    return this.idempotent(scope, 'distribution', tokenId, key, body, (id) => this.getDistribution(scope, tokenId, id), async (keyOp) => {
      const token = await this.tokenOf(scope, tokenId);
      const amount = uintOf(body.amount, 'amount');
      const batchSize = batchSizeOf(body.batch_size);
      const asset = await this.assetOf(token, body.asset);
      const block = await this.pastBlock(token, body.record_block);
      const plan = this.planOf(block, proRata(amount, await this.balancesAt(scope, token, block), [token.safe]), batchSize, (e) => e.map((x) => transferCall(asset, x.holder, BigInt(x.amount))));
      if (!plan.batches.length) throw new CustodyError('conflict', `token ${tokenId} has no holder to pay at block ${block} (its admin Safe's own units are not counted)`);
      const now = this.iso();
      const rec: DistributionRecord = {
        v: 1, id: newId('dist', this.o.clock()), tenant: scope.tenant, workspace: scope.workspace, token_id: token.id, asset, amount: amount.toString(), record_block: block.toString(),
        batch_size: batchSize, state: 'pending', plan, created_at: now, updated_at: now, completed_at: null,
      };
      await this.o.store.batch([DISTRIBUTIONS.putOp(rec.id, rec, { index: [`${token.id}\x00${rec.id}`] }), keyOp(rec.id), this.o.audit.op(scope, actor, 'rwa.distribution.create', rec.id, null, { token_id: token.id, asset, amount: rec.amount, record_block: rec.record_block })]);
      await log.append(scope, token.id, { kind: 'distribution', body: { distribution_id: rec.id, state: rec.state, asset, amount: rec.amount, record_block: rec.record_block, supply: plan.supply, holders: plan.holders, paid: plan.total, remainder: plan.remainder, remainder_to: token.safe } });
      return rec;
    });
  }

  async getDistribution(scope: RwaScope, tokenId: string, id: string): Promise<DistributionRecord> {
    const token = await this.o.tokenization.tokens.get(scope, tokenId);
    const rec = DISTRIBUTION_ID.test(id) ? await DISTRIBUTIONS.in(this.o.store).get(id) : undefined;
    if (!rec || rec.token_id !== token.id) throw new CustodyError('not_found', `no distribution ${id} of token ${tokenId}`);
    return rec;
  }

  /**
   * Proposes the batches not yet proposed, records the ones the chain confirmed (their payouts appended once)
   * and proposes again those whose operation failed; completed once every batch is confirmed. Safe to repeat,
   * and what a restart calls.
   */
  async executeDistribution(scope: RwaScope, actor: Actor, tokenId: string, id: string): Promise<DistributionRecord> {
    const { log } = this.deps();
    const token = await this.tokenOf(scope, tokenId);
    await this.getDistribution(scope, tokenId, id);
    return this.lock(id, async () => {
      let rec = (await DISTRIBUTIONS.in(this.o.store).get(id))!;
      if (rec.state === 'completed') return rec;
      const save = async (next: DistributionRecord) => {
        await this.o.store.batch([DISTRIBUTIONS.putOp(next.id, next, { index: [`${token.id}\x00${next.id}`] })]);
        rec = next;
      };
      if (rec.state === 'pending') {
        await save({ ...rec, state: 'executing', updated_at: this.iso() });
        await log.append(scope, token.id, { kind: 'distribution', body: { distribution_id: rec.id, state: 'executing', batches: rec.plan.batches.length } });
      }
      const plan = await this.run(scope, actor, token, rec.id, rec.plan, { distribution_id: rec.id, asset: rec.asset }, (p) => save({ ...rec, plan: p, updated_at: this.iso() }));
      if (plan.batches.every((b) => b.state === 'confirmed')) {
        const now = this.iso();
        await save({ ...rec, plan, state: 'completed', completed_at: now, updated_at: now });
        await log.append(scope, token.id, { kind: 'distribution', body: { distribution_id: rec.id, state: 'completed', paid: plan.total, remainder: plan.remainder, remainder_to: token.safe } });
      }
      return rec;
    });
  }

  // ── Corporate actions ───────────────────────────────────────────────────────────────────────────

  async createAction(scope: RwaScope, actor: Actor, tokenId: string, body: ActionInput, key: string): Promise<CorporateActionRecord> {
    const { log } = this.deps();
    return this.idempotent(scope, 'corporate_action', tokenId, key, body, (id) => this.getAction(scope, tokenId, id), async (keyOp) => {
      const token = await this.tokenOf(scope, tokenId);
      if (!ACTION_TYPES.includes(body.type as ActionType)) throw invalid('type', `one of ${ACTION_TYPES.join(', ')}`);
      const type = body.type as ActionType;
      const params: ActionParams = { numerator: null, denominator: null, asset: null, amount: null, price_per_unit: null };
      const allowed: Record<ActionType, string[]> = { split: ['ratio'], dividend: ['asset', 'amount'], redemption: ['asset', 'price_per_unit'] };
      for (const f of ['ratio', 'asset', 'amount', 'price_per_unit']) if (!allowed[type].includes(f) && (body as Record<string, unknown>)[f] !== undefined) throw invalid(f, `not a field of a ${type}`);
      if (type !== 'dividend' && token.kind !== 'erc20') throw invalid('type', `a ${type} is of an ERC-20 token; this token is ${token.kind}`);
      if (type === 'split') {
        const m = typeof body.ratio === 'string' ? /^([1-9][0-9]{0,17}):([1-9][0-9]{0,17})$/.exec(body.ratio) : null;
        if (!m || BigInt(m[1]!) <= BigInt(m[2]!)) throw invalid('ratio', 'new:old units as "n:d" with n above d, e.g. "2:1"');
        params.numerator = BigInt(m[1]!).toString();
        params.denominator = BigInt(m[2]!).toString();
      } else {
        if (type === 'dividend') params.amount = uintOf(body.amount, 'amount').toString();
        else params.price_per_unit = uintOf(body.price_per_unit, 'price_per_unit').toString();
        params.asset = await this.assetOf(token, body.asset);
      }
      // A record date may be ahead: the block is checked when the record is taken.
      const block = uintOf(body.record_block, 'record_block', false);
      const batchSize = batchSizeOf(body.batch_size);
      const now = this.iso();
      const rec: CorporateActionRecord = {
        v: 1, id: newId('cact', this.o.clock()), tenant: scope.tenant, workspace: scope.workspace, token_id: token.id, type, params, record_block: block.toString(), batch_size: batchSize,
        state: 'draft', plan: null, transitions: [{ from: null, to: 'draft', at: now, by: actor.id }], created_at: now, updated_at: now,
      };
      await this.o.store.batch([CORPORATE_ACTIONS.putOp(rec.id, rec, { index: [`${token.id}\x00${rec.id}`] }), keyOp(rec.id), this.o.audit.op(scope, actor, 'rwa.corporate_action.create', rec.id, null, { token_id: token.id, type, record_block: rec.record_block })]);
      await log.append(scope, token.id, { kind: 'corporate_action', body: { corporate_action_id: rec.id, type, from: null, to: 'draft', record_block: rec.record_block, params: { ...params } } });
      return rec;
    });
  }

  async getAction(scope: RwaScope, tokenId: string, id: string): Promise<CorporateActionRecord> {
    const token = await this.o.tokenization.tokens.get(scope, tokenId);
    const rec = CORPORATE_ACTION_ID.test(id) ? await CORPORATE_ACTIONS.in(this.o.store).get(id) : undefined;
    if (!rec || rec.token_id !== token.id) throw new CustodyError('not_found', `no corporate action ${id} of token ${tokenId}`);
    return rec;
  }

  private actionPlan(token: TokenRecord, rec: CorporateActionRecord, block: bigint, balances: Map<Hex, bigint>): Plan {
    const p = rec.params;
    const tokenAddr = token.address.toLowerCase();
    if (rec.type === 'split') {
      return this.planOf(block, splitShares(BigInt(p.numerator!), BigInt(p.denominator!), balances, [token.safe]), rec.batch_size,
        (e) => e.map((x) => ({ to: tokenAddr, data: encodeTokenCall(token.kind, 'mint', [getAddress(x.holder), BigInt(x.amount)]) })));
    }
    if (rec.type === 'dividend') return this.planOf(block, proRata(BigInt(p.amount!), balances, [token.safe]), rec.batch_size, (e) => e.map((x) => transferCall(p.asset!, x.holder, BigInt(x.amount))));
    // Redemption: each holder's whole balance moved to the Safe (RECOVERY_ROLE, allowed while paused) and paid
    // for. The units stay in the Safe as treasury units, never counted again; a burn is refused while paused.
    return this.planOf(block, redemptionShares(BigInt(p.price_per_unit!), balances, [token.safe]), rec.batch_size,
      (e) => e.flatMap((x) => [{ to: tokenAddr, data: encodeTokenCall(token.kind, 'recover', [getAddress(x.holder), getAddress(token.safe)]) }, transferCall(p.asset!, x.holder, BigInt(x.amount))]));
  }

  /** Moves the action to `to` (action-states.ts); a refused move changes nothing. */
  async advance(scope: RwaScope, actor: Actor, tokenId: string, id: string, to: ActionState): Promise<CorporateActionRecord> {
    const { log } = this.deps();
    const token = await this.tokenOf(scope, tokenId);
    await this.getAction(scope, tokenId, id);
    return this.lock(id, async () => {
      let rec = (await CORPORATE_ACTIONS.in(this.o.store).get(id))!;
      const from = rec.state;
      // Executing again runs the pass again (batches left planned by a stop are proposed); other repeats answer it.
      const again = from === 'executing' && to === 'executing';
      if (from === to && !again) return rec;
      if (!again && !actionMayBecome(from, to)) throw new CustodyError('conflict', `corporate action ${id} is ${from}; it cannot become ${to}`);
      const save = async (next: CorporateActionRecord) => {
        await this.o.store.batch([CORPORATE_ACTIONS.putOp(next.id, next, { index: [`${token.id}\x00${next.id}`] })]);
        rec = next;
      };
      let plan = rec.plan;
      if (to === 'record_taken') {
        const block = BigInt(rec.record_block);
        const head = await this.chainOf(token).client.getBlockNumber({ cacheTime: 0 });
        if (block > head) throw new CustodyError('conflict', `the chain is at block ${head}; the record block ${block} is not reached yet`);
        plan = this.actionPlan(token, rec, block, await this.balancesAt(scope, token, block));
        if (!plan.batches.length) throw new CustodyError('conflict', `token ${tokenId} has no holder to act on at block ${block}`);
      }
      if (to === 'executing' && rec.type === 'redemption') await this.unchangedSinceRecord(token, rec.plan!);
      const transition = { from, to, at: this.iso(), by: actor.id };
      if (to !== 'completed' && !again) {
        await this.o.store.batch([
          CORPORATE_ACTIONS.putOp(rec.id, { ...rec, state: to, plan, transitions: [...rec.transitions, transition], updated_at: transition.at }, { index: [`${token.id}\x00${rec.id}`] }),
          this.o.audit.op(scope, actor, 'rwa.corporate_action.advance', rec.id, { state: from }, { state: to }),
        ]);
        rec = (await CORPORATE_ACTIONS.in(this.o.store).get(id))!;
        await log.append(scope, token.id, { kind: 'corporate_action', body: { corporate_action_id: rec.id, type: rec.type, from, to, ...(plan && to === 'record_taken' ? { supply: plan.supply, holders: plan.holders, total: plan.total, remainder: plan.remainder } : {}) } });
      }
      if (to === 'executing' || to === 'completed') {
        const done = await this.run(scope, actor, token, rec.id, rec.plan!, { corporate_action_id: rec.id, type: rec.type, asset: rec.params.asset }, (p) => save({ ...rec, plan: p, updated_at: this.iso() }));
        if (to === 'completed') {
          const pending = done.batches.filter((b) => b.state !== 'confirmed');
          if (pending.length) throw new CustodyError('conflict', `corporate action ${id} has batches not confirmed yet (operations ${pending.map((b) => b.operation_id).join(', ')}); sign them, then advance again`);
          await save({ ...rec, state: 'completed', transitions: [...rec.transitions, transition], updated_at: transition.at });
          await this.o.store.batch([this.o.audit.op(scope, actor, 'rwa.corporate_action.advance', rec.id, { state: from }, { state: to })]);
          await log.append(scope, token.id, { kind: 'corporate_action', body: { corporate_action_id: rec.id, type: rec.type, from, to, total: done.total } });
        }
      }
      return rec;
    });
  }

  /** A redemption moves whole balances: each holder's must still be its record-block units (pause the token first). */
  private async unchangedSinceRecord(token: TokenRecord, plan: Plan): Promise<void> {
    const client = this.chainOf(token).client;
    for (const b of plan.batches) {
      for (const e of b.entries) {
        const now = await client.readContract({ address: getAddress(token.address), abi: erc20Abi, functionName: 'balanceOf', args: [getAddress(e.holder)] });
        if (now !== BigInt(e.units)) throw new CustodyError('conflict', `holder ${e.holder} holds ${now}, not its ${e.units} of the record block; pause the token from the record block on, then take the record again`);
      }
    }
  }

  // ── Execution ───────────────────────────────────────────────────────────────────────────────────

  /**
   * A failed operation is final for the pipeline, not for the chain: whoever holds its owner signatures can
   * still execute its SafeTx until the Safe's nonce passes it. Its batch is proposed again only once it is dead
   * (the nonce passed it without its ExecutionSuccess); when it did execute after all, the batch is paid by it.
   */
  private async failedFate(token: TokenRecord, op: OperationRecord): Promise<{ executed?: string; dead?: boolean }> {
    const client = this.chainOf(token).client;
    const safe = getAddress(token.safe);
    const logs = await client.getLogs({ address: safe, event: EXECUTION_SUCCESS, args: { txHash: op.safe_tx_hash as Hex }, fromBlock: 0n });
    if (logs[0]) return { executed: logs[0].transactionHash };
    return { dead: (await readSafeNonce(client, safe)) > BigInt(op.safe_tx.nonce) };
  }

  /** One pass over the batches (see executeDistribution); `save` records the plan after each step. */
  private async run(scope: RwaScope, actor: Actor, token: TokenRecord, ownerId: string, plan0: Plan, about: Record<string, unknown>, save: (p: Plan) => Promise<void>): Promise<Plan> {
    const { log } = this.deps();
    const operations = this.o.tokenization.operations;
    const multiSend = infrastructureAddresses().multiSendCallOnly;
    let plan = plan0;
    const put = async (b: PayoutBatch) => {
      plan = { ...plan, batches: plan.batches.map((x) => (x.index === b.index ? b : x)) };
      await save(plan);
    };
    for (const b0 of plan0.batches) {
      let b = b0;
      if (b.state === 'proposed') {
        const { op } = await operations.get(scope, token.id, b.operation_id!);
        if (op.state === 'confirmed') {
          b = { ...b, state: 'confirmed', tx_hash: op.tx_hash };
          await put(b);
        } else if (op.state === 'failed') {
          const fate = await this.failedFate(token, op as OperationRecord);
          if (fate.executed) {
            b = { ...b, state: 'confirmed', tx_hash: fate.executed, waiting: null };
            await put(b);
          } else if (fate.dead) {
            b = { ...b, state: 'planned', attempt: b.attempt + 1, operation_id: null, waiting: null, failures: [...b.failures, { operation_id: op.id, message: op.failure?.message ?? 'failed', at: this.iso() }] };
            await put(b);
          } else {
            const waiting = `operation ${op.id} failed, but its signed Safe transaction can still execute at Safe nonce ${(op as OperationRecord).safe_tx.nonce}; execute another Safe transaction at that nonce (docs/platform/tokenization.md "Operations"), then execute again`;
            if (b.waiting !== waiting) await put({ ...b, waiting });
            continue;
          }
        } else {
          continue;
        }
      }
      if (b.state === 'planned') {
        const tx = multiSendTransaction(multiSend, b.calls.map((c) => ({ to: getAddress(c.to), data: c.data as Hex })));
        const { op } = await operations.propose(scope, actor, token.id, 'raw_safe_tx', { to: tx.to.toLowerCase(), data: tx.data, operation: 1 }, `rwa_${ownerId}_b${b.index}_a${b.attempt}`);
        this.o.fault?.('after_propose', b.index);
        b = { ...b, state: 'proposed', operation_id: op.id };
        await put(b);
        continue;
      }
      // Confirmed: each line appended once, the count recorded after each.
      for (let i = b.logged; i < b.entries.length; i++) {
        const e = b.entries[i]!;
        await log.append(scope, token.id, { kind: 'payout', body: { ...about, batch: b.index, holder: e.holder, units: e.units, amount: e.amount, operation_id: b.operation_id, tx_hash: b.tx_hash } });
        b = { ...b, logged: i + 1 };
        await put(b);
      }
    }
    return plan;
  }
}
