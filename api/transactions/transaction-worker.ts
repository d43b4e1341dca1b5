// Moves transactions through their lifecycle from durable jobs (docs/transactions.md):
// created -> checks -> signed -> broadcast -> confirmed -> final, or failed / rejected with a reason.
// The jobs are on the durable queue (api/jobs, kind `transaction_progress`), leased by one API instance at
// a time; a crashed instance's jobs go to another once their leases lapse. Each step's result is stored
// (with its outbox event) before the next step starts, so a job run again resumes where it stopped: a
// signed transaction is broadcast again (the same bytes), never signed twice into two different
// transactions. A wallet's steps from nonce or UTXO choice to broadcast run one at a time, on every
// instance (the sign job's ordering key), so concurrent submissions never share a nonce or an output. The nonce or the inputs are stored with the
// transaction before the first signing request and kept by every retry: a node signs an intent for one
// EVM nonce or one Bitcoin input set only. A state change that moves money writes the wallet ledger's
// entries in its own batch (api/wallets/wallet-ledger.ts).
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { keccak256, recoverAddress, toHex as viemHex, type Hex } from 'viem';
import type { Logger } from '../../common/logger.ts';
import type { CoordinatorClient } from '../coordinator/coordinator-client.ts';
import { CoordinatorShards } from '../coordinator/coordinator-shards.ts';
import { Scheme } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { decodeIntent, type BtcTransferIntent, type EvmTransferIntent, type SafeTxIntent } from '../../core/intents/intent.ts';
import { safeTxHash } from '../../core/chains/evm/safe-tx.ts';
import { evmSignedTransaction, evmSigningDigest, evmTransaction, EvmTemplateError, type EvmTemplate } from '../../core/chains/evm/evm-transaction.ts';
import type { EvmChain } from '../chains/evm/evm-chain.ts';
import { ChainError } from '../chains/chain-error.ts';
import type { BitcoinChain } from '../chains/bitcoin/bitcoin-chain.ts';
import type { Utxo } from '../chains/bitcoin/esplora-client.ts';
import { buildSpend, finalizeP2wpkh, finalizeTaproot, SignatureCheckError, SpendError } from '../chains/bitcoin/build-spend.ts';
import { intentOutpoints, notIntentSpend, spendFee, spentOutpoints } from '../chains/bitcoin/intent-spend.ts';
import { BITCOIN_NETWORK_PARAMS } from '../../core/chains/bitcoin/network-params.ts';
import type { VaultService } from '../vaults/vault-service.ts';
import type { WalletRecord } from '../vaults/records.ts';
import { expiryJob, followJob, signJob, TRANSACTION_PROGRESS, type TransactionService } from './transaction-service.ts';
import type { JobQueue, LeasedJob } from '../jobs/job-queue.ts';
import { JobRunner } from '../jobs/job-runner.ts';
import { jobQueueFor, workerId } from '../jobs/queue-for-store.ts';
import { memberActionOfJob, type TransactionJob, type TransactionRecord, type TransactionState } from './records.ts';
import type { Op } from '../store/record-store.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { WALLETS } from '../vaults/collections.ts';
import { TRANSACTIONS, TX_JOBS } from './collections.ts';
import { context, trace } from '@opentelemetry/api';
import { ATTR, contextOfTraceparent, endWithOutcome, tracer } from '../../common/tracing/spans.ts';

/** How often an EVM transaction waiting for a lower nonce of its wallet looks at the chain again. */
const NONCE_GAP_POLL_MS = 300;

export interface Chains {
  evm(chain: string): EvmChain | undefined;
  bitcoin(chain: string): BitcoinChain | undefined;
}

export interface TransactionWorkerOptions {
  vaults: VaultService;
  transactions: TransactionService;
  /** The coordinator shards; each signing goes to its vault's. One client stands for a single shard. */
  coordinator: CoordinatorShards | CoordinatorClient | undefined;
  chains: Chains;
  log: Logger;
  /** The organization's trust log entries the nodes verify (docs/trust.md). */
  trustLog?: (org: string) => Promise<Uint8Array[]>;
  /** Between claims that found nothing; a submission on this instance wakes the runner at once. */
  pollMs?: number;
  /**
   * A cap on the attempts of a signing that finds the cluster unavailable; without one (the default) it is
   * retried until the intent's not_after, after which no node would sign it anyway.
   */
  maxSigningAttempts?: number;
  /** The durable queue the steps run from (default: the one of the vault store, api/jobs/queue-for-store.ts). */
  queue?: JobQueue;
  /** Names this process in job leases (default: host, pid and a random suffix). */
  workerId?: string;
  /** Transactions stepped at once by this process; default 16. */
  concurrency?: number;
  /** An organization's key jobs and transaction signings running at once over every instance (API_JOBS_PER_ORGANIZATION); no limit when absent. */
  perOrganization?: number;
  /** Lease on a transaction's job, renewed every third of it while a step runs; default 15 s (how long a crashed instance's jobs wait). */
  leaseMs?: number;
  /** How long `stop` waits for steps under way before giving their jobs back; default 10 s. */
  stopGraceMs?: number;
  /** The longest wait between a failed step's attempts (they back off from 0.5 s); default 10 s: a transfer waiting out an outage is signed at most 10 s after the part is back. */
  maxRetryDelayMs?: number;
  /** How long a broadcast transaction without a receipt waits before the worker asks whether it was dropped; default 30 s. */
  dropCheckAfterMs?: number;
}

/** A step's outcome: a new state (with record changes), a wait (poll again later), or a retry after an error. */
type Step = { to: TransactionState; patch?: Partial<TransactionRecord>; extra?: Op[] } | { wait: number };

