// The API as a Fastify application factory. server.ts boots it; tests call buildApp and use inject.
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from '../common/logger.ts';
import type { ApiConfig } from './config.ts';
import { installErrorHandling } from './errors.ts';
import { healthRoutes } from './routes/health.ts';
import type { CoordinatorClient } from './coordinator/coordinator-client.ts';

export interface AppOptions {
  config: ApiConfig;
  logger: Logger;
  coordinator?: CoordinatorClient | undefined;
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger as FastifyBaseLogger,
    bodyLimit: opts.config.bodyLimitBytes,
  }).withTypeProvider<TypeBoxTypeProvider>();
  installErrorHandling(app);
  await app.register(healthRoutes, { coordinator: opts.coordinator });
  return app;
}
