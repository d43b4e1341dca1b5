// Starts the OpenTelemetry SDK in a program that asked for traces (config.ts), and only then
// loads it: with tracing off no module of the SDK is imported, and the @opentelemetry/api calls of the
// hot paths (spans.ts) are no-ops. Spans are made by the programs themselves (the API's request spans,
// the gRPC calls in proto/grpc.ts, the sessions and rounds), so nothing depends on module hooks that
// bundles and ES modules defeat; see docs/operations.md "Traces".
import { tracingEnabled, type TracingEnv } from './config.ts';

export interface Tracing {
  /** Exports what is still buffered and stops; called as the program stops. */
  shutdown(): Promise<void>;
}

/**
 * The SDK started for `program` (`api`, `coordinator`, `node`, its default service name
 * `custody-<program>`), or undefined when tracing is off.
 */
export async function startTracing(program: string, env: TracingEnv): Promise<Tracing | undefined> {
  if (!tracingEnabled(env)) return undefined;
  const { startTracingSdk } = await import('./tracing-sdk.ts');
  return startTracingSdk(program, env);
}
