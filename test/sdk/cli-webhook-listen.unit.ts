// `npm run cli -- webhook listen`: a delivery whose signature does not verify is answered 401 (the
// service retries it) and not printed; an event of another type is answered 200 and not printed; the first verified event of the asked type is printed and the command ends.
import t from 'tap';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../api/sdk/run-cli.ts';
import { freePort } from '../cluster/cluster-harness.ts';
import { hmacSignature, newWebhookSecret } from '../../api/webhooks/webhook-signing.ts';

const envelope = (id: string, type: string) => JSON.stringify({
  id, type, version: 1, created_at: new Date().toISOString(), resource: { type: 'transaction', id: 'txn_1' }, actor: { type: 'system', id: 'vault-api' },
  data: { state: 'confirmed' }, delivery: { id: `wha_${id}`, sent_at: new Date().toISOString() },
});

t.test('webhook listen verifies, refuses and prints the first event of its type', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'listen-'));
  const secret = newWebhookSecret();
  writeFileSync(join(dir, 'secret.txt'), secret + '\n');
  const port = await freePort();
  const listening = runCli(['webhook', 'listen', '--port', String(port), '--secret-file', join(dir, 'secret.txt'), '--type', 'transaction.confirmed', '--timeout', '60000'], {});
  const post = async (body: string, signature: string) => {
    for (let i = 0; ; i++) {
      try {
        return (await fetch(`http://127.0.0.1:${port}/hooks`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'svc-webhook-signature': signature } })).status;
      } catch (err) {
        if (i > 100) throw err;
        await new Promise((r) => setTimeout(r, 100)); // the command is still starting
      }
    }
  };
  const other = envelope('evt_other', 'transaction.submitted');
  const wanted = envelope('evt_wanted', 'transaction.confirmed');
  t.equal(await post(wanted, hmacSignature(newWebhookSecret(), wanted)), 401, 'signed with another secret: 401');
  t.equal(await post(wanted.replace('confirmed"', 'confirmeD"'), hmacSignature(secret, wanted)), 401, 'a body that is not the signed one: 401');
  t.equal(await post(other, hmacSignature(secret, other)), 200, 'another type, verified: 200, not printed');
  t.equal(await post(wanted, hmacSignature(secret, wanted)), 200, 'the wanted event: 200');
  const run = await listening;
  t.equal(run.code, 0);
  t.match(run.out, { id: 'evt_wanted', type: 'transaction.confirmed', data: { state: 'confirmed' } }, 'it printed the verified event');
  t.equal(run.stderr.split('\n').filter((l) => l.includes('"refused"')).length, 2, 'and reported the two refusals on stderr');

  const bad = await runCli(['webhook', 'listen', '--port', '0x', '--secret-file', join(dir, 'secret.txt')], {});
  t.equal(bad.code, 2, 'a bad port is a usage error');
  t.equal(bad.err.code, 'usage');
});
