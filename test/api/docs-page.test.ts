// The API reference page at /docs (docs/api-reference.md), as an integrator sees it: headless Chromium
// opens the page the API serves (the vault API and the platform API in one app) by an operation's link
// and finds that operation open with its body's example from the document, then scrolls through the
// same page and finds every operation of every area (tag) of the document under its area.
import t from 'tap';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { buildApp } from '../../api/app.ts';
import { loadApiConfig } from '../../api/config.ts';
import { createLogger } from '../../common/logger.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { TransactionService } from '../../api/transactions/transaction-service.ts';
import { createPlatform } from '../../api/platform.ts';

// A browser over the whole document: about a minute on a loaded machine, over two under heavy load.
t.setTimeout(240_000);
const CHROMIUM = '/usr/bin/chromium';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

interface Op { summary?: string; tags?: string[]; operationId?: string; requestBody?: { content?: Record<string, { example?: unknown }> } }
interface Doc { tags: { name: string }[]; paths: Record<string, Record<string, Op>> }

t.test('/docs shows every area with its operations, and an operation\'s example', async (t) => {
  if (!existsSync(CHROMIUM)) return t.fail(`${CHROMIUM} is missing: run node deploy/test/ensure-chromium.mjs (npm test does)`);
  const dir = mkdtempSync(join(tmpdir(), 'docs-page-'));
  const store = await RecordStore.open(dir);
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 1, vaultsPerOrg: 1 } });
  const app = await buildApp({
    config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api-test', 'silent'),
    vaults, transactions: new TransactionService({ vaults, hasBackend: () => true }), platform: await createPlatform(store, { objectDir: join(dir, 'objects') }),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const doc = (await (await fetch(`${base}/openapi.json`)).json()) as Doc;
  const byTag = new Map<string, { method: string; path: string; op: Op }[]>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      for (const tag of op.tags ?? []) byTag.set(tag, [...(byTag.get(tag) ?? []), { method, path, op }]);
    }
  }
  t.ok(doc.tags.length >= 20, `${doc.tags.length} areas`);

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const idOf = (tag: string, operationId: string) => `operations-${tag.replace(/\s/g, '_')}-${operationId}`;

  // The page is loaded once, by an operation's link (a deep link, as an integrator shares it): it opens
  // that operation, with its body's example. Rendering the whole document is most of what the page
  // costs a browser, so the same load then serves the scroll through every area below.
  const [tag, path, method] = ['payments', '/v1/payments', 'post'] as const;
  const op = doc.paths[path]?.[method];
  if (!op?.operationId) return t.fail(`${method.toUpperCase()} ${path} is not in the document`);
  await page.goto(`${base}/docs#/${encodeURIComponent(tag)}/${op.operationId}`);
  const block = page.locator(`[id="${idOf(tag, op.operationId)}"]`);
  await block.locator('.opblock-body').waitFor({ timeout: 90_000 });
  const text = (await block.textContent()) ?? '';
  const example = op.requestBody?.content?.['application/json']?.example as Record<string, unknown> | undefined;
  t.ok(example && Object.keys(example).every((k) => text.includes(`"${k}"`)), `${tag}: ${method.toUpperCase()} ${path} opened by its link shows its example body (${Object.keys(example ?? {}).join(', ')})`);

  // The page renders a window of its long list (a virtual list): scroll through it all from the top,
  // noting every operation block shown (its id is operations-<area>-<operationId>).
  await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
  const seen = new Set<string>();
  for (let step = 0, lastY = -1; step < 500; step++) {
    for (const id of await page.$$eval('.opblock', (blocks) => blocks.map((b) => b.id))) seen.add(id);
    const y = await page.evaluate(() => {
      const w = globalThis as unknown as { scrollBy(x: number, y: number): void; innerHeight: number; scrollY: number };
      w.scrollBy(0, Math.floor(w.innerHeight * 0.6));
      return w.scrollY;
    });
    if (y === lastY) break;
    lastY = y;
    await page.waitForTimeout(50);
  }
  const missing: string[] = [];
  for (const [area, ops] of byTag) {
    for (const { method, path, op } of ops) if (!op.operationId || !seen.has(idOf(area, op.operationId))) missing.push(`${area}: ${method.toUpperCase()} ${path}`);
  }
  t.same(missing, [], `every operation of every area is on the page under its area (${seen.size} blocks)`);
});