const EVENTS: Partial<Record<TransactionState, string>> = {
  checks: 'transaction.checks', signed: 'transaction.signed', broadcast: 'transaction.broadcast', confirmed: 'transaction.confirmed',
  final: 'transaction.final', failed: 'transaction.failed', rejected: 'transaction.rejected',
};

/** What a transaction's job works through: `sign` up to broadcast (under the wallet's ordering key), `follow` after. */
interface ProgressPayload {
  /** `expire`: a transaction awaiting approvals ends at its intent's not_after unless approved. */
  phase: 'sign' | 'follow' | 'expire';
}

const SIGN_STATES: readonly TransactionState[] = ['created', 'checks', 'signed'];
const ENDED: readonly TransactionState[] = ['final', 'failed', 'rejected'];

/** Whether a transaction has nothing left to do: a final state, or a Safe owner signature once signed (it is returned, not broadcast). */
export const transactionEnded = (tx: Pick<TransactionRecord, 'state' | 'kind'>): boolean => ENDED.includes(tx.state) || (tx.kind === 'safe_tx' && tx.state === 'signed');

export class TransactionWorker {
  private readonly queue: JobQueue;
  private readonly runner: JobRunner;

  private readonly coordinators: CoordinatorShards | undefined;

  constructor(private readonly o: TransactionWorkerOptions) {
    this.coordinators = CoordinatorShards.of(o.coordinator);
    this.queue = o.queue ?? jobQueueFor(o.vaults.store);
    this.runner = new JobRunner(this.queue, {
      workerId: o.workerId ?? workerId('transactions'), concurrency: o.concurrency ?? 16, pollMs: o.pollMs ?? 1000, leaseMs: o.leaseMs ?? 15_000,
      ...(o.perOrganization === undefined ? {} : { perGroup: o.perOrganization }),
      logger: o.log, kinds: { [TRANSACTION_PROGRESS]: { handler: (job) => this.run(job as LeasedJob<ProgressPayload>), maxAttempts: 1000 } },
    });
    o.transactions.onJob(() => this.runner.poke());
    // POST /v1/transactions/prepare counts a wallet's nonces from the chain's next one.
    o.transactions.useNonceSource(async (chain, address) => {
      const c = o.chains.evm(chain);
      if (!c) throw new ChainError('chain_unavailable', `no backend for ${chain}`, true);
      return c.pendingNonce(address as Hex);
    });
  }

  /** Takes over transactions whose progress was kept before it ran on the job queue, then starts the runner. */
  start(): void {
    void this.adopt()
      .catch((err: unknown) => this.o.log.error({ err: (err as Error).message }, 'transaction jobs could not be adopted'))
      .finally(() => this.runner.start());
  }

  /** Finishes the steps under way (their leases are given back after the grace period). */
  async stop(): Promise<void> {
    await this.runner.stop(this.o.stopGraceMs ?? 10_000);
  }

  /**
   * A job for every transaction in progress: one its dedupe key names already is not enqueued again, so
   * this is a no-op for transactions created since, and safe for several instances starting together.
   */
  private async adopt(): Promise<void> {
    const store = this.o.vaults.store;
    for await (const job of TX_JOBS.in(store).all()) {
      const tx = await TRANSACTIONS.in(store).get(job.id);
      if (!tx || transactionEnded(tx)) continue;
      if (tx.state === 'awaiting_approval') await store.batch([expiryJob(tx, Number(decodeIntent(hexToBytes(tx.intent)).notAfter))]);
      else await store.batch([SIGN_STATES.includes(tx.state) ? signJob(tx) : followJob(tx)]);
    }
  }

  /**
   * One job: steps of its transaction until it waits (the job is deferred to the time the step asked for),
   * leaves its phase (the sign phase's last batch enqueues the follow job), or ends. Steps are idempotent
   * over the stored records, so a job run again after a crash resumes where the last stored step left.
   */
  private async run(leased: LeasedJob<ProgressPayload>): Promise<void | { runAt: number }> {
    // The sign phase continues the trace of the request that submitted the transaction, when it had one.
    const traceparent = leased.payload.phase === 'sign' ? (await TX_JOBS.in(this.o.vaults.store).get(leased.key))?.traceparent : undefined;
    if (!traceparent) return this.steps(leased);
    const span = tracer().startSpan('transaction sign', { attributes: { [ATTR.transactionId]: leased.key } }, contextOfTraceparent(traceparent));
    try {
      const out = await context.with(trace.setSpan(context.active(), span), () => this.steps(leased));
      const tx = await TRANSACTIONS.in(this.o.vaults.store).get(leased.key);
      endWithOutcome(span, !tx || tx.state === 'failed' || tx.state === 'rejected' ? 'failed' : 'ok', tx?.state === 'rejected' || tx?.state === 'failed' ? tx.state : undefined);
      return out;
    } catch (err) {
      endWithOutcome(span, 'failed', 'internal');
      throw err;
    }
  }

