// Amazon SES (API v2) as the sending-domain provider (docs/platform/branding.md#email-domains). A domain
// is an SES *email identity* with Easy DKIM: CreateEmailIdentity (POST /v2/email/identities) returns
// three DKIM tokens, published as CNAME records; GetEmailIdentity (GET /v2/email/identities/{domain})
// reports the verification status, whose five values are exactly the spec's statuses;
// DeleteEmailIdentity removes it. Requests are JSON, signed with SigV4 (service `ses`).
import type { SignatureV4 } from '@smithy/signature-v4';
import { signHeaders, sigv4Signer, type AwsCredentials } from './aws-sigv4.ts';
import type { AwsCredentialProvider } from '../../common/aws-credentials.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { ProviderError, type DnsRecord, type DomainStatus, type EmailDomainProvider } from '../branding/email-domains.ts';

export interface SesProviderOptions {
  region: string;
  /** Static keys, or a (cached) provider such as the standard chain: common/aws-credentials.ts. */
  credentials: AwsCredentials | AwsCredentialProvider;
  /** Origin of the SES v2 API; default https://email.<region>.amazonaws.com. */
  endpoint?: string;
  clock?: () => number;
  timeoutMs?: number;
}

/** SES's VerificationStatus (and DkimAttributes.Status) to the spec's sending-domain status. */
export const SES_STATUS: Record<string, DomainStatus> = {
  NOT_STARTED: 'not_started', PENDING: 'pending', SUCCESS: 'verified', FAILED: 'failed', TEMPORARY_FAILURE: 'temporary_failure',
};

interface Identity { VerificationStatus?: string; DkimAttributes?: { Status?: string; Tokens?: string[] } }

class SesError extends CustodyError {
  constructor(readonly status: number | null, readonly type: string, message: string) {
    super('email_domain_provider_error', message);
    this.name = 'SesError';
  }
}

export class SesEmailProvider implements EmailDomainProvider {
  readonly region: string;
  private readonly signer: SignatureV4;
  private readonly endpoint: string;
  private readonly clock: () => number;

  constructor(private readonly o: SesProviderOptions) {
    this.region = o.region;
    this.signer = sigv4Signer('ses', o.region, o.credentials);
    this.endpoint = o.endpoint ?? `https://email.${o.region}.amazonaws.com`;
    this.clock = o.clock ?? Date.now;
  }

  private async call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
    const url = new URL(path, this.endpoint);
    const text = body === undefined ? undefined : JSON.stringify(body);
    const headers = await signHeaders(this.signer, {
      method, url, ...(text !== undefined ? { body: text, headers: { 'content-type': 'application/json' } } : {}), signingDate: new Date(this.clock()),
    });
    let res: Response;
    try {
      res = await fetch(url, { method, headers, ...(text !== undefined ? { body: text } : {}), redirect: 'manual', signal: AbortSignal.timeout(this.o.timeoutMs ?? 10_000) });
    } catch (err) {
      throw new SesError(null, 'NetworkError', `SES unreachable: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`);
    }
    const raw = await res.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    } catch {
      if (res.ok) throw new SesError(res.status, 'SerializationError', 'SES sent a body that is not JSON');
    }
    if (!res.ok) {
      // REST-JSON errors: the type is in X-Amzn-ErrorType ("Type:namespace"), else in the body.
      const type = (res.headers.get('x-amzn-errortype') ?? String(parsed.__type ?? parsed.code ?? 'UnknownError')).split(':')[0]!.split('#').pop()!;
      throw new SesError(res.status, type, String(parsed.message ?? parsed.Message ?? `SES answered ${res.status}`).slice(0, 300));
    }
    return parsed as T;
  }

  private static records(domain: string, tokens: string[] | undefined): DnsRecord[] {
    if (!tokens?.length) throw new ProviderError('failure', 'SES returned no DKIM tokens');
    return tokens.map((t) => ({ record: 'dkim', name: `${t}._domainkey.${domain}`, value: `${t}.dkim.amazonses.com`, type: 'CNAME' as const, ttl: 1800, priority: null }));
  }

  private identityPath(domain: string): string {
    return `/v2/email/identities/${encodeURIComponent(domain)}`;
  }

  async register(domain: string): Promise<DnsRecord[]> {
    try {
      const r = await this.call<Identity>('POST', '/v2/email/identities', { EmailIdentity: domain });
      return SesEmailProvider.records(domain, r.DkimAttributes?.Tokens);
    } catch (err) {
      if (!(err instanceof SesError)) throw err;
      // Already in the SES account (e.g. an earlier attempt whose answer was lost): reuse its tokens.
      if (err.type === 'AlreadyExistsException') return SesEmailProvider.records(domain, (await this.get(domain)).DkimAttributes?.Tokens);
      if (err.type === 'BadRequestException') throw new ProviderError('invalid', err.message);
      throw new ProviderError('failure', `${err.type}: ${err.message}`);
    }
  }

  private async get(domain: string): Promise<Identity> {
    try {
      return await this.call<Identity>('GET', this.identityPath(domain));
    } catch (err) {
      if (err instanceof SesError) throw new ProviderError('failure', `${err.type}: ${err.message}`);
      throw err;
    }
  }

  async verify(domain: string): Promise<DomainStatus> {
    let r: Identity;
    try {
      r = await this.call<Identity>('GET', this.identityPath(domain));
    } catch (err) {
      // The identity was removed from the SES account behind our back: it can no longer verify.
      if (err instanceof SesError && err.type === 'NotFoundException') return 'failed';
      if (err instanceof SesError && (err.type === 'TooManyRequestsException' || err.status === null || err.status >= 500)) return 'temporary_failure';
      if (err instanceof SesError) throw new ProviderError('failure', `${err.type}: ${err.message}`);
      throw err;
    }
    const s = r.VerificationStatus ?? r.DkimAttributes?.Status;
    const status = s ? SES_STATUS[s] : undefined;
    if (!status) throw new ProviderError('failure', `SES reported an unknown status ${String(s).slice(0, 40)}`);
    return status;
  }

  async remove(domain: string): Promise<void> {
    try {
      await this.call('DELETE', this.identityPath(domain));
    } catch (err) {
      if (err instanceof SesError && err.type === 'NotFoundException') return;
      if (err instanceof SesError) throw new ProviderError('failure', `${err.type}: ${err.message}`);
      throw err;
    }
  }
}
