// Retention of member-auth records (docs/platform/member-auth.md "Retention"): a periodic, bounded sweep
// that deletes what can no longer matter, as the webhook engine prunes old deliveries
// (api/webhooks/delivery-engine.ts `prune`, `startPruning`): one instance at a time, by an injected clock.
//
// The rule: a record goes only once its absence can neither re-open a replay nor change what a caller
// could still do. So a replay marker (used challenge, accepted proof) outlives the longest time its proof
// could pass its own checks; a consumed refresh credential, a session and their family outlive the
// family's use (so a replayed credential still revokes a family that could be used); a Hosted Auth
// authorization whose result made a session is kept while that session's family could be used (so a
// replayed result still revokes it). Member bindings and hosted members are never swept: they are
// identities, and a disabled one must stay disabled.
//
// Records indexed by the time they may go (`retire_after`) are read in that order, so a run reads only
// what is due. The others (families, sessions, refresh credentials, member actions, signing sessions) are
// walked a bounded slice per run, resuming where the last run stopped. Each collection deletes at most
// `batch` records per run. Only counts are logged, never an id, digest or secret.
import type { Op, RecordRepository } from '../store/record-repository.ts';
import type { CollectionName } from '../store/collection.ts';
import { SESSION_COLLECTIONS as S, retireIndex, type RefreshCredentialRecord, type SessionFamilyRecord } from './member-session-records.ts';
import { familyIndex } from './member-sessions.ts';
import { HOSTED_COLLECTIONS as H, retireIndexOf, type HostedAuthorizationRecord } from './hosted-records.ts';
import { ACCOUNT_CENTER_COLLECTIONS as AC, handoffRetireIndex } from './account-center-records.ts';
import { ACTION_COLLECTIONS as A, MEMBER_ACTION_LIMITS, pendingIndex, type MemberActionRecord, type SigningSessionRecord } from './member-action-records.ts';

/** Seconds, beyond the moment a record stops deciding anything, that it is still kept (clock skew, support, audit reading). */
export const RETENTION_GRACE_S = 86_400;

/** Defaults of the sweep (API_MEMBER_AUTH_SWEEP_INTERVAL_S, API_MEMBER_AUTH_SWEEP_BATCH). */
export const RETENTION_DEFAULTS = { intervalS: 3600, batch: 500 } as const;

export interface RetentionLog { info(obj: object, msg: string): void; warn(obj: object, msg: string): void }

export interface MemberAuthRetentionOptions {
  store: RecordRepository;
  /** Milliseconds since the epoch (the platform's clock). */
  clock: () => number;
  /** Records one collection deletes at most per run (default 500). */
  batch?: number;
  /** Records a walked collection reads at most per run (default 10 × batch). */
  scan?: number;
  log?: RetentionLog | undefined;
}

/** What one run removed, per kind; `deferred`: authorizations kept longer because their session family is still usable. */
export interface SweepCounts {
  challenges: number;
  accepted_proofs: number;
  exchanges: number;
  families: number;
  sessions: number;
  refresh_credentials: number;
  hosted_authorizations: number;
  account_center_handoffs: number;
  member_actions: number;
  signing_sessions: number;
  deferred: number;
}

const emptyCounts = (): SweepCounts => ({
  challenges: 0, accepted_proofs: 0, exchanges: 0, families: 0, sessions: 0, refresh_credentials: 0,
  hosted_authorizations: 0, account_center_handoffs: 0, member_actions: 0, signing_sessions: 0, deferred: 0,
});

const LOCK = 'member-auth-retention';
const GRACE_MS = RETENTION_GRACE_S * 1000;

/**
 * When a family stops mattering: its sessions and refresh credentials can no longer be used after its
 * absolute end, or after it was revoked; the grace follows either.
 */
export function familyRetireAt(f: Pick<SessionFamilyRecord, 'status' | 'expires_at' | 'revoked_at'>): number {
  const end = f.status === 'revoked' && f.revoked_at ? Math.min(Date.parse(f.revoked_at), Date.parse(f.expires_at)) : Date.parse(f.expires_at);
  return end + GRACE_MS;
}

/** Whether a family can still give a session or a refresh now (the answer a replay must keep revoking). */
const familyUsable = (f: SessionFamilyRecord | undefined, now: number) => !!f && f.status === 'active' && Date.parse(f.expires_at) > now;

/** A member action matters until its signing session could have been used: the action's end, a signing session's life, then the grace. */
export const actionRetireAt = (a: Pick<MemberActionRecord, 'expires_at'>) => Date.parse(a.expires_at) + MEMBER_ACTION_LIMITS.signingLifetime * 1000 + GRACE_MS;
export const signingRetireAt = (s: Pick<SigningSessionRecord, 'expires_at'>) => Date.parse(s.expires_at) + GRACE_MS;

export class MemberAuthRetention {
  private readonly batch: number;
  private readonly scan: number;
  /** Where each walked collection's next run resumes (the last id read); undefined: from the start. */
  private readonly cursors = new Map<string, string | undefined>();

  constructor(private readonly o: MemberAuthRetentionOptions) {
    this.batch = Math.max(1, o.batch ?? RETENTION_DEFAULTS.batch);
    this.scan = Math.max(this.batch, o.scan ?? this.batch * 10);
  }

  /** One run; another instance sweeping now does this run's work (zero counts here). */
  async sweep(): Promise<SweepCounts> {
    const r = await this.o.store.tryExclusive(LOCK, () => this.sweepNow());
    const counts = r.ran ? r.value : emptyCounts();
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    if (total > 0) this.o.log?.info({ removed: counts }, 'member-auth retention sweep');
    return counts;
  }

