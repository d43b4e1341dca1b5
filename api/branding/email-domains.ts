// Sending domains (docs/platform/branding.md#email-domains) and the provider interface they are checked
// through. The providers are adapters: the local one checks DNS itself (adapters/local-dns-provider.ts),
// the hosted one is Amazon SES (adapters/ses-email-provider.ts). Domains are kept per environment: a
// domain belongs to one workspace (tenant + sandbox or production) and only its keys see or change it.
import type { RecordRepository } from '../store/record-repository.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { newId } from '../store/ids.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import { EMAIL_DOMAINS, EMAIL_DOMAIN_NAMES } from './collections.ts';

export type DomainStatus = 'not_started' | 'pending' | 'verified' | 'failed' | 'temporary_failure';
export interface DnsRecord { record: string; name: string; value: string; type: 'TXT' | 'CNAME' | 'MX'; ttl: number; priority: number | null }

export interface EmailDomainProvider {
  readonly region: string;
  /** Records to publish; throws ProviderError('invalid') when the provider rejects the domain. */
  register(domain: string): Promise<DnsRecord[]>;
  verify(domain: string, records: DnsRecord[]): Promise<DomainStatus>;
  /** Forgets the domain at the provider (absent there is fine); throws ProviderError on failure. */
  remove?(domain: string): Promise<void>;
}

/** The provider rejected the domain (`invalid`: kind invalid) or failed (`failure`: kind transport). */
export class ProviderError extends CustodyError {
  constructor(reason: 'invalid' | 'failure', message: string) {
    super(reason === 'invalid' ? 'email_domain_invalid' : 'email_domain_provider_error', message);
    this.name = 'ProviderError';
  }
}

export interface DomainRecord {
  id: string; tenant: string; workspace: string; domain: string; status: DomainStatus; region: string; dns_records: DnsRecord[];
  verified_at: string | null; last_synced_at: string | null; created_at: string;
}

/**
 * Collection `email_domain_names`, id `<domain> NUL <workspace id>`: who registered a name. One tenant may
 * register a name in each of its environments; a name another tenant holds is a conflict.
 */
export interface NameEntry { id: string; tenant: string; workspace: string }