  /** The steps of one job run (run() puts them in the submitting request's trace). */
  private async steps(leased: LeasedJob<ProgressPayload>): Promise<void | { runAt: number }> {
    const store = this.o.vaults.store;
    const id = leased.key;
    let job = (await TX_JOBS.in(store).get(id)) ?? { id, attempts: 0, next_at: 0 };
    for (;;) {
      const tx = await TRANSACTIONS.in(store).get(id);
      if (!tx || transactionEnded(tx)) {
        if (await TX_JOBS.in(store).get(id)) await store.batch([TX_JOBS.delOp(id)]);
        return;
      }
      if (leased.payload.phase === 'expire') {
        // Approved meanwhile (its sign job runs it), or still waiting past the intent's not_after: no node signs it now.
        if (tx.state !== 'awaiting_approval') return;
        if (!this.signingOver(tx, 0)) return { runAt: (Number(decodeIntent(hexToBytes(tx.intent)).notAfter) + 1) * 1000 };
        const quorums = tx.policy?.quorums ?? [];
        const missing = quorums.reduce((n, q) => n + Math.max(0, q.k - q.approved_by.length), 0);
        job = await this.transition(id, await this.withNonceRelease(id, { to: 'failed', patch: { reason: `approval_expired: the intent's not_after passed with ${missing} approval(s) still missing` } }));
        return;
      }
      if (leased.payload.phase === 'sign' && !SIGN_STATES.includes(tx.state)) {
        // Stored past broadcast by an earlier run of this job: its follow job went in the same batch.
        await store.batch([followJob(tx)]);
        return;
      }
      let step: Step;
      try {
        step = await this.step(tx, job);
      } catch (err) {
        // The step may have stored progress (a signed transaction) before it failed: judge from that.
        const now = (await TRANSACTIONS.in(store).get(id)) ?? tx;
        job = (await TX_JOBS.in(store).get(id)) ?? job;
        const attempts = job.attempts + 1;
        const message = (err as Error).message.split('\n')[0]!.slice(0, 300);
        if (err instanceof ChainError && err.permanent) {
          step = { to: 'failed', patch: { reason: `${err.code}: ${err.message}`.slice(0, 500) } };
        } else if ((now.state === 'created' || now.state === 'checks') && this.signingOver(now, attempts)) {
          // An outage costs latency up to the intent's expiry; after it no node signs the intent.
          step = { to: 'failed', patch: { reason: `signing_unavailable: ${message}${this.o.maxSigningAttempts === undefined ? '; the intent expired (not_after) while waiting' : ''}`.slice(0, 500) } };
        } else {
          const delay = Math.min(this.o.maxRetryDelayMs ?? 10_000, 250 * 2 ** Math.min(attempts, 7));
          this.o.log.warn({ transaction: tx.id, state: now.state, attempts, err: message }, 'transaction step failed; will retry');
          job = { ...job, attempts, next_at: Date.now() + delay, last_error: message };
          await store.batch([TX_JOBS.putOp(id, job)]);
          return { runAt: job.next_at };
        }
      }
      if ('wait' in step) {
        job = { ...job, next_at: Date.now() + step.wait };
        await store.batch([TX_JOBS.putOp(id, job)]);
        return { runAt: job.next_at };
      }
      if (step.to === 'failed' || step.to === 'rejected' || step.to === 'final') step = await this.withNonceRelease(tx.id, step);
      job = await this.transition(id, step);
    }
  }

  /** Whether a transaction not yet signed stops retrying: past its intent's not_after, or the attempts cap. */
  private signingOver(tx: TransactionRecord, attempts: number): boolean {
    if (this.o.maxSigningAttempts !== undefined && attempts >= this.o.maxSigningAttempts) return true;
    return BigInt(Math.floor(Date.now() / 1000)) > decodeIntent(hexToBytes(tx.intent)).notAfter;
  }

  /**
   * An EVM transaction that ends lets go of its nonce's hold. One that ends before the network accepted it
   * (created, checks or signed) releases the nonce: the wallet's next prepare gives it out again, and the
   * reason says so, since the wallet's later transactions wait for that nonce to be used.
   */
  private async withNonceRelease(id: string, step: Exclude<Step, { wait: number }>): Promise<Exclude<Step, { wait: number }>> {
    const store = this.o.vaults.store;
    const tx = await TRANSACTIONS.in(store).get(id);
    if (!tx || tx.family !== 'evm' || tx.nonce === undefined) return step;
    const wallet = await WALLETS.in(store).get(tx.wallet_id);
    if (!wallet) return step;
    const release = await this.o.transactions.nonces.releaseOps(tx.chain, wallet.address, tx.nonce, tx.id);
    // Unsent, and not because the chain used the nonce already: it is free for another transaction.
    const unsent = (tx.state === 'awaiting_approval' || tx.state === 'created' || tx.state === 'checks' || tx.state === 'signed') && !step.patch?.reason?.startsWith('nonce_used');
    const reason = unsent && step.to !== 'final' && step.patch?.reason
      ? `${step.patch.reason}; nonce ${tx.nonce} is released: the wallet's later transactions wait until a new one uses it (the next prepare gives it out)`.slice(0, 700)
      : step.patch?.reason;
    return { ...step, patch: { ...step.patch, ...(reason === undefined ? {} : { reason }) }, extra: [...(step.extra ?? []), ...release] };
  }

  /** Stores a step's outcome over the freshest record and job (a step may have stored one before). */
  private async transition(id: string, step: Exclude<Step, { wait: number }>): Promise<TransactionJob> {
    const store = this.o.vaults.store;
    const tx = (await TRANSACTIONS.in(store).get(id))!;
    const job = (await TX_JOBS.in(store).get(id)) ?? { id, attempts: 0, next_at: 0 };
    const next: TransactionRecord = { ...tx, ...step.patch, state: step.to, updated_at: new Date().toISOString() };
    // The end-user token authorized one signature: it goes once the signature exists.
    const { end_user_token: _token, member_action: _binding, ...rest } = job;
    const signatureExists = step.to === 'signed' || (SIGN_STATES.includes(tx.state) && !SIGN_STATES.includes(step.to));
    const nextJob: TransactionJob = signatureExists || step.to === 'failed' || step.to === 'rejected' ? { ...rest, attempts: 0 } : { ...job, attempts: 0 };
    const ops: Op[] = [this.o.transactions.txOp(next, tx), ...(step.extra ?? [])];
    const type = EVENTS[step.to];
    if (type) {
      ops.push(this.o.vaults.event(tx.org, type, 'transaction', tx.id, {
        transaction_id: tx.id, vault_id: tx.vault_id, state: step.to, ...(next.tx_hash ? { tx_hash: next.tx_hash } : {}), ...(next.reason ? { reason: next.reason } : {}),
        ...(next.confirmations !== undefined && (step.to === 'confirmed' || step.to === 'final') ? { confirmations: next.confirmations } : {}),
      }));
    }
    ops.push(TX_JOBS.putOp(job.id, nextJob));
    // Leaving the sign phase: the follow job goes with the state that needs it, due at once (the sign
    // job's end frees a slot, and the runner claims again then).
    if (SIGN_STATES.includes(tx.state) && !SIGN_STATES.includes(step.to) && !ENDED.includes(step.to)) ops.push(followJob(tx));
    // The wallet ledger's entries for this change, if it moves money, go in the same batch.
    await this.o.transactions.ledger.commit(tx, next, ops);
    if (step.to === 'failed' || step.to === 'rejected') this.o.log.warn({ transaction: tx.id, state: step.to, reason: next.reason }, 'transaction ended unsuccessfully');
    else this.o.log.info({ transaction: tx.id, state: step.to }, 'transaction advanced');
    return nextJob;
  }

