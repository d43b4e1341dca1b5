// Where AWS credentials come from: static keys from configuration, or the AWS SDK's standard provider
// chain (environment, shared config/credentials files and profiles, web identity as EKS IRSA sets it,
// ECS/EKS Pod Identity container credentials, EC2 instance metadata). Temporary credentials are cached
// and fetched again before they expire.
import { fromNodeProviderChain } from '@aws-sdk/credential-providers';
import type { AwsCredentials } from './aws-sigv4.ts';

/** Credentials with, for temporary ones, a session token and the time they stop being valid. */
export interface AwsCredentialIdentity extends AwsCredentials { expiration?: Date }
export type AwsCredentialProvider = () => Promise<AwsCredentialIdentity>;

/** Fetch again this long before `expiration`, so that no request is signed with credentials about to lapse. */
export const REFRESH_BEFORE_EXPIRY_MS = 60_000;

/**
 * Caches what `provider` returns: credentials without an expiration are kept; temporary ones until
 * `refreshBeforeMs` before they expire. Concurrent callers share one fetch; a failed fetch is not cached.
 */
export function cachedCredentials(provider: AwsCredentialProvider, o: { clock?: () => number; refreshBeforeMs?: number } = {}): AwsCredentialProvider {
  const clock = o.clock ?? Date.now;
  const margin = o.refreshBeforeMs ?? REFRESH_BEFORE_EXPIRY_MS;
  let current: AwsCredentialIdentity | undefined;
  let pending: Promise<AwsCredentialIdentity> | undefined;
  const fresh = (c: AwsCredentialIdentity) => !c.expiration || c.expiration.getTime() - margin > clock();
  return () => {
    if (current && fresh(current)) return Promise.resolve(current);
    pending ??= provider().then((c) => {
      current = c;
      return c;
    }).finally(() => {
      pending = undefined;
    });
    return pending;
  };
}

/** Static keys, as the API configuration gives them. */
export function staticCredentials(c: AwsCredentials): AwsCredentialProvider {
  const identity: AwsCredentialIdentity = { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey, ...(c.sessionToken ? { sessionToken: c.sessionToken } : {}) };
  return () => Promise.resolve(identity);
}

/**
 * The AWS SDK's standard chain (fromNodeProviderChain), cached. The SDK reads its own environment
 * (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, AWS_PROFILE, AWS_ROLE_ARN with
 * AWS_WEB_IDENTITY_TOKEN_FILE, AWS_CONTAINER_CREDENTIALS_FULL_URI, AWS_ENDPOINT_URL_STS, ...).
 */
export function defaultCredentialChain(o: { clock?: () => number } = {}): AwsCredentialProvider {
  const chain = fromNodeProviderChain();
  // This cache decides when to fetch; forceRefresh makes the chain fetch then (it would otherwise hand back
  // the credentials it holds while refreshing them in the background).
  return cachedCredentials(async () => {
    const c = await chain({ forceRefresh: true });
    return { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey, ...(c.sessionToken ? { sessionToken: c.sessionToken } : {}), ...(c.expiration ? { expiration: c.expiration } : {}) };
  }, o);
}

/** Static keys when both are configured, else the standard chain. */
export function credentialsFromConfig(accessKeyId: string | undefined, secretAccessKey: string | undefined, o: { clock?: () => number } = {}): AwsCredentialProvider {
  return accessKeyId && secretAccessKey ? staticCredentials({ accessKeyId, secretAccessKey }) : defaultCredentialChain(o);
}
