// API process: loads configuration, connects to the coordinator, serves HTTP until SIGINT/SIGTERM.
import { loadApiConfig } from './config.ts';
import { createLogger } from '../common/logger.ts';
import { runMain } from '../common/process.ts';
import { buildApp } from './app.ts';
import { connectCoordinator } from './coordinator/coordinator-client.ts';

await runMain('api', async () => {
  const config = loadApiConfig();
  const log = createLogger('api', config.logLevel);
  const coordinator = config.coordinator
    ? connectCoordinator({ address: config.coordinator, tlsCa: config.coordinatorTlsCa, tlsCert: config.coordinatorTlsCert, tlsKey: config.coordinatorTlsKey })
    : undefined;
  if (!coordinator) log.warn('no coordinator configured: /readyz reports unavailable');
  const app = await buildApp({ config, logger: log, coordinator });
  const address = await app.listen({ host: config.host, port: config.port });
  log.info({ address }, 'api listening');
  return {
    log,
    async stop() {
      await app.close();
      coordinator?.close();
    },
  };
});
