// Tenants, their sandbox and production workspaces, and workspace bearer keys (docs/platform/tenancy.md).
// A bearer key is `svc_test_<key id>_<secret>` or `svc_live_<key id>_<secret>`; only its SHA-256 is
// stored and it is shown once. Live keys carry an Ed25519 public key: production mutations must also
// bear an RFC 9421 request signature under it.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { hexToBytes } from '@noble/hashes/utils.js';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { isRole, type Role } from './permissions.ts';
import { matchTotp } from './totp.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { isValidEd25519PublicKeyHex } from '../../common/ed25519.ts';
import { BEARER_KEYS, BEARER_KEY_USES, TENANTS, TOTP_FAILURES, TOTP_LAST_STEP, WORKSPACES } from './collections.ts';
import type { Actor, AuditLog } from './audit-log.ts';

export type Environment = 'sandbox' | 'production';

export interface TenantRecord { id: string; name: string; created_at: string }
/** `suspended`: its keys read and an owner or admin may reactivate it, nothing else (docs/platform/tenancy.md). */
export type WorkspaceStatus = 'active' | 'suspended';
/** `status` absent: active (workspaces made before suspension existed). */
export interface WorkspaceRecord { id: string; tenant: string; environment: Environment; name: string; created_at: string; status?: WorkspaceStatus; updated_at?: string }
export interface BearerKeyRecord {
  id: string;
  tenant: string;
  workspace: string;
  environment: Environment;
  role: Role;
  label: string | null;
  token_sha256: string;
  /** Ed25519 public key (hex) for request signatures; required for live keys. */
  signing_public_key: string | null;
  /** TOTP secret (hex) of the key's owner, for MFA verification; null when not enrolled. */
  totp_secret: string | null;
  created_at: string;
  revoked: boolean;
}

export interface Principal {
  tenant: string;
  workspace: string;
  environment: Environment;
  keyId: string;
  role: Role;
  signingPublicKey: Uint8Array | null;
  /** The key's workspace's status when the request was authenticated. */
  workspaceStatus: WorkspaceStatus;
}

/** When a bearer key last authenticated a request (collection `bearer_key_uses`, id = key id), to the minute. */
export interface BearerKeyUse { key: string; last_used_at: string }
/** A use is written at most once per this many milliseconds per key and process: a read does not become a write. */
const USE_GRANULARITY_MS = 60_000;
/** Index of bearer keys by workspace: `<workspace>`, so a walk under `<workspace> NUL` is by key id (creation order). */
const keyIndex = (k: { workspace: string }) => [k.workspace];
const KEY_INDEX_VERSION = 1;

/** 1 to 64 code points, none a control character or an angle bracket (a name lands on pages and in mail). */
const validWorkspaceName = (n: string) => {
  const cps = [...n].map((c) => c.codePointAt(0)!);
  return cps.length >= 1 && cps.length <= 64 && cps.every((cp) => cp >= 0x20 && !(cp >= 0x7f && cp <= 0x9f) && cp !== 0x3c && cp !== 0x3e);
};

const sha256hex = (s: string) => createHash('sha256').update(s).digest('hex');

/** The last TOTP time step accepted for a key's factor (collection `totp_last_step`, id = key id). */
export interface TotpLastStep { key: string; step: number; accepted_at: string }
export interface TotpFailures { key: string; since: number; count: number }
const TOTP_MAX_FAILURES = 5;
const TOTP_FAILURE_WINDOW_S = 300;

export class TenancyService {
  /** Per key, when this process last wrote its use. */
  private readonly usesWritten = new Map<string, number>();

  constructor(private readonly store: RecordRepository, private readonly clock: () => number = Date.now) {}

  /** Gives keys made before the workspace index their entry; run once the store opens (api/platform.ts). */
  async prepareIndexes(): Promise<void> {
    await BEARER_KEYS.in(this.store).reindex(KEY_INDEX_VERSION, keyIndex);
  }

  private iso(): string {
    return new Date(this.clock()).toISOString();
  }

  async createTenant(name: string): Promise<{ tenant: TenantRecord; sandbox: WorkspaceRecord; production: WorkspaceRecord }> {
    const { ops, ...made } = this.tenantOps(name);
    await this.store.batch(ops);
    return made;
  }

  /** The writes that make a tenant with its two workspaces, for a caller that commits them with its own (api/customers/). */
  tenantOps(name: string): { tenant: TenantRecord; sandbox: WorkspaceRecord; production: WorkspaceRecord; ops: Op[] } {
    if (!name || name.length > 120) throw new CustodyError('validation_failed', 'tenant name must be 1 to 120 characters');
    const tenant: TenantRecord = { id: newId('ten'), name, created_at: this.iso() };
    const ws = (environment: Environment): WorkspaceRecord => ({ id: newId('wks'), tenant: tenant.id, environment, name: environment, created_at: tenant.created_at });
    const sandbox = ws('sandbox');
    const production = ws('production');
    return {
      tenant, sandbox, production, ops: [
        TENANTS.putOp(tenant.id, tenant),
        WORKSPACES.putOp(sandbox.id, sandbox, { index: [`${tenant.id}\x00${sandbox.id}`] }),
        WORKSPACES.putOp(production.id, production, { index: [`${tenant.id}\x00${production.id}`] }),
      ],
    };
  }

