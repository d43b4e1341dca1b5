// Traces are off unless the OTEL_* variables ask for them (docs/operations.md "Traces"): with them off no
// module of the SDK is loaded and the request id is still a W3C trace id; with them on, the request id is
// the trace id of the request's span. Each case runs in a process of its own, as a program would, so
// that what one loads or registers is not another's.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { tracingEnabled } from '../../common/tracing/config.ts';

const root = resolve(import.meta.dirname, '../..');

t.test('which variables turn tracing on', async (t) => {
  t.notOk(tracingEnabled({}), 'off by default');
  t.ok(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), 'an OTLP endpoint');
  t.ok(tracingEnabled({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), 'a traces endpoint');
  t.ok(tracingEnabled({ OTEL_TRACES_EXPORTER: 'otlp' }), 'an exporter named');
  t.ok(tracingEnabled({ OTEL_TRACES_EXPORTER: 'console' }));
  t.notOk(tracingEnabled({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), 'the exporter none wins over an endpoint');
  t.notOk(tracingEnabled({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }), 'OTEL_SDK_DISABLED');
  t.notOk(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }), 'a blank endpoint');
});

/** Runs the start of a program (tracing, then a request id) in a process of its own with `env`. */
function program(env: Record<string, string>): { started: boolean; id: string; traceId: string; loaded: string[] } {
  const script = `
    import { createRequire } from 'node:module';
    const { startTracing } = await import('./common/tracing/start-tracing.ts');
    const { tracingEnv } = await import('./common/tracing/config.ts');
    const tracing = await startTracing('api', tracingEnv());
    const { requestTraceId, requestSpan } = await import('./api/request-trace-id.ts');
    const req = { headers: {}, method: 'GET', url: '/healthz?token=x', httpVersion: '1.1' };
    const id = requestTraceId(req);
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => /@opentelemetry[\\\\/](sdk|exporter|instrumentation)/.test(k));
    console.log(JSON.stringify({ started: tracing !== undefined, id, traceId: requestSpan(req)?.spanContext().traceId ?? '', loaded }));
    process.exit(0);
  `;
  const out = execFileSync(process.execPath, ['--import', './test/setup/ts-loader.mjs', '--input-type=module', '-e', script], {
    cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8',
  });
  return JSON.parse(out.trim().split('\n').at(-1)!) as { started: boolean; id: string; traceId: string; loaded: string[] };
}

t.test('with tracing off nothing of the SDK loads, and the request id is still a trace id', async (t) => {
  const off = program({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
  t.notOk(off.started, 'no SDK started');
  t.same(off.loaded, [], 'no module of the SDK, an exporter or an instrumentation loaded');
  t.match(off.id, /^[0-9a-f]{32}$/, 'the request id is 32 hex');
  t.equal(off.traceId, '', 'and no span was made');
});

t.test('with tracing on the request id is the trace id of the request\'s span', async (t) => {
  // An endpoint nobody answers: nothing is exported before the process exits.
  const on = program({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_BSP_SCHEDULE_DELAY: '60000' });
  t.ok(on.started, 'the SDK started');
  t.ok(on.loaded.some((k) => k.includes('sdk-node')), 'the Node SDK loaded');
  t.match(on.id, /^[0-9a-f]{32}$/);
  t.equal(on.id, on.traceId, 'the request id is the span\'s trace id');
});
