// The anchor keeper over HTTP(S) (docs/storage.md "Anchor keepers"): POST /v1/write and POST /v1/read
// with the bodies of keeper-messages.ts, GET /v1/key (the keeper's public key, to compare with the one
// pinned) and GET /healthz. Bodies are bounded (1 KiB), and so is the time a request may take. TLS when
// given a certificate; plain HTTP otherwise, for loopback or behind a TLS front.
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { httpStatusOfCode } from '../../core/errors/http-status.ts';
import { toHex } from '../../common/bytes.ts';
import type { AnchorKeeper } from './keeper-service.ts';
import { MAX_BODY_BYTES, ReadAnswerWire, ReadRequestWire, WriteAnswerWire, WriteRequestWire, KeeperErrorWire } from './keeper-messages.ts';

export interface AnchorKeeperServerOptions {
  keeper: AnchorKeeper;
  host: string;
  port: number;
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** Where the server says what happens: refusals and failures, never a record or a key. */
  log?: (line: Record<string, unknown>) => void;
}

export interface RunningAnchorKeeper {
  readonly port: number;
  readonly app: FastifyInstance;
  close(): Promise<void>;
}

/** How long a request may take, from its connection on: a client that trickles its bytes is cut off. */
const REQUEST_TIMEOUT_MS = 10_000;

export function buildAnchorKeeperApp(o: Pick<AnchorKeeperServerOptions, 'keeper' | 'tls' | 'log'>): FastifyInstance {
  const log = o.log ?? (() => undefined);
  const app = (o.tls
    ? Fastify({ https: { cert: o.tls.cert, key: o.tls.key }, bodyLimit: MAX_BODY_BYTES, connectionTimeout: REQUEST_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, logger: false })
    : Fastify({ bodyLimit: MAX_BODY_BYTES, connectionTimeout: REQUEST_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, logger: false })) as unknown as FastifyInstance;
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof CustodyError) {
      log({ msg: 'request refused', route: req.url, code: err.code, reason: err.message });
      return reply.status(httpStatusOfCode(err.code)).send({ error: err.message, code: err.code });
    }
    if (err.validation) return reply.status(400).send({ error: `invalid request: ${err.message}`, code: 'invalid_request' });
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return reply.status(413).send({ error: 'the body is larger than a keeper request', code: 'payload_too_large' });
    if (err.statusCode && err.statusCode < 500) return reply.status(err.statusCode).send({ error: err.message, code: 'invalid_request' });
    log({ msg: 'request failed', route: req.url, reason: err.message });
    return reply.status(500).send({ error: 'internal error', code: 'internal' });
  });
  app.setNotFoundHandler((_req, reply) => reply.status(404).send({ error: 'no such route', code: 'not_found' }));
  const errors = { 400: KeeperErrorWire, 401: KeeperErrorWire, 413: KeeperErrorWire, 429: KeeperErrorWire, 500: KeeperErrorWire };
  app.post<{ Body: WriteRequestWire }>('/v1/write', { schema: { body: WriteRequestWire, response: { 200: WriteAnswerWire, ...errors } } }, (req) => o.keeper.write(req.body));
  app.post<{ Body: ReadRequestWire }>('/v1/read', { schema: { body: ReadRequestWire, response: { 200: ReadAnswerWire, ...errors } } }, (req) => o.keeper.read(req.body));
  app.get('/v1/key', async () => ({ publicKey: toHex(o.keeper.publicKey) }));
  app.get('/healthz', async () => ({ status: 'ok' }));
  return app;
}

export async function startAnchorKeeperServer(o: AnchorKeeperServerOptions): Promise<RunningAnchorKeeper> {
  const app = buildAnchorKeeperApp(o);
  await app.listen({ host: o.host, port: o.port });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : o.port;
  o.log?.({ msg: 'anchor keeper listening', host: o.host, port, tls: Boolean(o.tls), publicKey: toHex(o.keeper.publicKey) });
  return { port, app, close: () => app.close() };
}
