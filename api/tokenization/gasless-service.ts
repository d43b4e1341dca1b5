// Gasless transfers (docs/platform/tokenization.md "Gasless transfers"): a holder of a token signs an ERC-2771
// forward request for one transfer of its own tokens, and the service's relayer account sends it to the chain's
// `ERC2771Forwarder` and pays the gas. `transferRequest` builds the EIP-712 typed data to sign at the holder's
// current forwarder nonce; `relay` checks the signed request (it is this token's, a transfer of the holder's own
// tokens and nothing else, unexpired, signed by the holder over exactly these fields, at the forwarder's current
// nonce, verified by the forwarder itself, and the token would accept it), reserves its worst-case cost against
// the tenant's cap for the chain under the relayer's lock, records it with its signed transaction, broadcasts
// it, and turns the reservation into the actual cost from the receipt. A refusal records, reserves and sends
// nothing. The forwarder refuses a replayed or altered request on chain as well (its nonce and signature).
import { getAddress, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { DeliveryEngine } from '../webhooks/delivery-engine.ts';
import { bodyFingerprint } from '../idempotency.ts';
import { FieldValidationError } from '../validation.ts';
import { RELAYS, TOKENIZATION_KEYS } from './collections.ts';
import type { RelayFailure, RelayRecord, StoredForwardRequest, TokenRecord } from './records.ts';
import { relayMayBecome } from './relay-states.ts';
import type { TokenChain } from './token-chain.ts';
import type { TokenService } from './token-service.ts';
import { decodeGaslessTransfer, gaslessTransferCall, type GaslessTransfer, type GaslessTransferInput } from './gasless-calls.ts';
import { budgetAllows, periodStart, relayBudget, type RelayBudget } from './relay-budget.ts';
import { failureOf } from './chain/chain-failure.ts';
import {
  EIP712_DOMAIN_TYPES, FORWARD_REQUEST_TYPES, executeCalldata, forwardRequestHash, forwardRequestTypedData, forwardSignatureValid, forwarderVerifies,
  innerCall, readForwarderNonce, type ForwardRequest,
} from './chain/forward-request.ts';
import { executedForward, receiptCost, relayFees, signRelay, worstCaseCost, type RelayerAccount } from './chain/relayer.ts';

/** A request's deadline when none is asked for, and the furthest one accepted, in seconds from now. */
export const DEFAULT_DEADLINE_SEC = 3600;
export const MAX_DEADLINE_SEC = 86_400;
/** The gas a request may forward to the token's call. */
export const MIN_REQUEST_GAS = 21_000;
export const MAX_REQUEST_GAS = 1_000_000;
/** Over the estimate of the token's call, when the request's gas is not given. */
const GAS_MARGIN_PERCENT = 20n;

export interface GaslessServiceOptions {
  store: RecordRepository;
  audit: AuditLog;
  deliveries: DeliveryEngine;
  tokens: TokenService;
  chain: (name: string) => TokenChain | undefined;
  clock: () => number;
  /** What the relayer may spend for one tenant on one chain within `windowSec`, wei. */
  capWei: bigint;
  windowSec: number;
  /** How long POST relay waits for the receipt; past that it answers `sent` and the outcome follows by webhook. */
  receiptWaitMs: number;
  /** How often a relay still `sent` is looked up on chain. */
  pollMs: number;
  log?: { warn(obj: object, msg: string): void } | undefined;
}

export interface TransferRequestInput extends GaslessTransferInput { deadline?: number | undefined; gas?: number | undefined }

export interface RelayInput {
  request: { from: string; to: string; value: string; gas: string; nonce: string; deadline: number; data: string };
  signature: string;
}

const fail = (field: string, reason: string) => new FieldValidationError([{ field, reason }]);

export function storedRequest(r: ForwardRequest): StoredForwardRequest {
  return { from: r.from.toLowerCase(), to: r.to.toLowerCase(), value: r.value.toString(), gas: r.gas.toString(), nonce: r.nonce.toString(), deadline: r.deadline, data: r.data.toLowerCase() };
}

/** The typed data as JSON (integers of uint256 as decimal strings, the deadline a number), ready for eth_signTypedData_v4. */
export function typedDataJson(chainId: number, forwarder: string, r: ForwardRequest) {
  const t = forwardRequestTypedData(chainId, getAddress(forwarder), r);
  return {
    domain: t.domain,
    types: { EIP712Domain: EIP712_DOMAIN_TYPES.map((x) => ({ ...x })), ForwardRequest: FORWARD_REQUEST_TYPES.ForwardRequest.map((x) => ({ ...x })) },
    primaryType: t.primaryType,
    message: { from: r.from, to: r.to, value: r.value.toString(), gas: r.gas.toString(), nonce: r.nonce.toString(), deadline: r.deadline, data: r.data },
  };
}

export function relayView(r: RelayRecord) {
  return {
    id: r.id, token_id: r.token_id, chain: r.chain, chain_id: r.chain_id, forwarder: r.forwarder, relayer: r.relayer, request: r.request, signature: r.signature,
    request_hash: r.request_hash, transfer: r.transfer, state: r.state, tx_hash: r.tx_hash, gas_limit: r.gas_limit, max_fee_per_gas: r.max_fee_per_gas,
    max_priority_fee_per_gas: r.max_priority_fee_per_gas, reserved_wei: r.reserved_wei, gas_used: r.gas_used, effective_gas_price: r.effective_gas_price, cost_wei: r.cost_wei,
    block_number: r.block_number, failure: r.failure, created_at: r.created_at, updated_at: r.updated_at, confirmed_at: r.confirmed_at,
  };
}
export type RelayView = ReturnType<typeof relayView>;

export const relayIndexOf = (r: RelayRecord): string[] => [
  `${r.token_id}\x00all\x00${r.id}`,
  `spend\x00${r.tenant}\x00${r.chain}\x00${r.created_at}`,
  `request\x00${r.chain}\x00${r.forwarder}\x00${r.request.from}\x00${r.request.nonce}`,
];

/** A chain read that failed: the chain backend's error, never a refusal of the caller's input. */
async function onChain<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const f = failureOf(err);
    throw new CustodyError('chain_backend_error', `${what}: ${f.kind === 'engine' ? f.message : f.reason}`);
  }
}

