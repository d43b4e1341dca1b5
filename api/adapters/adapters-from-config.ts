// The platform's pluggable parts chosen by configuration: the object store for uploads and the
// sending-domain provider (docs/platform/branding.md). Secrets go from the frozen config straight into
// the adapters; nothing here logs them. Without static keys the adapters take the AWS SDK's standard
// credential chain (docs/operations.md).
import type { ApiConfig } from '../config.ts';
import type { ObjectStore } from './object-store.ts';
import { S3ObjectStore } from './s3-object-store.ts';
import type { EmailDomainProvider } from '../branding/email-domains.ts';
import { LocalDnsProvider, dnsResolver } from './local-dns-provider.ts';
import { SesEmailProvider } from './ses-email-provider.ts';
import { credentialsFromConfig } from '../../common/aws-credentials.ts';

/** The S3 store when API_OBJECT_STORE=s3; undefined means the embedded directory store. */
export function objectStoreFromConfig(config: ApiConfig, clock?: () => number): ObjectStore | undefined {
  if (config.objectStore !== 's3') return undefined;
  return new S3ObjectStore({
    endpoint: config.s3Endpoint!, bucket: config.s3Bucket!, region: config.s3Region!, pathStyle: config.s3PathStyle,
    credentials: credentialsFromConfig(config.s3AccessKeyId, config.s3SecretAccessKey, clock ? { clock } : {}), ...(clock ? { clock } : {}),
  });
}

/** The provider API_EMAIL_PROVIDER names; undefined for `none` (provider_configured: false). */
export function emailProviderFromConfig(config: ApiConfig, clock?: () => number): EmailDomainProvider | undefined {
  switch (config.emailProvider) {
    case 'local-dns':
      return new LocalDnsProvider(dnsResolver(config.emailDnsServers?.split(',')));
    case 'ses':
      return new SesEmailProvider({
        region: config.sesRegion!, credentials: credentialsFromConfig(config.sesAccessKeyId, config.sesSecretAccessKey, clock ? { clock } : {}),
        ...(config.sesEndpoint ? { endpoint: config.sesEndpoint } : {}), ...(clock ? { clock } : {}),
      });
    default:
      return undefined;
  }
}