  async workspace(id: string): Promise<WorkspaceRecord | undefined> {
    return WORKSPACES.in(this.store).get(id);
  }

  tenant(id: string): Promise<TenantRecord | undefined> {
    return TENANTS.in(this.store).get(id);
  }

  /** A tenant's workspaces (two: sandbox and production). */
  workspaces(tenant: string): Promise<WorkspaceRecord[]> {
    return WORKSPACES.in(this.store).byIndex(`${tenant}\x00`, 10);
  }

  /** Operator: a revoked key authenticates nothing from its next request on; the record is kept. */
  async revokeKey(keyId: string, extra: (before: BearerKeyRecord, after: BearerKeyRecord) => Op[] = () => []): Promise<BearerKeyRecord> {
    const key = await BEARER_KEYS.in(this.store).get(keyId);
    if (!key) throw new CustodyError('not_found', `no platform key ${keyId}`);
    if (key.revoked) throw new CustodyError('conflict', `platform key ${keyId} is already revoked`);
    const revoked: BearerKeyRecord = { ...key, revoked: true };
    await this.store.batch([BEARER_KEYS.putOp(keyId, revoked, { index: keyIndex(revoked) }), ...extra(key, revoked)]);
    return revoked;
  }

  async createKey(workspaceId: string, role: string, opts: { label?: string; signingPublicKey?: string; mfa?: boolean; extra?: (key: BearerKeyRecord) => Op[] } = {}): Promise<{ key: BearerKeyRecord; token: string; totpSecret?: string }> {
    const ws = await this.workspace(workspaceId);
    if (!ws) throw new CustodyError('not_found', `no workspace ${workspaceId}`);
    if (!isRole(role)) throw new CustodyError('validation_failed', `unknown role ${role}`);
    if (opts.signingPublicKey !== undefined && !/^[0-9a-f]{64}$/.test(opts.signingPublicKey)) throw new CustodyError('validation_failed', 'signing public key must be 64 lowercase hex digits');
    if (opts.signingPublicKey !== undefined && !isValidEd25519PublicKeyHex(opts.signingPublicKey)) throw new CustodyError('validation_failed', 'signing public key is not a valid Ed25519 public key (off the curve, of small order, or not canonically encoded)');
    if (ws.environment === 'production' && !opts.signingPublicKey) throw new CustodyError('validation_failed', 'a production key needs an Ed25519 signing public key');
    const id = newId('key');
    const token = `svc_${ws.environment === 'production' ? 'live' : 'test'}_${id}_${randomBytes(32).toString('base64url')}`;
    const totpSecret = opts.mfa ? randomBytes(20).toString('hex') : undefined;
    const key: BearerKeyRecord = {
      id, tenant: ws.tenant, workspace: ws.id, environment: ws.environment, role, label: opts.label ?? null,
      token_sha256: sha256hex(token), signing_public_key: opts.signingPublicKey ?? null, totp_secret: totpSecret ?? null, created_at: this.iso(), revoked: false,
    };
    // `extra`: writes that go with the key, e.g. the operator API's audit entry.
    await this.store.batch([BEARER_KEYS.putOp(id, key, { index: keyIndex(key) }), ...(opts.extra?.(key) ?? [])]);
    return { key, token, ...(totpSecret ? { totpSecret } : {}) };
  }

  /** The principal a bearer token names, or undefined for any bad, unknown or revoked token. */
  async authenticate(token: string): Promise<Principal | undefined> {
    const m = /^svc_(test|live)_(key_[0-9a-f]{26})_[A-Za-z0-9_-]{43}$/.exec(token);
    if (!m) return undefined;
    const key = await BEARER_KEYS.in(this.store).get(m[2]!);
    if (!key || key.revoked) return undefined;
    const given = Buffer.from(sha256hex(token), 'hex');
    if (!timingSafeEqual(given, Buffer.from(key.token_sha256, 'hex'))) return undefined;
    if ((m[1] === 'live') !== (key.environment === 'production')) return undefined;
    const ws = await this.workspace(key.workspace);
    if (!ws) return undefined;
    await this.recordUse(key.id);
    return {
      tenant: key.tenant, workspace: key.workspace, environment: key.environment, keyId: key.id, role: key.role,
      signingPublicKey: key.signing_public_key ? hexToBytes(key.signing_public_key) : null, workspaceStatus: ws.status ?? 'active',
    };
  }

