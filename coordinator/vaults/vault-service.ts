// Vault operations the API asks for: create (DKG), sign (with retry on another qualified subset when a
// party fails), reshare (two-phase: the new epoch is pending on every receiver, then committed here,
// and nodes promote it). Party keys in every session come from the registry of authenticated nodes;
// nodes check them against the committee pinned with their share.
import { equalBytes } from '@noble/curves/utils.js';
import type { Logger } from '../../common/logger.ts';
import { Protocol, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import type { KeyPackage } from '../../core/session/key-package.ts';
import type { ReshareMember } from '../../core/session/reshare-member.ts';
import type { NodeRegistry } from '../nodes/node-registry.ts';
import type { PartyReport, SessionHub, SessionOutcome, SessionSpec } from '../sessions/session-hub.ts';
import { deriveSessionId } from '../sessions/session-id.ts';
import type { CommitteeMember, VaultRecord, VaultStore } from './vault-store.ts';
import type { RebuiltKey } from './merge-inventories.ts';
import { committeeFor, thresholdFor } from './tier-policy.ts';
import type { TierName } from '../../core/tiers.ts';
import { requestedCommittee } from './requested-committee.ts';
import type { LoadedRoster } from '../config.ts';
import type { NodeKindName } from '../../core/link/node-kind.ts';
import { OtPairScheduler } from './ot-pair-scheduler.ts';
import { describeReadiness, ecdsaReadiness, otPairsOf, pairName, pairsAmong, pairsComplete, setupRuns, someCompleteSubset, type EcdsaReadiness } from './ot-pairs.ts';
import { PresignaturePool } from './presignature-pool.ts';
import { FrostNoncePool, type FrostPoolScheme, type PrecommittedRows } from './frost-nonce-pool.ts';
import { admitTeeMember } from './tee-admission.ts';
import { expectedSigningKey, signResultProblem } from './signature-check.ts';
import type { TeeAttestationVerifier } from '../../tee/attestation/enrolment-verifier.ts';
import type { SignFields } from '../../core/session/sign-fields.ts';
import type { EpochReceipt, SignSessionParams } from '../../core/session/session-params.ts';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { dkgParams, dkgResult, epochParams, epochResult, exportParams, exportResult, otParams, otResult, precommitParams, precommitResult, presignParams, presignResult, reshareParams, reshareResult, signParams, signResult, type SessionCodec } from '../../core/session/session-contract.ts';
import { randomBytes } from 'node:crypto';
import type { ExportResult, PackageResult, SignResult } from '../../core/session/session-results.ts';
import { checkRequestId } from '../../core/session/request-id.ts';
import { InputError } from '../../core/errors/protocol-errors.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { kindOf } from '../../core/errors/error-codes.ts';
import type { ErrorKind } from '../../core/errors/error-kinds.ts';

export interface Timeouts {
  dkgMs: number;
  signMs: number;
  reshareMs: number;
  /** How long a signing waits for enough committee members to be attached (a node redialing after a restart or a dropped stream). */
  attachWaitMs: number;
  /**
   * A signing or presigning session that makes no progress (no party sends anything) for this long ends,
   * naming the parties that are behind, and the request goes on with another subset (session-hub.ts
   * `progressMs`); absent: only the session deadline.
   */
  roundMs?: number;
}

export interface SignInput extends SignFields {
  vaultId: string;
  /** The caller's id of the work (coordinator.proto `request_id`); empty or absent when none. */
  requestId?: string | undefined;
  /**
   * ECDSA: presignature entries to sign with, one per digest, made by `presign` for this path and
   * signer set (docs/protocols/pools.md). When the entries cannot serve (a node refuses them, a signer
   * is away, the epoch moved on), the request runs the full protocol instead.
   */
  presignatures?: PresignedEntries | undefined;
  /**
   * Taproot/BIP-340: precommitted nonce rows to sign with, one per digest, made by `precommit` for this
   * suite, path and signer set (docs/protocols/pools.md "FROST"); the two-round protocol when they cannot serve.
   */
  precommitted?: PrecommittedRows | undefined;
}

export interface PrecommitInput {
  vaultId: string;
  path: number[];
  scheme: FrostPoolScheme;
  /** How many nonce pairs each signer draws (one row per signature). */
  count: number;
  /** Node ids of the signer set; the first attached qualified subset of the committee when absent. */
  signers?: string[] | undefined;
  requestId?: string | undefined;
}

/** Entries a presigning session sealed at every node of `signers`. */
export interface PresignedEntries {
  entryIds: string[];
  /** Node ids of the signer set the entries were made for. */
  signers: string[];
  epoch: number;
  path: number[];
}

export interface PresignInput {
  vaultId: string;
  path: number[];
  /** How many entries (one presigning run each) this session makes. */
  count: number;
  /** Node ids of the signer set; a free qualified subset of the attached committee when absent. */
  signers?: string[] | undefined;
  requestId?: string | undefined;
}

export interface SignOutput {
  signatures: Uint8Array[];
  recoveryIds: number[];
  publicKey: Uint8Array;
  signers: string[];
}

/**
 * The sessions opened for one request: each carries the request id, and its session id binds the id
 * and the session's ordinal within the request (sessions/session-id.ts).
 */
interface RequestScope {
  readonly requestId: string;
  sessions: number;
}

export class VaultService {
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly otPairs = new OtPairScheduler();
  /** Where each vault's next signing starts in its committee (nextTurn). */
  private readonly turns = new Map<string, number>();

  constructor(
    private readonly vaults: VaultStore,
    private readonly nodes: NodeRegistry,
    private readonly hub: SessionHub,
    private readonly log: Logger,
    private readonly timeouts: Timeouts = { dkgMs: 30_000, signMs: 20_000, reshareMs: 30_000, attachWaitMs: 5_000 },
    /** The operator-signed service-node roster, carried unchanged to every DKG and reshare (nodes refuse both without it). */
    private readonly roster?: LoadedRoster,
    /** Checks a TEE member's enrolment and attestation before it is seated (tee-admission.ts). */
    private readonly verifyTee?: TeeAttestationVerifier,
    /** ECDSA presignature entries kept ready per (vault, path) in use (presignature-pool.ts); 0: none. */
    presignPoolTarget = 0,
    /** Precommitted FROST nonce rows kept ready per (vault, suite, path) in use (frost-nonce-pool.ts); 0: none. */
    noncePoolTarget = 0,
  ) {
    this.pool = new PresignaturePool({
      presign: (input) => this.presign(input),
      isAttached: (nodeId) => this.nodes.isAttached(nodeId),
      epochOf: async (vaultId) => {
        const key = await this.vaults.get(vaultId);
        // A rebuilt record's OT setup is only assumed until an ECDSA signing shows it (confirmOt).
        return key?.state === 'active' && !key.otAssumed && !key.movedTo && someCompleteSubset(key.committee, key.threshold, otPairsOf(key)) ? key.epoch : undefined;
      },
    }, log, { target: presignPoolTarget });
    this.noncePool = new FrostNoncePool({
      precommit: (input) => this.precommit(input),
      isAttached: (nodeId) => this.nodes.isAttached(nodeId),
      epochOf: async (vaultId) => {
        const key = await this.vaults.get(vaultId);
        return key?.state === 'active' && !key.movedTo ? key.epoch : undefined;
      },
    }, log, { target: noncePoolTarget });
    this.attachedNow = new Set(this.nodes.list().map((n) => n.nodeId));
    this.nodes.on('change', this.onNodesChange);
  }

  /** The coordinator's precommitted FROST nonce rows (docs/protocols/pools.md "FROST"). */
  readonly noncePool: FrostNoncePool;

  /** The coordinator's presignature pool (docs/protocols/pools.md). */
  readonly pool: PresignaturePool;

  /**
   * A customer_tee committee's TEE member, looked at before anything is written or any session opens:
   * a session every honest node would refuse (tee-admission.ts) fails here, naming why.
   */
  private admitTee(tier: TierName, owner: string, nodeIds: readonly string[], trustLog: readonly Uint8Array[] | undefined): void {
    if (tier !== 'customer_tee' || !this.verifyTee) return;
    for (const nodeId of nodeIds) {
      const n = this.nodes.get(nodeId);
      if (n?.kind !== 'tee') continue;
      admitTeeMember({ org: owner, nodeId, signingKey: n.signingKey, encryptionKey: n.encryptionKey, trustLog: trustLog ?? [], verify: this.verifyTee });
    }
  }

  /** A request's scope; throws CustodyError('invalid_request') for a malformed request id. */
  private scope(requestId: string | undefined): RequestScope {
    return { requestId: checkRequestId(requestId ?? ''), sessions: 0 };
  }

  /** Opens a session of `req`. */
  private open(req: RequestScope, spec: Omit<SessionSpec, 'sessionId' | 'requestId'>): Promise<SessionOutcome> {
    // The id carries the deadline the hub sends with it (session-hub.ts): nodes refuse it once past.
    return this.hub.run({ ...spec, sessionId: deriveSessionId(req.requestId, req.sessions++, Date.now() + spec.timeoutMs), requestId: req.requestId });
  }

  /**
   * The signature of a completed signing session, once every signer's result verifies over the request's
   * digests under the key of its path (signature-check.ts) and all agree; otherwise the signers whose
   * result is malformed or does not verify, named. Nothing unchecked leaves the coordinator.
   */
  private checkedResults(outcome: Extract<SessionOutcome, { ok: true }>, input: SignInput, key: VaultRecord, req: RequestScope):
    { output: Omit<SignOutput, 'signers'> } | { culprits: string[]; message: string } {
    const expected = expectedSigningKey(key.publicKey, key.chainCode, input.path, input.scheme);
    const culprits: string[] = [];
    const problems: string[] = [];
    let good: { result: SignResult; bytes: Uint8Array } | undefined;
    for (const [nodeId, bytes] of outcome.results) {
      // The same bytes as a result already verified: verified too (the check costs a few ms a signature).
      if (good && equalBytes(bytes, good.bytes)) continue;
      let result: SignResult;
      try {
        result = signResult.decode(bytes);
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        culprits.push(nodeId);
        problems.push(`${nodeId}: a malformed result`);
        continue;
      }
      const problem = signResultProblem(result, input.digests, expected, input.scheme);
      if (problem) {
        culprits.push(nodeId);
        problems.push(`${nodeId}: ${problem}`);
      } else if (good && !equalBytes(signResult.encode(good.result), signResult.encode(result))) {
        // Two valid signatures of one digest from one run: a signer deviated, which one cannot be told.
        throw new CustodyError('failed', 'signers returned different signatures');
      } else {
        good ??= { result, bytes };
      }
    }
    if (culprits.length || !good) {
      this.log.warn({ vaultId: input.vaultId, requestId: req.requestId, culprits, problems }, 'signer results do not verify');
      return { culprits, message: `signers returned signatures that do not verify: ${problems.join('; ')}`.slice(0, 500) };
    }
    return { output: { signatures: good.result.signatures, recoveryIds: good.result.recoveryIds ?? [], publicKey: good.result.publicKey } };
  }

  /** Every party's result, decoded; undefined (logged with the party) when one is malformed. */
  private results<T>(outcome: SessionOutcome, codec: SessionCodec<T>, req: RequestScope): T[] | undefined {
    if (!outcome.ok) return undefined;
    const out: T[] = [];
    for (const [nodeId, bytes] of outcome.results) {
      try {
        out.push(codec.decode(bytes));
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        this.log.warn({ requestId: req.requestId, nodeId, kind: codec.kind, problem: err.message }, 'a node reported a malformed result');
        return undefined;
      }
    }
    return out;
  }

  private rosterBytes(): Uint8Array {
    if (!this.roster) throw new CustodyError('no_roster', 'no service-node roster is configured (COORDINATOR_ROSTER_FILE): nodes join no key generation or reshare without one');
    return this.roster.bytes;
  }

  /**
   * The committee a new vault of `owner` at `tier` would get now: what GET /v1/committees shows the
   * customer, who binds it in its signed creation request.
   */
  proposeCommittee(tier: TierName, customerNodeId?: string): { members: { nodeId: string; kind: NodeKindName; signingKey: Uint8Array; encryptionKey: Uint8Array }[]; threshold: number; rosterVersion: number } {
    this.rosterBytes();
    const committee = committeeFor(tier, this.nodes.list(), this.roster!.roster, customerNodeId || undefined);
    const members = committee.nodeIds.map((nodeId) => {
      const n = this.nodes.get(nodeId)!;
      return { nodeId, kind: n.kind, signingKey: n.signingKey, encryptionKey: n.encryptionKey };
    });
    return { members, threshold: committee.threshold, rosterVersion: this.roster!.roster.version };
  }

  /** One operation at a time per vault. */
  private serialize<T>(vaultId: string, f: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(vaultId) ?? Promise.resolve();
    const next = prev.then(f, f);
    this.locks.set(vaultId, next.catch(() => undefined));
    return next;
  }

  private party(nodeId: string, index: number): Party {
    const n = this.nodes.get(nodeId);
    if (!n) throw new CustodyError('node_not_attached', `node ${nodeId} is not attached`, { culprits: [nodeId] });
    return { $typeName: 'mpc.v1.Party', nodeId, index, signingKey: n.signingKey, encryptionKey: n.encryptionKey };
  }

  /**
   * Waits (up to attachWaitMs) until at least `needed` of `nodeIds` are attached, and returns whether they
   * are. A node whose stream dropped redials within a second or two; a signing that arrives meanwhile
   * waits for it instead of failing.
   */
  private enoughAttached(nodeIds: string[], needed: number): Promise<boolean> {
    const enough = () => nodeIds.filter((n) => this.nodes.isAttached(n)).length >= needed;
    if (enough()) return Promise.resolve(true);
    if (this.timeouts.attachWaitMs <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.nodes.off('change', onChange);
        resolve(ok);
      };
      const onChange = () => {
        if (enough()) done(true);
      };
      const timer = setTimeout(() => done(false), this.timeouts.attachWaitMs);
      this.nodes.on('change', onChange);
    });
  }

  /**
   * Rebuilds one vault's record from the nodes when this coordinator has none (vault-rebuild.ts): the
   * lazy path, for a vault the API asks about after the store was lost or restored from an older copy.
   */
  lazyRebuild?: (vaultId: string) => Promise<void>;

  /** `rebuild`: false under the vault's own lock, which a rebuild takes to write. */
  async get(vaultId: string, rebuild = true): Promise<VaultRecord> {
    let k = await this.vaults.get(vaultId);
    if (!k && rebuild && this.lazyRebuild) {
      await this.lazyRebuild(vaultId);
      k = await this.vaults.get(vaultId);
    }
    if (!k) throw new CustodyError('unknown_vault', `no vault ${vaultId}`);
    if (k.movedTo) throw new CustodyError('vault_moved', `vault ${vaultId} moved to coordinator shard ${k.movedTo}`);
    return k;
  }

  /**
   * Writes a record the nodes' inventories support (merge-inventories.ts), under the vault's lock: a new
   * record, or one this coordinator holds at an older epoch brought forward. Never another group key,
   * never an epoch back. `takeOver` serves again a vault this coordinator had released (a move back).
   */
  adopt(rebuilt: RebuiltKey, takeOver = false): Promise<{ outcome: 'created' | 'forwarded' | 'unchanged' | 'moved' | 'skipped'; reason?: string; record?: VaultRecord }> {
    return this.serialize(rebuilt.vaultId, async () => {
      const existing = await this.vaults.get(rebuilt.vaultId);
      if (existing?.movedTo && !takeOver) return { outcome: 'moved' as const, record: existing };
      if (existing?.publicKey && existing.publicKey !== rebuilt.publicKey) {
        return { outcome: 'skipped' as const, reason: `the nodes hold another group key than this coordinator's record (${existing.publicKey})` };
      }
      const now = Date.now();
      const fields = {
        owner: rebuilt.owner, tier: rebuilt.tier, threshold: rebuilt.threshold, committee: rebuilt.committee, epoch: rebuilt.epoch,
        publicKey: rebuilt.publicKey, chainCode: rebuilt.chainCode, pkg: rebuilt.pkg, receipts: rebuilt.receipts.length ? rebuilt.receipts : undefined,
        state: 'active' as const, problem: undefined, refused: undefined, otEpoch: rebuilt.epoch, otPairs: undefined, otAssumed: true, rebuiltAtMs: now, movedTo: undefined, updatedAtMs: now,
      };
      if (!existing) {
        const record: VaultRecord = { v: 2, vaultId: rebuilt.vaultId, rotation: rebuilt.epoch, ...fields, createdAtMs: now };
        await this.vaults.put(record);
        this.log.info({ vaultId: rebuilt.vaultId, epoch: rebuilt.epoch, confirmedBy: rebuilt.confirmedBy }, 'vault record rebuilt from the nodes');
        return { outcome: 'created' as const, record };
      }
      const behind = existing.epoch < rebuilt.epoch || !existing.publicKey;
      if (!behind && !existing.movedTo) return { outcome: 'unchanged' as const, record: existing };
      if (!behind) {
        const record: VaultRecord = { ...existing, movedTo: undefined, updatedAtMs: now };
        await this.vaults.put(record);
        return { outcome: 'unchanged' as const, record };
      }
      const record: VaultRecord = { ...existing, ...fields, rotation: existing.rotation + (rebuilt.epoch - existing.epoch) };
      await this.vaults.put(record);
      this.log.info({ vaultId: rebuilt.vaultId, from: existing.epoch, epoch: rebuilt.epoch, confirmedBy: rebuilt.confirmedBy }, 'vault record brought forward from the nodes');
      return { outcome: 'forwarded' as const, record };
    });
  }

  /**
   * The vault moved to shard `movedTo`: from now on this coordinator refuses its sessions (vault_moved).
   * The record stays, marked, so no rebuild here serves it again unless it moves back.
   */
  release(vaultId: string, movedTo: string): Promise<VaultRecord> {
    return this.serialize(vaultId, async () => {
      const k = await this.vaults.get(vaultId);
      if (!k) throw new CustodyError('unknown_vault', `no vault ${vaultId}`);
      const record: VaultRecord = { ...k, movedTo, updatedAtMs: Date.now() };
      await this.vaults.put(record);
      this.log.info({ vaultId, movedTo }, 'vault released to another shard');
      return record;
    });
  }

  /**
   * `trustLog` and `creationRequest` are the customer's own signed material (docs/trust.md): passed to
   * the nodes unchanged, which verify them; the coordinator cannot make or alter them.
   */
  async createVault(input: { vaultId: string; owner: string; tier: TierName; nodeIds?: string[]; threshold?: number; trustLog?: Uint8Array[]; creationRequest?: Uint8Array | undefined; requestId?: string | undefined; customerNodeId?: string | undefined }): Promise<VaultRecord> {
    const req = this.scope(input.requestId);
    return this.serialize(input.vaultId, async () => {
      // A generation that failed for want of a party (not refused by the nodes) may run again.
      const existing = await this.vaults.get(input.vaultId);
      if (existing && !(existing.state === 'failed' && !existing.refused)) throw new CustodyError('vault_exists', `vault ${input.vaultId} exists`);
      const roster = this.rosterBytes();
      // The committee the customer's signed request names, when it names one: nodes accept no other.
      const asked = requestedCommittee(input.creationRequest);
      const committee = input.nodeIds?.length ? { nodeIds: input.nodeIds, threshold: input.threshold ?? thresholdFor(input.tier, input.nodeIds.length) }
        : asked.nodeIds ? { nodeIds: asked.nodeIds, threshold: thresholdFor(input.tier, asked.nodeIds.length) }
          : committeeFor(input.tier, this.nodes.list(), this.roster!.roster, asked.customerNodeId ?? (input.customerNodeId || undefined));
      this.admitTee(input.tier, input.owner, committee.nodeIds, input.trustLog);
      const now = Date.now();
      const record: VaultRecord = {
        v: 2, vaultId: input.vaultId, owner: input.owner, tier: input.tier, threshold: committee.threshold,
        committee: committee.nodeIds.map((nodeId, i) => ({ nodeId, index: i + 1 })), epoch: 0, rotation: 0, publicKey: '', chainCode: '',
        state: 'creating', createdAtMs: now, updatedAtMs: now,
      };
      // Checked before the record is written: malformed input fails here, not on every node.
      const params = dkgParams.encode({
        keyId: input.vaultId, owner: input.owner, epoch: 0, threshold: committee.threshold, tier: input.tier,
        ...(input.trustLog?.length ? { trustLog: input.trustLog } : {}), ...(input.creationRequest?.length ? { creationRequest: input.creationRequest } : {}), roster,
      });
      // Every member resolved before the record exists: a node that detached fails the request here and
      // leaves nothing behind that a retry would take for an existing vault.
      const parties = record.committee.map((m) => this.party(m.nodeId, m.index));
      await this.vaults.put(record);
      let outcome: SessionOutcome;
      try {
        outcome = await this.open(req, { protocol: Protocol.DKG, keyId: input.vaultId, parties, params, timeoutMs: this.timeouts.dkgMs });
      } catch (err) {
        // The session never ran: the generation failed for want of it, and may run again.
        await this.vaults.put({ ...record, state: 'failed', problem: `key generation could not start: ${(err as Error).message}`, updatedAtMs: Date.now() });
        throw err;
      }
      const pkg = this.agreedPackage(outcome, dkgResult, req);
      const refusal = pkg ? undefined : refusalOf(outcome);
      if (refusal) {
        await this.vaults.put({ ...record, state: 'failed', refused: true, problem: describeReports(outcome), updatedAtMs: Date.now() });
        throw refusalError(refusal);
      }
      if (!pkg) {
        await this.vaults.put({ ...record, state: 'failed', problem: outcome.ok ? 'parties disagree on the key' : outcome.message, updatedAtMs: Date.now() });
        throw new CustodyError('failed', `key generation failed: ${outcome.ok ? 'parties disagree' : outcome.message}`, { culprits: outcome.ok ? [] : outcome.culprits });
      }
      let done: VaultRecord = { ...record, publicKey: pkg.groupKey, chainCode: pkg.chainCode, pkg, state: 'active', updatedAtMs: Date.now() };
      await this.vaults.put(done);
      this.log.info({ vaultId: input.vaultId, requestId: req.requestId, committee: committee.nodeIds }, 'vault key generated');
      done = await this.setUpOtPairs(done, req);
      return done;
    });
  }

  /**
   * ECDSA OT setup of the pairs the vault lacks at its epoch, among the members attached now (docs/
   * protocols/ecdsa.md "Per-pair setup"): one session per group of members whose pairs are all missing
   * (ot-pairs.ts setupRuns), in parallel, each holding its pairs in the OT pair scheduler so that no
   * ECDSA run of the same pairs is under way. `rerun` names pairs to set up again (retired, or lost on a
   * node). What completed is recorded; a failure is logged and the pairs stay missing, to be set up on
   * the next attach of a member or on demand. Runs under the vault's serialize.
   */
  private async setUpOtPairs(key: VaultRecord, req: RequestScope, rerun: readonly string[] = []): Promise<VaultRecord> {
    const cur = (await this.vaults.get(key.vaultId)) ?? key;
    if (cur.epoch !== key.epoch || cur.state !== 'active' || !cur.pkg) return cur;
    const have = otPairsOf(cur);
    for (const p of rerun) have.delete(p);
    const attached = cur.committee.filter((m) => this.nodes.isAttached(m.nodeId));
    const missing = new Set(pairsAmong(attached).filter((p) => !have.has(p)));
    const runs = setupRuns(attached, missing);
    const detached = cur.committee.filter((m) => !this.nodes.isAttached(m.nodeId)).map((m) => m.nodeId);
    if (detached.length && pairsAmong(cur.committee).some((p) => !have.has(p))) {
      this.log.warn({ vaultId: cur.vaultId, requestId: req.requestId, detached }, 'OT setup of the pairs of detached members postponed until they attach');
    }
    const done = await Promise.all(runs.map(async (run) => {
      const slot = await this.otPairs.take(cur.vaultId, run, run.length, this.timeouts.signMs);
      if (!slot) {
        this.log.warn({ vaultId: cur.vaultId, requestId: req.requestId, members: run.map((m) => m.nodeId) }, 'OT setup postponed: its pairs stayed busy with ECDSA runs');
        return [];
      }
      let outcome: SessionOutcome;
      try {
        outcome = await this.open(req, {
          protocol: Protocol.OT_SETUP, keyId: cur.vaultId, parties: run.map((m) => this.party(m.nodeId, m.index)),
          params: otParams.encode({ keyId: cur.vaultId, epoch: cur.epoch }), timeoutMs: this.timeouts.dkgMs,
        });
      } catch (err) {
        this.log.warn({ vaultId: cur.vaultId, requestId: req.requestId, err: (err as Error).message }, 'OT setup could not start');
        return [];
      } finally {
        slot.release();
      }
      const acks = this.results(outcome, otResult, req);
      if (!acks || acks.some((a) => a.keyId !== cur.vaultId || a.epoch !== cur.epoch)) {
        this.log.warn({ vaultId: cur.vaultId, requestId: req.requestId, members: run.map((m) => m.nodeId), problem: outcome.ok ? 'results do not name this key epoch' : outcome.message }, 'OT setup failed; its pairs wait for a new setup');
        return [];
      }
      return pairsAmong(run);
    }));
    for (const p of done.flat()) have.add(p);
    const otPairs = pairsAmong(cur.committee).filter((p) => have.has(p));
    const next: VaultRecord = { ...cur, otEpoch: cur.epoch, otPairs, updatedAtMs: Date.now() };
    if (cur.otEpoch !== next.otEpoch || (cur.otPairs ?? []).join() !== otPairs.join()) await this.vaults.put(next);
    this.noteOtPairs(next);
    return next;
  }

  /** Vaults with pairs still missing, by id: their members' next attach sets those pairs up (watchAttaches). */
  private readonly incomplete = new Set<string>();

  private noteOtPairs(v: VaultRecord): void {
    if (v.state === 'active' && pairsAmong(v.committee).some((p) => !otPairsOf(v).has(p))) this.incomplete.add(v.vaultId);
    else this.incomplete.delete(v.vaultId);
  }

  private attachedNow = new Set<string>();
  private scanned: Promise<void> | undefined;
  private stopped = false;

  /**
   * Sets up the missing OT pairs of a vault when one of its members attaches (a member lost during the
   * setup after DKG or reshare comes back): once per attach, in the background, under the vault's serialize.
   */
  private readonly onNodesChange = (): void => {
    const now = new Set(this.nodes.list().map((n) => n.nodeId));
    const arrived = [...now].filter((n) => !this.attachedNow.has(n));
    this.attachedNow = now;
    if (!arrived.length || this.stopped) return;
    void (async () => {
      await this.scanIncomplete();
      for (const vaultId of [...this.incomplete]) {
        const v = await this.vaults.get(vaultId);
        if (!v || !v.committee.some((m) => arrived.includes(m.nodeId))) continue;
        const req = this.scope('');
        await this.serialize(vaultId, () => this.setUpOtPairs(v, req)).catch((err: unknown) => {
          this.log.warn({ vaultId, err: (err as Error).message }, 'OT setup after a member attached failed');
        });
      }
    })().catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'OT setup after an attach failed'));
  };

  /** Once per process: every stored vault whose pairs are incomplete (a restart forgets the set). */
  private scanIncomplete(): Promise<void> {
    this.scanned ??= (async () => {
      for await (const v of this.vaults.all()) this.noteOtPairs(v);
    })();
    return this.scanned;
  }

  /** Stops reacting to attaches (the coordinator is closing). */
  stop(): void {
    this.stopped = true;
    this.nodes.off('change', this.onNodesChange);
  }

  /** Whether the vault can sign ECDSA now, and if not, why (ot-pairs.ts; GetVault, /readyz). */
  ecdsaReadiness(v: VaultRecord): EcdsaReadiness {
    return ecdsaReadiness(v, (nodeId) => this.nodes.isAttached(nodeId));
  }

  private unsignableCache: { at: number; value: Promise<Unsignable> } | undefined;

  /**
   * Active vaults that cannot sign ECDSA now: how many, by reason, and the first `UNSIGNABLE_LISTED` of
   * them (the coordinator's /readyz, the API's through ListNodes). Reads every vault record, so one
   * answer serves every caller for a few seconds.
   */
  unsignable(): Promise<Unsignable> {
    const now = Date.now();
    if (this.unsignableCache && now - this.unsignableCache.at < UNSIGNABLE_CACHE_MS) return this.unsignableCache.value;
    const value = (async () => {
      const out: Unsignable = { count: 0, reasons: {}, vaults: [] };
      for await (const v of this.vaults.all()) {
        if (v.state !== 'active' || !v.pkg) continue;
        const r = this.ecdsaReadiness(v);
        if (r.ready) continue;
        out.count++;
        out.reasons[r.reason!] = (out.reasons[r.reason!] ?? 0) + 1;
        if (out.vaults.length < UNSIGNABLE_LISTED) out.vaults.push({ vaultId: v.vaultId, readiness: r });
      }
      return out;
    })();
    this.unsignableCache = { at: now, value };
    value.catch(() => (this.unsignableCache = undefined));
    return value;
  }

  /** Clears a rebuilt record's assumed OT setup once an ECDSA signing at its epoch showed it exists. */
  private confirmOt(vaultId: string, epoch: number): Promise<void> {
    return this.serialize(vaultId, async () => {
      const k = await this.vaults.get(vaultId);
      if (k?.otAssumed && k.epoch === epoch && k.otEpoch === epoch) await this.vaults.put({ ...k, otAssumed: undefined, updatedAtMs: Date.now() });
    });
  }

  /** The receipts the new committee's members put in their reshare results, by new index. */
  private receipts(outcome: SessionOutcome, newCommittee: string[], req: RequestScope): EpochReceipt[] {
    if (!outcome.ok) return [];
    const out: EpochReceipt[] = [];
    for (const [nodeId, bytes] of outcome.results) {
      const party = newCommittee.indexOf(nodeId) + 1;
      if (party === 0) continue;
      try {
        const r = reshareResult.decode(bytes);
        if (r.receipt) out.push({ party, signature: r.receipt });
      } catch {
        this.log.warn({ requestId: req.requestId, nodeId }, 'a node reported a malformed reshare result');
      }
    }
    return out.sort((a, b) => a.party - b.party);
  }

  /**
   * Sends the commit of the vault's current epoch, with the receipts stored for it, to a member that
   * reported it still holds that epoch as pending (it missed the commit).
   */
  private async recommit(key: VaultRecord, nodeId: string, req: RequestScope): Promise<boolean> {
    if (!key.receipts?.length) return false;
    const receipts = key.receipts.map((r) => ({ party: r.party, signature: hexToBytes(r.signature) }));
    try {
      await this.epochSession(Protocol.COMMIT_EPOCH, key.vaultId, key.epoch, nodeId, req, receipts);
      this.log.info({ vaultId: key.vaultId, requestId: req.requestId, nodeId, epoch: key.epoch }, 'sent the epoch commit again to a member that missed it');
      return true;
    } catch (err) {
      this.log.warn({ vaultId: key.vaultId, requestId: req.requestId, nodeId, err: (err as Error).message }, 'a member that missed the epoch commit did not take it');
      return false;
    }
  }

  /** The package every party reported, when they all reported the same one. */
  private agreedPackage(outcome: SessionOutcome, codec: SessionCodec<PackageResult>, req: RequestScope): KeyPackage | undefined {
    const pkgs = this.results(outcome, codec, req)?.map((r) => r.pkg);
    if (!pkgs || new Set(pkgs.map((p) => JSON.stringify(p))).size !== 1) return undefined;
    return pkgs[0];
  }

  /**
   * Runs a presigning session (PROTOCOL_PRESIGN_ECDSA): every signer seals one presignature per new
   * entry id for this epoch, signer set and path, and reports them only once they are on its disk.
   * Nothing is signed; a later signing names the entries (SignInput.presignatures).
   */
  async presign(input: PresignInput): Promise<PresignedEntries> {
    const req = this.scope(input.requestId);
    const key = await this.get(input.vaultId);
    if (key.state !== 'active') throw new CustodyError('conflict', `vault ${input.vaultId} is ${key.state}`);
    const entryIds = Array.from({ length: input.count }, () => randomBytes(16).toString('hex'));
    const params = presignParams.encode({ keyId: input.vaultId, epoch: key.epoch, path: input.path, entryIds });
    const named = input.signers?.map((nodeId) => {
      const m = key.committee.find((x) => x.nodeId === nodeId);
      if (!m) throw new CustodyError('invalid_request', `${nodeId} is not a member of the vault's committee`);
      return m;
    });
    if (named && named.length < key.threshold) throw new CustodyError('invalid_request', `presignatures need ${key.threshold} signers`);
    const candidatesOf = (v: VaultRecord) => named ?? v.committee.filter((m) => this.nodes.isAttached(m.nodeId));
    const size = named ? named.length : key.threshold;
    const complete = (v: VaultRecord) => (subset: { index: number }[]) => pairsComplete(otPairsOf(v), subset);
    let ready = key;
    // On demand: the missing pairs among the members that could serve are set up first.
    if (!firstSubset(candidatesOf(ready), size, complete(ready))) {
      ready = await this.serialize(key.vaultId, () => this.setUpOtPairs(key, req));
      if (ready.epoch !== key.epoch || !firstSubset(candidatesOf(ready), size, complete(ready))) {
        throw new CustodyError('unavailable', `presigning needs OT material on every pair of its signers, which could not be set up now (${describeReadiness(this.ecdsaReadiness(ready)) ?? 'the named signers lack pairs'})`);
      }
    }
    const slot = await this.otPairs.take(input.vaultId, candidatesOf(ready), size, this.timeouts.signMs, complete(ready));
    if (!slot) throw new CustodyError('ot_busy', 'every signer subset of this vault is busy with other ECDSA runs; retry later');
    let outcome: SessionOutcome;
    try {
      outcome = await this.open(req, { protocol: Protocol.PRESIGN_ECDSA, keyId: input.vaultId, parties: slot.signers.map((m) => this.party(m.nodeId, m.index)), params, timeoutMs: this.timeouts.signMs, ...this.roundLimit() });
    } finally {
      slot.release();
    }
    const acks = this.results(outcome, presignResult, req);
    if (!acks || acks.some((a) => a.keyId !== input.vaultId || a.epoch !== key.epoch || a.entryIds.join() !== entryIds.join())) {
      const refusal = refusalOf(outcome);
      if (refusal) throw refusalError(refusal);
      throw new CustodyError('failed', `presigning failed: ${outcome.ok ? 'results do not name the entries' : outcome.message}`, { culprits: outcome.ok ? [] : outcome.culprits });
    }
    return { entryIds, signers: slot.signers.map((m) => m.nodeId), epoch: key.epoch, path: [...input.path] };
  }

  /**
   * Runs a precommit session (PROTOCOL_PRECOMMIT_FROST): every signer draws `count` nonce pairs for this
   * epoch, suite, signer set and path, seals them, and reports their commitments signed by its identity
   * key. Nothing is signed; a later signing names one row per digest (SignInput.precommitted).
   */
  async precommit(input: PrecommitInput): Promise<PrecommittedRows> {
    const req = this.scope(input.requestId);
    const key = await this.get(input.vaultId);
    if (key.state !== 'active') throw new CustodyError('conflict', `vault ${input.vaultId} is ${key.state}`);
    const params = precommitParams.encode({ keyId: input.vaultId, epoch: key.epoch, path: input.path, scheme: input.scheme, count: input.count });
    const named = input.signers?.map((nodeId) => {
      const m = key.committee.find((x) => x.nodeId === nodeId);
      if (!m) throw new CustodyError('invalid_request', `${nodeId} is not a member of the vault's committee`);
      return m;
    });
    if (named && named.length < key.threshold) throw new CustodyError('invalid_request', `precommitted nonces need ${key.threshold} signers`);
    const signers = named ?? key.committee.filter((m) => this.nodes.isAttached(m.nodeId)).slice(0, key.threshold);
    if (signers.length < key.threshold) throw new CustodyError('not_enough_nodes', `precommitting needs ${key.threshold} attached members of the committee`);
    const outcome = await this.open(req, { protocol: Protocol.PRECOMMIT_FROST, keyId: input.vaultId, parties: signers.map((m) => this.party(m.nodeId, m.index)), params, timeoutMs: this.timeouts.signMs, ...this.roundLimit() });
    const reported = new Map<string, ReturnType<typeof precommitResult.decode>>();
    if (outcome.ok) {
      for (const [nodeId, bytes] of outcome.results) {
        try {
          reported.set(nodeId, precommitResult.decode(bytes));
        } catch (err) {
          if (!(err instanceof InputError)) throw err;
        }
      }
    }
    const complete = signers.every((m) => {
      const r = reported.get(m.nodeId);
      return r && r.keyId === input.vaultId && r.epoch === key.epoch && r.entries.length === input.count;
    });
    if (!complete) {
      const refusal = refusalOf(outcome);
      if (refusal) throw refusalError(refusal);
      throw new CustodyError('failed', `precommitting failed: ${outcome.ok ? 'results do not hold the entries' : outcome.message}`, { culprits: outcome.ok ? [] : outcome.culprits });
    }
    const rows = Array.from({ length: input.count }, (_, i) => signers.map((m) => ({ party: m.index, ...reported.get(m.nodeId)!.entries[i]! })));
    return { rows, signers: signers.map((m) => m.nodeId), epoch: key.epoch, scheme: input.scheme, path: [...input.path] };
  }

  /**
   * A signing with precommitted nonces: one round. Undefined when the rows cannot serve this request
   * (then the caller runs two rounds); a refusal of the request itself is final.
   */
  private signPrecommitted(input: SignInput, key: VaultRecord, req: RequestScope, rows: PrecommittedRows, excluded: Set<string>): Promise<SignOutput | undefined> {
    if (rows.scheme !== input.scheme || rows.rows.length !== input.digests.length) return Promise.resolve(undefined);
    return this.signWithEntries(input, key, req, {
      signers: rows.signers, epoch: rows.epoch, path: rows.path, protocol: Protocol.SIGN_SCHNORR, params: { precommitted: rows.rows },
      pool: this.noncePool, what: 'precommitted signing failed; running two rounds', excluded,
    });
  }

  /**
   * A signing with presignature entries: only the online round runs. Undefined when the entries cannot
   * serve this request (then the caller runs the full protocol); a refusal of the request itself is final.
   */
  private signPooled(input: SignInput, key: VaultRecord, req: RequestScope, excluded: Set<string>): Promise<SignOutput | undefined> {
    const pooled = input.presignatures!;
    if (pooled.entryIds.length !== input.digests.length) return Promise.resolve(undefined);
    return this.signWithEntries(input, key, req, {
      signers: pooled.signers, epoch: pooled.epoch, path: pooled.path, protocol: Protocol.SIGN_ECDSA, params: { presignatures: pooled.entryIds },
      pool: this.pool, what: 'pooled signing failed; running the full protocol', excluded,
    });
  }

  /**
   * One signing session over entries made ahead (presignatures or nonce rows), for exactly the signers,
   * epoch and path they were made for, all attached. Undefined when they cannot serve the request, or
   * when a node refused an entry (reported to `pool`): the caller then runs the full protocol. A refusal
   * of the request itself is final. A signer whose result does not verify goes into `excluded`, so the
   * full protocol runs without it.
   */
  private async signWithEntries(input: SignInput, key: VaultRecord, req: RequestScope, e: {
    signers: string[]; epoch: number; path: number[]; protocol: Protocol; params: Partial<Pick<SignSessionParams, 'presignatures' | 'precommitted'>>;
    pool: { refused(vaultId: string, code: string): void }; what: string; excluded: Set<string>;
  }): Promise<SignOutput | undefined> {
    const members = e.signers.map((nodeId) => key.committee.find((m) => m.nodeId === nodeId));
    const usable = e.epoch === key.epoch && e.path.join('/') === input.path.join('/') && members.every((m) => m && this.nodes.isAttached(m.nodeId));
    if (!usable) return undefined;
    const params = signParams.encode({
      keyId: input.vaultId, epoch: key.epoch, path: input.path, scheme: input.scheme, digests: input.digests,
      intent: input.intent, intentSignature: input.intentSignature, apiKeyId: input.apiKeyId, template: input.template, endUserToken: input.endUserToken,
      ...(input.trustLog ? { trustLog: input.trustLog } : {}),
      ...(input.memberAction ? { memberAction: input.memberAction } : {}),
      ...(input.chainLink ? { chainLink: input.chainLink } : {}), ...(input.chain ? { chain: input.chain } : {}), ...(input.approvals ? { approvals: input.approvals } : {}),
      ...e.params,
    });
    const signers = members as NonNullable<(typeof members)[number]>[];
    const outcome = await this.open(req, { protocol: e.protocol, keyId: input.vaultId, parties: signers.map((m) => this.party(m.nodeId, m.index)), params, timeoutMs: this.timeouts.signMs, ...this.roundLimit() });
    if (outcome.ok) {
      const checked = this.checkedResults(outcome, input, key, req);
      if ('output' in checked) return { ...checked.output, signers: signers.map((s) => s.nodeId) };
      for (const c of checked.culprits) e.excluded.add(c);
    }
    // A refusal of the request (its authorization) is final; a refusal of the entries is not.
    const refusal = refusalOf(outcome);
    if (refusal && !POOL_REFUSALS.test(refusal.code)) throw refusalError(refusal);
    if (refusal) e.pool.refused(input.vaultId, refusal.code);
    this.log.warn({ vaultId: input.vaultId, requestId: req.requestId, problem: outcome.ok ? 'signers disagree' : describeReports(outcome) || outcome.message }, e.what);
    return undefined;
  }

  async sign(input: SignInput): Promise<SignOutput> {
    if ((input.scheme === 'taproot' || input.scheme === 'bip340') && this.noncePool.enabled) {
      this.noncePool.signingStarted(input.vaultId, input.scheme);
      try {
        return await this.signOnce(input);
      } finally {
        this.noncePool.signingEnded(input.vaultId, input.scheme, input.path);
      }
    }
    if (input.scheme !== 'ecdsa' || !this.pool.enabled) return this.signOnce(input);
    this.pool.signingStarted(input.vaultId);
    try {
      return await this.signOnce(input);
    } finally {
      this.pool.signingEnded(input.vaultId, input.path);
    }
  }

  private async signOnce(input: SignInput): Promise<SignOutput> {
    const req = this.scope(input.requestId);
    const key = await this.get(input.vaultId);
    if (key.state !== 'active' && key.state !== 'resharing' && key.state !== 'reshare_pending') throw new CustodyError('conflict', `vault ${input.vaultId} is ${key.state}`);
    // Checked before anything runs: a malformed request fails here, not on every node. An OT setup
    // below keeps the key's epoch, so these parameters hold for every attempt.
    const params = signParams.encode({
      keyId: input.vaultId, epoch: key.epoch, path: input.path, scheme: input.scheme, digests: input.digests,
      intent: input.intent, intentSignature: input.intentSignature, apiKeyId: input.apiKeyId, template: input.template, endUserToken: input.endUserToken,
      ...(input.trustLog ? { trustLog: input.trustLog } : {}),
      ...(input.memberAction ? { memberAction: input.memberAction } : {}),
      ...(input.chainLink ? { chainLink: input.chainLink } : {}), ...(input.chain ? { chain: input.chain } : {}), ...(input.approvals ? { approvals: input.approvals } : {}),
    });
    // Entries the caller named, or the pool's when it has some for this path and a signer set that is attached.
    // Nodes left out of every attempt of this request (see the retry loop below).
    const excluded = new Set<string>();
    const entries = input.scheme === 'ecdsa' ? input.presignatures ?? this.pool.take(input.vaultId, key.epoch, input.path, input.digests.length) : undefined;
    if (entries) {
      const pooled = await this.signPooled({ ...input, presignatures: entries }, key, req, excluded);
      if (pooled) return pooled;
    }
    const schnorr = input.scheme === 'taproot' || input.scheme === 'bip340' ? input.scheme : undefined;
    const rows = schnorr ? input.precommitted ?? this.noncePool.take(input.vaultId, key.epoch, schnorr, input.path, input.digests.length) : undefined;
    if (rows) {
      const pooled = await this.signPrecommitted(input, key, req, rows, excluded);
      if (pooled) return pooled;
    }
    let ready = key;
    const protocol = input.scheme === 'ecdsa' ? Protocol.SIGN_ECDSA : Protocol.SIGN_SCHNORR;
    // In the spirit of ROAST: a failed attempt is retried on another qualified subset, without the
    // nodes it names (culprits, or the node that refused when nobody is named), starting each time from
    // the next subset in turn rather than always the first. A refusal on authorization ends the request
    // only once a second node, in another subset, refuses it alike: one node's refusal that the others
    // do not share is routed around. Bounded in attempts; each attempt is bounded by the session deadline.
    // Pairs of nodes one of which blamed the other: one of the two misbehaved, so no later subset seats
    // both (an honest node blamed by a malicious one still signs, with someone else).
    const disputes = new Set<string>();
    const undisputed = (subset: { nodeId: string }[]) => subset.every((a) => subset.every((b) => !disputes.has(`${a.nodeId}\u0000${b.nodeId}`)));
    const refusals = new Map<string, PartyReport>();
    const recommitted = new Set<string>();
    let setupRerun = false;
    let pairsSetUp = false;
    const maxAttempts = Math.min(MAX_SIGN_ATTEMPTS, subsetCount(ready.committee.length, ready.threshold) + 2);
    let last: SessionOutcome | undefined;
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      const eligible = ready.committee.filter((m) => !excluded.has(m.nodeId));
      if (eligible.length < ready.threshold) break;
      if (!(await this.enoughAttached(eligible.map((m) => m.nodeId), ready.threshold))) {
        if (last) break;
        const missing = eligible.filter((m) => !this.nodes.isAttached(m.nodeId)).map((m) => m.nodeId);
        throw new CustodyError('not_enough_nodes', `signing needs ${ready.threshold} attached members of the committee; not attached: ${missing.join(', ')}`, { culprits: missing });
      }
      const candidates = rotate(eligible.filter((m) => this.nodes.isAttached(m.nodeId)), this.nextTurn(input.vaultId));
      // ECDSA: a subset whose OT pairs all have material and none is in another run (nodes refuse both); Schnorr: any.
      const have = otPairsOf(ready);
      const usable = protocol === Protocol.SIGN_ECDSA ? (subset: CommitteeMember[]) => undisputed(subset) && pairsComplete(have, subset) : undisputed;
      if (!firstSubset(candidates, ready.threshold, usable)) {
        // On demand, once: the missing pairs among the attached members are set up, then the subsets are looked at again.
        if (protocol === Protocol.SIGN_ECDSA && !pairsSetUp && firstSubset(candidates, ready.threshold, undisputed)) {
          pairsSetUp = true;
          ready = await this.serialize(key.vaultId, () => this.setUpOtPairs(ready, req));
          if (ready.epoch !== key.epoch) break;
          attempt--;
          continue;
        }
        if (protocol === Protocol.SIGN_ECDSA && !last && firstSubset(candidates, ready.threshold, undisputed)) {
          throw new CustodyError('unavailable', `${describeReadiness(this.ecdsaReadiness(ready)) ?? 'no signer subset has OT material on every pair'}; the setup of the missing pairs did not complete`);
        }
        break;
      }
      const slot = protocol === Protocol.SIGN_ECDSA
        ? await this.otPairs.take(input.vaultId, candidates, ready.threshold, this.timeouts.signMs, usable)
        : { signers: firstSubset(candidates, ready.threshold, undisputed)!, release: () => undefined };
      if (!slot) throw new CustodyError('ot_busy', 'every signer subset of this vault is busy with other ECDSA signings; retry later');
      const signers = slot.signers;
      let outcome: SessionOutcome;
      try {
        outcome = await this.open(req, { protocol, keyId: input.vaultId, parties: signers.map((m) => this.party(m.nodeId, m.index)), params, timeoutMs: this.timeouts.signMs, ...this.roundLimit() });
      } finally {
        slot.release();
      }
      if (outcome.ok) {
        const checked = this.checkedResults(outcome, input, ready, req);
        if ('output' in checked) {
          // A rebuilt record's OT setup is shown to exist by an ECDSA signing: the pools may use it now.
          if (protocol === Protocol.SIGN_ECDSA && ready.otAssumed) void this.confirmOt(ready.vaultId, ready.epoch).catch(() => undefined);
          return { ...checked.output, signers: signers.map((s) => s.nodeId) };
        }
        // A signer's own result that does not verify is evidence against that signer alone: it sits out.
        for (const c of checked.culprits) excluded.add(c);
        last = { ok: false, code: 'party_failed', message: checked.message, culprits: checked.culprits, reports: [] };
        this.log.warn({ vaultId: input.vaultId, requestId: req.requestId, attempt, culprits: checked.culprits, problem: checked.message }, 'a signer returned a signature that does not verify; retrying without it');
        continue;
      }
      last = outcome;
      const refusal = refusalOf(outcome);
      if (refusal) {
        // A second node refusing alike, or nobody left to ask: the request itself is refused.
        const shared = [...refusals.values()].some((r) => r.code === refusal.code && r.nodeId !== refusal.nodeId);
        refusals.set(refusal.nodeId, refusal);
        if (shared) throw refusalError(refusal);
        this.log.warn({ vaultId: input.vaultId, requestId: req.requestId, attempt, nodeId: refusal.nodeId, code: refusal.code }, 'a node refused the signing; asking a subset without it');
        excluded.add(refusal.nodeId);
        continue;
      }
      // Nodes retired OT pairs after an abort, or deleted their OT setup when their anchor did not vouch
      // for their store: a fresh setup (new keys and Δ) lets the pairs sign again.
      // Only the pairs this run needed of the reporting nodes are set up again (with the other signers):
      // another subset that finds a pair gone reports it in its own turn.
      const lost = outcome.reports.filter((r) => r.code === 'ot_retired' || r.code === 'no_ot_setup');
      if (lost.length && !setupRerun) {
        setupRerun = true;
        const affected = new Set<string>();
        for (const r of lost) {
          const me = ready.committee.find((m) => m.nodeId === r.nodeId);
          if (!me) continue;
          for (const o of signers) if (o.index !== me.index) affected.add(pairName(me.index, o.index));
        }
        this.log.warn({ vaultId: input.vaultId, requestId: req.requestId, attempt, pairs: [...affected] }, 'OT pairs were retired or their setup is gone; setting those pairs up again');
        ready = await this.serialize(key.vaultId, () => this.setUpOtPairs(ready, req, [...affected]));
        continue;
      }
      // A member that missed the commit of this epoch gets it again, with the stored receipts, and stays in.
      const missed = outcome.reports.find((r) => r.code === 'epoch_not_committed');
      if (missed && !recommitted.has(missed.nodeId)) {
        recommitted.add(missed.nodeId);
        if (await this.recommit(ready, missed.nodeId, req)) continue;
      }
      const reporter = outcome.reports.at(-1)?.nodeId;
      const blamed = outcome.culprits.filter((c) => signers.some((m) => m.nodeId === c) && c !== reporter);
      if (reporter && blamed.length) {
        // A party's word against another's: keep them apart from now on.
        for (const c of blamed) disputes.add(`${reporter}\u0000${c}`).add(`${c}\u0000${reporter}`);
      } else {
        // What the coordinator saw itself (silent parties, a stream that ended), or a failure that names
        // nobody (unknown_key, ot_busy, ...): those nodes sit out.
        for (const c of outcome.culprits.length ? outcome.culprits : reporter ? [reporter] : []) excluded.add(c);
      }
      this.log.warn({ vaultId: input.vaultId, requestId: req.requestId, attempt, culprits: outcome.culprits, code: outcome.code, reporter }, 'signing attempt failed; retrying on another subset');
    }
    const refused = [...refusals.values()].at(-1);
    if (refused && (!last || refusalOf(last))) throw refusalError(refused);
    throw new CustodyError('failed', `signing failed: ${last && !last.ok ? last.message : 'no qualified subset left'}`, { culprits: last && !last.ok ? last.culprits : [] });
  }

  /** The per-round liveness deadline of signing sessions, when configured. */
  private roundLimit(): { progressMs?: number } {
    return this.timeouts.roundMs ? { progressMs: this.timeouts.roundMs } : {};
  }

  /** A per-vault counter, so consecutive signings start from different subsets. */
  private nextTurn(vaultId: string): number {
    const n = this.turns.get(vaultId) ?? 0;
    this.turns.set(vaultId, n + 1);
    if (this.turns.size > 100_000) this.turns.delete(this.turns.keys().next().value!);
    return n;
  }

  /**
   * `trustLog` and `reshareRequest` are the customer's own signed material (docs/trust.md
   * "Committees"): a self or customer_tee target seats the customer's node its request names.
   */
  async reshare(input: { vaultId: string; nodeIds?: string[]; threshold?: number; targetTier?: TierName; trustLog?: Uint8Array[]; reshareRequest?: Uint8Array | undefined; requestId?: string | undefined; customerNodeId?: string | undefined }): Promise<VaultRecord> {
    const req = this.scope(input.requestId);
    await this.get(input.vaultId);
    return this.serialize(input.vaultId, async () => {
      const key = await this.get(input.vaultId, false);
      if (key.state !== 'active' && key.state !== 'reshare_pending') throw new CustodyError('conflict', `vault ${input.vaultId} is ${key.state}`);
      const roster = this.rosterBytes();
      const asked = requestedCommittee(input.reshareRequest);
      const tier = input.targetTier ?? (key.tier as TierName);
      const customerNodeId = asked.customerNodeId ?? (input.customerNodeId || undefined);
      const target: { nodeIds: string[]; threshold: number } = input.nodeIds?.length
        ? { nodeIds: input.nodeIds, threshold: input.threshold ?? key.threshold }
        : asked.nodeIds
          ? { nodeIds: asked.nodeIds, threshold: thresholdFor(tier, asked.nodeIds.length) }
          : input.targetTier || customerNodeId
            ? committeeFor(tier, this.nodes.list(), this.roster!.roster, customerNodeId)
            : { nodeIds: key.committee.map((m) => m.nodeId), threshold: key.threshold };
      this.admitTee(tier, key.owner, target.nodeIds, input.trustLog);
      // Members that leave deal first: a dealer records what it dealt and so can check the new committee's
      // receipts and retire its share; a member that neither deals nor receives has no such evidence and
      // keeps its share of the old epoch (docs/sessions.md "Reshare, two phases").
      const dealers = key.committee.filter((m) => this.nodes.isAttached(m.nodeId)).sort((a, b) => Number(target.nodeIds.includes(a.nodeId)) - Number(target.nodeIds.includes(b.nodeId))).slice(0, key.threshold);
      if (dealers.length < key.threshold) throw new CustodyError('not_enough_nodes', `need ${key.threshold} attached members of the current committee`);
      const union = [...new Set([...dealers.map((d) => d.nodeId), ...target.nodeIds])];
      const members: ReshareMember[] = union.map((nodeId, i) => {
        const m: ReshareMember = { party: i + 1 };
        const d = dealers.find((x) => x.nodeId === nodeId);
        if (d) m.oldId = d.index;
        const j = target.nodeIds.indexOf(nodeId);
        if (j >= 0) m.newId = j + 1;
        return m;
      });
      const oldPkg = key.pkg;
      if (!oldPkg) throw new CustodyError('unavailable', 'the public package of this epoch is not known');
      const newEpoch = key.epoch + 1;
      // Checked before the vault changes state: malformed input fails here, not on every node.
      const params = reshareParams.encode({
        keyId: key.vaultId, owner: key.owner, oldPkg, newEpoch, newThreshold: target.threshold, members, tier, roster,
        ...(input.trustLog?.length ? { trustLog: input.trustLog } : {}), ...(input.reshareRequest?.length ? { reshareRequest: input.reshareRequest } : {}),
      });
      // Every party resolved before the vault changes state: a node that detached since the dealers were
      // chosen fails the reshare here, leaving the vault as it was, not stuck in `resharing`.
      const parties = union.map((nodeId, i) => this.party(nodeId, i + 1));
      await this.vaults.put({ ...key, state: 'resharing', updatedAtMs: Date.now() });
      let outcome: SessionOutcome;
      try {
        outcome = await this.open(req, { protocol: Protocol.RESHARE, keyId: key.vaultId, parties, params, timeoutMs: this.timeouts.reshareMs });
      } catch (err) {
        // No session ran to its end, so no node holds a new epoch to commit: the vault is back as it was.
        await this.vaults.put({ ...key, updatedAtMs: Date.now() });
        throw err;
      }
      const pkg = this.agreedPackage(outcome, reshareResult, req);
      // Each receiver's signed receipt that it holds the new epoch: the nodes commit on these, never on
      // this coordinator's word. Too few (a receiver that sent none) and nothing is committed.
      const receipts = pkg ? this.receipts(outcome, target.nodeIds, req) : [];
      const tooFew = pkg !== undefined && receipts.length < target.threshold;
      if (!pkg || pkg.groupKey !== key.publicKey || tooFew) {
        // A refusal (an unverified committee, say) says which node refused and why.
        const refusal = pkg ? undefined : refusalOf(outcome);
        const problem = tooFew ? `only ${receipts.length} of the ${target.threshold} receipts needed` : outcome.ok ? 'reshare results disagree' : refusal ? `refused by the nodes: ${describeReports(outcome)}` : outcome.message;
        await this.vaults.put({ ...key, state: 'reshare_pending', problem: `reshare to epoch ${newEpoch} failed: ${problem}`, updatedAtMs: Date.now() });
        for (const nodeId of target.nodeIds) void this.epochSession(Protocol.ABANDON_EPOCH, key.vaultId, newEpoch, nodeId, req).catch(() => undefined);
        this.log.warn({ vaultId: key.vaultId, requestId: req.requestId, problem }, 'reshare failed; the old epoch stays in force');
        if (refusal) throw refusalError(refusal);
        throw new CustodyError('failed', `reshare failed: ${problem}`, { culprits: outcome.ok ? [] : outcome.culprits });
      }
      // Every receiver stored the pending epoch before reporting: commit here, then tell the nodes.
      const committed: VaultRecord = {
        ...key, epoch: newEpoch, rotation: key.rotation + 1, threshold: target.threshold,
        committee: target.nodeIds.map((nodeId, i) => ({ nodeId, index: i + 1 })), state: 'active', problem: undefined,
        tier: input.targetTier ?? key.tier, pkg, receipts: receipts.map((r) => ({ party: r.party, signature: bytesToHex(r.signature) })), updatedAtMs: Date.now(),
      };
      await this.vaults.put(committed);
      // Every member of the old and the new committee hears of the commit: receivers promote their
      // pending share, members that left delete theirs. A node that is away now refuses the old epoch
      // anyway (every session names the epoch) and deletes it on the next commit it hears.
      const everyone = [...new Set([...key.committee.map((m) => m.nodeId), ...target.nodeIds])].filter((n) => this.nodes.isAttached(n));
      const notified = await Promise.allSettled(everyone.map((nodeId) => this.epochSession(Protocol.COMMIT_EPOCH, key.vaultId, newEpoch, nodeId, req, receipts)));
      const missed = everyone.filter((_, i) => notified[i]!.status === 'rejected');
      if (missed.length) this.log.warn({ vaultId: key.vaultId, requestId: req.requestId, missed }, 'some nodes did not confirm the epoch commit');
      this.log.info({ vaultId: key.vaultId, requestId: req.requestId, epoch: newEpoch, committee: target.nodeIds }, 'reshare committed');
      return this.setUpOtPairs(committed, req);
    });
  }

  /**
   * Key export (docs/export.md): an EXPORT_SHARE session at each attached member of the committee, one
   * party each. What each node answers is relayed as it is: waiting (and when it seals), its sealed
   * share, or its refusal. Nothing here can be opened without the customer's recipient key.
   */
  async exportVault(input: { vaultId: string; exportId: string; trustLog?: Uint8Array[]; approvals?: { approverKey: Uint8Array; signature: Uint8Array }[]; requestId?: string | undefined }): Promise<{ shares: ExportedShareReport[]; threshold: number }> {
    const req = this.scope(input.requestId);
    const key = await this.get(input.vaultId);
    const params = exportParams.encode({
      keyId: key.vaultId, requestId: input.exportId, ...(input.trustLog?.length ? { trustLog: input.trustLog } : {}), ...(input.approvals?.length ? { approvals: input.approvals } : {}),
    });
    const shares = await Promise.all(key.committee.map(async ({ nodeId }): Promise<ExportedShareReport> => {
      if (!this.nodes.isAttached(nodeId)) return { nodeId, status: 'failed', code: 'node_not_attached', message: `node ${nodeId} is not attached` };
      const outcome = await this.open(req, { protocol: Protocol.EXPORT_SHARE, keyId: key.vaultId, parties: [this.party(nodeId, 1)], params, timeoutMs: 30_000 });
      if (!outcome.ok) {
        const report = outcome.reports.find((r) => r.nodeId === nodeId);
        return { nodeId, status: 'failed', code: report?.code ?? outcome.code, message: report?.message ?? outcome.message };
      }
      const r = this.results(outcome, exportResult, req)?.[0];
      if (!r) return { nodeId, status: 'failed', code: 'failed', message: `${nodeId} reported a malformed export result` };
      if (r.status === 'sealed' && r.nodeId !== nodeId) return { nodeId, status: 'failed', code: 'failed', message: `${nodeId} reported a share sealed under another node id` };
      return { nodeId, ...r };
    }));
    return { shares, threshold: key.threshold };
  }

  private async epochSession(protocol: Protocol, keyId: string, epoch: number, nodeId: string, req: RequestScope, receipts?: EpochReceipt[]): Promise<void> {
    const outcome = await this.open(req, { protocol, keyId, parties: [this.party(nodeId, 1)], params: epochParams.encode({ keyId, epoch, ...(receipts ? { receipts } : {}) }), timeoutMs: 10_000 });
    if (!outcome.ok) throw new CustodyError('failed', outcome.message, { culprits: outcome.culprits });
    if (!this.results(outcome, epochResult, req)) throw new CustodyError('failed', `${nodeId} reported a malformed epoch result`, { culprits: [nodeId] });
  }
}

