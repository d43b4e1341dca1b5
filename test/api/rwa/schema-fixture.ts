// Shared set-up of the asset schema, field and attester tests: the API in process over a real store (LevelDB,
// or PostgreSQL under the store suite), the token engine without a chain (tokens are records as a deployment
// writes them: the schema layer reads a token's id, chain id and address only), an in-memory token log that
// records what is appended, and two customers (Acme and Globex) with keys of several roles.
import type { Test } from 'tap';
import { join } from 'node:path';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { createPlatform } from '../../../api/platform.ts';
import { createTokenization } from '../../../api/tokenization/tokenization-setup.ts';
import { TOKENS } from '../../../api/tokenization/collections.ts';
import type { TokenRecord } from '../../../api/tokenization/records.ts';
import { newId } from '../../../api/store/ids.ts';
import { MemoryTokenLog } from './memory-token-log.ts';
import { openTestStore } from '../../support/test-store.ts';

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export async function schemaApp(t: Test) {
  const { dir, store } = await openTestStore('rwa-schema-');
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects') });
  const config = loadApiConfig({ API_DATA_DIR: dir });
  const tokenization = createTokenization(config, platform, { chains: new Map() });
  const log = new MemoryTokenLog();
  const app = await buildApp({ config, logger: createLogger('api', 'silent'), platform, tokenization, rwaTokenLog: log });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const customer = async (name: string) => {
    const { tenant, sandbox } = await platform.tenancy.createTenant(name);
    const key = async (role: string) => (await platform.tenancy.createKey(sandbox.id, role)).token;
    return { tenant: tenant.id, workspace: sandbox.id, owner: await key('owner'), developer: await key('developer'), viewer: await key('viewer') };
  };
  const acme = await customer('Acme');
  const globex = await customer('Globex');
  let keys = 0;
  /** A request as `token`; a POST gets a fresh Idempotency-Key unless `headers` names one (or `null` for none). */
  const call = (method: Method, url: string, body?: unknown, token = acme.owner, headers: Record<string, string | null> = {}) => {
    const h: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) h['content-type'] = 'application/json';
    if (method === 'POST' && !('idempotency-key' in headers)) h['idempotency-key'] = `k-${++keys}`;
    for (const [k, v] of Object.entries(headers)) if (v !== null) h[k] = v;
    return app.inject({ method, url, headers: h, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });
  };
  /** A deployed token of `owner`'s workspace, as the token engine stores one. */
  const token = async (owner = acme, chainId = 31337): Promise<TokenRecord> => {
    const id = newId('tok');
    const now = new Date().toISOString();
    const r: TokenRecord = {
      v: 1, id, tenant: owner.tenant, workspace: owner.workspace, org: 'org_test', kind: 'erc20', chain: 'evm-local', chain_id: chainId, name: 'Bond 2030', symbol: 'B30', decimals: 18,
      base_uri: null, uri: null, authority_id: null, owners: [], threshold: 1, address: `0x${id.slice(4, 30).padEnd(40, 'a')}`, safe: `0x${'5'.repeat(40)}`, forwarder: `0x${'f'.repeat(40)}`,
      status: 'deployed', plan: { steps: [] } as unknown as TokenRecord['plan'], steps: [], failure: null, deploy_attempts: 1, created_at: now, updated_at: now, deployed_at: now,
    };
    await TOKENS.in(store).put(id, r, [`${r.workspace}\x00all\x00${id}`]);
    return r;
  };
  return { dir, store, platform, app, log, acme, globex, call, token };
}

export type SchemaApp = Awaited<ReturnType<typeof schemaApp>>;
