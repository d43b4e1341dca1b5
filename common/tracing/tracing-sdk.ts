// The OpenTelemetry Node SDK as the programs run it, loaded only when tracing is on (start-tracing.ts).
// The exporter, its endpoint and protocol, the sampler, the batch delays and the resource come from the
// standard OTEL_* variables, read by the SDK itself. Only traces: metrics stay on the Prometheus port
// and logs on stdout, whatever OTEL_METRICS_EXPORTER and OTEL_LOGS_EXPORTER say.
import { NodeSDK } from '@opentelemetry/sdk-node';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import pg from 'pg';
import type { Tracing } from './start-tracing.ts';
import type { TracingEnv } from './config.ts';

export function startTracingSdk(program: string, env: TracingEnv): Tracing {
  // PostgreSQL: statements without their values (enhancedDatabaseReporting stays off); a query that
  // starts no trace of its own (a poll of the job queue) makes no span.
  const pgInstrumentation = new PgInstrumentation({ requireParentSpan: true });
  const named = env.OTEL_SERVICE_NAME?.trim() || /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const sdk = new NodeSDK({
    ...(named ? {} : { serviceName: `custody-${program}` }),
    // fetch() and undici: the chain backends, webhooks, OpenID discovery; only inside a trace.
    instrumentations: [pgInstrumentation, new UndiciInstrumentation({ requireParentforSpans: true })],
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  // The pg the programs imported before the SDK started (an ES module import, or a bundle's own copy)
  // is patched in place: the hooks the SDK installs see only later require() calls.
  for (const def of pgInstrumentation.getModuleDefinitions()) if (def.name === 'pg') def.patch?.(pg, undefined);
  return { shutdown: () => sdk.shutdown() };
}
