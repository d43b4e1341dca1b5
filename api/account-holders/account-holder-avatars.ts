// Account holder avatars (platform-api.md "embedded:avatar"; docs/platform/account-holders.md
// "Avatars"): the logo flow's machinery (object store, direct upload to a signed URL, confirmation by
// magic bytes: adapters/uploaded-image.ts) applied to one image per holder. The image is never public:
// a read answers a presigned GET that lives 5 minutes.
import { randomBytes } from 'node:crypto';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import type { ObjectStore } from '../adapters/object-store.ts';
import { confirmUploadedImage, fromStore } from '../adapters/uploaded-image.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { AccountHolderService } from './account-holder-service.ts';
import type { AccountHolderRecord } from './account-holder-records.ts';
import { ACCOUNT_HOLDER_AVATARS, ACCOUNT_HOLDER_AVATAR_GRANTS } from './collections.ts';

export const MAX_AVATAR_BYTES = 2 * 1024 * 1024;
export const AVATAR_UPLOAD_TTL_MS = 15 * 60_000;
export const AVATAR_READ_TTL_MS = 5 * 60_000;

export interface AvatarGrantRecord { v: 1; tenant: string; workspace: string; account_holder_id: string; expires_at: string }
export interface AvatarRecord { v: 1; tenant: string; workspace: string; account_holder_id: string; object_key: string; content_type: string; size: number; confirmed_at: string }

export class AccountHolderAvatars {
  constructor(private readonly o: { store: RecordRepository; objects: ObjectStore; holders: AccountHolderService; audit: AuditLog; clock: () => number }) {}

  private async open(scope: Scope, id: string): Promise<AccountHolderRecord> {
    const h = await this.o.holders.get(scope, id);
    if (h.status === 'closed') throw new CustodyError('account_holder_closed', 'the account holder is closed; its avatar cannot change');
    return h;
  }

  async uploadUrl(scope: Scope, id: string, contentType: string, contentLength: number, origin: string) {
    const h = await this.open(scope, id);
    const expires = this.o.clock() + AVATAR_UPLOAD_TTL_MS;
    const object_key = `avatars/${randomBytes(16).toString('hex')}`;
    const upload_url = await fromStore(async () => this.o.objects.uploadUrl({ object_key, content_type: contentType, max_bytes: contentLength, expires_at: expires }, origin));
    const grant: AvatarGrantRecord = { v: 1, tenant: scope.tenant, workspace: scope.workspace, account_holder_id: h.id, expires_at: new Date(expires).toISOString() };
    await ACCOUNT_HOLDER_AVATAR_GRANTS.in(this.o.store).put(object_key, grant);
    return { upload_url, object_key, expires_at: grant.expires_at, max_bytes: contentLength };
  }

  /** Confirms an upload granted for this holder (by this workspace) as its avatar, once its bytes are an image. */
  async confirm(scope: Scope, actor: Actor, id: string, objectKey: string) {
    const h = await this.open(scope, id);
    const grant = /^avatars\/[0-9a-f]{32}$/.test(objectKey) ? await ACCOUNT_HOLDER_AVATAR_GRANTS.in(this.o.store).get(objectKey) : undefined;
    // Another holder's, workspace's or tenant's upload is answered as one that does not exist.
    if (!grant || grant.account_holder_id !== h.id || grant.workspace !== scope.workspace || grant.tenant !== scope.tenant) throw new CustodyError('validation_failed', 'object_key: no uploaded object with this key');
    const { bytes, content_type } = await confirmUploadedImage(this.o.objects, objectKey, MAX_AVATAR_BYTES);
    const before = await ACCOUNT_HOLDER_AVATARS.in(this.o.store).get(h.id);
    const a: AvatarRecord = { v: 1, tenant: scope.tenant, workspace: scope.workspace, account_holder_id: h.id, object_key: objectKey, content_type, size: bytes.length, confirmed_at: new Date(this.o.clock()).toISOString() };
    await this.o.store.batch([
      ACCOUNT_HOLDER_AVATARS.putOp(h.id, a),
      ACCOUNT_HOLDER_AVATAR_GRANTS.delOp(objectKey),
      this.o.audit.op(scope, actor, 'account_holder.avatar.set', h.id, before ? view(before) : null, view(a)),
    ]);
    return view(a);
  }

  async read(scope: Scope, id: string, origin: string) {
    const h = await this.o.holders.get(scope, id);
    const a = await ACCOUNT_HOLDER_AVATARS.in(this.o.store).get(h.id);
    if (!a) throw new CustodyError('not_found', `account holder ${h.id} has no avatar`);
    const expires = this.o.clock() + AVATAR_READ_TTL_MS;
    const url = await fromStore(async () => this.o.objects.downloadUrl(a.object_key, expires, origin));
    return { ...view(a), url, expires_at: new Date(expires).toISOString() };
  }

  async remove(scope: Scope, actor: Actor, id: string): Promise<void> {
    const h = await this.o.holders.get(scope, id);
    const a = await ACCOUNT_HOLDER_AVATARS.in(this.o.store).get(h.id);
    if (!a) throw new CustodyError('not_found', `account holder ${h.id} has no avatar`);
    await this.o.store.batch([ACCOUNT_HOLDER_AVATARS.delOp(h.id), this.o.audit.op(scope, actor, 'account_holder.avatar.delete', h.id, view(a), null)]);
  }
}

function view(a: AvatarRecord) {
  return { account_holder_id: a.account_holder_id, object_key: a.object_key, content_type: a.content_type, size: a.size, confirmed_at: a.confirmed_at };
}
