// A `fetch` that serves requests with a Fastify app's `inject`: the SDK, with its real request signing,
// talks to an app built in the test process without a listening socket (and so without a port).
import type { FastifyInstance } from 'fastify';

export function injectFetch(app: Pick<FastifyInstance, 'inject'>): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const res = await app.inject({
      method: (init?.method ?? 'GET') as 'GET', url: url.pathname + url.search, headers: { ...headers, host: url.host },
      ...(typeof init?.body === 'string' ? { payload: init.body } : {}),
    });
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out.set(k, Array.isArray(v) ? v.join(', ') : String(v));
    return new Response(res.statusCode === 204 || res.statusCode === 304 ? null : res.body, { status: res.statusCode, headers: out });
  }) as typeof fetch;
}