  private async step(tx: TransactionRecord, job: TransactionJob): Promise<Step> {
    switch (tx.state) {
      case 'created':
        return { to: 'checks' };
      case 'checks':
      case 'signed': {
        const wallet = await WALLETS.in(this.o.vaults.store).get(tx.wallet_id);
        if (!wallet) return { to: 'rejected', patch: { reason: 'wallet_missing' } };
        // A Safe owner signature ends at `signed`: the signature is the result, nothing is broadcast.
        if (tx.kind === 'safe_tx') return this.safeTxSign(tx, job, wallet);
        // The signed transaction is stored before it is sent, so a job run again sends the same bytes.
        let current = (await TRANSACTIONS.in(this.o.vaults.store).get(tx.id))!;
        if (current.state === 'checks') {
          const signed = tx.family === 'evm' ? await this.evmSign(current, job, wallet) : await this.btcSign(current, job, wallet);
          if ('wait' in signed || signed.to !== 'signed') return signed;
          await this.transition(tx.id, signed);
          current = (await TRANSACTIONS.in(this.o.vaults.store).get(tx.id))!;
        }
        if (tx.family === 'evm') await this.evmBroadcast(current);
        else {
          const chain = this.btcChain(current);
          try {
            await chain.broadcast(current.raw_tx!, current.tx_hash!);
          } catch (err) {
            // Refused because its inputs are spent: by this very transaction, or another signing of the intent.
            const own = err instanceof ChainError && err.code === 'broadcast_rejected' ? await this.btcSpentByIntent(current, chain, decodeIntent(hexToBytes(current.intent)) as BtcTransferIntent) : undefined;
            if (own) return own;
            throw err;
          }
        }
        return { to: 'broadcast' };
      }
      case 'broadcast':
      case 'confirmed':
        return tx.family === 'evm' ? this.evmFollow(tx) : this.btcFollow(tx);
      default:
        return { wait: 60_000 };
    }
  }

  private evmChain(tx: TransactionRecord): EvmChain {
    const c = this.o.chains.evm(tx.chain);
    if (!c) throw new ChainError('chain_unavailable', `no backend for ${tx.chain}`, true);
    return c;
  }

  private btcChain(tx: TransactionRecord): BitcoinChain {
    const c = this.o.chains.bitcoin(tx.chain);
    if (!c) throw new ChainError('chain_unavailable', `no backend for ${tx.chain}`, true);
    return c;
  }

  private async evmBroadcast(tx: TransactionRecord): Promise<void> {
    // A permanent refusal fails the transaction, which releases its nonce (withNonceRelease).
    await this.evmChain(tx).broadcast(tx.raw_tx as Hex, tx.tx_hash as Hex);
  }

  /**
   * Signs an EVM transaction at the nonce its intent names, once the chain's next nonce of the wallet is
   * that one: a transaction above a gap is not signed (a signed transaction that then waited on a nonce
   * that never comes could be mined much later, after it was reported failed), and one whose nonce was
   * used by another transaction can never be mined.
   */
  private async evmSign(tx: TransactionRecord, job: TransactionJob, wallet: WalletRecord): Promise<Step> {
    const chain = this.evmChain(tx);
    const from = wallet.address as Hex;
    const intent = decodeIntent(hexToBytes(tx.intent)) as EvmTransferIntent;
    // Written before intents named their nonce: the nodes no longer sign it.
    if (intent.nonce === undefined) return { to: 'rejected', patch: { reason: 'intent_nonce_required: the intent names no nonce; sign a version 3 intent (POST /v1/transactions/prepare)' } };
    const nonce = Number(intent.nonce);
    const next = await chain.pendingNonce(from);
    if (next > nonce) return this.evmNonceUsed(tx, job, intent, chain, from, nonce, next);
    if (next < nonce) {
      const nowS = BigInt(Math.floor(Date.now() / 1000));
      const why = `nonce ${nonce} waits for nonce ${next} of ${from} to be used: a transaction of the wallet not yet sent, or one that ended and released it`;
      if (nowS > intent.notAfter) return { to: 'failed', patch: { reason: `nonce_gap: ${why}; the intent expired before it could be signed` } };
      if (tx.waiting !== why) await this.o.vaults.store.batch([this.o.transactions.txOp({ ...tx, waiting: why, updated_at: new Date().toISOString() })]);
      return { wait: NONCE_GAP_POLL_MS };
    }
    let template: EvmTemplate;
    let unsigned;
    try {
      // The call's shape (to, value, data) comes from the intent; gas and fees from the chain, under the ceiling.
      const shape = evmTransaction(intent, { nonce, gasLimit: 1n, maxFeePerGas: 1n, maxPriorityFeePerGas: 0n });
      // An overspend ends here, unsigned (docs/transactions.md): the token amount first (a token's own
      // revert text varies), then the value with the whole fee ceiling once gas and fees are known.
      if (intent.asset.kind === 'erc20') await chain.requireFunds(from, { token: { contract: shape.to!, amount: intent.amount } });
      template = await chain.template(from, shape, nonce, intent.maxFee);
      unsigned = evmTransaction(intent, template);
      await chain.requireFunds(from, { native: (unsigned.value ?? 0n) + template.gasLimit * template.maxFeePerGas });
    } catch (err) {
      if (err instanceof EvmTemplateError) throw new ChainError('fee_ceiling', err.message, true);
      throw err;
    }
    const templateBlob = encodeBlob('evm-template', {
      nonce, gasLimit: String(template.gasLimit), maxFeePerGas: String(template.maxFeePerGas), maxPriorityFeePerGas: String(template.maxPriorityFeePerGas),
    });
    const digest = evmSigningDigest(unsigned);
    const signed = await this.sign(tx, job, wallet, Scheme.ECDSA, [digest], templateBlob);
    if ('to' in signed) return signed;
    const sig = signed.signatures[0]!;
    const raw = evmSignedTransaction(unsigned, { r: BigInt('0x' + bytesToHex(sig.subarray(0, 32))), s: BigInt('0x' + bytesToHex(sig.subarray(32))), recovery: signed.recoveryIds[0]! });
    // Never broadcast what does not come from the wallet (recovered from the digest: a chain id of any size).
    const signer = await recoverAddress({ hash: viemHex(digest), signature: { r: viemHex(sig.subarray(0, 32)), s: viemHex(sig.subarray(32)), yParity: signed.recoveryIds[0]! } });
    if (signer.toLowerCase() !== from.toLowerCase()) return this.badSignature(tx, `the signature recovers ${signer}, not the wallet ${from}`);
    const hash = keccak256(raw);
    return { to: 'signed', patch: { nonce, raw_tx: raw, tx_hash: hash, fee: String(template.gasLimit * template.maxFeePerGas), waiting: undefined } };
  }

