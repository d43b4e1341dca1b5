// A token's documents and who may read them (docs/platform/rwa.md "Documents and metadata"): the logo and
// avatar flows' machinery (object store, a direct PUT to a signed upload URL) applied to documents. A
// confirmation names the SHA-256 the uploader computed; the service checks the bytes' magic numbers (PDF or
// an image), their size and that hash, then records the document and appends it to the token's log. A
// document is never public: a read answers a presigned GET that lives 5 minutes, and only to a grantee, a
// workspace key named by its id or by its role in the token's document entitlements.
import { createHash, randomBytes } from 'node:crypto';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import type { ObjectStore } from '../../adapters/object-store.ts';
import { fromStore } from '../../adapters/uploaded-image.ts';
import { sniffImage } from '../../branding/sniff-image.ts';
import { collection } from '../../store/collection.ts';
import { newId } from '../../store/ids.ts';
import { ROLES } from '../../tenancy/permissions.ts';
import { BEARER_KEYS } from '../../tenancy/collections.ts';
import type { Actor, AuditLog } from '../../tenancy/audit-log.ts';
import type { Scope } from '../../tenancy/scope.ts';
import type { TokenService } from '../../tokenization/token-service.ts';
import type { TokenLog } from '../seams.ts';

export const DOCUMENT_PREFIX = 'rwa_documents';
/** A PDF document's cap; an image document's is the logo's (the embedded store's upload route parses images up to it). */
export const MAX_DOCUMENT_BYTES = 20 * 1024 * 1024;
export const MAX_IMAGE_DOCUMENT_BYTES = 5 * 1024 * 1024;
const maxBytesOf = (contentType: string) => (contentType === 'application/pdf' ? MAX_DOCUMENT_BYTES : MAX_IMAGE_DOCUMENT_BYTES);
export const DOCUMENT_UPLOAD_TTL_MS = 15 * 60_000;
export const DOCUMENT_READ_TTL_MS = 5 * 60_000;
export const DOCUMENT_TYPES = ['application/pdf', 'image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;
export const MAX_ENTITLEMENTS = 100;

/** The document type the bytes really are: a PDF (`%PDF-`) or one of the upload image types. */
export function sniffDocument(b: Buffer): string | undefined {
  if (b.length >= 5 && b.subarray(0, 5).toString('latin1') === '%PDF-') return 'application/pdf';
  return sniffImage(b);
}

export interface DocumentGrantRecord { v: 1; tenant: string; workspace: string; token_id: string; name: string; expires_at: string }
export interface DocumentRecord {
  v: 1; id: string; tenant: string; workspace: string; token_id: string; name: string; object_key: string;
  content_type: string; size: number; sha256: string; log_index: number; created_at: string;
}
/** One grantee's entitlement to a token's documents: all of them, or those listed; until `expires_at` when set. */
export interface EntitlementRecord { v: 1; tenant: string; workspace: string; token_id: string; grantee: string; document_ids: string[] | null; expires_at: string | null; granted_at: string }

/** Key the object key. */
export const DOCUMENT_GRANTS = collection<DocumentGrantRecord>('rwa_document_grants');
/** Key the document id; index `<token id> NUL obj NUL <object key>`. */
export const DOCUMENTS = collection<DocumentRecord>('rwa_documents');
/** Key `<token id> NUL <grantee>`. */
export const ENTITLEMENTS = collection<EntitlementRecord>('rwa_document_entitlements');

const DOC_ID = /^doc_[0-9a-z]{1,40}$/;
const OBJECT = new RegExp(`^${DOCUMENT_PREFIX}/[0-9a-f]{32}$`);
/** `key:<workspace key id>` or `role:<role>`. */
const GRANTEE = /^(key:[A-Za-z0-9_-]{1,64}|role:[a-z_]{1,32})$/;

const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);

/** Who is reading: the authenticated workspace key and its role. */
export interface Reader { keyId: string; role: string }

export interface EntitlementInput { grantee: string; document_ids?: string[] | undefined; expires_at?: string | undefined }