  private async sweepNow(): Promise<SweepCounts> {
    const now = this.o.clock();
    const nowIso = new Date(now).toISOString();
    const c = emptyCounts();
    c.challenges = await this.retireIndexed(S.challenges, nowIso, (r) => [S.challenges.delOp(r.nonce_sha256, retireIndex(r.retire_after))]);
    c.accepted_proofs = await this.retireIndexed(S.acceptedProofs, nowIso, (r) => [S.acceptedProofs.delOp(r.id, retireIndex(r.retire_after))]);
    c.exchanges = await this.retireIndexed(S.exchanges, nowIso, (r) => [S.exchanges.delOp(r.id, retireIndex(r.retire_after))]);
    c.account_center_handoffs = await this.retireIndexed(AC.handoffs, nowIso, (h) => [
      AC.handoffs.delOp(h.id, handoffRetireIndex(h)),
      ...(h.result_sha256 ? [AC.results.delOp(h.result_sha256)] : []),
    ]);
    const hosted = await this.retireAuthorizations(now, nowIso);
    c.hosted_authorizations = hosted.removed;
    c.deferred = hosted.deferred;

    // Families before their sessions and credentials: a session or credential whose family is gone goes too.
    c.families = await this.walk(S.families.name, async (id, f: SessionFamilyRecord) => (familyRetireAt(f) < now ? [S.families.delOp(id, familyIndex(f))] : []));
    const familyGone = async (familyId: string): Promise<boolean> => {
      const f = await S.families.in(this.o.store).get(familyId);
      return !f || familyRetireAt(f) < now;
    };
    c.sessions = await this.walk(S.sessions.name, async (id, s: { family: string }) => ((await familyGone(s.family)) ? [S.sessions.delOp(id)] : []));
    c.refresh_credentials = await this.walk(S.refresh.name, async (id, r: RefreshCredentialRecord) => ((await familyGone(r.family)) ? [S.refresh.delOp(id)] : []));
    c.member_actions = await this.walk(A.actions.name, async (id, a: MemberActionRecord) => (actionRetireAt(a) < now ? [A.actions.delOp(id, pendingIndex(a))] : []));
    c.signing_sessions = await this.walk(A.signing.name, async (id, s: SigningSessionRecord) => (signingRetireAt(s) < now ? [A.signing.delOp(id)] : []));
    return c;
  }

  /** Records of a `retire_after`-indexed collection whose time has come, oldest first, at most `batch`. */
  private async retireIndexed<T extends { retire_after: string }>(name: CollectionName<T>, nowIso: string, ops: (r: T) => Op[]): Promise<number> {
    const due = (await name.in(this.o.store).byIndex('', this.batch)).filter((r) => r.retire_after < nowIso);
    if (due.length === 0) return 0;
    await this.o.store.batch(due.flatMap(ops));
    return due.length;
  }

  /**
   * Hosted Auth authorizations past their retire_after. One whose result made a session family that can
   * still be used is re-indexed to that family's end instead: a replayed result must keep revoking it.
   */
  private async retireAuthorizations(now: number, nowIso: string): Promise<{ removed: number; deferred: number }> {
    const due = (await H.authorizations.in(this.o.store).byIndex('', this.batch)).filter((a) => a.retire_after < nowIso);
    const ops: Op[] = [];
    let removed = 0;
    let deferred = 0;
    for (const a of due) {
      const family = a.status === 'exchanged' && a.family ? await S.families.in(this.o.store).get(a.family) : undefined;
      if (familyUsable(family, now)) {
        const later: HostedAuthorizationRecord = { ...a, retire_after: new Date(familyRetireAt(family!)).toISOString() };
        ops.push(H.authorizations.putOp(a.id, later, { index: retireIndexOf(later), unindex: retireIndexOf(a) }));
        deferred++;
        continue;
      }
      ops.push(H.authorizations.delOp(a.id, retireIndexOf(a)), ...(a.result_sha256 ? [H.results.delOp(a.result_sha256)] : []));
      removed++;
    }
    if (ops.length) await this.o.store.batch(ops);
    return { removed, deferred };
  }

  /**
   * A bounded slice of a collection in id order, from where the last run stopped: at most `scan` records
   * read and `batch` deleted. At the end of the collection the next run starts again from the beginning.
   */
  private async walk<T>(collection: string, due: (id: string, value: T) => Promise<Op[]>): Promise<number> {
    const ops: Op[] = [];
    let removed = 0;
    let read = 0;
    let last: string | undefined;
    const after = this.cursors.get(collection);
    for await (const { id, value } of this.o.store.entries<T>(collection, { ...(after !== undefined ? { after } : {}), limit: this.scan })) {
      read++;
      last = id;
      const del = await due(id, value);
      if (del.length) {
        ops.push(...del);
        removed++;
        if (removed >= this.batch) break;
      }
    }
    // A full slice may have more behind it: resume after the last record read; a short one reached the end.
    this.cursors.set(collection, removed >= this.batch || read >= this.scan ? last : undefined);
    if (ops.length) await this.o.store.batch(ops);
    return removed;
  }

  /** Runs `sweep` now and then every `intervalMs` until the returned function is called (as `startPruning`). */
  start(intervalMs = RETENTION_DEFAULTS.intervalS * 1000): () => void {
    let running = false;
    const tick = () => {
      if (running) return;
      running = true;
      this.sweep()
        .catch((err: unknown) => this.o.log?.warn({ category: (err as { code?: string }).code ?? 'sweep_failed' }, 'member-auth retention sweep failed'))
        .finally(() => { running = false; });
    };
    const timer = setInterval(tick, intervalMs);
    timer.unref();
    tick();
    return () => clearInterval(timer);
  }
}

