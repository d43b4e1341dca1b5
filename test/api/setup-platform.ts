// Shared setup for platform-API tests: a real store (LevelDB, or PostgreSQL: test/support/test-store.ts), the app through inject, and a tenant with
// keys of several roles.
import { PNG } from 'pngjs';
import type { Test } from 'tap';
import { join } from 'node:path';
import { buildApp } from '../../api/app.ts';
import { loadApiConfig } from '../../api/config.ts';
import { createLogger } from '../../common/logger.ts';
import { openTestStore } from '../support/test-store.ts';
import { createPlatform } from '../../api/platform.ts';

/** `env`: extra API_* settings. */
export async function setupPlatform(t: Test, opts: Parameters<typeof createPlatform>[1] = {}, env: Record<string, string> = {}) {
  const { dir, store } = await openTestStore('platform-');
  const platform = await createPlatform(store, { objectDir: join(dir, 'objects'), ...opts });
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir, ...env }), logger: createLogger('api', 'silent'), platform });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const { tenant, sandbox, production } = await platform.tenancy.createTenant('Acme');
  const owner = await platform.tenancy.createKey(sandbox.id, 'owner', { mfa: true });
  const viewer = await platform.tenancy.createKey(sandbox.id, 'viewer');
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT', url: string, body?: unknown, token = owner.token, headers: Record<string, string> = {}) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });
  return { dir, store, platform, app, tenant, sandbox, production, owner, viewer, call };
}

/**
 * The webhook allow-list a test that delivers to `receiver` must pass explicitly
 * (`webhookAllowedDestinations`): the receivers listen on plain http on loopback, which the default
 * policy (https to public addresses only) refuses.
 */
export const LOOPBACK_RECEIVERS: readonly string[] = ['127.0.0.1'];

export { receiver, type Received } from '../support/loopback-receiver.ts';

/**
 * Confirms an uploaded PNG logo and checks that the API then serves, as that type, the image written again
 * from its pixels: the bytes the store now holds, the same size and pixels as `bytes`. Answers them.
 */
export async function confirmAndServeLogo(t: Test, s: Awaited<ReturnType<typeof setupPlatform>>, objectKey: string, bytes: Buffer, contentType: string, what: string): Promise<Buffer> {
  const ok = await s.call('POST', '/v1/branding/logo', { object_key: objectKey });
  t.equal(ok.statusCode, 200, `${what}: confirmed`);
  t.equal(ok.json().resolved.logo_url, `/v1/objects/${objectKey}`);
  const served = await s.app.inject({ method: 'GET', url: ok.json().resolved.logo_url });
  t.equal(served.statusCode, 200);
  t.equal(served.headers['content-type'], contentType);
  t.same(served.rawPayload, await s.platform.objects.read(objectKey), `${what}: the stored bytes`);
  const [got, sent] = [PNG.sync.read(served.rawPayload), PNG.sync.read(bytes)];
  t.same([got.width, got.height, got.data], [sent.width, sent.height, sent.data], `${what}: the same size and pixels`);
  return served.rawPayload;
}

/** A real, decodable 4x4 PNG (uploads are refused unless their header declares a size). */
export function tinyPng(): Buffer {
  const p = new PNG({ width: 4, height: 4 });
  p.data.fill(0x80);
  return PNG.sync.write(p);
}