export class DocumentService {
  constructor(private readonly o: { store: RecordRepository; objects: ObjectStore; tokens: TokenService; log: TokenLog; audit: AuditLog; clock: () => number }) {}

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }


  async uploadUrl(scope: Scope, tokenId: string, input: { name: string; content_type: string; content_length: number }, origin: string) {
    const token = await this.o.tokens.get(scope, tokenId);
    if (!(DOCUMENT_TYPES as readonly string[]).includes(input.content_type)) throw invalid('content_type', `one of ${DOCUMENT_TYPES.join(', ')}`);
    const max = maxBytesOf(input.content_type);
    if (!Number.isInteger(input.content_length) || input.content_length < 1 || input.content_length > max) throw invalid('content_length', `1 to ${max} bytes for ${input.content_type}`);
    const expires = this.o.clock() + DOCUMENT_UPLOAD_TTL_MS;
    const object_key = `${DOCUMENT_PREFIX}/${randomBytes(16).toString('hex')}`;
    const upload_url = await fromStore(async () => this.o.objects.uploadUrl({ object_key, content_type: input.content_type, max_bytes: input.content_length, expires_at: expires }, origin));
    const grant: DocumentGrantRecord = { v: 1, tenant: scope.tenant, workspace: scope.workspace, token_id: token.id, name: input.name, expires_at: this.iso(expires) };
    await DOCUMENT_GRANTS.in(this.o.store).put(object_key, grant);
    return { upload_url, object_key, expires_at: grant.expires_at, max_bytes: input.content_length };
  }

  /**
   * Records an upload granted for this token as a document once its bytes are a PDF or an image of at most
   * MAX_DOCUMENT_BYTES whose SHA-256 is `sha256`; appends a `document` entry to the token's log first, so a
   * document the service shows is always in the log. Confirming the same object again answers the same document.
   */
  async confirm(scope: Scope, actor: Actor, tokenId: string, objectKey: string, sha256: string) {
    const token = await this.o.tokens.get(scope, tokenId);
    const log = this.o.log;
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw invalid('sha256', '64 lower-case hex digits');
    return this.o.store.exclusive(`rwa:documents:${token.id}`, async () => {
      const done = OBJECT.test(objectKey) ? await DOCUMENTS.in(this.o.store).byIndex(`${token.id}\x00obj\x00${objectKey}`, 1) : [];
      const prior = done[0];
      if (prior) {
        if (prior.sha256 !== sha256) throw invalid('sha256', 'does not match the confirmed document\'s SHA-256');
        return documentView(prior);
      }
      const grant = OBJECT.test(objectKey) ? await DOCUMENT_GRANTS.in(this.o.store).get(objectKey) : undefined;
      // Another token's, workspace's or tenant's upload is answered as one that does not exist.
      if (!grant || grant.token_id !== token.id || grant.workspace !== scope.workspace || grant.tenant !== scope.tenant) throw invalid('object_key', 'no uploaded object with this key');
      const size = await fromStore(() => this.o.objects.head(objectKey));
      if (size && size.size > MAX_DOCUMENT_BYTES) throw invalid('object_key', `the uploaded object is larger than ${MAX_DOCUMENT_BYTES} bytes`);
      const bytes = size ? await fromStore(() => this.o.objects.read(objectKey)) : undefined;
      if (!bytes) throw invalid('object_key', 'no uploaded object with this key');
      const content_type = sniffDocument(bytes);
      if (!content_type) throw invalid('object_key', 'the uploaded object is not a PDF, PNG, JPEG, WebP or GIF file');
      if (bytes.length > maxBytesOf(content_type)) throw invalid('object_key', `the uploaded ${content_type} is larger than ${maxBytesOf(content_type)} bytes`);
      const actual = createHash('sha256').update(bytes).digest('hex');
      if (actual !== sha256) throw invalid('sha256', 'the uploaded object\'s SHA-256 is another');
      const id = newId('doc', this.o.clock());
      const entry = await log.append(scope, token.id, { kind: 'document', body: { document_id: id, name: grant.name, content_type, size: bytes.length, sha256 } });
      const d: DocumentRecord = {
        v: 1, id, tenant: scope.tenant, workspace: scope.workspace, token_id: token.id, name: grant.name, object_key: objectKey,
        content_type, size: bytes.length, sha256, log_index: entry.index, created_at: this.iso(),
      };
      await this.o.store.batch([
        DOCUMENTS.putOp(id, d, { index: [`${token.id}\x00obj\x00${objectKey}`] }),
        DOCUMENT_GRANTS.delOp(objectKey),
        this.o.audit.op(scope, actor, 'rwa.document.confirm', id, null, documentView(d)),
      ]);
      return documentView(d);
    });
  }

  /** The document and a 5-minute presigned GET, for a grantee only; anyone else gets 403 document_not_entitled. */
  async read(scope: Scope, reader: Reader, tokenId: string, docId: string, origin: string) {
    const token = await this.o.tokens.get(scope, tokenId);
    const d = DOC_ID.test(docId) ? await DOCUMENTS.in(this.o.store).get(docId) : undefined;
    if (!d || d.token_id !== token.id || d.workspace !== scope.workspace || d.tenant !== scope.tenant) throw new CustodyError('not_found', `no document ${docId} of token ${token.id}`);
    const now = this.o.clock();
    const grants = await Promise.all([`key:${reader.keyId}`, `role:${reader.role}`].map((g) => ENTITLEMENTS.in(this.o.store).get(`${token.id}\x00${g}`)));
    const entitled = grants.some((e) => e && (e.expires_at === null || Date.parse(e.expires_at) > now) && (e.document_ids === null || e.document_ids.includes(d.id)));
    if (!entitled) throw new CustodyError('document_not_entitled', `this key is not entitled to token ${token.id}'s document ${d.id}`);
    const expires = now + DOCUMENT_READ_TTL_MS;
    const url = await fromStore(async () => this.o.objects.downloadUrl(d.object_key, expires, origin));
    return { ...documentView(d), url, url_expires_at: this.iso(expires) };
  }

  /** Grants (or replaces) one grantee's entitlement to the token's documents; appended to the token's log. */
  async grant(scope: Scope, actor: Actor, tokenId: string, input: EntitlementInput) {
    const token = await this.o.tokens.get(scope, tokenId);
    const log = this.o.log;
    if (!GRANTEE.test(input.grantee)) throw invalid('grantee', 'key:<workspace key id> or role:<role>');
    if (input.grantee.startsWith('role:') && !(input.grantee.slice(5) in ROLES)) throw invalid('grantee', `no role ${input.grantee.slice(5)}; one of ${Object.keys(ROLES).join(', ')}`);
    if (input.grantee.startsWith('key:')) {
      // A key of another workspace could never read this token's documents: refused as unknown here.
      const k = await BEARER_KEYS.in(this.o.store).get(input.grantee.slice(4));
      if (!k || k.workspace !== scope.workspace || k.tenant !== scope.tenant || k.revoked) throw invalid('grantee', `no key ${input.grantee.slice(4)} in this workspace`);
    }
    let expires_at: string | null = null;
    if (input.expires_at !== undefined) {
      const ms = Date.parse(input.expires_at);
      if (!Number.isFinite(ms) || ms <= this.o.clock()) throw invalid('expires_at', 'a time in the future');
      expires_at = this.iso(ms);
    }
    return this.o.store.exclusive(`rwa:documents:${token.id}`, async () => {
      let document_ids: string[] | null = null;
      if (input.document_ids !== undefined) {
        document_ids = [...new Set(input.document_ids)];
        for (const [i, id] of document_ids.entries()) {
          const d = DOC_ID.test(id) ? await DOCUMENTS.in(this.o.store).get(id) : undefined;
          if (!d || d.token_id !== token.id || d.workspace !== scope.workspace) throw invalid(`document_ids[${i}]`, `no document ${id} of this token`);
        }
      }
      const key = `${token.id}\x00${input.grantee}`;
      const before = await ENTITLEMENTS.in(this.o.store).get(key);
      if (!before) {
        const count = (await ENTITLEMENTS.in(this.o.store).byIndex(`${token.id}\x00all\x00`, MAX_ENTITLEMENTS)).length;
        if (count >= MAX_ENTITLEMENTS) throw invalid('grantee', `a token has at most ${MAX_ENTITLEMENTS} grantees`);
      }
      const e: EntitlementRecord = { v: 1, tenant: scope.tenant, workspace: scope.workspace, token_id: token.id, grantee: input.grantee, document_ids, expires_at, granted_at: this.iso() };
      await log.append(scope, token.id, { kind: 'document_entitlement', body: { action: 'grant', grantee: e.grantee, document_ids, expires_at } });
      await this.o.store.batch([
        ENTITLEMENTS.putOp(key, e, { index: [`${token.id}\x00all\x00${input.grantee}`] }),
        this.o.audit.op(scope, actor, 'rwa.document_entitlement.grant', token.id, before ? entitlementView(before) : null, entitlementView(e)),
      ]);
      return entitlementView(e);
    });
  }

  /** Revokes a grantee's entitlement; appended to the token's log. 404 when it has none. */
  async revoke(scope: Scope, actor: Actor, tokenId: string, grantee: string): Promise<void> {
    const token = await this.o.tokens.get(scope, tokenId);
    const log = this.o.log;
    await this.o.store.exclusive(`rwa:documents:${token.id}`, async () => {
      const key = `${token.id}\x00${grantee}`;
      const before = GRANTEE.test(grantee) ? await ENTITLEMENTS.in(this.o.store).get(key) : undefined;
      if (!before) throw new CustodyError('not_found', `${grantee} has no entitlement to token ${token.id}'s documents`);
      await log.append(scope, token.id, { kind: 'document_entitlement', body: { action: 'revoke', grantee } });
      await this.o.store.batch([ENTITLEMENTS.delOp(key, [`${token.id}\x00all\x00${grantee}`]), this.o.audit.op(scope, actor, 'rwa.document_entitlement.revoke', token.id, entitlementView(before), null)]);
    });
  }
}

export function documentView(d: DocumentRecord) {
  return { id: d.id, token_id: d.token_id, name: d.name, content_type: d.content_type, size: d.size, sha256: d.sha256, log_index: d.log_index, created_at: d.created_at };
}

export function entitlementView(e: EntitlementRecord) {
  return { token_id: e.token_id, grantee: e.grantee, document_ids: e.document_ids, expires_at: e.expires_at, granted_at: e.granted_at };
}