  /**
   * The intent's nonce is used, before this transaction was stored signed. By this intent's own transfer
   * (signatures someone other than this worker broadcast: a coordinator that sent the transaction itself
   * and answered an error) when the chain's transaction at that nonce is the intent's call: the
   * transaction follows that one, as broadcast. Otherwise it fails `nonce_used`, unsigned.
   */
  private async evmNonceUsed(tx: TransactionRecord, job: TransactionJob, intent: EvmTransferIntent, chain: EvmChain, from: Hex, nonce: number, next: number): Promise<Step> {
    // Only a transaction that asked for signatures before (and failed) can have had them broadcast.
    const found = job.attempts > 0 ? await chain.findByNonce(from, nonce) : undefined;
    if (found === 'pending') {
      if (BigInt(Math.floor(Date.now() / 1000)) <= intent.notAfter) return { wait: 1000 };
    } else if (found) {
      const shape = evmTransaction(intent, { nonce, gasLimit: 1n, maxFeePerGas: 1n, maxPriorityFeePerGas: 0n });
      const ours = found.to?.toLowerCase() === shape.to?.toLowerCase() && found.value === (shape.value ?? 0n) && found.input.toLowerCase() === (shape.data ?? '0x').toLowerCase();
      // A transfer another record of the wallet already follows is that one's (the same call sent twice).
      const claimed = ours && (await TRANSACTIONS.in(this.o.vaults.store).byIndex(`wallet/${tx.wallet_id}/`, 10_000)).some((x) => x.id !== tx.id && x.tx_hash === found.hash);
      if (ours && !claimed) {
        this.o.log.warn({ transaction: tx.id, tx_hash: found.hash }, 'the intent\'s transaction was broadcast by someone else; following it');
        return { to: 'broadcast', patch: { nonce, tx_hash: found.hash, waiting: undefined } };
      }
    }
    throw new ChainError('nonce_used', `nonce ${nonce} of ${from} is used already by another transaction (the chain's next is ${next}); prepare and sign a new intent`, true);
  }

  /**
   * A Safe owner's signature (intent kind 3): the SafeTx EIP-712 digest of the intent, which every node
   * computes again from the intent; no template, since the intent leaves nothing to choose. The
   * signature is stored only once it recovers to the wallet's address, as r || s || v with v 27 or 28
   * (Safe's `checkSignatures` for an owner that is an account).
   */
  private async safeTxSign(tx: TransactionRecord, job: TransactionJob, wallet: WalletRecord): Promise<Exclude<Step, { wait: number }>> {
    const intent = decodeIntent(hexToBytes(tx.intent)) as SafeTxIntent;
    const digest = safeTxHash(intent);
    const signed = await this.sign(tx, job, wallet, Scheme.ECDSA, [digest], new Uint8Array());
    if ('to' in signed) return signed;
    const sig = signed.signatures[0]!;
    const recovery = signed.recoveryIds[0];
    if (recovery !== 0 && recovery !== 1) return this.badSignature(tx, `recovery id ${String(recovery)} is not 0 or 1`);
    const signature = `0x${bytesToHex(sig)}${(27 + recovery).toString(16)}` as Hex;
    const signer = await recoverAddress({ hash: viemHex(digest), signature });
    if (signer.toLowerCase() !== wallet.address.toLowerCase()) return this.badSignature(tx, `the signature recovers ${signer}, not the wallet ${wallet.address}`);
    return { to: 'signed', patch: { signature, waiting: undefined } };
  }

