// What the token-log tests share: an app over a real store (LevelDB, or PostgreSQL under its suite) with
// witnesses allowed on loopback, the log part built here so a test appends through it as the other parts
// will, and token records put straight into the store (Tokenization I's deploy needs a chain; the log only
// needs the token to exist in the caller's workspace).
import type { Test } from 'tap';
import { join } from 'node:path';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { createPlatform } from '../../../api/platform.ts';
import { openTestStore } from '../../support/test-store.ts';
import { TOKENS } from '../../../api/tokenization/collections.ts';
import type { TokenRecord } from '../../../api/tokenization/records.ts';
import { createTokenLog } from '../../../api/rwa/log/token-log-setup.ts';
import type { RwaScope } from '../../../api/rwa/seams.ts';

let n = 0;

/** A token record of `scope`, as Tokenization I would have stored it once deployed. */
export async function putToken(store: Parameters<typeof TOKENS.in>[0], scope: RwaScope): Promise<string> {
  const id = `tok_${(Date.now() * 1000 + n++).toString(16).padStart(26, '0')}`;
  const now = new Date().toISOString();
  await TOKENS.in(store).put(id, {
    v: 1, id, tenant: scope.tenant, workspace: scope.workspace, org: 'org_test', kind: 'erc20', chain: 'evm-local', chain_id: 31337, name: 'Bond', symbol: 'BND', decimals: 18,
    base_uri: null, uri: null, authority_id: null, owners: [], threshold: 1, address: '0x' + '11'.repeat(20), safe: '0x' + '22'.repeat(20), forwarder: '0x' + '33'.repeat(20),
    status: 'deployed', plan: {}, steps: [], failure: null, deploy_attempts: 1, created_at: now, updated_at: now, deployed_at: now,
  } as unknown as TokenRecord, [`${scope.workspace}\x00${id}`]);
  return id;
}

export async function setupTokenLog(t: Test) {
  const { dir, store } = await openTestStore('rwa-log-');
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects') });
  const config = loadApiConfig({ API_DATA_DIR: dir, API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1', API_RWA_LOG_ORIGIN: 'api.example.test' });
  const tokenLog = await createTokenLog(config, platform, { witnessTimeoutMs: 5000 });
  const app = await buildApp({ config, logger: createLogger('api', 'silent'), platform, tokenLog });
  t.teardown(async () => {
    await app.close();
    await tokenLog.close();
    await store.close();
  });
  const { sandbox } = await platform.tenancy.createTenant('Acme');
  const scope = { tenant: sandbox.tenant, workspace: sandbox.id };
  const owner = await platform.tenancy.createKey(sandbox.id, 'owner');
  const developer = await platform.tenancy.createKey(sandbox.id, 'developer');
  const viewer = await platform.tenancy.createKey(sandbox.id, 'viewer');
  const other = await platform.tenancy.createTenant('Other');
  const otherOwner = await platform.tenancy.createKey(other.sandbox.id, 'owner');
  const call = (method: 'GET' | 'POST', url: string, body?: unknown, token = owner.token, headers: Record<string, string> = {}) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });
  return { dir, store, platform, app, config, tokenLog, scope, owner, developer, viewer, otherOwner, otherScope: { tenant: other.sandbox.tenant, workspace: other.sandbox.id }, call };
}
