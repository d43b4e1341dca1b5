// A member's copy of its own data (docs/platform/account-holders.md "Data exports"): POST
// self/data-exports records a pending export and enqueues its build on the durable job queue
// (api/jobs/) in the same batch; the job writes one JSON document of the holder's data to the object
// store under a random key, and the export becomes ready with its size, SHA-256 and expiry, which
// enqueues the delayed job that deletes the object when the export expires. The document holds personal
// data: nothing of it is logged, put in an event or kept outside the object; the record keeps ids,
// states, sizes and the hash only.
import { createHash, randomBytes } from 'node:crypto';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { collection } from '../store/collection.ts';
import { newId } from '../store/ids.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { ObjectStore } from '../adapters/object-store.ts';
import type { LeasedJob } from '../jobs/job-queue.ts';
import type { CustomerLinks } from '../customers/customer-links.ts';
import type { CursorCodec } from '../store/pagination.ts';
import type { PlatformLedger } from '../ledger/platform-ledger.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import { WALLETS } from '../vaults/collections.ts';
import type { AccountHolderRecord } from './account-holder-records.ts';
import { holderView } from './account-holder-service.ts';
import { contactView } from './contacts.ts';
import { ACCOUNT_HOLDERS, ACCOUNT_HOLDER_CONSENTS, ACCOUNT_HOLDER_VAULTS, CONTACTS } from './collections.ts';
import { HolderActivity } from './holder-activity.ts';
import { HolderBanking, type BankTransaction } from './holder-banking.ts';

export const DATA_EXPORT_ID = /^dex_[0-9a-f]{26}$/;
/** The object store prefix of exports; the rest of the key is random, never derived from the export's id. */
export const DATA_EXPORT_PREFIX = 'data_exports';
/** How long a ready export stays downloadable before its object is deleted. */
export const DATA_EXPORT_TTL_MS = 7 * 86_400_000;
/** A download URL's life (a bearer credential: short, and never logged). */
export const DATA_EXPORT_DOWNLOAD_TTL_MS = 5 * 60_000;
/** Exports a holder may ask for in any 24 hours (every status counts). */
export const DATA_EXPORTS_PER_DAY = 3;
const DAY_MS = 86_400_000;
/** Build attempts before the export fails (the job queue's retries, with its backoff). */
export const DATA_EXPORT_MAX_ATTEMPTS = 3;
/** The document's format version (STYLE.md 6: every stored blob starts with a version). */
export const DATA_EXPORT_FORMAT_VERSION = 1;

export const DATA_EXPORT_BUILD = 'holder_data_export';
export const DATA_EXPORT_EXPIRE = 'holder_data_export_expiry';

export type DataExportStatus = 'pending' | 'ready' | 'failed' | 'expired';
/** Why an export failed: `storage_unavailable` (the object store refused or could not be reached), `build_failed` (anything else). */
export type DataExportFailure = 'storage_unavailable' | 'build_failed';

/** Collection `holder_data_exports`, key the id; index `holder/<holder id>/<id>`. */
export interface DataExportRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  account_holder_id: string;
  status: DataExportStatus;
  format: 'json';
  /** `data_exports/<32 random hex>`, chosen at creation (a retry rewrites the same object); null once deleted. Never answered. */
  object_key: string | null;
  size_bytes: number | null;
  sha256: string | null;
  failure_reason: DataExportFailure | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  expires_at: string | null;
}

export const DATA_EXPORTS = collection<DataExportRecord>('holder_data_exports');
const holderIndex = (r: Pick<DataExportRecord, 'account_holder_id' | 'id'>) => `holder/${r.account_holder_id}/${r.id}`;

export interface DataExportView {
  id: string;
  status: DataExportStatus;
  format: 'json';
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  expires_at: string | null;
  size_bytes: number | null;
  sha256: string | null;
  failure_reason: DataExportFailure | null;
  download: { url: string; expires_at: string } | null;
}

export interface HolderDataExportsOptions {
  store: RecordRepository;
  objects: ObjectStore;
  links: CustomerLinks;
  cursors: CursorCodec;
  ledger: PlatformLedger;
  audit: AuditLog;
  clock: () => number;
}

const iso = (ms: number) => new Date(ms).toISOString();

export class HolderDataExports {
  private readonly activity: HolderActivity;
  private readonly banking: HolderBanking;

  constructor(private readonly o: HolderDataExportsOptions) {
    this.activity = new HolderActivity({ store: o.store, links: o.links, cursors: o.cursors });
    this.banking = new HolderBanking({ store: o.store, ledger: o.ledger, audit: o.audit, cursors: o.cursors, clock: o.clock });
  }

  /** The holder's exports, oldest first. */
  private async ofHolder(holder: string): Promise<DataExportRecord[]> {
    return DATA_EXPORTS.in(this.o.store).byIndex(`holder/${holder}/`);
  }