export class GaslessService {
  private readonly running = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly o: GaslessServiceOptions) {}

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  /** Resolves once every relay this process follows has ended (or, after `close`, stopped following). */
  async settled(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running]);
  }

  /** Stops following relays still `sent` (a restart picks them up again) and waits for the followers to end. */
  async close(): Promise<void> {
    this.closed = true;
    await this.settled();
  }

  private relayChain(token: TokenRecord): TokenChain & { relayer: RelayerAccount } {
    const c = this.o.chain(token.chain);
    if (!c) throw new CustodyError('tokenization_unavailable', `tokenization does not run on ${token.chain} here`);
    if (!c.relayer) throw new CustodyError('gasless_unavailable', `gasless relaying is off on ${token.chain}: it needs a relayer key in API_TOKENIZATION_RELAYER_KEY_FILE (tokenizationRelayerKeyFile)`);
    return c as TokenChain & { relayer: RelayerAccount };
  }

  private deployed(token: TokenRecord): void {
    if (token.status !== 'deployed') throw new CustodyError('conflict', `token ${token.id} is ${token.status}; gasless transfers need it deployed`);
  }

  /** The deadline asked for, or the default; within (now, now + MAX_DEADLINE_SEC]. */
  private deadline(v: number | undefined, field: string): number {
    const now = Math.floor(this.o.clock() / 1000);
    const d = v ?? now + DEFAULT_DEADLINE_SEC;
    if (!Number.isSafeInteger(d) || d <= now) throw fail(field, `expired or not in the future (now ${now}, unix seconds)`);
    if (d > now + MAX_DEADLINE_SEC) throw fail(field, `at most ${MAX_DEADLINE_SEC} seconds from now (${now + MAX_DEADLINE_SEC})`);
    return d;
  }

  private static gas(v: bigint, field: string): bigint {
    if (v < BigInt(MIN_REQUEST_GAS) || v > BigInt(MAX_REQUEST_GAS)) throw fail(field, `between ${MIN_REQUEST_GAS} and ${MAX_REQUEST_GAS}`);
    return v;
  }

  /** The token's call as the forwarder would make it, run now: the token's own refusal, decoded, or nothing. */
  private async wouldRefuse(client: PublicClient, forwarder: Address, r: ForwardRequest): Promise<string | undefined> {
    try {
      await client.call(innerCall(forwarder, r));
      return undefined;
    } catch (err) {
      const f = failureOf(err);
      if (f.kind === 'engine') throw new CustodyError('chain_backend_error', `simulating the transfer: ${f.message}`);
      return f.reason;
    }
  }

  /** POST .../gasless/transfer-request: the EIP-712 forward request the holder signs, at its forwarder nonce now. */
  async transferRequest(scope: Scope, tokenId: string, input: TransferRequestInput) {
    const token = await this.o.tokens.get(scope, tokenId);
    const { data, transfer } = gaslessTransferCall(token.kind, input);
    const deadline = this.deadline(input.deadline, 'deadline');
    if (input.gas !== undefined) GaslessService.gas(BigInt(input.gas), 'gas');
    const chain = this.relayChain(token);
    this.deployed(token);
    const forwarder = getAddress(token.forwarder);
    const from = getAddress(transfer.from);
    const nonce = await onChain('reading the holder\'s forwarder nonce', () => readForwarderNonce(chain.client, forwarder, from));
    let gas: bigint;
    if (input.gas !== undefined) gas = BigInt(input.gas);
    else {
      const probe: ForwardRequest = { from, to: getAddress(token.address), value: 0n, gas: BigInt(MAX_REQUEST_GAS), nonce, deadline, data };
      const refused = await this.wouldRefuse(chain.client, forwarder, probe);
      if (refused) throw new CustodyError('gasless_would_revert', `the token would refuse this transfer now: ${refused}`);
      const estimate = await onChain('estimating the transfer\'s gas', () => chain.client.estimateGas({ ...innerCall(forwarder, probe), gas: undefined }));
      gas = (((estimate * (100n + GAS_MARGIN_PERCENT)) / 100n + 999n) / 1000n) * 1000n;
      if (gas > BigInt(MAX_REQUEST_GAS)) throw new CustodyError('gasless_would_revert', `the transfer needs about ${estimate} gas, over the ${MAX_REQUEST_GAS} a relayed request may forward`);
      if (gas < BigInt(MIN_REQUEST_GAS)) gas = BigInt(MIN_REQUEST_GAS);
    }
    const request: ForwardRequest = { from, to: getAddress(token.address), value: 0n, gas, nonce, deadline, data };
    return {
      token_id: token.id, chain: token.chain, chain_id: token.chain_id, forwarder: token.forwarder, relayer: chain.relayer.address.toLowerCase(), transfer,
      typed_data: typedDataJson(token.chain_id, token.forwarder, request), hash: forwardRequestHash(token.chain_id, forwarder, request), deadline_at: this.iso(deadline * 1000),
    };
  }

  /** The request as posted, checked against the token without the chain: 422 naming the field. */
  private parseRequest(token: TokenRecord, input: RelayInput): { request: ForwardRequest; transfer: GaslessTransfer } {
    const q = input.request;
    const errors: { field: string; reason: string }[] = [];
    if (q.to.toLowerCase() !== token.address) errors.push({ field: 'request.to', reason: `must be this token (${token.address}): the relayer pays only for this token's transfers` });
    if (q.value !== '0') errors.push({ field: 'request.value', reason: 'must be 0: the relayer sends no native coin' });
    if (errors.length) throw new FieldValidationError(errors);
    const transfer = decodeGaslessTransfer(token.kind, q.data as Hex, q.from, 'request.data');
    const gas = GaslessService.gas(BigInt(q.gas), 'request.gas');
    const deadline = this.deadline(q.deadline, 'request.deadline');
    const request: ForwardRequest = { from: getAddress(q.from), to: getAddress(q.to), value: 0n, gas, nonce: BigInt(q.nonce), deadline, data: q.data.toLowerCase() as Hex };
    return { request, transfer };
  }

  private lock<T>(chain: string, fn: () => Promise<T>): Promise<T> {
    return this.o.store.exclusive(`tokenization:relayer:${chain}`, fn);
  }

  /** A relay of this (forwarder, holder, nonce) that is sent or confirmed: the request was relayed already. */
  private async relayedBefore(chain: string, forwarder: string, r: ForwardRequest): Promise<RelayRecord | undefined> {
    const rows = await RELAYS.in(this.o.store).byIndex(`request\x00${chain}\x00${forwarder}\x00${r.from.toLowerCase()}\x00${r.nonce}\x00`);
    return rows.find((x) => x.state !== 'failed');
  }

  /** What the tenant's relays on `chain` count against the cap in the rolling period ending now. */
  async budget(tenant: string, chain: string): Promise<RelayBudget> {
    const prefix = `spend\x00${tenant}\x00${chain}\x00`;
    const rows: RelayRecord[] = [];
    let after: string | undefined = periodStart(this.o.clock(), this.o.windowSec);
    for (;;) {
      const page = await RELAYS.in(this.o.store).byIndexEntries(prefix, after, 500);
      for (const e of page) if (e.value) rows.push(e.value);
      if (page.length < 500) break;
      after = page[page.length - 1]!.position;
    }
    return relayBudget(rows, this.o.capWei);
  }

  /** POST .../gasless/relay: checks the signed request, reserves its worst cost, sends it, answers the relay. */
  async relay(scope: Scope, actor: Actor, tokenId: string, input: RelayInput, key: string): Promise<RelayRecord> {
    const keyId = `${scope.workspace}\x00relay_${tokenId}\x00${key}`;
    const fingerprint = bodyFingerprint(input);
    const prior = await TOKENIZATION_KEYS.in(this.o.store).get(keyId);
    if (prior) {
      if (prior.fingerprint !== fingerprint) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
      return (await RELAYS.in(this.o.store).get(prior.id))!;
    }
    const token = await this.o.tokens.get(scope, tokenId);
    const { request, transfer } = this.parseRequest(token, input);
    const chain = this.relayChain(token);
    this.deployed(token);
    const forwarder = getAddress(token.forwarder);
    const signature = input.signature.toLowerCase() as Hex;
    if (!(await forwardSignatureValid(token.chain_id, forwarder, request, signature))) {
      throw new CustodyError('forward_signature_invalid', `the signature does not recover to request.from ${transfer.from} over this request (EIP-712 ForwardRequest in the ${token.chain} forwarder's domain): it was signed over other values, or by another key`);
    }
    const current = await onChain('reading the holder\'s forwarder nonce', () => readForwarderNonce(chain.client, forwarder, request.from));
    if (request.nonce < current) throw new CustodyError('forward_request_used', `nonce ${request.nonce} of ${transfer.from} was used at the forwarder (its next is ${current}): this request was relayed already`);
    if (request.nonce > current) throw fail('request.nonce', `the forwarder's next nonce for ${transfer.from} is ${current}; build the request again with transfer-request`);
    if (await this.relayedBefore(token.chain, token.forwarder, request)) throw new CustodyError('forward_request_used', `nonce ${request.nonce} of ${transfer.from} is already being relayed`);
    if (!(await onChain('the forwarder\'s verify', () => forwarderVerifies(chain.client, forwarder, request, signature)))) {
      throw new CustodyError('forward_signature_invalid', 'the forwarder\'s verify(request) is false on chain: the signature is not one it accepts for this request, or the deadline passed on chain');
    }
    const refused = await this.wouldRefuse(chain.client, forwarder, request);
    if (refused) throw new CustodyError('gasless_would_revert', `the token would refuse this transfer: ${refused}`);
    const calldata = executeCalldata(request, signature);
    try {
      await chain.client.call({ account: chain.relayer.address, to: forwarder, data: calldata });
    } catch (err) {
      const f = failureOf(err);
      if (f.kind === 'engine') throw new CustodyError('chain_backend_error', `simulating execute: ${f.message}`);
      throw new CustodyError('gasless_would_revert', `the forwarder would refuse the request: ${f.reason}`);
    }
    const fees = await onChain('estimating the relay\'s gas and fees', () => relayFees(chain.client, chain.relayer.address, forwarder, calldata));
    const worst = worstCaseCost(fees);

    const { record, fresh } = await this.lock(token.chain, async (): Promise<{ record: RelayRecord; fresh: boolean }> => {
      const again = await TOKENIZATION_KEYS.in(this.o.store).get(keyId);
      if (again) return { record: (await RELAYS.in(this.o.store).get(again.id))!, fresh: false };
      if (await this.relayedBefore(token.chain, token.forwarder, request)) throw new CustodyError('forward_request_used', `nonce ${request.nonce} of ${transfer.from} is already being relayed`);
      const budget = await this.budget(scope.tenant, token.chain);
      if (!budgetAllows(budget, worst)) {
        throw new CustodyError('relay_budget_exceeded', `this relay may cost up to ${worst} wei on ${token.chain}; ${budget.remaining} wei of the tenant's ${budget.cap} wei cap remain for the last ${this.o.windowSec} seconds (${budget.used} wei spent or reserved); nothing was sent`);
      }
      const balance = await onChain('reading the relayer\'s balance', () => chain.client.getBalance({ address: chain.relayer.address }));
      if (balance < worst) throw new CustodyError('tokenization_unavailable', `the relayer cannot pay for this relay on ${token.chain} now; nothing was sent`);
      const nonce = await onChain('reading the relayer\'s nonce', () => chain.client.getTransactionCount({ address: chain.relayer.address, blockTag: 'pending' }));
      const signed = await signRelay(chain.relayer, token.chain_id, forwarder, calldata, fees, nonce);
      const now = this.iso();
      const r: RelayRecord = {
        v: 1, id: newId('rly', this.o.clock()), token_id: token.id, tenant: token.tenant, workspace: token.workspace, chain: token.chain, chain_id: token.chain_id,
        forwarder: token.forwarder, relayer: chain.relayer.address.toLowerCase(), request: storedRequest(request), signature, request_hash: forwardRequestHash(token.chain_id, forwarder, request),
        transfer, state: 'sent', tx_hash: signed.hash, raw_tx: signed.raw, relayer_nonce: nonce, gas_limit: fees.gasLimit.toString(), max_fee_per_gas: fees.maxFeePerGas.toString(),
        max_priority_fee_per_gas: fees.maxPriorityFeePerGas.toString(), reserved_wei: worst.toString(), gas_used: null, effective_gas_price: null, cost_wei: null, block_number: null,
        failure: null, created_at: now, updated_at: now, confirmed_at: null,
      };
      // Recorded (and reserved) before it is broadcast: a crash after sending leaves a record to follow, never an unmetered spend.
      await this.o.store.batch([
        RELAYS.putOp(r.id, r, { index: relayIndexOf(r) }),
        TOKENIZATION_KEYS.putOp(keyId, { v: 1, id: r.id, fingerprint }),
        this.o.audit.op(scope, actor, 'tokenization.gasless.relay', r.id, null, { token_id: token.id, from: r.request.from, nonce: r.request.nonce, tx_hash: r.tx_hash, reserved_wei: r.reserved_wei }),
      ]);
      try {
        await chain.client.sendRawTransaction({ serializedTransaction: signed.raw });
      } catch (err) {
        // Not sent when the node does not know it: the relayer's nonce stays free and nothing is spent.
        const known = await chain.client.getTransaction({ hash: signed.hash }).then(() => true, () => false);
        if (!known) {
          const f = failureOf(err);
          const failure: RelayFailure = { reason: 'engine', message: `broadcasting the relay: ${f.kind === 'engine' ? f.message : f.reason}`, error_name: null, at: this.iso() };
          return { record: await this.finish(r.id, { failure }), fresh: false };
        }
      }
      return { record: r, fresh: true };
    });
    if (!fresh) return record;
    try {
      const receipt = await chain.client.waitForTransactionReceipt({ hash: record.tx_hash as Hex, timeout: this.o.receiptWaitMs, pollingInterval: this.o.pollMs });
      return await this.finish(record.id, { receipt });
    } catch {
      this.follow(record.id);
      return (await RELAYS.in(this.o.store).get(record.id))!;
    }
  }

  /**
   * Ends a `sent` relay from its receipt (confirmed, or failed with its gas spent) or as never sent (failed,
   * cost 0), emitting its event in the same batch; a relay already ended is answered as it is.
   */
  private async finish(id: string, outcome: { receipt: TransactionReceipt } | { failure: RelayFailure }): Promise<RelayRecord> {
    return this.o.store.exclusive(`tokenization:relay:${id}`, async () => {
      const r = (await RELAYS.in(this.o.store).get(id))!;
      const now = this.iso();
      let next: RelayRecord;
      if ('failure' in outcome) {
        next = { ...r, state: 'failed', failure: outcome.failure, cost_wei: '0', updated_at: now };
      } else {
        const { receipt } = outcome;
        const cost = receiptCost(receipt);
        const paid = { gas_used: cost.gasUsed.toString(), effective_gas_price: cost.effectiveGasPrice.toString(), cost_wei: cost.cost.toString(), block_number: receipt.blockNumber.toString(), updated_at: now };
        const ok = receipt.status === 'success' && executedForward(receipt, getAddress(r.forwarder), getAddress(r.request.from), BigInt(r.request.nonce));
        next = ok
          ? { ...r, ...paid, state: 'confirmed', confirmed_at: now }
          : { ...r, ...paid, state: 'failed', failure: { reason: 'revert', ...(await this.explain(r, receipt.blockNumber)), at: now } };
      }
      if (!relayMayBecome(r.state, next.state)) return r;
      const scope = { tenant: r.tenant, workspace: r.workspace };
      const resource = { type: 'token_relay', id: r.id };
      const actor = { type: 'system' as const, id: 'tokenization' };
      await this.o.deliveries.emitAll(scope, [next.state === 'confirmed'
        ? { type: 'tokenization.operation.confirmed', resource, actor, data: { token_id: r.token_id, operation_id: r.id, kind: 'gasless_transfer', tx_hash: r.tx_hash } }
        : { type: 'tokenization.operation.failed', resource, actor, data: { token_id: r.token_id, operation_id: r.id, kind: 'gasless_transfer', reason: next.failure!.reason === 'revert' ? 'onchain_revert' : 'engine_error', error: next.failure!.message } }],
      [RELAYS.putOp(r.id, next, { index: relayIndexOf(next) })]);
      return next;
    });
  }

  /** Why an execution reverted: the token's call and then `execute` replayed on the state before its block. */
  private async explain(r: RelayRecord, block: bigint): Promise<{ message: string; error_name: string | null }> {
    const chain = this.o.chain(r.chain);
    const request: ForwardRequest = { from: getAddress(r.request.from), to: getAddress(r.request.to), value: 0n, gas: BigInt(r.request.gas), nonce: BigInt(r.request.nonce), deadline: r.request.deadline, data: r.request.data as Hex };
    const calls = [innerCall(getAddress(r.forwarder), request), { account: getAddress(r.relayer), to: getAddress(r.forwarder), data: executeCalldata(request, r.signature as Hex) }];
    for (const c of calls) {
      try {
        await chain?.client.call({ ...c, blockNumber: block - 1n });
      } catch (err) {
        const f = failureOf(err);
        if (f.kind === 'reverted') return { message: `the execution reverted: ${f.reason}`, error_name: f.errorName };
      }
    }
    return { message: 'the execution reverted on chain', error_name: null };
  }

  /** Follows a relay still `sent` until its receipt, in the background: broadcasting its signed bytes again while the node does not know them. */
  private follow(id: string): void {
    const p = this.followLoop(id).catch((err: unknown) => this.o.log?.warn({ category: (err as { code?: string }).code ?? 'error', relay: id }, 'following a gasless relay failed'));
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
  }

  private async followLoop(id: string): Promise<void> {
    while (!this.closed) {
      const r = (await RELAYS.in(this.o.store).get(id))!;
      if (r.state !== 'sent') return;
      const chain = this.o.chain(r.chain);
      if (chain) {
        const hash = r.tx_hash as Hex;
        const receipt = await chain.client.getTransactionReceipt({ hash }).catch(() => undefined);
        if (receipt) {
          await this.finish(id, { receipt });
          return;
        }
        const known = await chain.client.getTransaction({ hash }).then(() => true, () => false);
        if (!known) {
          const used = await chain.client.getTransactionCount({ address: getAddress(r.relayer), blockTag: 'latest' }).catch(() => undefined);
          if (used !== undefined && used > r.relayer_nonce && !(await chain.client.getTransactionReceipt({ hash }).catch(() => undefined))) {
            await this.finish(id, { failure: { reason: 'engine', message: `the relayer's nonce ${r.relayer_nonce} was used by another transaction; this relay never went out`, error_name: null, at: this.iso() } });
            return;
          }
          await chain.client.sendRawTransaction({ serializedTransaction: r.raw_tx as Hex }).catch(() => undefined);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, this.o.pollMs));
    }
  }

  /** At start: follows every relay a stopped process left `sent`. */
  async resumeAll(): Promise<void> {
    for await (const r of this.o.store.all<RelayRecord>(RELAYS.name)) if (r.state === 'sent') this.follow(r.id);
  }
}