/** One member's answer to an export (exportVault). */
export type ExportedShareReport = ({ nodeId: string } & ExportResult) | { nodeId: string; status: 'failed'; code: string; message: string };

/** What `unsignable` answers. */
export interface Unsignable {
  count: number;
  reasons: Record<string, number>;
  vaults: { vaultId: string; readiness: EcdsaReadiness }[];
}

/** At most this many unsignable vaults are listed by name; the count covers them all. */
const UNSIGNABLE_LISTED = 20;
/** How long one count of unsignable vaults answers (a probe every few seconds reads the store once). */
const UNSIGNABLE_CACHE_MS = 5_000;

/**
 * Kinds of a party's report that end an operation: the node refused the request (an authorization
 * check) or found it invalid. Another subset of honest nodes would answer the same, so nothing is
 * retried, and the caller gets the node's own code.
 */
const FINAL_KINDS: ReadonlySet<ErrorKind> = new Set(['refused', 'invalid']);

/** A node's refusal of pool entries (not of the request): the request falls back to the full protocol. */
const POOL_REFUSALS = /^(presignature_|nonce_|wrong_commitment$|bad_commitment$)/;

/** At most this many sessions for one signing request (fewer when the committee has fewer subsets). */
const MAX_SIGN_ATTEMPTS = 6;

