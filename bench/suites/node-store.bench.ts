// A node's sealed store at scale (docs/storage.md "Pruning", "Costs"): a store of single-use records
// as a busy node writes them (session claims, intent records with their expiry entries, pool used
// marks), then the time to open it (every record read and its digest recomputed against the head), the
// heap and RSS that open holds, and the time of one pruning pass that deletes the half past its time.
// 1,000,000 records when this suite is picked (`npm run bench -- --only node-store`), 100,000 in the
// default run so that it stays short.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { BenchSuite } from '../harness.ts';
import { SealedStore, type BatchOp } from '../../node/storage/sealed-store.ts';
import { VaultShareStore } from '../../node/storage/vault-shares.ts';
import { IntentLedger } from '../../node/runtime/authorization/intent-ledger.ts';
import { PRUNE_MARGIN_MS } from '../../node/storage/range-pruning.ts';
import { sessionIdAt } from '../../core/session/session-id.ts';

const onlyAt = process.argv.indexOf('--only');
const picked = onlyAt >= 0 && (process.argv[onlyAt + 1] ?? '').includes('node-store');
const RECORDS = picked ? 1_000_000 : 100_000;
const label = RECORDS >= 1_000_000 ? `${RECORDS / 1_000_000}M` : `${RECORDS / 1000}k`;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const storageKey = new Uint8Array(randomBytes(32));
let dir = '';
/** The records' times spread over the hour before and the hour after T0; the pass prunes those before. */
const T0 = Date.now();
let opened: SealedStore | undefined;
let memory: Record<string, number> = {};

const hex = (n: number) => randomBytes(n).toString('hex');

/** The record mix: 35% session claims, 25% intents (record plus expiry entry: 50%), 15% pool used marks. */
async function build(store: SealedStore): Promise<void> {
  const claims = Math.round(RECORDS * 0.35);
  const intents = Math.round(RECORDS * 0.25);
  const marks = RECORDS - claims - 2 * intents;
  const keys = Array.from({ length: 32 }, (_, i) => `vault-${String(i).padStart(4, '0')}`);
  const mark = new TextEncoder().encode(JSON.stringify({ v: 1, kind: 'presignature-used', expiresAt: T0 + 86_400_000 }));
  let ops: BatchOp[] = [];
  const flush = async () => {
    await store.batch(ops);
    ops = [];
  };
  // Times from an hour before T0 to an hour after, evenly.
  const spread = (i: number, n: number) => T0 - 3600_000 + Math.floor((i / n) * 2 * 3600_000);
  for (let i = 0; i < claims; i++) {
    ops.push({ type: 'put', key: `used/${Buffer.from(sessionIdAt(spread(i, claims), randomBytes(24))).toString('hex')}`, value: new Uint8Array([1]) });
    if (ops.length >= 5000) await flush();
  }
  for (let i = 0; i < intents; i++) {
    const hash = hex(32);
    const notAfter = BigInt(Math.floor(spread(i, intents) / 1000));
    const rec = { v: 1, notAfter: notAfter.toString(), use: { chain: 'evm', chainId: '1', from: '0x' + hex(20), nonce: i } };
    ops.push({ type: 'put', key: `intent/used/${hash}`, value: new TextEncoder().encode(JSON.stringify(rec)), secret: true });
    ops.push({ type: 'put', key: `intent/exp/${notAfter.toString().padStart(20, '0')}/${hash}`, value: new Uint8Array() });
    if (ops.length >= 5000) await flush();
  }
  for (let i = 0; i < marks; i++) {
    const prefix = i % 3 === 0 ? 'frost-nonce-used' : 'presig-used';
    ops.push({ type: 'put', key: `${prefix}/${keys[i % keys.length]}/${hex(16)}`, value: mark });
    if (ops.length >= 5000) await flush();
  }
  await flush();
  await store.put('intent/exp-indexed', new Uint8Array([1]));
}

function mib(n: number): number {
  return Math.round((n / 1048576) * 10) / 10;
}

export const suite: BenchSuite = {
  title: `node store: open and prune at ${label} records`,
  async setup() {
    dir = mkdtempSync(join(tmpdir(), 'bench-node-store-'));
    const store = await SealedStore.open(join(dir, 'db'), storageKey);
    const t0 = performance.now();
    await build(store);
    const buildMs = performance.now() - t0;
    await store.close();
    memory = { build_s: Math.round(buildMs / 100) / 10 };
  },
  async teardown() {
    await opened?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  },
  cases: [
    {
      name: `node-store.open.${label}`,
      runs: picked ? 3 : 5,
      warmup: 1,
      fn: async () => {
        await opened?.close();
        opened = undefined;
        gc();
        const before = process.memoryUsage();
        const cpu = process.cpuUsage();
        const store = await SealedStore.open(join(dir, 'db'), storageKey);
        const used = process.cpuUsage(cpu);
        gc();
        const after = process.memoryUsage();
        // CPU seconds beside the wall-clock median: on a shared machine the former is the steadier figure.
        memory = { ...memory, records: RECORDS, open_cpu_s: Math.round((used.user + used.system) / 1e5) / 10, heap_growth_mib: mib(after.heapUsed - before.heapUsed), rss_growth_mib: mib(after.rss - before.rss), external_growth_mib: mib(after.external + after.arrayBuffers - before.external - before.arrayBuffers), bytes_per_record: Math.round((after.heapUsed + after.external - before.heapUsed - before.external) / RECORDS) };
        opened = store;
      },
      extra: () => memory,
    },
    {
      // One pass over a store of which about half is past its time: run once, since it deletes.
      name: `node-store.prune.${label}`,
      runs: 1,
      warmup: 0,
      fn: async () => {
        const store = opened ?? (await SealedStore.open(join(dir, 'db'), storageKey));
        opened = store;
        // The horizon (now − margin) is T0: the half of each kind written before T0 is past it.
        const now = () => T0 + PRUNE_MARGIN_MS;
        const cpu = process.cpuUsage();
        const intents = await new IntentLedger(store, { now }).prune(now());
        const claims = await new VaultShareStore(store, { now }).pruneSessionClaims(now());
        const used = process.cpuUsage(cpu);
        memory = { ...memory, pruned_intents: intents, pruned_claims: claims, prune_cpu_s: Math.round((used.user + used.system) / 1e5) / 10, left: RECORDS - claims - 2 * intents };
      },
      extra: () => memory,
    },
  ],
};