  private async btcSign(tx: TransactionRecord, job: TransactionJob, wallet: WalletRecord): Promise<Exclude<Step, { wait: number }>> {
    const chain = this.btcChain(tx);
    const intent = decodeIntent(hexToBytes(tx.intent)) as BtcTransferIntent;
    // Written before every intent named its inputs: the nodes no longer sign it.
    if (!intent.inputs.length) return { to: 'rejected', patch: { reason: 'intent_inputs_required: the intent names no inputs; sign one that names the outputs it spends (GET /v1/wallets/{id}/utxos)' } };
    let spend;
    try {
      // Exactly the outputs the intent names, as the chain holds them now; the nodes check the same set.
      spend = buildSpend(intent, await this.btcNamedUtxos(chain, wallet.address, intent), await chain.feeRate());
    } catch (err) {
      if (!(err instanceof SpendError)) throw err;
      // An input already spent may be spent by this intent's own transaction (signed by an earlier attempt).
      const own = await this.btcSpentByIntent(tx, chain, intent);
      if (own) return own;
      throw new ChainError(err.code, err.message, true);
    }
    const scheme = wallet.address_type === 'p2tr' ? Scheme.SCHNORR_TAPROOT : Scheme.ECDSA;
    const signed = await this.sign(tx, job, wallet, scheme, spend.digests, spend.template);
    if ('to' in signed) return signed;
    const network = BITCOIN_NETWORK_PARAMS[intent.network];
    let raw: string;
    try {
      // Each signature is verified over its digest under the key its input pays to before anything is built.
      raw = wallet.address_type === 'p2tr' ? finalizeTaproot(spend, signed.signatures, network) : finalizeP2wpkh(spend, signed.signatures, signed.publicKey, network);
    } catch (err) {
      if (err instanceof SignatureCheckError) return this.badSignature(tx, err.message);
      throw err;
    }
    return {
      to: 'signed',
      patch: { raw_tx: raw, tx_hash: spend.tx.getId(), fee: String(spend.fee), inputs: spentOutpoints(spend.tx), waiting: undefined },
    };
  }

  /**
   * The wallet's unspent outputs, the intent's own with their amounts read from the bytes of the
   * transactions that made them (their txids checked), not from the backend's listing: every sighash
   * commits to those amounts (BIP-341 to all of a spend's, BIP-143 to its input's), so an amount that is
   * off yields signatures the chain refuses (`mandatory-script-verify-flag-failed`) though they verify
   * over the digests the service computed (docs/transactions.md "Amounts the signatures commit to").
   */
  private async btcNamedUtxos(chain: BitcoinChain, address: string, intent: BtcTransferIntent): Promise<Utxo[]> {
    const named = new Set(intentOutpoints(intent));
    return Promise.all((await chain.utxos(address)).map(async (u) => {
      if (!named.has(`${u.txid}:${u.vout}`)) return u;
      const value = await chain.outputValue(u.txid, u.vout);
      if (value !== u.value) this.o.log.warn({ outpoint: `${u.txid}:${u.vout}`, listed: String(u.value), value: String(value) }, 'the backend listed an output with an amount its transaction does not hold; using the transaction\'s');
      return { ...u, value };
    }));
  }

  /**
   * A signature from the cluster that does not verify over its digest under the wallet's key: nothing is
   * built or broadcast. The transaction keeps the reason (`waiting`) while the signing runs again, until
   * the intent's not_after; the coordinator names the node that produced it (docs/sessions.md).
   */
  private async badSignature(tx: TransactionRecord, message: string): Promise<never> {
    const why = `bad_signature: ${message}; nothing was broadcast, signing again`.slice(0, 500);
    this.o.log.error({ transaction: tx.id, err: message }, 'the cluster returned a signature that does not verify; signing again');
    await this.o.vaults.store.batch([this.o.transactions.txOp({ ...tx, waiting: why, updated_at: new Date().toISOString() }, tx)]);
    throw new ChainError('bad_signature', why, false);
  }

  /**
   * The intent's own transaction, when the chain shows one of its inputs spent by it: the transaction
   * follows that one (adopted, docs/transactions.md "Adopted transactions"). Undefined when no input is
   * spent, or one is spent by a transaction that is not the intent's.
   */
  private async btcSpentByIntent(tx: TransactionRecord, chain: BitcoinChain, intent: BtcTransferIntent): Promise<Exclude<Step, { wait: number }> | undefined> {
    for (const outpoint of intentOutpoints(intent)) {
      const by = await chain.spentBy(outpoint);
      if (!by) continue;
      const judged = await this.btcJudgeSpend(tx, chain, intent, by.txid);
      return 'why' in judged ? undefined : this.btcAdopt(tx, intent, by.txid, judged);
    }
    return undefined;
  }

  /** Whether transaction `txid` is the intent's own and no other record of the wallet follows it; its bytes and fee if so. */
  private async btcJudgeSpend(tx: TransactionRecord, chain: BitcoinChain, intent: BtcTransferIntent, txid: string): Promise<{ raw: string; fee: bigint } | { why: string }> {
    const found = await chain.transaction(txid);
    const named = new Map<string, bigint | undefined>(intent.inputs.map((i) => [`${bytesToHex(i.txid)}:${i.vout}`, i.amount]));
    // Amounts the intent names are the customer's; the others are read from the spent transactions' bytes.
    const values = await Promise.all(spentOutpoints(found).map((o) => {
      if (!named.has(o)) return 0n;
      const [parent, vout] = o.split(':');
      return named.get(o) ?? chain.outputValue(parent!, Number(vout));
    }));
    const why = notIntentSpend(intent, found, values);
    if (why) return { why };
    // The same transfer signed for two records of the wallet: the one that stored its hash keeps it.
    const others = await TRANSACTIONS.in(this.o.vaults.store).byIndex(`wallet/${tx.wallet_id}/`, 10_000);
    if (others.some((x) => x.id !== tx.id && x.tx_hash === txid)) return { why: 'another transaction of the wallet follows it' };
    return { raw: found.toHex(), fee: spendFee(found, values) };
  }

