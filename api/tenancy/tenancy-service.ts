// Tenants, their sandbox and production workspaces, and workspace bearer keys (docs/platform/tenancy.md).
// A bearer key is `svc_test_<key id>_<secret>` or `svc_live_<key id>_<secret>`; only its SHA-256 is
// stored and it is shown once. Live keys carry an Ed25519 public key: production mutations must also
// bear an RFC 9421 request signature under it.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { hexToBytes } from '@noble/hashes/utils.js';
import type { RecordStore } from '../store/record-store.ts';
import { newId } from '../store/ids.ts';
import { isRole, type Role } from './permissions.ts';
import { verifyTotp } from './totp.ts';
import { ApiError } from '../errors.ts';

export type Environment = 'sandbox' | 'production';

export interface TenantRecord { id: string; name: string; created_at: string }
export interface WorkspaceRecord { id: string; tenant: string; environment: Environment; name: string; created_at: string }
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
}

const sha256hex = (s: string) => createHash('sha256').update(s).digest('hex');

export class TenancyService {
  constructor(private readonly store: RecordStore, private readonly clock: () => number = Date.now) {}

  private iso(): string {
    return new Date(this.clock()).toISOString();
  }

  async createTenant(name: string): Promise<{ tenant: TenantRecord; sandbox: WorkspaceRecord; production: WorkspaceRecord }> {
    if (!name || name.length > 120) throw new ApiError(422, 'validation_failed', 'tenant name must be 1 to 120 characters');
    const tenant: TenantRecord = { id: newId('ten'), name, created_at: this.iso() };
    const ws = (environment: Environment): WorkspaceRecord => ({ id: newId('wks'), tenant: tenant.id, environment, name: environment, created_at: tenant.created_at });
    const sandbox = ws('sandbox');
    const production = ws('production');
    await this.store.batch([
      { type: 'put', collection: 'tenants', id: tenant.id, value: tenant },
      { type: 'put', collection: 'workspaces', id: sandbox.id, value: sandbox, index: [`${tenant.id}\x00${sandbox.id}`] },
      { type: 'put', collection: 'workspaces', id: production.id, value: production, index: [`${tenant.id}\x00${production.id}`] },
    ]);
    return { tenant, sandbox, production };
  }

  async workspace(id: string): Promise<WorkspaceRecord | undefined> {
    return this.store.get<WorkspaceRecord>('workspaces', id);
  }

  async createKey(workspaceId: string, role: string, opts: { label?: string; signingPublicKey?: string; mfa?: boolean } = {}): Promise<{ key: BearerKeyRecord; token: string; totpSecret?: string }> {
    const ws = await this.workspace(workspaceId);
    if (!ws) throw new ApiError(404, 'not_found', `no workspace ${workspaceId}`);
    if (!isRole(role)) throw new ApiError(422, 'validation_failed', `unknown role ${role}`);
    if (opts.signingPublicKey !== undefined && !/^[0-9a-f]{64}$/.test(opts.signingPublicKey)) throw new ApiError(422, 'validation_failed', 'signing public key must be 64 lowercase hex digits');
    if (ws.environment === 'production' && !opts.signingPublicKey) throw new ApiError(422, 'validation_failed', 'a production key needs an Ed25519 signing public key');
    const id = newId('key');
    const token = `svc_${ws.environment === 'production' ? 'live' : 'test'}_${id}_${randomBytes(32).toString('base64url')}`;
    const totpSecret = opts.mfa ? randomBytes(20).toString('hex') : undefined;
    const key: BearerKeyRecord = {
      id, tenant: ws.tenant, workspace: ws.id, environment: ws.environment, role, label: opts.label ?? null,
      token_sha256: sha256hex(token), signing_public_key: opts.signingPublicKey ?? null, totp_secret: totpSecret ?? null, created_at: this.iso(), revoked: false,
    };
    await this.store.put('bearer_keys', id, key);
    return { key, token, ...(totpSecret ? { totpSecret } : {}) };
  }

  /** The principal a bearer token names, or undefined for any bad, unknown or revoked token. */
  async authenticate(token: string): Promise<Principal | undefined> {
    const m = /^svc_(test|live)_(key_[0-9a-f]{26})_[A-Za-z0-9_-]{43}$/.exec(token);
    if (!m) return undefined;
    const key = await this.store.get<BearerKeyRecord>('bearer_keys', m[2]!);
    if (!key || key.revoked) return undefined;
    const given = Buffer.from(sha256hex(token), 'hex');
    if (!timingSafeEqual(given, Buffer.from(key.token_sha256, 'hex'))) return undefined;
    if ((m[1] === 'live') !== (key.environment === 'production')) return undefined;
    return {
      tenant: key.tenant, workspace: key.workspace, environment: key.environment, keyId: key.id, role: key.role,
      signingPublicKey: key.signing_public_key ? hexToBytes(key.signing_public_key) : null,
    };
  }

  async checkTotp(keyId: string, code: string, nowSeconds: number): Promise<boolean> {
    const key = await this.store.get<BearerKeyRecord>('bearer_keys', keyId);
    if (!key?.totp_secret) return false;
    return verifyTotp(hexToBytes(key.totp_secret), code, nowSeconds);
  }
}
