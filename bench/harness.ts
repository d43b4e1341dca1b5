// Benchmark harness: each suite file exports `suite`, a list of cases. A case names the baseline it is
// compared with; the baseline is sampled in the same run, around the case, so ratios hold across
// machines and across a machine whose speed drifts during the run.
import { cpus, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';

export interface BenchCase {
  /** Unique name, e.g. `frost.sign.2of3`. */
  name: string;
  /** Name of another case in the same run whose median is the denominator of `ratio`. */
  baseline?: string;
  /** How many timed runs (after `warmup` untimed ones). */
  runs?: number;
  warmup?: number;
  /** One timed run. Return value ignored. */
  fn: () => unknown | Promise<unknown>;
  /** Extra figures to print beside the timing (bytes per party, share size...). */
  extra?: () => Record<string, number | string>;
}

export interface BenchSuite {
  title: string;
  setup?: () => Promise<void> | void;
  teardown?: () => Promise<void> | void;
  cases: BenchCase[];
}

export interface BenchResult {
  name: string;
  median_ms: number;
  p99_ms: number;
  runs: number;
  baseline: string | null;
  ratio: number | null;
  /** The baseline median the ratio divides by (sampled around this case). */
  baseline_ms?: number;
  extra?: Record<string, number | string>;
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1);
  return sorted[Math.max(0, idx)]!;
}

async function sample(c: BenchCase, runs: number, warmup: number): Promise<number[]> {
  for (let i = 0; i < warmup; i++) {
    await c.fn();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await c.fn();
    times.push(performance.now() - t0);
    // A synchronous case would otherwise hold the event loop for the whole series, and a server in this
    // process (the cluster bench's coordinator) could not answer its peers' keepalives meanwhile.
    await new Promise((resolve) => setImmediate(resolve));
  }
  return times;
}

function summary(times: number[]): { median: number; p99: number; runs: number } {
  const sorted = [...times].sort((a, b) => a - b);
  return { median: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), runs: sorted.length };
}

async function measure(c: BenchCase): Promise<{ median: number; p99: number; runs: number }> {
  const runs = c.runs ?? 50;
  return summary(await sample(c, runs, c.warmup ?? Math.min(5, runs)));
}

interface Registered {
  c: BenchCase;
  suite: BenchSuite;
}

/**
 * Ratios are paired: before every timed run of a case, its baseline runs a few times, and the ratio
 * divides the case's median by the median of those interleaved baseline samples. On a shared machine
 * whose speed drifts, a baseline measured minutes earlier would move the ratio as much as the code does.
 */
async function measurePaired(c: BenchCase, base: BenchCase): Promise<{ median: number; p99: number; runs: number; base: number }> {
  const runs = c.runs ?? 50;
  const perRun = Math.max(3, Math.ceil((base.runs ?? 50) / runs));
  await sample(base, 0, 3);
  await sample(c, 0, c.warmup ?? Math.min(5, runs));
  const times: number[] = [];
  const baseTimes: number[] = [];
  for (let i = 0; i < runs; i++) {
    baseTimes.push(...(await sample(base, perRun, 0)));
    times.push(...(await sample(c, 1, 0)));
  }
  return { ...summary(times), base: summary(baseTimes).median };
}

export async function runSuites(suites: BenchSuite[]): Promise<BenchResult[]> {
  const byName = new Map<string, Registered>();
  for (const suite of suites) for (const c of suite.cases) byName.set(c.name, { c, suite });
  const results: BenchResult[] = [];
  const medians = new Map<string, number>();
  for (const s of suites) {
    try {
      // Inside the try: a setup that throws halfway (a node that would not start, say) still gets its
      // teardown, so no process it started is left running. Teardowns stop what was started only.
      await s.setup?.();
      for (const c of s.cases) {
        const base = c.baseline === undefined ? undefined : byName.get(c.baseline);
        if (c.baseline !== undefined && !base) throw new Error(`baseline ${c.baseline} of ${c.name} is not in this run`);
        // A baseline from another suite is interleaved only if that suite needs no setup.
        const pair = base && (base.suite === s || (!base.suite.setup && !base.suite.teardown)) ? base.c : undefined;
        const m: { median: number; p99: number; runs: number; base?: number } = pair ? await measurePaired(c, pair) : await measure(c);
        const r: BenchResult = {
          name: c.name, median_ms: m.median, p99_ms: round(m.p99), runs: m.runs, baseline: c.baseline ?? null, ratio: null,
        };
        medians.set(c.name, m.median);
        const denominator = m.base ?? medians.get(c.baseline ?? '');
        if (c.baseline !== undefined) {
          if (denominator === undefined) throw new Error(`baseline ${c.baseline} of ${c.name} has not run yet`);
          r.ratio = round(m.median / denominator, 2);
          r.baseline_ms = round(denominator);
        }
        const extra = c.extra?.();
        if (extra) r.extra = extra;
        results.push(r);
      }
    } catch (err) {
      await teardownAfterFailure(s);
      throw err;
    }
    await s.teardown?.();
  }
  for (const r of results) r.median_ms = round(r.median_ms);
  return results;
}

/** The teardown after a failed setup or case; its own failure is reported but does not hide the first. */
async function teardownAfterFailure(s: BenchSuite): Promise<void> {
  try {
    await s.teardown?.();
  } catch (err) {
    console.error(`teardown of "${s.title}" failed too:`, err);
  }
}

function round(x: number, digits = 4): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function machine(): string {
  const c = cpus();
  return `${c.length} x ${c[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}`;
}

export function table(results: BenchResult[]): string {
  const rows = [['name', 'median ms', 'p99 ms', 'runs', 'baseline', 'baseline ms', 'ratio', 'extra']];
  for (const r of results) {
    rows.push([
      r.name, r.median_ms.toFixed(3), r.p99_ms.toFixed(3), String(r.runs), r.baseline ?? '', r.baseline_ms?.toFixed(3) ?? '', r.ratio === null ? '' : `${r.ratio}x`,
      r.extra ? Object.entries(r.extra).map(([k, v]) => `${k}=${v}`).join(' ') : '',
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}
