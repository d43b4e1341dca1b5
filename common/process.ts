// Process lifecycle shared by the programs: boot, report configuration errors plainly, and stop
// cleanly once on SIGINT or SIGTERM.
import { ConfigError } from './config.ts';
import type { Logger } from './logger.ts';

export interface Running {
  log: Logger;
  stop(): Promise<void>;
}

export async function runMain(name: string, boot: () => Promise<Running>): Promise<void> {
  let running: Running;
  try {
    running = await boot();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${name}: ${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    process.stderr.write(`${name}: failed to start: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  }
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    running.log.info({ signal }, `${name} stopping`);
    const force = setTimeout(() => process.exit(1), 5000);
    force.unref();
    running.stop().then(
      () => {
        running.log.info(`${name} stopped`);
        process.exit(0);
      },
      (err: unknown) => {
        running.log.error({ err }, `${name} failed to stop cleanly`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}
