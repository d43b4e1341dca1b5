// Publishable keys (platform-api.md "Confidential exchange rules" 3): a non-secret identifier of one
// member-auth application, `pk_test_…` in a sandbox workspace and `pk_live_…` in production. It selects
// the application's tenant, workspace, environment and configuration only together with a workspace
// bearer key of that same workspace; alone it grants nothing. The random part only makes keys
// unguessable, so one tenant cannot probe for another's applications.
import { randomBytes } from 'node:crypto';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import type { Environment, Principal } from '../tenancy/tenancy-service.ts';
import { COLLECTIONS, type ApplicationRecord } from './member-auth-records.ts';

export const PUBLISHABLE_KEY = /^pk_(test|live)_[A-Za-z0-9_-]{32}$/;

export function newPublishableKey(environment: Environment): string {
  return `pk_${environment === 'production' ? 'live' : 'test'}_${randomBytes(24).toString('base64url')}`;
}

/** The environment a well-formed key is for, read off its prefix. */
export function environmentOfKey(key: string): Environment | undefined {
  const m = PUBLISHABLE_KEY.exec(key);
  return m ? (m[1] === 'live' ? 'production' : 'sandbox') : undefined;
}

/**
 * The application `key` selects for `principal` (X-SVC-Publishable-Key beside the bearer key):
 * - missing or malformed: 400 invalid_request;
 * - for the other environment (a `pk_live_` key with a `svc_test_` bearer, or the reverse): 403
 *   publishable_key_mismatch (the prefix says so; nothing is looked up);
 * - unknown, deleted, or registered to another tenant or workspace: 404 not_found, the same answer
 *   for each, so a key of another tenant is indistinguishable from none.
 */
export async function resolvePublishableKey(store: RecordRepository, principal: Pick<Principal, 'tenant' | 'workspace' | 'environment'>, key: string | undefined): Promise<ApplicationRecord> {
  if (key === undefined || key === '') throw new CustodyError('invalid_request', 'X-SVC-Publishable-Key is required: the publishable key of the member-auth application');
  const environment = environmentOfKey(key);
  if (!environment) throw new CustodyError('invalid_request', 'X-SVC-Publishable-Key must be pk_test_… or pk_live_… as issued for an application');
  if (environment !== principal.environment) {
    throw new CustodyError('publishable_key_mismatch', `a ${environment} publishable key cannot be used with a ${principal.environment} workspace key`);
  }
  const notFound = () => new CustodyError('not_found', 'no member-auth application with this publishable key in this workspace');
  const ref = await COLLECTIONS.publishableKeys.in(store).get(key);
  if (!ref || ref.tenant !== principal.tenant || ref.workspace !== principal.workspace) throw notFound();
  const app = await COLLECTIONS.applications.in(store).get(ref.application);
  // Every part is checked on the record itself too: the index only points.
  if (!app || app.publishable_key !== key || app.tenant !== principal.tenant || app.workspace !== principal.workspace || app.environment !== principal.environment) throw notFound();
  return app;
}
