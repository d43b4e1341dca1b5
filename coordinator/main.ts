// Coordinator process: boots from configuration and stops cleanly on SIGINT/SIGTERM.
import { CoordinatorConfigSchema, loadCoordinatorConfig } from './config.ts';
import { settingsUsage } from '../common/config.ts';
import { createLogger } from '../common/logger.ts';
import { startCoordinator } from './coordinator-server.ts';
import { runMain } from '../common/process.ts';

await runMain('coordinator', async () => {
  const config = loadCoordinatorConfig();
  const log = createLogger('coordinator', config.logLevel);
  const running = await startCoordinator(config, log);
  log.info({ port: running.port, listen: config.listen }, 'coordinator listening');
  return { log, stop: () => running.stop() };
}, () => settingsUsage('usage: node coordinator/main.js (npm start runs it; docs/operations.md)\nThe coordinator: relays the sessions of the signer nodes and keeps the vault records.', CoordinatorConfigSchema, 'COORDINATOR_CONFIG_FILE'));
