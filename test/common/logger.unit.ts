// Logs never carry secrets under the conventional field names, at any depth the logger reaches.
import t from 'tap';
import { PassThrough } from 'node:stream';
import { createLogger, REDACTED_FIELDS } from '../../common/logger.ts';

t.test('secret-bearing fields print as <redacted>', async (t) => {
  const out = new PassThrough();
  const lines: string[] = [];
  out.on('data', (c: Buffer) => lines.push(...c.toString().split('\n').filter(Boolean)));
  const log = createLogger('test', 'info', out);
  log.info({ share: 'aa11', nonce: 'bb22', nodeId: 'n1' }, 'top level');
  log.info({ session: { token: 'cc33', secret: 'dd44', round: 2 } }, 'nested');
  log.info({ req: { headers: { authorization: 'Bearer svc_test_ee55' } } }, 'headers');
  await new Promise((r) => setImmediate(r));
  const text = lines.join('\n');
  for (const leaked of ['aa11', 'bb22', 'cc33', 'dd44', 'ee55']) t.notOk(text.includes(leaked), `${leaked} not in the log`);
  t.match(JSON.parse(lines[0]!), { share: '<redacted>', nonce: '<redacted>', nodeId: 'n1' });
  t.match(JSON.parse(lines[1]!), { session: { token: '<redacted>', secret: '<redacted>', round: 2 } });
  t.ok(REDACTED_FIELDS.includes('share') && REDACTED_FIELDS.includes('token'));
});
