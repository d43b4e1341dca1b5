// Whether a program exports traces: off unless the standard OpenTelemetry variables ask for it
// (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/). Read from the
// environment the program was given, once, before anything of the SDK is loaded (start-tracing.ts);
// the SDK reads the other OTEL_* variables itself (docs/operations.md "Traces").

/** The variables that decide it, as the SDK reads them. */
export type TracingEnv = Readonly<Record<string, string | undefined>>;

/**
 * On when OTEL_TRACES_EXPORTER names an exporter other than `none`, or, with it unset, when an OTLP
 * endpoint is given (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT). Off when
 * OTEL_SDK_DISABLED is true, and by default: the SDK's own default (export to localhost:4318) would
 * make every program that was given nothing send to an address nobody configured.
 */
export function tracingEnabled(env: TracingEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
  if (exporters.length) return !exporters.includes('none');
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

/** The environment the tracing settings are read from: the process's own. */
export const tracingEnv = (): TracingEnv => process.env;
