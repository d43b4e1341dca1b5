// A webhook receiver for tests: a real HTTP server on loopback that keeps every request it gets. Its own
// module, so that end-to-end tests use it without loading the API.
import type { Test } from 'tap';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received { headers: IncomingHttpHeaders; body: string }

/** A real HTTP receiver on loopback; `answer` picks the status for each request (or 'hang'). */
export async function receiver(t: Test, answer: (n: number) => number | 'hang' = () => 200) {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const a = answer(got.length);
      if (a === 'hang') return;
      res.writeHead(a, { 'content-type': 'text/plain' }).end(`answer ${a}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got };
}
