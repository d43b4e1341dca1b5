// Traces across the processes (docs/operations.md "Traces"): the API, the coordinator and three nodes
// started with tracing on (`traceReceiver().env` in the stack's settings), exporting OTLP/HTTP (JSON) to a
// receiver the test runs. Run on the governance stack (governance.test.ts), before its journey. One EVM transfer
// through the API is one trace: the API's request span (its trace id is the answer's request id and the
// log lines' reqId), the signing the API's worker runs for it, the coordinator's Sign call and session, and
// the session and round spans of every node that signed, each with the session id and its outcome. No
// span carries an attribute outside the allow-list, nor any of the request's intent, signature or other
// long values.
import type { Test } from 'tap';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWalletClient, http, parseEther, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import type { Stack } from './stack.ts';
import { waitUntil } from '../cluster/cluster-harness.ts';
import { CustodyClient } from '../../api/sdk/client.ts';
import { SPAN_ATTRIBUTES } from '../../common/tracing/spans.ts';

interface OtlpValue { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number }
interface OtlpAttribute { key: string; value: OtlpValue }
interface OtlpSpan { traceId: string; spanId: string; parentSpanId?: string; name: string; attributes?: OtlpAttribute[]; status?: { code?: number } }
interface OtlpExport { resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { scope?: { name?: string }; spans?: OtlpSpan[] }[] }[] }

/** A span as received: its service, its scope, and its attributes as plain values. */
export interface Received { service: string; scope: string; traceId: string; spanId: string; parentSpanId: string; name: string; attrs: Record<string, string | number | boolean> }

const plain = (v: OtlpValue): string | number | boolean => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : v.boolValue ?? v.doubleValue ?? '');
const attrsOf = (a: OtlpAttribute[] | undefined) => Object.fromEntries((a ?? []).map((x) => [x.key, plain(x.value)]));

/** What the HTTP-client instrumentation (fetch, undici) may add beside the project's own keys. */
const HTTP_CLIENT_ATTRIBUTES = ['url.full', 'url.path', 'url.query', 'url.scheme', 'server.address', 'server.port', 'http.request.method', 'http.request.method_original', 'http.response.status_code', 'user_agent.original', 'network.peer.address', 'network.peer.port', 'error.type'];