/** How many subsets of `size` members a committee of `n` has. */
function subsetCount(n: number, size: number): number {
  let c = 1;
  for (let i = 0; i < size; i++) c = (c * (n - i)) / (i + 1);
  return Math.round(c);
}

/** The first subset of `size` members of `list` (in lexicographic order of position) that `accept` takes. */
function firstSubset<T>(list: T[], size: number, accept: (subset: T[]) => boolean): T[] | undefined {
  if (list.length < size) return undefined;
  const pick = Array.from({ length: size }, (_, i) => i);
  for (;;) {
    const subset = pick.map((i) => list[i]!);
    if (accept(subset)) return subset;
    let i = size - 1;
    while (i >= 0 && pick[i] === list.length - size + i) i--;
    if (i < 0) return undefined;
    pick[i]!++;
    for (let j = i + 1; j < size; j++) pick[j] = pick[j - 1]! + 1;
  }
}

/** `list` rotated left by `by` places. */
function rotate<T>(list: T[], by: number): T[] {
  if (!list.length) return list;
  const k = by % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

function refusalOf(outcome: SessionOutcome): PartyReport | undefined {
  if (outcome.ok || outcome.code !== 'party_failed') return undefined;
  return outcome.reports.find((r) => FINAL_KINDS.has(kindOf(r.code)));
}

/** The node's refusal as the operation's error: its code and culprits, the refusing node in the message. */
function refusalError(r: PartyReport): CustodyError {
  return new CustodyError(r.code, `refused by ${r.nodeId}: ${r.message}`, { culprits: r.culprits });
}

/** What the parties reported, for a key record's problem. */
function describeReports(outcome: SessionOutcome): string {
  return outcome.ok ? '' : outcome.reports.map((r) => `${r.nodeId}: ${r.code}: ${r.message}`).join('; ');
}
