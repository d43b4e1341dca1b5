// Key operations the API asks for: create (DKG), sign (with retry on another qualified subset when a
// party fails), reshare (two-phase: the new epoch is pending on every receiver, then committed here,
// and nodes promote it). Party keys in every session come from the registry of authenticated nodes;
// nodes check them against the committee pinned with their share.
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../common/logger.ts';
import { Protocol, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import { decodeBlob, encodeBlob } from '../../core/codec/blob.ts';
import type { KeyPackage } from '../../core/session/key-package.ts';
import type { ReshareMember } from '../../core/session/reshare-member.ts';
import type { NodeRegistry } from '../nodes/node-registry.ts';
import type { SessionHub, SessionOutcome } from '../sessions/session-hub.ts';
import type { KeyRecord, KeyStore } from './key-store.ts';
import { committeeFor, PolicyError, thresholdFor } from './tier-policy.ts';
import type { TierName } from '../../core/tiers.ts';
import { requestedCommittee } from './requested-committee.ts';
import type { LoadedRoster } from '../config.ts';
import type { NodeKindName } from '../../core/link/node-kind.ts';
import { OtPairScheduler } from './ot-pair-scheduler.ts';
import type { SignFields } from '../../core/session/sign-fields.ts';
import type { DkgSessionParams, EpochSessionParams, ReshareSessionParams } from '../../core/session/session-params.ts';

export class KeyServiceError extends Error {
  constructor(readonly code: 'not_found' | 'conflict' | 'unavailable' | 'failed' | 'invalid', message: string, readonly culprits: string[] = []) {
    super(message);
    this.name = 'KeyServiceError';
  }
}

export interface Timeouts {
  dkgMs: number;
  signMs: number;
  reshareMs: number;
  /** How long a signing waits for enough committee members to be attached (a node redialing after a restart or a dropped stream). */
  attachWaitMs: number;
}

export interface SignInput extends SignFields {
  keyId: string;
}

export interface SignOutput {
  signatures: string[];
  recoveryIds: number[];
  publicKey: string;
  signers: string[];
}

export class KeyService {
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly otPairs = new OtPairScheduler();

  constructor(
    private readonly keys: KeyStore,
    private readonly nodes: NodeRegistry,
    private readonly hub: SessionHub,
    private readonly log: Logger,
    private readonly timeouts: Timeouts = { dkgMs: 30_000, signMs: 20_000, reshareMs: 30_000, attachWaitMs: 5_000 },
    /** The operator-signed service-node roster, carried unchanged to every DKG and reshare (nodes refuse both without it). */
    private readonly roster?: LoadedRoster,
  ) {}

  private rosterHex(): string {
    if (!this.roster) throw new KeyServiceError('unavailable', 'no service-node roster is configured (COORDINATOR_ROSTER_FILE): nodes join no key generation or reshare without one');
    return this.roster.hex;
  }

  /**
   * The committee a new key of `owner` at `tier` would get now: what GET /v1/committees shows the
   * customer, who binds it in its signed creation request.
   */
  proposeCommittee(owner: string, tier: TierName): { members: { nodeId: string; kind: NodeKindName; signingKey: Uint8Array; encryptionKey: Uint8Array }[]; threshold: number; rosterVersion: number } {
    this.rosterHex();
    let committee;
    try {
      committee = committeeFor(tier, owner, this.nodes.list(), this.roster!.roster);
    } catch (err) {
      if (err instanceof PolicyError) throw new KeyServiceError('unavailable', err.message);
      throw err;
    }
    const members = committee.nodeIds.map((nodeId) => {
      const n = this.nodes.get(nodeId)!;
      return { nodeId, kind: n.kind, signingKey: n.signingKey, encryptionKey: n.encryptionKey };
    });
    return { members, threshold: committee.threshold, rosterVersion: this.roster!.roster.version };
  }

  /** One key operation at a time per key. */
  private serialize<T>(keyId: string, f: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(keyId) ?? Promise.resolve();
    const next = prev.then(f, f);
    this.locks.set(keyId, next.catch(() => undefined));
    return next;
  }

  private party(nodeId: string, index: number): Party {
    const n = this.nodes.get(nodeId);
    if (!n) throw new KeyServiceError('unavailable', `node ${nodeId} is not attached`, [nodeId]);
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

  async get(keyId: string): Promise<KeyRecord> {
    const k = await this.keys.get(keyId);
    if (!k) throw new KeyServiceError('not_found', `no key ${keyId}`);
    return k;
  }

  /**
   * `trustLog` and `creationRequest` (hex) are the customer's own signed material (docs/trust.md):
   * passed to the nodes unchanged, which verify them; the coordinator cannot make or alter them.
   */
  async createKey(input: { keyId: string; owner: string; tier: TierName; nodeIds?: string[]; threshold?: number; trustLog?: string[]; creationRequest?: string | undefined }): Promise<KeyRecord> {
    return this.serialize(input.keyId, async () => {
      // A generation that failed for want of a party (not refused by the nodes) may run again.
      const existing = await this.keys.get(input.keyId);
      if (existing && !(existing.state === 'failed' && !existing.refused)) throw new KeyServiceError('conflict', `key ${input.keyId} exists`);
      const roster = this.rosterHex();
      // The committee the customer's signed request names, when it names one: nodes accept no other.
      const asked = requestedCommittee(input.creationRequest);
      let committee;
      try {
        committee = input.nodeIds?.length ? { nodeIds: input.nodeIds, threshold: input.threshold ?? thresholdFor(input.tier, input.nodeIds.length) }
          : asked.nodeIds ? { nodeIds: asked.nodeIds, threshold: thresholdFor(input.tier, asked.nodeIds.length) }
            : committeeFor(input.tier, input.owner, this.nodes.list(), this.roster!.roster, asked.customerNodeId);
      } catch (err) {
        if (err instanceof PolicyError) throw new KeyServiceError('unavailable', err.message);
        throw err;
      }
      const now = Date.now();
      const record: KeyRecord = {
        v: 1, keyId: input.keyId, owner: input.owner, tier: input.tier, threshold: committee.threshold,
        committee: committee.nodeIds.map((nodeId, i) => ({ nodeId, index: i + 1 })), epoch: 0, rotation: 0, publicKey: '', chainCode: '',
        state: 'generating', createdAtMs: now, updatedAtMs: now,
      };
      await this.keys.put(record);
      const parties = record.committee.map((m) => this.party(m.nodeId, m.index));
      const outcome = await this.hub.run({
        sessionId: new Uint8Array(randomBytes(32)), protocol: Protocol.DKG, keyId: input.keyId, parties,
        params: encodeBlob('dkg-params', {
          keyId: input.keyId, owner: input.owner, epoch: 0, threshold: committee.threshold, tier: input.tier,
          ...(input.trustLog?.length ? { trustLog: input.trustLog } : {}), ...(input.creationRequest ? { creationRequest: input.creationRequest } : {}), roster,
        } satisfies DkgSessionParams),
        timeoutMs: this.timeouts.dkgMs,
      });
      const pkg = this.agreedPackage(outcome, 'dkg-result');
      if (!pkg && !outcome.ok && outcome.code === 'party_failed' && outcome.reports.some((r) => REFUSALS.has(r.code))) {
        const why = outcome.reports.map((r) => `${r.code}: ${r.message}`).join('; ');
        await this.keys.put({ ...record, state: 'failed', refused: true, problem: why, updatedAtMs: Date.now() });
        throw new KeyServiceError('invalid', `refused by the nodes: ${why}`);
      }
      if (!pkg) {
        await this.keys.put({ ...record, state: 'failed', problem: outcome.ok ? 'parties disagree on the key' : outcome.message, updatedAtMs: Date.now() });
        throw new KeyServiceError('failed', `key generation failed: ${outcome.ok ? 'parties disagree' : outcome.message}`, outcome.ok ? [] : outcome.culprits);
      }
      let done: KeyRecord = { ...record, publicKey: pkg.groupKey, chainCode: pkg.chainCode, pkg, state: 'active', updatedAtMs: Date.now() };
      await this.keys.put(done);
      this.log.info({ keyId: input.keyId, committee: committee.nodeIds }, 'key generated');
      done = await this.otSetup(done);
      return done;
    });
  }

  /** Pairwise OT setup for ECDSA on the whole committee at the key's epoch; a failure is logged and retried on demand. */
  private async otSetup(key: KeyRecord): Promise<KeyRecord> {
    if (!key.committee.every((m) => this.nodes.isAttached(m.nodeId))) {
      this.log.warn({ keyId: key.keyId }, 'OT setup postponed: not every committee member is attached');
      return key;
    }
    const outcome = await this.hub.run({
      sessionId: new Uint8Array(randomBytes(32)), protocol: Protocol.OT_SETUP, keyId: key.keyId,
      parties: key.committee.map((m) => this.party(m.nodeId, m.index)), params: encodeBlob('ot-params', { keyId: key.keyId, epoch: key.epoch } satisfies EpochSessionParams), timeoutMs: this.timeouts.dkgMs,
    });
    if (!outcome.ok) {
      this.log.warn({ keyId: key.keyId, problem: outcome.message }, 'OT setup failed; ECDSA waits for a new setup');
      return key;
    }
    const next = { ...key, otEpoch: key.epoch, updatedAtMs: Date.now() };
    await this.keys.put(next);
    return next;
  }

  private agreedPackage(outcome: SessionOutcome, kind: string): KeyPackage | undefined {
    if (!outcome.ok) return undefined;
    const pkgs = [...outcome.results.values()].map((r) => JSON.stringify(decodeBlob<{ pkg: KeyPackage }>(kind, r).pkg));
    if (new Set(pkgs).size !== 1) return undefined;
    return JSON.parse(pkgs[0]!) as KeyPackage;
  }

  async sign(input: SignInput): Promise<SignOutput> {
    const key = await this.get(input.keyId);
    if (key.state !== 'active' && key.state !== 'resharing' && key.state !== 'needs_attention') throw new KeyServiceError('conflict', `key ${input.keyId} is ${key.state}`);
    let ready = key;
    if (input.scheme === 'ecdsa' && key.otEpoch !== key.epoch) {
      ready = await this.serialize(key.keyId, () => this.otSetup(key));
      if (ready.otEpoch !== ready.epoch) throw new KeyServiceError('unavailable', 'ECDSA needs the OT setup of this epoch, which could not run now');
    }
    const protocol = input.scheme === 'ecdsa' ? Protocol.SIGN_ECDSA : Protocol.SIGN_SCHNORR;
    const excluded = new Set<string>();
    let last: SessionOutcome | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      const eligible = ready.committee.filter((m) => !excluded.has(m.nodeId));
      if (eligible.length < ready.threshold) break;
      if (!(await this.enoughAttached(eligible.map((m) => m.nodeId), ready.threshold))) {
        if (last) break;
        const missing = eligible.filter((m) => !this.nodes.isAttached(m.nodeId)).map((m) => m.nodeId);
        throw new KeyServiceError('unavailable', `signing needs ${ready.threshold} attached members of the committee; not attached: ${missing.join(', ')}`, missing);
      }
      const candidates = eligible.filter((m) => this.nodes.isAttached(m.nodeId));
      // ECDSA: a subset none of whose OT pairs is in another run (nodes refuse that); Schnorr: any.
      const slot = protocol === Protocol.SIGN_ECDSA
        ? await this.otPairs.take(input.keyId, candidates, ready.threshold, this.timeouts.signMs)
        : { signers: candidates.slice(0, ready.threshold), release: () => undefined };
      if (!slot) throw new KeyServiceError('unavailable', 'every signer subset of this vault is busy with other ECDSA signings; retry later');
      const signers = slot.signers;
      const params: Record<string, unknown> = { ...input, epoch: ready.epoch };
      delete params.keyId;
      let outcome: SessionOutcome;
      try {
        outcome = await this.hub.run({
          sessionId: new Uint8Array(randomBytes(32)), protocol, keyId: input.keyId,
          parties: signers.map((m) => this.party(m.nodeId, m.index)), params: encodeBlob('sign-params', { keyId: input.keyId, ...params }), timeoutMs: this.timeouts.signMs,
        });
      } finally {
        slot.release();
      }
      if (outcome.ok) {
        const results = [...outcome.results.values()].map((r) => decodeBlob<{ signatures: string[]; recoveryIds?: number[]; publicKey: string }>('sign-result', r));
        if (new Set(results.map((r) => JSON.stringify(r))).size !== 1) throw new KeyServiceError('failed', 'signers returned different signatures');
        return { signatures: results[0]!.signatures, recoveryIds: results[0]!.recoveryIds ?? [], publicKey: results[0]!.publicKey, signers: signers.map((s) => s.nodeId) };
      }
      last = outcome;
      // A refusal on authorization is final: another subset would refuse too.
      if (outcome.code === 'party_failed' && outcome.reports.some((r) => REFUSALS.has(r.code))) {
        throw new KeyServiceError('invalid', `refused by the nodes: ${outcome.reports.map((r) => `${r.code}: ${r.message}`).join('; ')}`);
      }
      // Nodes retired OT pairs after an abort: a fresh setup (new keys and Δ) lets the pairs sign again.
      if (!outcome.ok && outcome.code === 'party_failed' && outcome.reports.some((r) => r.code === 'ot_retired')) {
        this.log.warn({ keyId: input.keyId, attempt }, 'OT pairs were retired; running a new OT setup');
        ready = await this.serialize(key.keyId, () => this.otSetup(ready));
        continue;
      }
      this.log.warn({ keyId: input.keyId, attempt, culprits: outcome.culprits, code: outcome.code }, 'signing attempt failed; retrying without the culprits');
      if (!outcome.culprits.length) break;
      for (const c of outcome.culprits) excluded.add(c);
    }
    throw new KeyServiceError('failed', `signing failed: ${last && !last.ok ? last.message : 'no qualified subset left'}`, last && !last.ok ? last.culprits : []);
  }

  /**
   * `trustLog` and `reshareRequest` (hex) are the customer's own signed material (docs/trust.md
   * "Committees"): a self or customer_tee target seats the customer's node its request names.
   */
  async reshare(input: { keyId: string; nodeIds?: string[]; threshold?: number; targetTier?: TierName; trustLog?: string[]; reshareRequest?: string | undefined }): Promise<KeyRecord> {
    return this.serialize(input.keyId, async () => {
      const key = await this.get(input.keyId);
      if (key.state !== 'active' && key.state !== 'needs_attention') throw new KeyServiceError('conflict', `key ${input.keyId} is ${key.state}`);
      const roster = this.rosterHex();
      const asked = requestedCommittee(input.reshareRequest);
      const tier = input.targetTier ?? (key.tier as TierName);
      let target: { nodeIds: string[]; threshold: number };
      try {
        target = input.nodeIds?.length
          ? { nodeIds: input.nodeIds, threshold: input.threshold ?? key.threshold }
          : asked.nodeIds
            ? { nodeIds: asked.nodeIds, threshold: thresholdFor(tier, asked.nodeIds.length) }
            : input.targetTier || asked.customerNodeId
              ? committeeFor(tier, key.owner, this.nodes.list(), this.roster!.roster, asked.customerNodeId)
              : { nodeIds: key.committee.map((m) => m.nodeId), threshold: key.threshold };
      } catch (err) {
        if (err instanceof PolicyError) throw new KeyServiceError('unavailable', err.message);
        throw err;
      }
      const dealers = key.committee.filter((m) => this.nodes.isAttached(m.nodeId)).sort((a, b) => Number(target.nodeIds.includes(b.nodeId)) - Number(target.nodeIds.includes(a.nodeId))).slice(0, key.threshold);
      if (dealers.length < key.threshold) throw new KeyServiceError('unavailable', `need ${key.threshold} attached members of the current committee`);
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
      if (!oldPkg) throw new KeyServiceError('unavailable', 'the public package of this epoch is not known');
      const newEpoch = key.epoch + 1;
      await this.keys.put({ ...key, state: 'resharing', updatedAtMs: Date.now() });
      const outcome = await this.hub.run({
        sessionId: new Uint8Array(randomBytes(32)), protocol: Protocol.RESHARE, keyId: key.keyId,
        parties: union.map((nodeId, i) => this.party(nodeId, i + 1)),
        params: encodeBlob('reshare-params', {
          keyId: key.keyId, owner: key.owner, oldPkg, newEpoch, newThreshold: target.threshold, members, tier, roster,
          ...(input.trustLog?.length ? { trustLog: input.trustLog } : {}), ...(input.reshareRequest ? { reshareRequest: input.reshareRequest } : {}),
        } satisfies ReshareSessionParams),
        timeoutMs: this.timeouts.reshareMs,
      });
      const pkg = this.agreedPackage(outcome, 'reshare-result');
      if (!pkg || pkg.groupKey !== key.publicKey) {
        // A refusal (an unverified committee, say) says which node refused and why.
        const refused = !outcome.ok && outcome.code === 'party_failed' && outcome.reports.some((r) => REFUSALS.has(r.code));
        const problem = outcome.ok ? 'reshare results disagree' : refused ? `refused by the nodes: ${outcome.reports.map((r) => `${r.code}: ${r.message}`).join('; ')}` : outcome.message;
        await this.keys.put({ ...key, state: 'needs_attention', problem: `reshare to epoch ${newEpoch} failed: ${problem}`, updatedAtMs: Date.now() });
        for (const nodeId of target.nodeIds) void this.epochSession(Protocol.ABANDON_EPOCH, key.keyId, newEpoch, nodeId).catch(() => undefined);
        this.log.warn({ keyId: key.keyId, problem }, 'reshare failed; the old epoch stays in force');
        throw new KeyServiceError('failed', `reshare failed: ${problem}`, outcome.ok ? [] : outcome.culprits);
      }
      // Every receiver stored the pending epoch before reporting: commit here, then tell the nodes.
      const committed: KeyRecord = {
        ...key, epoch: newEpoch, rotation: key.rotation + 1, threshold: target.threshold,
        committee: target.nodeIds.map((nodeId, i) => ({ nodeId, index: i + 1 })), state: 'active', problem: undefined,
        tier: input.targetTier ?? key.tier, pkg, updatedAtMs: Date.now(),
      };
      await this.keys.put(committed);
      // Every member of the old and the new committee hears of the commit: receivers promote their
      // pending share, members that left delete theirs. A node that is away now refuses the old epoch
      // anyway (every session names the epoch) and deletes it on the next commit it hears.
      const everyone = [...new Set([...key.committee.map((m) => m.nodeId), ...target.nodeIds])].filter((n) => this.nodes.isAttached(n));
      const notified = await Promise.allSettled(everyone.map((nodeId) => this.epochSession(Protocol.COMMIT_EPOCH, key.keyId, newEpoch, nodeId)));
      const missed = everyone.filter((_, i) => notified[i]!.status === 'rejected');
      if (missed.length) this.log.warn({ keyId: key.keyId, missed }, 'some nodes did not confirm the epoch commit');
      this.log.info({ keyId: key.keyId, epoch: newEpoch, committee: target.nodeIds }, 'reshare committed');
      return this.otSetup(committed);
    });
  }

  private async epochSession(protocol: Protocol, keyId: string, epoch: number, nodeId: string): Promise<void> {
    const outcome = await this.hub.run({
      sessionId: new Uint8Array(randomBytes(32)), protocol, keyId, parties: [this.party(nodeId, 1)],
      params: encodeBlob('epoch-params', { keyId, epoch } satisfies EpochSessionParams), timeoutMs: 10_000,
    });
    if (!outcome.ok) throw new KeyServiceError('failed', outcome.message);
  }
}

const REFUSALS = new Set([
  'bad_intent', 'wrong_organization', 'unknown_api_key', 'bad_intent_signature', 'intent_expired', 'digest_mismatch', 'wrong_scheme', 'wrong_sender',
  'bad_template', 'foreign_input', 'wrong_inputs', 'wrong_outputs', 'fee_ceiling', 'unsupported_scheme',
  'intent_already_used', 'intent_expiry_required', 'intent_expiry_too_far', 'input_amounts_required', 'wrong_input_amounts',
  // docs/trust.md
  'bad_trust_log', 'bad_creation_request', 'bad_reshare_request', 'bad_roster', 'stale_roster', 'unverified_committee', 'bad_committee', 'end_user_token_required', 'bad_end_user_token', 'wrong_end_user', 'token_intent_mismatch',
]);