  /** Follows `txid`, the intent's own transaction, from broadcast on; the reason is kept in `adopted` and logged. */
  private btcAdopt(tx: TransactionRecord, intent: BtcTransferIntent, txid: string, found: { raw: string; fee: bigint }): Exclude<Step, { wait: number }> {
    if (txid === tx.tx_hash) return { to: 'broadcast', patch: { waiting: undefined } };
    const adopted = `the chain holds ${txid}, another signing of this intent (same inputs, outputs and fee ceiling${tx.tx_hash ? `; this service's last was ${tx.tx_hash}` : ''}): following it`.slice(0, 500);
    this.o.log.warn({ transaction: tx.id, tx_hash: txid, previous: tx.tx_hash, fee: String(found.fee) }, 'the intent\'s inputs were spent by another signing of the intent; following that transaction');
    // The ledger's fee hold, written at the first broadcast, is released as it was written.
    const held = (tx.state === 'broadcast' || tx.state === 'confirmed') && tx.fee !== null ? { fee_held: tx.fee_held ?? tx.fee } : {};
    return { to: 'broadcast', patch: { tx_hash: txid, raw_tx: found.raw, fee: String(found.fee), inputs: intentOutpoints(intent), adopted, waiting: undefined, ...held } };
  }

  /** Outputs the wallet's own transactions spend or hold for a retry, not yet confirmed: never offered again. */
  async busyOutputs(wallet: WalletRecord, except?: string): Promise<Set<string>> {
    return new Set((await TRANSACTIONS.in(this.o.vaults.store).byIndex(`wallet/${wallet.id}/`, 10_000))
      .filter((t) => t.id !== except && (t.state === 'created' || t.state === 'checks' || t.state === 'signed' || t.state === 'broadcast'))
      .flatMap((t) => t.inputs ?? []));
  }

  /** Asks the cluster for signatures; a refusal by the nodes rejects the transaction. */
  private async sign(tx: TransactionRecord, job: TransactionJob, wallet: WalletRecord, scheme: Scheme, digests: Uint8Array[], template: Uint8Array):
    Promise<{ signatures: Uint8Array[]; recoveryIds: number[]; publicKey: Uint8Array } | { to: 'rejected'; patch: Partial<TransactionRecord> }> {
    const coordinators = this.coordinators;
    // Configuration, not an outage: waiting would not help.
    if (!coordinators) throw new ChainError('signing_unavailable', 'this API instance has no coordinator configured (API_COORDINATORS)', true);
    const vault = await this.o.vaults.vault(tx.org, tx.vault_id);
    if (vault.state === 'frozen') return { to: 'rejected', patch: { reason: 'vault_frozen' } };
    const path = wallet.derivation_path.split('/').slice(1).map(Number);
    try {
      // The vault's shard; unavailable when it is not configured here: retried like a coordinator that is down.
      const coordinator = coordinators.forVault(vault);
      const res = await coordinator.sign({
        vaultId: tx.vault_id, path, scheme, digests, requestId: tx.id,
        authorization: {
          intent: hexToBytes(tx.intent), intentSignature: hexToBytes(tx.intent_signature), apiKeyId: tx.api_key_id, template,
          endUserToken: job.end_user_token ?? '', ...(this.o.trustLog ? { trustLog: await this.o.trustLog(tx.org) } : {}),
          ...(job.member_action ? { memberAction: memberActionOfJob(job.member_action) } : {}),
          ...(await this.policyEvidence(tx)),
        },
      }, { deadline: Date.now() + 90_000 });
      if (res.signatures.length !== digests.length) throw new Error('the cluster returned a wrong number of signatures');
      return { signatures: res.signatures, recoveryIds: res.recoveryIds, publicKey: res.publicKey };
    } catch (err) {
      // The coordinator client fails with CustodyErrors. A refusal by the nodes (or a request they find
      // invalid) is final: another try would be refused too.
      // The one refusal another try can cure: the vault's chain moved on a node past the links relayed
      // (concurrent signings of one vault); relayed again, it is signed (docs/policies.md).
      if (err instanceof CustodyError && err.code === 'chain_incomplete') throw new Error(`signers asked for more of the vault's intent chain: ${err.message}`);
      if (err instanceof CustodyError && (err.kind === 'refused' || err.kind === 'invalid')) return { to: 'rejected', patch: { reason: signersRefused(err) } };
      throw new Error(signingFailure(err, vault.coordinator_shard));
    }
  }

  /**
   * A vault under a policy: the intent's chain link, the links the nodes need around it (vault-policies.ts
   * `relay`) and the approvals collected. Nothing for a transaction admitted without a policy.
   */
  private async policyEvidence(tx: TransactionRecord): Promise<{ chainLink?: Uint8Array; chain?: { link: Uint8Array; intent: Uint8Array }[]; approvals?: { approverId: string; signature: string; passkey?: { credential: string; credentialId: string; authenticatorData: string; clientDataJson: string; signature: string } }[] }> {
    if (!tx.policy) return {};
    const policies = this.o.transactions.policies;
    const own = await policies.link(tx.vault_id, tx.policy.chain_seq);
    const nowS = Math.floor(Date.now() / 1000);
    const windowSeconds = (await policies.inForce(tx.vault_id, nowS))?.doc.rolling_window?.seconds ?? 0;
    const chain = await policies.relay(tx.vault_id, tx.policy.chain_seq, windowSeconds, nowS);
    return {
      chainLink: hexToBytes(own.link), chain,
      ...(tx.policy.approvals.length ? { approvals: tx.policy.approvals.map((a) => ({
        approverId: a.approver_id, signature: a.signature,
        ...(a.passkey ? { passkey: { credential: a.passkey.credential, credentialId: a.passkey.credential_id, authenticatorData: a.passkey.authenticator_data, clientDataJson: a.passkey.client_data_json, signature: a.passkey.signature } } : {}),
      })) } : {}),
    };
  }