  /**
   * POST self/data-exports. Under the holder's lock: one pending export at a time (409
   * data_export_pending), at most DATA_EXPORTS_PER_DAY in any 24 hours (429 rate_limited, with the
   * seconds until one leaves the window). The export, its build job and its audit entry are one batch.
   */
  async create(scope: Scope, actor: Actor, holder: AccountHolderRecord): Promise<DataExportView> {
    return this.o.store.exclusive(`holder-data-export:${holder.id}`, async () => {
      const now = this.o.clock();
      const all = await this.ofHolder(holder.id);
      const pending = all.find((r) => r.status === 'pending');
      if (pending) throw new CustodyError('data_export_pending', `export ${pending.id} is still being prepared; wait for it before asking for another`);
      const recent = all.filter((r) => Date.parse(r.created_at) > now - DAY_MS);
      if (recent.length >= DATA_EXPORTS_PER_DAY) {
        const retryAfter = Math.max(1, Math.ceil((Date.parse(recent[0]!.created_at) + DAY_MS - now) / 1000));
        throw new DataExportLimitError(retryAfter);
      }
      const id = newId('dex', now);
      const r: DataExportRecord = {
        v: 1, id, tenant: scope.tenant, workspace: scope.workspace, account_holder_id: holder.id, status: 'pending', format: 'json',
        object_key: `${DATA_EXPORT_PREFIX}/${randomBytes(16).toString('hex')}`, size_bytes: null, sha256: null, failure_reason: null,
        created_at: iso(now), updated_at: iso(now), completed_at: null, expires_at: null,
      };
      const ops: Op[] = [
        DATA_EXPORTS.putOp(id, r, { index: [holderIndex(r)] }),
        { type: 'enqueue', kind: DATA_EXPORT_BUILD, key: id, payload: { export_id: id }, opts: { dedupeKey: id, runAt: now } },
        // Who asked for a copy of whose data: ids only.
        this.o.audit.op(scope, actor, 'account_holder.data_export', id, null, { account_holder_id: holder.id, export_id: id }),
      ];
      await this.o.store.batch(ops);
      return this.view(r, undefined);
    });
  }

  /** GET self/data-exports/{id}: the holder's own export only; any other id is 404 not_found. */
  async read(scope: Scope, holder: AccountHolderRecord, id: string, origin: string): Promise<DataExportView> {
    const r = DATA_EXPORT_ID.test(id) ? await DATA_EXPORTS.in(this.o.store).get(id) : undefined;
    if (!r || r.tenant !== scope.tenant || r.workspace !== scope.workspace || r.account_holder_id !== holder.id) throw new CustodyError('not_found', `no data export ${id}`);
    return this.view(r, origin);
  }

  /** The answer; a ready export past its expiry reads expired (its object is deleted by the expiry job). */
  private async view(r: DataExportRecord, origin: string | undefined): Promise<DataExportView> {
    const now = this.o.clock();
    const lapsed = r.status === 'ready' && r.expires_at !== null && Date.parse(r.expires_at) <= now;
    const status: DataExportStatus = lapsed ? 'expired' : r.status;
    let download: DataExportView['download'] = null;
    if (status === 'ready' && r.object_key && origin !== undefined) {
      const until = Math.min(now + DATA_EXPORT_DOWNLOAD_TTL_MS, Date.parse(r.expires_at!));
      const url = await storeCall(() => Promise.resolve(this.o.objects.downloadUrl(r.object_key!, until, origin)));
      download = { url, expires_at: iso(until) };
    }
    return {
      id: r.id, status, format: r.format, created_at: r.created_at, updated_at: r.updated_at, completed_at: r.completed_at, expires_at: r.expires_at,
      size_bytes: r.size_bytes, sha256: r.sha256, failure_reason: r.failure_reason, download,
    };
  }

