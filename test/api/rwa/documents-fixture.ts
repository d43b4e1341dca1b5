// What the documents-and-metadata tests share: an app over a real store (LevelDB, or PostgreSQL under its
// suite) with the embedded object store, a token log that records what is appended (the real log is its own
// part), a fields reader over a plain map (the fields part keeps the real values), and token records put
// straight into the store as Tokenization I stores them once deployed (its deploy needs a chain).
import type { Test } from 'tap';
import { join } from 'node:path';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { createPlatform } from '../../../api/platform.ts';
import { openTestStore } from '../../support/test-store.ts';
import { TOKENS } from '../../../api/tokenization/collections.ts';
import type { TokenRecord } from '../../../api/tokenization/records.ts';
import type { LogEntryInput, RwaScope, TokenLog } from '../../../api/rwa/seams.ts';
import type { FieldValue, TokenFieldsReader } from '../../../api/rwa/documents/token-fields-reader.ts';

/** A TokenLog that keeps every appended entry in order, per token. */
export class RecordingTokenLog implements TokenLog {
  readonly entries: { scope: RwaScope; tokenId: string; entry: LogEntryInput }[] = [];
  append(scope: RwaScope, tokenId: string, entry: LogEntryInput) {
    const index = this.entries.filter((e) => e.tokenId === tokenId).length;
    this.entries.push({ scope, tokenId, entry: structuredClone(entry) });
    return Promise.resolve({ index, leaf_hash: index.toString(16).padStart(64, '0') });
  }
  of(tokenId: string): LogEntryInput[] {
    return this.entries.filter((e) => e.tokenId === tokenId).map((e) => e.entry);
  }
}

/** A fields reader over a map: token id -> field path -> value. */
export class MapFieldsReader implements TokenFieldsReader {
  readonly fields = new Map<string, Record<string, FieldValue>>();
  publicFields(_scope: RwaScope, tokenId: string) {
    return Promise.resolve({ ...(this.fields.get(tokenId) ?? {}) });
  }
}

let n = 0;

/** A token record of `scope`, as Tokenization I would have stored it once deployed. */
export async function putToken(store: Parameters<typeof TOKENS.in>[0], scope: RwaScope, over: Partial<TokenRecord> = {}): Promise<string> {
  const id = `tok_${(Date.now() * 1000 + n++).toString(16).padStart(26, '0')}`;
  const now = new Date().toISOString();
  await TOKENS.in(store).put(id, {
    v: 1, id, tenant: scope.tenant, workspace: scope.workspace, org: 'org_test', kind: 'erc721', chain: 'evm-local', chain_id: 31337, name: 'Deed', symbol: 'DEED', decimals: null,
    base_uri: 'https://example.test/deed/', uri: null, authority_id: null, owners: [], threshold: 1, address: '0x' + '11'.repeat(20), safe: '0x' + '22'.repeat(20), forwarder: '0x' + '33'.repeat(20),
    status: 'deployed', plan: {}, steps: [], failure: null, deploy_attempts: 1, created_at: now, updated_at: now, deployed_at: now, ...over,
  } as unknown as TokenRecord, [`${scope.workspace}\x00all\x00${id}`]);
  return id;
}

export async function setupDocuments(t: Test, opts: { clock?: () => number; failingLog?: boolean } = {}) {
  const { dir, store } = await openTestStore('rwa-docs-');
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects'), ...(opts.clock ? { clock: opts.clock } : {}) });
  const log = new RecordingTokenLog();
  const fields = new MapFieldsReader();
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api', 'silent'), platform, rwaTokenLog: opts.failingLog ? { append: () => Promise.reject(new Error('log down')) } : log, rwaTokenFields: fields });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const { tenant, sandbox } = await platform.tenancy.createTenant('Acme');
  const scope = { tenant: tenant.id, workspace: sandbox.id };
  const owner = await platform.tenancy.createKey(sandbox.id, 'owner');
  const viewer = await platform.tenancy.createKey(sandbox.id, 'viewer');
  const developer = await platform.tenancy.createKey(sandbox.id, 'developer');
  const other = await platform.tenancy.createTenant('Globex');
  const otherOwner = await platform.tenancy.createKey(other.sandbox.id, 'owner');
  let k = 0;
  const call = (method: 'GET' | 'POST' | 'DELETE' | 'PUT', url: string, body?: unknown, token = owner.token, headers: Record<string, string> = {}) =>
    app.inject({
      method, url,
      headers: { authorization: `Bearer ${token}`, ...(method === 'POST' ? { 'idempotency-key': `k-${k++}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  return { dir, store, platform, app, scope, owner, viewer, developer, otherOwner, otherOwnerKeyId: otherOwner.key.id, otherScope: { tenant: other.tenant.id, workspace: other.sandbox.id }, log, fields, call };
}
