// verifyWebhookHmac takes SVC-Webhook-Timestamp as a receiver holds it: the header string from
// `req.headers` or a number; either way the same instant passes, a stale or malformed one does not,
// and the HMAC rule itself is unchanged (docs/sdk.md "Webhook receivers").
import t from 'tap';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import { verifyWebhookHmac, webhookTimestampSeconds } from '../../api/sdk/webhook-receiver.ts';

const secret = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
const body = '{"id":"evt_1","delivery":{"id":"wha_1","sent_at":"2026-01-01T00:00:00Z"}}';
const signature = 'v1,' + createHmac('sha256', Buffer.alloc(32, 7)).update(body).digest('base64');
const now = 1_767_225_600_000;
const at = now / 1000;

t.test('the timestamp as the header string and as a number give the same answer', async (t) => {
  t.ok(verifyWebhookHmac(signature, body, [secret], { timestamp: String(at), nowMs: now }), 'header string');
  t.ok(verifyWebhookHmac(signature, body, [secret], { timestamp: at, nowMs: now }), 'number');
  t.ok(verifyWebhookHmac(signature, body, [secret], { timestamp: ` ${at - 299}`, nowMs: now }), 'within the default 300 s');
  t.notOk(verifyWebhookHmac(signature, body, [secret], { timestamp: String(at - 301), nowMs: now }), 'stale as a string');
  t.notOk(verifyWebhookHmac(signature, body, [secret], { timestamp: at + 301, nowMs: now }), 'too far ahead as a number');
  t.ok(verifyWebhookHmac(signature, body, [secret], { timestamp: String(at - 301), nowMs: now, toleranceSeconds: 600 }), 'a wider tolerance');
  for (const bad of ['', 'abc', '1.5', '-1', '0x10', String(Number.MAX_SAFE_INTEGER) + '0']) {
    t.notOk(verifyWebhookHmac(signature, body, [secret], { timestamp: bad, nowMs: now }), `malformed ${JSON.stringify(bad)}`);
  }
  t.notOk(verifyWebhookHmac(signature, body, [secret], { timestamp: Number.NaN, nowMs: now }));
  t.notOk(verifyWebhookHmac(signature, body + ' ', [secret], { timestamp: String(at), nowMs: now }), 'the body is still what is signed');
  t.ok(verifyWebhookHmac(signature, body, [secret]), 'without a timestamp: the HMAC rule alone, as before');
  t.equal(webhookTimestampSeconds('1700000000'), 1_700_000_000);
  t.equal(webhookTimestampSeconds(1_700_000_000), 1_700_000_000);
});

t.test('a receiver passes req.headers values as they arrive over HTTP', async (t) => {
  let result: boolean | undefined;
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const ts = req.headers['svc-webhook-timestamp'];
      result = verifyWebhookHmac(String(req.headers['svc-webhook-signature']), raw, [secret], { timestamp: Array.isArray(ts) ? ts[0] : ts });
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as { port: number }).port;
  const send = (timestamp: string) =>
    fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body, headers: { 'svc-webhook-signature': signature, 'svc-webhook-timestamp': timestamp } });
  await send(String(Math.floor(Date.now() / 1000)));
  t.equal(result, true, 'a fresh header string');
  await send(String(Math.floor(Date.now() / 1000) - 3600));
  t.equal(result, false, 'an hour old');
});