  /** The document: the holder's own data, as its self calls answer it. */
  async document(holder: AccountHolderRecord, exportId: string): Promise<string> {
    const scope = { tenant: holder.tenant, workspace: holder.workspace };
    const consents = (await ACCOUNT_HOLDER_CONSENTS.in(this.o.store).byIndex(`${holder.id}\x00`)).map(({ v: _v, workspace: _w, ...c }) => c);
    const contacts = (await CONTACTS.in(this.o.store).byIndex(`${holder.workspace}\x00holder\x00${holder.id}\x00`))
      .filter((c) => c.workspace === holder.workspace && c.account_holder_id === holder.id).map(contactView);
    const link = await ACCOUNT_HOLDER_VAULTS.in(this.o.store).get(holder.id);
    const org = link && link.workspace === holder.workspace ? await this.o.links.orgOfWorkspace(scope) : undefined;
    const wallets: { wallet_id: string; chain: string; address: string }[] = [];
    if (link && org !== undefined && org === link.org) {
      for (const w of link.wallets) {
        const rec = await WALLETS.in(this.o.store).get(w.wallet_id);
        if (rec && rec.org === org) wallets.push({ wallet_id: rec.id, chain: rec.chain, address: rec.address });
      }
    }
    const transactions = await this.activity.all(scope, holder);
    // The bank as its calls show it, when the holder's accounts were opened (an export opens nothing).
    let bank: { balances: Awaited<ReturnType<HolderBanking['balances']>>; transactions: BankTransaction[] } | null = null;
    if (await this.o.ledger.entry(`bank/${holder.id}/account-opening`)) {
      const lines: BankTransaction[] = [];
      let cursor: string | undefined;
      do {
        const p = await this.banking.transactions(scope, holder, cursor, 100);
        lines.push(...p.data);
        cursor = p.next_cursor ?? undefined;
      } while (cursor);
      bank = { balances: await this.banking.balances(scope, holder), transactions: lines };
    }
    return JSON.stringify({
      format_version: DATA_EXPORT_FORMAT_VERSION, export_id: exportId, generated_at: iso(this.o.clock()),
      account_holder: holderView(holder), consents, contacts, wallets, transactions, bank,
    }, null, 2);
  }

  /**
   * The build job: writes the document under the export's key and marks it ready with the delayed
   * expiry job in the same batch. A failure throws for the queue's retry, and on the last attempt
   * marks the export failed with its enumerated reason instead.
   */
  async build(job: LeasedJob<{ export_id: string }>): Promise<void> {
    const r = await DATA_EXPORTS.in(this.o.store).get(job.payload.export_id);
    if (!r || r.status !== 'pending' || !r.object_key) return;
    try {
      const holder = await ACCOUNT_HOLDERS.in(this.o.store).get(r.account_holder_id);
      if (!holder || holder.workspace !== r.workspace) throw new Error('the account holder is gone');
      const body = await this.document(holder, r.id);
      await storeCall(() => this.o.objects.put(r.object_key!, body, 'application/json'));
      const now = this.o.clock();
      const expires = now + DATA_EXPORT_TTL_MS;
      const ready: DataExportRecord = {
        ...r, status: 'ready', size_bytes: Buffer.byteLength(body, 'utf8'), sha256: createHash('sha256').update(body, 'utf8').digest('hex'),
        updated_at: iso(now), completed_at: iso(now), expires_at: iso(expires),
      };
      await this.o.store.batch([
        DATA_EXPORTS.putOp(r.id, ready, { index: [holderIndex(r)] }),
        { type: 'enqueue', kind: DATA_EXPORT_EXPIRE, key: r.id, payload: { export_id: r.id }, opts: { dedupeKey: `${r.id}:expire`, runAt: expires } },
      ]);
    } catch (err) {
      if (job.attempts < DATA_EXPORT_MAX_ATTEMPTS) throw err;
      const reason: DataExportFailure = err instanceof CustodyError && err.code === 'object_store_error' ? 'storage_unavailable' : 'build_failed';
      // An earlier attempt may have written the object; none is left behind.
      await this.o.objects.delete(r.object_key).catch(() => undefined);
      const now = iso(this.o.clock());
      await this.o.store.batch([DATA_EXPORTS.putOp(r.id, { ...r, status: 'failed', failure_reason: reason, object_key: null, updated_at: now, completed_at: now }, { index: [holderIndex(r)] })]);
    }
  }

  /** The expiry job: at `expires_at`, deletes the object and marks the export expired. */
  async expire(job: LeasedJob<{ export_id: string }>): Promise<void | { runAt: number }> {
    const r = await DATA_EXPORTS.in(this.o.store).get(job.payload.export_id);
    if (!r || r.status !== 'ready' || !r.expires_at) return;
    const at = Date.parse(r.expires_at);
    if (this.o.clock() < at) return { runAt: at };
    if (r.object_key) await this.o.objects.delete(r.object_key);
    await this.o.store.batch([DATA_EXPORTS.putOp(r.id, { ...r, status: 'expired', object_key: null, updated_at: iso(this.o.clock()) }, { index: [holderIndex(r)] })]);
  }
}

/** 429 rate_limited with the seconds until an export leaves the 24-hour window (Retry-After). */
export class DataExportLimitError extends CustodyError {
  constructor(readonly retryAfter: number) {
    super('rate_limited', `at most ${DATA_EXPORTS_PER_DAY} data exports in 24 hours; retry in ${retryAfter} s`);
    this.name = 'DataExportLimitError';
  }
}

/** An object store failure as 502 object_store_error (a bug-free store never throws otherwise). */
async function storeCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof CustodyError) throw err;
    throw new CustodyError('object_store_error', 'the object store could not be reached');
  }
}
