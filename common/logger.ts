// Structured logging for every program. Redaction is by field name, so a secret that reaches a log
// call by mistake under a conventional name still prints as <redacted>.
import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/** Field names never written to a log, at any depth pino can express. */
export const REDACTED_FIELDS = [
  'secret', 'share', 'nonce', 'token', 'password', 'privateKey', 'private_key', 'seed', 'authorization',
  'storageKey', 'signingSecret', 'encryptionSecret', 'apiKey', 'api_key',
];

const redactPaths = REDACTED_FIELDS.flatMap((f) => [f, `*.${f}`, `*.*.${f}`, `req.headers.${f}`]);

export function createLogger(name: string, level = 'info', destination?: NodeJS.WritableStream): Logger {
  const options: LoggerOptions = {
    name,
    level,
    redact: { paths: redactPaths, censor: '<redacted>' },
    base: { pid: process.pid },
  };
  return destination ? pino(options, destination as never) : pino(options);
}
