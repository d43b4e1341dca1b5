// Process lifecycle shared by the programs: boot, report configuration errors plainly, and stop
// cleanly once on SIGINT or SIGTERM.
import { ConfigError, helpAsked } from './config.ts';
import type { Logger } from './logger.ts';
import { startTracing, type Tracing } from './tracing/start-tracing.ts';
import { tracingEnv } from './tracing/config.ts';

export interface Running {
  log: Logger;
  stop(): Promise<void>;
}

/** What a running program may ask of its lifecycle. */
export interface Lifecycle {
  /**
   * Stops the program cleanly and exits 75 (EX_TEMPFAIL): something it cannot run without is gone (a
   * link to its store, say), and a supervisor should start it again, not take it as a clean stop.
   */
  fail(why: string): void;
}

/**
 * A program that will not start on what it found (a damaged or missing store, say): printed as it is,
 * without a stack, and the process exits 65 (EX_DATAERR), which a supervisor should not retry blindly.
 * `temporary`: what it lacks may come back (a party it must hear from is unreachable), so it exits 75
 * (EX_TEMPFAIL) and a supervisor starts it again.
 */
export class RefusedToStart extends Error {
  readonly temporary: boolean;
  constructor(message: string, options?: { cause?: unknown; temporary?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RefusedToStart';
    this.temporary = options?.temporary ?? false;
  }
}

/** Runs a program: `usage` (its settings) is printed, and nothing started, when it is asked for `--help`. */
export async function runMain(name: string, boot: (lifecycle: Lifecycle) => Promise<Running>, usage?: () => string): Promise<void> {
  if (usage && helpAsked()) {
    process.stdout.write(usage());
    process.exit(0);
  }
  let running: Running;
  // Traces, when the OTEL_* variables ask for them (docs/operations.md "Traces"); nothing is loaded otherwise.
  let tracing: Tracing | undefined;
  try {
    tracing = await startTracing(name, tracingEnv());
    running = await boot({ fail: (why) => (running ? shutdown(`failure: ${why}`, 75) : process.exit(75)) });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${name}: ${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    if (err instanceof RefusedToStart) {
      process.stderr.write(`${name}: refused to start: ${err.message}\n`);
      process.exit(err.temporary ? 75 : 65); // EX_TEMPFAIL, EX_DATAERR
    }
    process.stderr.write(`${name}: failed to start: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  }
  let stopping = false;
  function shutdown(signal: string, code = 0): void {
    if (stopping) return;
    stopping = true;
    running.log.info({ signal }, `${name} stopping`);
    const force = setTimeout(() => process.exit(1), 5000);
    force.unref();
    running.stop().then(() => tracing?.shutdown().catch(() => undefined)).then(
      () => {
        running.log.info(`${name} stopped`);
        process.exit(code);
      },
      (err: unknown) => {
        running.log.error({ err }, `${name} failed to stop cleanly`);
        process.exit(1);
      },
    );
  }
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}