const FQDN = /^(?=.{4,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

export class EmailDomains {
  constructor(private readonly store: RecordRepository, private readonly audit: AuditLog, private readonly provider: EmailDomainProvider | undefined, private readonly clock: () => number = Date.now) {}

  private lock<T>(domain: string, fn: () => Promise<T>): Promise<T> {
    // Per domain, on every instance: check, register and write as one.
    return this.store.exclusive(`email-domain:${domain}`, fn);
  }

  /** Every registration of a name, in any tenant and environment. */
  private async holders(domain: string): Promise<NameEntry[]> {
    const out: NameEntry[] = [];
    for await (const e of EMAIL_DOMAIN_NAMES.in(this.store).range({ after: `${domain}\x00`, lt: `${domain}\x00\xff` })) out.push(e);
    return out;
  }

  get configured(): boolean {
    return this.provider !== undefined;
  }

  private need(): EmailDomainProvider {
    if (!this.provider) throw new CustodyError('email_domain_provider_unconfigured', 'the platform email provider is not set up');
    return this.provider;
  }

  async list(scope: Scope): Promise<DomainRecord[]> {
    return EMAIL_DOMAINS.in(this.store).byIndex(`${scope.workspace}\x00`, 100);
  }

  async get(scope: Scope, id: string): Promise<DomainRecord> {
    const d = /^edm_[0-9a-f]{26}$/.test(id) ? await EMAIL_DOMAINS.in(this.store).get(id) : undefined;
    if (!d || d.workspace !== scope.workspace) throw new CustodyError('email_domain_not_found', `no email domain ${id}`);
    return d;
  }

  async add(scope: Scope, actor: Actor, domainIn: string): Promise<DomainRecord> {
    const p = this.need();
    const domain = domainIn.toLowerCase().replace(/\.$/, '');
    if (!FQDN.test(domain)) throw new CustodyError('email_domain_invalid', 'domain must be a fully-qualified name');
    return this.lock(domain, () => this.addLocked(p, scope, actor, domain));
  }

  private async addLocked(p: EmailDomainProvider, scope: Scope, actor: Actor, domain: string): Promise<DomainRecord> {
    const taken = (await this.holders(domain)).some((h) => h.workspace === scope.workspace || h.tenant !== scope.tenant);
    if (taken) throw new CustodyError('email_domain_conflict', `${domain} is already registered`);
    let dns_records: DnsRecord[];
    try {
      dns_records = await p.register(domain);
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'email_domain_invalid') throw new CustodyError('email_domain_invalid', `the provider rejected ${domain}: ${err.message}`);
      throw new CustodyError('email_domain_provider_error', 'the email provider failed; try again');
    }
    const now = new Date(this.clock()).toISOString();
    const d: DomainRecord = { id: newId('edm', this.clock()), tenant: scope.tenant, workspace: scope.workspace, domain, status: 'not_started', region: p.region, dns_records, verified_at: null, last_synced_at: null, created_at: now };
    await this.store.batch([
      EMAIL_DOMAINS.putOp(d.id, d, { index: [`${scope.workspace}\x00${d.id}`] }),
      EMAIL_DOMAIN_NAMES.putOp(`${domain}\x00${scope.workspace}`, { id: d.id, tenant: scope.tenant, workspace: scope.workspace } satisfies NameEntry),
      this.audit.op(scope, actor, 'branding.email_domain.create', d.id, null, { domain, status: d.status }),
    ]);
    return d;
  }

  async verify(scope: Scope, actor: Actor, id: string): Promise<DomainRecord> {
    const before = await this.get(scope, id);
    const p = this.need();
    let status: DomainStatus;
    try {
      status = await p.verify(before.domain, before.dns_records);
    } catch {
      throw new CustodyError('email_domain_provider_error', 'the email provider failed; try again');
    }
    const now = new Date(this.clock()).toISOString();
    const after: DomainRecord = { ...before, status, last_synced_at: now, verified_at: status === 'verified' ? (before.verified_at ?? now) : before.verified_at };
    await this.store.batch([
      EMAIL_DOMAINS.putOp(id, after, { index: [`${scope.workspace}\x00${id}`] }),
      this.audit.op(scope, actor, 'branding.email_domain.verify', id, { status: before.status }, { status }),
    ]);
    return after;
  }

  async remove(scope: Scope, actor: Actor, id: string): Promise<void> {
    const d = await this.get(scope, id);
    await this.lock(d.domain, () => this.removeLocked(scope, actor, d));
  }

  private async removeLocked(scope: Scope, actor: Actor, d: DomainRecord): Promise<void> {
    const id = d.id;
    if (!(await EMAIL_DOMAINS.in(this.store).get(id))) throw new CustodyError('email_domain_not_found', `no email domain ${id}`);
    // The provider forgets it first: a failure leaves both sides as they were, and the call can be retried.
    // Not while the tenant's other environment still holds the name: the provider's identity is shared.
    const shared = (await this.holders(d.domain)).some((h) => h.workspace !== scope.workspace);
    if (this.provider?.remove && !shared) {
      try {
        await this.provider.remove(d.domain);
      } catch {
        throw new CustodyError('email_domain_provider_error', 'the email provider failed; try again');
      }
    }
    await this.store.batch([
      EMAIL_DOMAINS.delOp(id, [`${scope.workspace}\x00${id}`]),
      EMAIL_DOMAIN_NAMES.delOp(`${d.domain}\x00${scope.workspace}`),
      this.audit.op(scope, actor, 'branding.email_domain.delete', id, { domain: d.domain, status: d.status }, null),
    ]);
  }
}
