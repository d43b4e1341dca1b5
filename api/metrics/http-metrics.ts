// Request rate and latency of the API by route and status (docs/operations.md "Metrics and health").
// The route label is the pattern Fastify matched (`/v1/vaults/:id`), never the URL: ids, query strings
// and upload signatures stay out of the labels, and the route table bounds how many series there are.
import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, type Registry } from 'prom-client';

/** The route label of a request no route matched (unknown paths, scanners): one series, whatever they asked for. */
export const UNMATCHED_ROUTE = 'unmatched';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function installHttpMetrics(app: FastifyInstance, registry: Registry): void {
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered, by method, route pattern and status', labelNames: ['method', 'route', 'status'], registers: [registry] });
  const duration = new Histogram({ name: 'http_request_duration_seconds', help: 'Time from receiving a request to sending its answer, by method, route pattern and status', labelNames: ['method', 'route', 'status'], buckets: BUCKETS, registers: [registry] });
  // A callback hook: no promise per request. `elapsedTime` is Fastify's own clock from onRequest.
  app.addHook('onResponse', (req, reply, done) => {
    const labels = { method: METHODS.has(req.method) ? req.method : 'other', route: req.routeOptions.url ?? UNMATCHED_ROUTE, status: reply.statusCode };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    done();
  });
}