  /**
   * Notes that a key authenticated a request now. Kept beside the key, never in its record, so a use
   * cannot race a revocation into undoing it; written at most once a minute per key and process.
   */
  private async recordUse(keyId: string): Promise<void> {
    const now = this.clock();
    const last = this.usesWritten.get(keyId);
    if (last !== undefined && now - last < USE_GRANULARITY_MS && now >= last) return;
    this.usesWritten.set(keyId, now);
    await BEARER_KEY_USES.in(this.store).put(keyId, { key: keyId, last_used_at: new Date(now).toISOString() } satisfies BearerKeyUse);
  }

  /** A workspace's keys, active and revoked, by id (creation order), after `after`: up to `limit`. */
  async keysOf(workspace: string, after: string | undefined, limit: number): Promise<(BearerKeyRecord & { last_used_at: string | null })[]> {
    const keys = await BEARER_KEYS.in(this.store).byIndexAfter(`${workspace}\x00`, after, limit);
    return Promise.all(keys.map(async (k) => ({ ...k, last_used_at: (await BEARER_KEY_USES.in(this.store).get(k.id))?.last_used_at ?? null })));
  }

  /** Whether a workspace has an active key. */
  async hasActiveKey(workspace: string): Promise<boolean> {
    for (let after: string | undefined; ;) {
      const page = await BEARER_KEYS.in(this.store).byIndexAfter(`${workspace}\x00`, after, 100);
      if (page.some((k) => !k.revoked)) return true;
      if (page.length < 100) return false;
      after = page[page.length - 1]!.id;
    }
  }

  /**
   * PATCH /v1/workspaces/{id}: the key's own workspace's name and status, audited (`workspace.update`).
   * Nothing to change changes nothing and writes no entry.
   */
  async updateWorkspace(scope: { tenant: string; workspace: string }, actor: Actor, audit: AuditLog, id: string, patch: { name?: string; status?: WorkspaceStatus }): Promise<WorkspaceRecord> {
    return this.store.exclusive(`workspace:${id}`, async () => {
      const ws = await this.workspace(id);
      // Another tenant's workspace is answered as one that does not exist.
      if (!ws || ws.tenant !== scope.tenant) throw new CustodyError('not_found', `no workspace ${id}`);
      // Environments are separate (docs/security.md): a key changes only its own workspace.
      if (ws.id !== scope.workspace) throw new CustodyError('forbidden', 'a key changes only its own workspace; use a key of that workspace');
      if (patch.name !== undefined && !validWorkspaceName(patch.name)) throw new CustodyError('validation_failed', 'name: 1 to 64 characters, no control characters or angle brackets');
      const before = { name: ws.name, status: ws.status ?? 'active' };
      const after = { name: patch.name ?? before.name, status: patch.status ?? before.status };
      if (after.name === before.name && after.status === before.status) return ws;
      const next: WorkspaceRecord = { ...ws, ...after, updated_at: this.iso() };
      await this.store.batch([WORKSPACES.putOp(ws.id, next, { index: [`${ws.tenant}\x00${ws.id}`] }), audit.op(scope, actor, 'workspace.update', ws.id, before, after)]);
      return next;
    });
  }

  /**
   * Accepts a TOTP code of the key's factor at most once: the step it belongs to (current, or one either
   * side) must be after the last step accepted for this key, which is then stored. The read, the check
   * and the write run under one lock per key, so of two concurrent calls with one code only one passes.
   */
  async checkTotp(keyId: string, code: string, nowSeconds: number): Promise<boolean> {
    // The store's lock: a factor's last step changes under it only, on every instance.
    return this.store.exclusive(`totp:${keyId}`, async () => {
      const key = await BEARER_KEYS.in(this.store).get(keyId);
      if (!key?.totp_secret || key.revoked) return false;
      // Six digits fall to guessing without a bound: after TOTP_MAX_FAILURES wrong codes in one window
      // the key is refused every code, right or wrong, until the window ends.
      const failures = await TOTP_FAILURES.in(this.store).get(keyId);
      const current = failures && nowSeconds - failures.since < TOTP_FAILURE_WINDOW_S ? failures : undefined;
      if (current && current.count >= TOTP_MAX_FAILURES) {
        throw new CustodyError('rate_limited', `too many wrong verification codes for this key; try again in ${TOTP_FAILURE_WINDOW_S - (nowSeconds - current.since)} s`);
      }
      const last = await TOTP_LAST_STEP.in(this.store).get(keyId);
      const step = matchTotp(hexToBytes(key.totp_secret), code, nowSeconds, last?.step ?? -1);
      if (step === undefined) {
        await TOTP_FAILURES.in(this.store).put(keyId, { key: keyId, since: current?.since ?? nowSeconds, count: (current?.count ?? 0) + 1 } satisfies TotpFailures);
        return false;
      }
      await this.store.batch([
        TOTP_LAST_STEP.putOp(keyId, { key: keyId, step, accepted_at: this.iso() } satisfies TotpLastStep),
        TOTP_FAILURES.delOp(keyId),
      ]);
      return true;
    });
  }
}
