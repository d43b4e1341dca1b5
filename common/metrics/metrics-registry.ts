// A program's Prometheus registry (docs/operations.md "Metrics and health"). Each program, and each
// instance a test builds, gets a registry of its own rather than prom-client's global one, so two
// instances in one process never collide on a metric name.
import { collectDefaultMetrics, Registry } from 'prom-client';

export { Registry } from 'prom-client';

/** A fresh registry; with `process` (the default) it carries prom-client's process and Node.js metrics. */
export function createMetricsRegistry(opts: { process?: boolean } = {}): Registry {
  const registry = new Registry();
  if (opts.process ?? true) collectDefaultMetrics({ register: registry });
  return registry;
}

/** Seconds between two `performance.now()` readings: the unit every duration metric is in. */
export function secondsSince(startMs: number): number {
  return (performance.now() - startMs) / 1000;
}
