// The local sending-domain provider (docs/platform/branding.md#email-domains): publishes a verification
// TXT record and an SPF record and checks them through a configurable DNS resolver (node:dns by default;
// point it at any server with `dnsServers`).
import { randomBytes } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { ProviderError, type DnsRecord, type DomainStatus, type EmailDomainProvider } from '../branding/email-domains.ts';

export type TxtResolver = (name: string) => Promise<string[][]>;

export function dnsResolver(servers?: string[]): TxtResolver {
  const r = new Resolver({ timeout: 3000, tries: 2 });
  if (servers?.length) r.setServers(servers);
  return (name) => r.resolveTxt(name);
}

export class LocalDnsProvider implements EmailDomainProvider {
  readonly region = 'local';
  constructor(private readonly resolveTxt: TxtResolver, private readonly spfInclude = '_spf.platform.invalid') {}

  async register(domain: string): Promise<DnsRecord[]> {
    if (domain.endsWith('.invalid') || domain.endsWith('.localhost')) throw new ProviderError('invalid', 'this domain cannot send mail');
    return [
      { record: 'verification', name: `_svc-verify.${domain}`, value: `svc-verify=${randomBytes(16).toString('hex')}`, type: 'TXT', ttl: 3600, priority: null },
      { record: 'spf', name: domain, value: `v=spf1 include:${this.spfInclude} ~all`, type: 'TXT', ttl: 3600, priority: null },
    ];
  }

  async verify(_domain: string, records: DnsRecord[]): Promise<DomainStatus> {
    let missing = false;
    for (const rec of records) {
      let found: string[];
      try {
        found = (await this.resolveTxt(rec.name)).map((parts) => parts.join(''));
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === 'ENOTFOUND' || code === 'ENODATA') {
          missing = true;
          continue;
        }
        return 'temporary_failure';
      }
      if (!found.includes(rec.value)) {
        if (found.length && rec.record === 'verification') return 'failed';
        missing = true;
      }
    }
    return missing ? 'pending' : 'verified';
  }
}