  private async evmFollow(tx: TransactionRecord): Promise<Step> {
    const chain = this.evmChain(tx);
    const receipt = await chain.receipt(tx.tx_hash as Hex);
    if (!receipt) return tx.state === 'broadcast' ? ((await this.evmDropped(tx, chain)) ?? { wait: 1000 }) : { wait: 1000 };
    const included = { block_number: Number(receipt.blockNumber), fee_paid: String(receipt.fee) };
    if (receipt.status === 'reverted') return { to: 'failed', patch: { reason: 'reverted: the transaction was included but reverted', ...included } };
    const confirmations = Number((await chain.tip()) - receipt.blockNumber + 1n);
    const patch = { ...included, confirmations };
    if (tx.state === 'broadcast') return { to: 'confirmed', patch };
    if (confirmations >= chain.network.finalityDepth) return { to: 'final', patch };
    return { wait: 1000 };
  }

  /**
   * A broadcast EVM transaction that can never be included: its nonce was taken by another transaction of
   * the wallet (one sent outside the service, or a replacement), included at the chain's finality depth,
   * while this one has no receipt. It fails (`dropped`), so its ledger holds are released; the nonce is
   * not handed back (it is used). Looked at only once the transaction has waited `dropCheckAfterMs`.
   */
  private async evmDropped(tx: TransactionRecord, chain: EvmChain): Promise<Step | undefined> {
    if (tx.nonce === undefined || this.waitedTooLittle(tx)) return undefined;
    const wallet = await WALLETS.in(this.o.vaults.store).get(tx.wallet_id);
    if (!wallet) return undefined;
    const depth = BigInt(chain.network.finalityDepth);
    const tip = await chain.tip();
    if (tip + 1n < depth) return undefined;
    const used = await chain.nonceAt(wallet.address as Hex, tip - depth + 1n);
    if (used <= tx.nonce) return undefined;
    // Looked at again after the count: a receipt that appeared meanwhile means it was included after all.
    if (await chain.receipt(tx.tx_hash as Hex)) return undefined;
    return { to: 'failed', patch: { reason: `dropped: nonce ${tx.nonce} was used by another transaction of the wallet, final at depth ${depth}; this one can never be included` } };
  }

  /**
   * A broadcast Bitcoin transaction whose input another transaction spent, while this one is unconfirmed.
   * When that transaction is the intent's own (another signing of it: a retry with another fee, or one a
   * coordinator broadcast itself), the record follows it (adopted). Otherwise, once that spend is final
   * at the chain's finality depth, this one can never be included: it fails (`dropped`), so its ledger
   * holds are released. Looked at only once the transaction has waited `dropCheckAfterMs`.
   */
  private async btcDropped(tx: TransactionRecord, chain: BitcoinChain): Promise<Step | undefined> {
    if (!tx.inputs?.length || this.waitedTooLittle(tx)) return undefined;
    const intent = decodeIntent(hexToBytes(tx.intent)) as BtcTransferIntent;
    for (const outpoint of tx.inputs) {
      const by = await chain.spentBy(outpoint);
      if (!by || by.txid === tx.tx_hash) continue;
      const judged = await this.btcJudgeSpend(tx, chain, intent, by.txid);
      if (!('why' in judged)) return this.btcAdopt(tx, intent, by.txid, judged);
      if (by.confirmations < chain.info.finalityDepth) continue;
      // Looked at again: a confirmation of this one that appeared meanwhile means it was included after all.
      if ((await chain.confirmations(tx.tx_hash!)).confirmations > 0) return undefined;
      return { to: 'failed', patch: { reason: `dropped: input ${outpoint} was spent by another transaction (${by.txid}: ${judged.why}), final at depth ${chain.info.finalityDepth}; this one can never be included`.slice(0, 500) } };
    }
    return undefined;
  }

  private waitedTooLittle(tx: TransactionRecord): boolean {
    return Date.now() - Date.parse(tx.updated_at) < (this.o.dropCheckAfterMs ?? 30_000);
  }

  private async btcFollow(tx: TransactionRecord): Promise<Step> {
    const chain = this.btcChain(tx);
    const { confirmations, blockHeight } = await chain.confirmations(tx.tx_hash!);
    if (confirmations < 1) return tx.state === 'broadcast' ? ((await this.btcDropped(tx, chain)) ?? { wait: 2000 }) : { wait: 2000 };
    const patch = { confirmations, ...(blockHeight !== undefined ? { block_number: blockHeight } : {}) };
    if (tx.state === 'broadcast') return { to: 'confirmed', patch };
    if (confirmations >= chain.info.finalityDepth) return { to: 'final', patch };
    return { wait: 2000 };
  }
}

/**
 * What a signing that did not complete says, in words that name the part that failed: the coordinator
 * when it could not be reached (no gRPC text), else the cluster's own error.
 */
export function signingFailure(err: unknown, shard: string | undefined): string {
  const coordinator = `the coordinator${shard ? ` (shard ${shard})` : ''}`;
  if (err instanceof CustodyError && err.kind === 'transport') return `${coordinator} could not be reached`;
  if (err instanceof CustodyError && err.kind === 'unavailable') return `${coordinator} could not complete the signing now: ${err.code}: ${err.message.split('\n')[0]}`;
  return `${coordinator} failed the signing: ${err instanceof CustodyError ? `${err.code}: ` : ''}${(err as Error)?.message ?? String(err)}`;
}

/** A transaction's reason when the signers refuse: `signers refused: <code>`, then who and why, bounded. */
export function signersRefused(err: CustodyError): string {
  const culprits = err.culprits.length ? ` (culprits: ${err.culprits.slice(0, 8).join(', ')})` : '';
  return `signers refused: ${err.code}: ${err.message}${culprits}`.slice(0, 500);
}
