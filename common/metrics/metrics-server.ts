// Serves a registry as GET /metrics on a listen address of its own, never the public one (docs/
// operations.md "Metrics and health"). The metrics carry no secrets but describe the service's traffic,
// so the address is loopback or a private interface a scraper reaches, never one customers reach. The
// same port answers the process's liveness (/healthz) and, when the program has a readiness check,
// /readyz: the coordinator and the nodes have no HTTP port of their own for a probe.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { splitHostPort } from '../config.ts';

export interface MetricsServerOptions {
  /** `host:port`; port 0 picks a free one (tests). */
  listen: string;
  /**
   * Whether the program can serve now; /readyz answers 503 while it says no. An object answer adds its
   * `detail` fields to the body (what is degraded without making the program unready).
   */
  ready?: () => Readiness | Promise<Readiness>;
}

export type Readiness = boolean | { ready: boolean; detail: Record<string, unknown> };

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

export async function serveMetrics(registry: Registry, opts: MetricsServerOptions): Promise<MetricsServer> {
  const { host, port } = splitHostPort(opts.listen);
  const server = createServer((req, res) => void answer(registry, opts, req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host.replace(/^\[|\]$/g, ''), () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  return {
    port: typeof addr === 'object' && addr ? addr.port : port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

async function answer(registry: Registry, opts: MetricsServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  const send = (status: number, type: string, body: string) => {
    res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'text/plain', 'method not allowed\n');
  try {
    if (path === '/metrics') return send(200, registry.contentType, await registry.metrics());
    if (path === '/healthz') return send(200, 'application/json', '{"status":"ok"}');
    if (path === '/readyz' && opts.ready) {
      const r = await opts.ready();
      const ready = typeof r === 'boolean' ? r : r.ready;
      const detail = typeof r === 'boolean' ? {} : r.detail;
      return send(ready ? 200 : 503, 'application/json', JSON.stringify({ status: ready ? 'ready' : 'unavailable', ...detail }));
    }
    return send(404, 'text/plain', 'not found\n');
  } catch {
    // A collect callback that failed (the store, say): the scrape fails visibly rather than lying.
    return send(500, 'text/plain', 'metrics collection failed\n');
  }
}
