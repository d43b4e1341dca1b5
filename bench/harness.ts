// Benchmark harness: each suite file exports `suite`, a list of cases. A case names the baseline it is
// compared with; the baseline is measured in the same run, so ratios hold across machines.
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
  extra?: Record<string, number | string>;
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1);
  return sorted[Math.max(0, idx)]!;
}

export async function measure(c: BenchCase): Promise<{ median: number; p99: number; runs: number }> {
  const runs = c.runs ?? 50;
  for (let i = 0; i < (c.warmup ?? Math.min(5, runs)); i++) await c.fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await c.fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { median: quantile(times, 0.5), p99: quantile(times, 0.99), runs };
}

export async function runSuites(suites: BenchSuite[]): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const s of suites) {
    await s.setup?.();
    try {
      for (const c of s.cases) {
        const m = await measure(c);
        const r: BenchResult = {
          name: c.name, median_ms: m.median, p99_ms: round(m.p99), runs: m.runs, baseline: c.baseline ?? null, ratio: null,
        };
        const extra = c.extra?.();
        if (extra) r.extra = extra;
        results.push(r);
      }
    } finally {
      await s.teardown?.();
    }
  }
  // Ratios are taken once everything ran, so a baseline may sit in any suite of the same run.
  const medians = new Map(results.map((r) => [r.name, r.median_ms]));
  for (const r of results) {
    if (r.baseline !== null) {
      const base = medians.get(r.baseline);
      if (base === undefined) throw new Error(`baseline ${r.baseline} of ${r.name} was not measured in this run`);
      r.ratio = round(r.median_ms / base, 2);
    }
  }
  for (const r of results) r.median_ms = round(r.median_ms);
  return results;
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
  const rows = [['name', 'median ms', 'p99 ms', 'runs', 'baseline', 'ratio', 'extra']];
  for (const r of results) {
    rows.push([
      r.name, r.median_ms.toFixed(3), r.p99_ms.toFixed(3), String(r.runs), r.baseline ?? '', r.ratio === null ? '' : `${r.ratio}x`,
      r.extra ? Object.entries(r.extra).map(([k, v]) => `${k}=${v}`).join(' ') : '',
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}