/** An OTLP/HTTP (JSON) trace receiver on loopback, and the settings that make a program export to it. */
export async function traceReceiver(): Promise<{ spans: Received[]; env: Record<string, string>; close: () => Promise<void> }> {
  const spans: Received[] = [];
  const receiver = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const doc = JSON.parse(body) as OtlpExport;
        for (const rs of doc.resourceSpans ?? []) {
          const service = String(attrsOf(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) spans.push({ service, scope: ss.scope?.name ?? '', traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', name: s.name, attrs: attrsOf(s.attributes) });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const env = {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '200',
  };
  return { spans, env, close: () => new Promise<void>((resolve) => receiver.close(() => resolve())) };
}

/** One transfer is one trace across the API, the coordinator and every signing node. */
export async function tracesJourney(t: Test, stack: Stack, spans: Received[]): Promise<void> {
  const chain = stack.anvil!;

  // The SDK's answers to the submission, and what it sent: its request id and its long values.
  const submissions: { requestId: string; body: string }[] = [];
  const client = new CustodyClient({
    baseUrl: stack.base, organization: stack.organization, keyId: stack.apiKeyId, secretKey: stack.secretKey,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (init?.method === 'POST' && url.pathname === '/v1/transactions') submissions.push({ requestId: res.headers.get('x-request-id') ?? '', body: String(init.body) });
      return res;
    },
  });
  const vault = await client.waitForVault((await client.createVault({ tier: 'hosted', name: 'traced' })).id);
  const wallet = await client.createWallet(vault.id, { chain: 'evm-local' });
  const funder = createWalletClient({ chain: foundry, transport: http(chain.url), account: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266' as Hex });
  await chain.publicClient.waitForTransactionReceipt({ hash: await funder.sendTransaction({ to: wallet.address as Hex, value: parseEther('1') }) });
  const sent = await client.sendEvm({ wallet, to: '0x0000000000000000000000000000000000007ace', amount: 1000n, idempotencyKey: 'traced-1' });
  await client.waitForTransaction(sent.id, ['broadcast', 'confirmed', 'final'], { timeoutMs: 120_000 });

  t.equal(submissions.length, 1, 'one submission');
  const { requestId, body } = submissions[0]!;
  t.match(requestId, /^[0-9a-f]{32}$/, 'the request id is a W3C trace id');
  const logged = stack.cluster.procs.find((p) => p.name === 'api')!.lines.find((l) => l.msg === 'request' && l['method'] === 'POST' && l['path'] === '/v1/transactions');
  t.equal(logged?.['reqId'], requestId, 'the log line of the request carries it as reqId');

  const inTrace = () => spans.filter((s) => s.traceId === requestId);
  const nodeSign = () => inTrace().filter((s) => s.service === 'custody-node' && s.name === 'session sign-ecdsa');
  const coordSign = () => inTrace().find((s) => s.service === 'custody-coordinator' && s.name === 'session sign-ecdsa' && s.attrs['custody.outcome'] === 'ok');
  const workerSign = () => inTrace().some((s) => s.service === 'custody-api' && s.name === 'transaction sign' && s.attrs['custody.transaction.id'] === sent.id && s.attrs['custody.outcome'] === 'ok');
  // Every signer's session span and the worker's signing span, ended and exported (each program
  // exports on its own schedule, so the last to arrive may be any of them).
  await waitUntil(() => {
    const c = coordSign();
    return c !== undefined && workerSign() && nodeSign().filter((s) => s.attrs['custody.session.id'] === c.attrs['custody.session.id']).length === Number(c.attrs['custody.session.parties']);
  }, 30_000, 'the signing session spans of the coordinator and of every signer, and the worker\'s signing');
  const trace = inTrace();
  const services = new Set(trace.map((s) => s.service));
  t.ok(services.has('custody-api') && services.has('custody-coordinator') && services.has('custody-node'), `the trace spans the API, the coordinator and the nodes (${[...services].join(', ')})`);
  t.ok(trace.some((s) => s.service === 'custody-api' && s.name === 'POST /v1/transactions' && s.attrs['http.response.status_code'] === 202), 'the request\'s server span');
  t.ok(workerSign(), 'the worker\'s signing, in the request\'s trace');
  t.ok(trace.some((s) => s.service === 'custody-api' && s.name === 'mpc.v1.CoordinatorService/Sign'), 'the API\'s gRPC call');
  t.ok(trace.some((s) => s.service === 'custody-coordinator' && s.name === 'mpc.v1.CoordinatorService/Sign'), 'the coordinator\'s side of it, from the trace context in the metadata');

  const session = coordSign()!;
  const sessionId = String(session.attrs['custody.session.id']);
  t.match(sessionId, /^[0-9a-f]+$/, 'the coordinator\'s session span names the session');
  const signers = nodeSign().filter((s) => s.attrs['custody.session.id'] === sessionId);
  t.ok(signers.length >= 2, `${signers.length} signers`);
  t.equal(new Set(signers.map((s) => s.attrs['custody.node.id'])).size, signers.length, 'one session span per signing node');
  for (const s of signers) {
    t.equal(s.attrs['custody.outcome'], 'ok', `${String(s.attrs['custody.node.id']).slice(0, 12)}: outcome ok`);
    t.equal(s.parentSpanId, session.spanId, 'a child of the coordinator\'s session span');
    const rounds = trace.filter((r) => r.service === 'custody-node' && r.parentSpanId === s.spanId && r.name.startsWith('round '));
    t.ok(rounds.length >= 1, `its rounds (${rounds.map((r) => r.name).join(', ')})`);
    for (const r of rounds) t.match(r.attrs, { 'custody.session.id': sessionId, 'custody.outcome': 'ok' }, `${r.name}: the session id and its outcome`);
  }
  t.ok(trace.some((r) => r.service === 'custody-coordinator' && r.parentSpanId === session.spanId && r.name.startsWith('round ')), 'the coordinator\'s round spans');

  // Nothing secret or sent: keys from the allow-list only, and none of the request's long values.
  const allowed = new Set([...SPAN_ATTRIBUTES, ...HTTP_CLIENT_ATTRIBUTES]);
  const longValues = new Set<string>();
  const collect = (v: unknown): void => {
    if (typeof v === 'string' && v.length >= 32) longValues.add(v.replace(/^0x/, '').toLowerCase());
    else if (v && typeof v === 'object') Object.values(v).forEach(collect);
  };
  collect(JSON.parse(body));
  t.ok(longValues.size > 0, 'the submission had an intent and a signature to look for');
  const everything = spans.filter((s) => s.service.startsWith('custody-'));
  const badKeys = everything.flatMap((s) => Object.keys(s.attrs).filter((k) => !allowed.has(k)).map((k) => `${s.name}: ${k}`));
  t.same([...new Set(badKeys)], [], 'every attribute key is on the allow-list');
  const leaks = everything.flatMap((s) => Object.entries(s.attrs).filter(([k, v]) => {
    const text = String(v).toLowerCase();
    return [...longValues].some((x) => text.includes(x)) || (k !== 'custody.session.id' && /[0-9a-f]{64}/.test(text));
  }).map(([k]) => `${s.name}: ${k}`));
  t.same(leaks, [], 'no attribute carries the intent, its signature or another long hex value');
}
