// The CLI's platform commands (docs/sdk.md "Platform commands"), each a fresh process against the app in
// this process on a loopback port: an area's main verbs print the API's JSON; --table prints a table;
// a page and --all; each error class exits with its status (2 usage, 3 credential, 4 not found, 5
// unreachable, 6 invalid with its fields and request id); completion prints a script with the platform's
// commands; a profile supplies the settings, and the environment wins over it.
import t from 'tap';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paymentsApp } from '../payments/payments-app.ts';
import { runCli, type Run } from './run-cli.ts';

// Each command is a fresh Node process; on a busy machine that takes seconds.
t.setTimeout(300_000);

const s = await paymentsApp(t);
await s.app.listen({ host: '127.0.0.1', port: 0 });
const url = `http://127.0.0.1:${(s.app.server.address() as { port: number }).port}`;
const home = mkdtempSync(join(tmpdir(), 'cli-platform-'));
// No profile file unless a test writes one.
const base = { XDG_CONFIG_HOME: join(home, 'config'), HOME: home };
const settings = { ...base, CUSTODY_URL: url, CUSTODY_API_KEY: s.acme.owner };
const cli = <O = Record<string, unknown>>(args: string[], env: Record<string, string> = settings): Promise<Run<O>> => runCli<O>(args, env);

t.test('each area\'s main verbs', async (t) => {
  const alice = await s.holder();
  const bob = await s.holder();
  s.balances.set(alice.wallet.address.toLowerCase(), 10n ** 18n);
  const asset = 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3';
  const pay = ['--source_wallet_id', alice.wallet.id, '--destination.account_holder_id', bob.id, '--amount', '1000', '--asset', asset];
  const [hook, branding, holder, quote, simulated, origins, funding, escrows, tokens] = await Promise.all([
    cli(['webhook-endpoints', 'create', '--url', 'http://127.0.0.1:9/hook', '--events:json', '["webhook.test"]', '--json']),
    cli(['branding', 'get']),
    cli(['account-holders', 'create', '--type', 'individual', '--given_name', 'Ada', '--family_name', 'Lovelace']),
    cli(['payments', 'quote', '--kind', 'transfer', ...pay]),
    cli(['payments', 'simulate', ...pay]),
    cli(['tenant', 'member-auth', 'allowed-origins', 'create', '--origin', 'https://app.acme.test']),
    cli(['funding-requests', 'list', '--limit', '5']),
    cli(['escrows', 'list', '--status', 'funded']),
    cli(['tokenization', 'tokens', 'list']),
  ]);
  for (const [what, r] of Object.entries({ hook, branding, holder, quote, simulated, origins, funding, escrows, tokens })) t.equal(r.code, 0, `${what}: ${r.stderr}`);
  t.match(hook.out, { id: /./, secret: /./, events: ['webhook.test'] }, '--events:json sends a JSON value');
  t.type(branding.out.resolved, 'object');
  t.match(holder.out, { id: /./, given_name: 'Ada' });
  t.match(quote.out, { id: /./ }, 'a nested field (--destination.account_holder_id)');
  t.match(funding.out, { data: [], has_more: false });
  t.match(escrows.out, { data: [] }, 'a list filter goes to the query');
  t.match(tokens.out, { data: [] });

  const made = await cli(['payments', 'create', ...pay, '--quote_id', String(quote.out.id), '--idempotency-key', 'cli-pay-1']);
  t.equal(made.code, 0, made.stderr);
  const again = await cli(['payments', 'create', ...pay, '--quote_id', String(quote.out.id), '--idempotency-key', 'cli-pay-1']);
  t.equal(again.out.id, made.out.id, 'the same Idempotency-Key answers the same payment');
  const [got, cancelled, deliveries] = await Promise.all([
    cli(['payments', 'get', String(made.out.id)]),
    cli(['payments', 'cancel', String(made.out.id)]),
    cli(['webhook-deliveries', 'list']),
  ]);
  t.match(got.out, { id: made.out.id });
  t.match(cancelled.out, { id: made.out.id, status: /cancel/ });
  t.match(deliveries.out, { data: Array });
});

t.test('a page, --all, and a table', async (t) => {
  for (const d of ['a', 'b', 'c']) await s.bearer('POST', '/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/hook', events: ['webhook.test'], description: d });
  const [page, all, table] = await Promise.all([
    cli(['webhook-endpoints', 'list', '--limit', '1']),
    cli(['webhook-endpoints', 'list', '--limit', '1', '--all']),
    cli(['webhook-endpoints', 'list', '--table']),
  ]);
  t.match(page.out, { has_more: true, next_cursor: /./ });
  t.equal((page.out.data as unknown[]).length, 1);
  t.ok((all.out.data as unknown[]).length >= 3, '--all prints every page as one');
  t.equal(all.out.has_more, false);
  t.match(table.stdout, /^ID\s+/, 'a table with a header row');
  t.match(table.stdout, /http:\/\/127\.0\.0\.1:9\/hook/);
});

t.test('each error class exits with its status, saying what to do', async (t) => {
  const [usage, wrongArgs, auth, missing, invalid, down, config] = await Promise.all([
    cli(['payments', 'list', '--colour', 'red']),
    cli(['payments', 'get']),
    cli(['branding', 'get'], { ...settings, CUSTODY_API_KEY: 'svc_test_nope_nope' }),
    cli(['payments', 'get', 'pay_missing']),
    cli(['branding', 'set', '--primary_color', 'blue-ish']),
    cli(['branding', 'get'], { ...settings, CUSTODY_URL: 'http://127.0.0.1:1' }),
    cli(['branding', 'get'], { ...base, CUSTODY_URL: url }),
  ]);
  t.equal(usage.code, 2);
  t.match(usage.err, { code: 'usage', error: /does not take --colour \(its query: --status/ });
  t.equal(wrongArgs.code, 2);
  t.match(wrongArgs.err, { code: 'usage', error: /takes <id>/ });
  t.equal(auth.code, 3);
  t.match(auth.err, { code: 'unauthorized', status: 401, request_id: /./, hint: /CUSTODY_API_KEY/ });
  t.equal(missing.code, 4);
  t.match(missing.err, { code: 'not_found', status: 404, request_id: /./ });
  t.equal(invalid.code, 6);
  t.match(invalid.err, { status: 422, request_id: /./, fields: [{ field: /primary_color/, reason: /./ }], hint: /fix the request/ });
  t.equal(down.code, 5);
  t.match(down.err, { code: 'network', status: null });
  t.equal(config.code, 2, 'no key: a settings error before any request');
  t.match(config.err, { code: 'invalid_config', error: /CUSTODY_API_KEY/ });
});

t.test('completion prints a script completing the platform commands', async (t) => {
  const [bash, zsh, bad] = await Promise.all([cli(['completion', 'bash'], base), cli(['completion', 'zsh'], base), cli(['completion', 'fish'], base)]);
  t.equal(bash.code, 0);
  t.match(bash.stdout, /complete -F _custody_complete custody/);
  t.match(bash.stdout, /\npayments quote\n/);
  t.match(bash.stdout, /\nwebhook-deliveries replay\n/);
  t.match(bash.stdout, /\nvault create\n/, 'and the vault commands');
  t.match(zsh.stdout, /bashcompinit/);
  t.equal(bad.code, 2);
});

t.test('a profile supplies the settings; a variable set in the environment wins', async (t) => {
  mkdirSync(join(home, 'config', 'threshold-custody'), { recursive: true });
  const keyFile = join(home, 'acme.key');
  writeFileSync(keyFile, `${s.acme.owner}\n`, { mode: 0o600 });
  writeFileSync(join(home, 'config', 'threshold-custody', 'profiles.json'), JSON.stringify({
    default: 'broken',
    profiles: { acme: { url, api_key_file: keyFile }, broken: { url: 'http://127.0.0.1:1', api_key: 'svc_test_nope_nope' } },
  }));
  const [named, byDefault, envWins, byEnvName, unknown, listed] = await Promise.all([
    cli(['--profile', 'acme', 'branding', 'get'], base),
    cli(['branding', 'get'], base),
    cli(['branding', 'get'], { ...base, CUSTODY_URL: url, CUSTODY_API_KEY: s.acme.owner }),
    cli(['branding', 'get'], { ...base, CUSTODY_PROFILE: 'acme' }),
    cli(['--profile', 'globex', 'branding', 'get'], base),
    cli(['profiles', 'list'], base),
  ]);
  t.equal(named.code, 0, named.stderr);
  t.equal(byDefault.code, 5, 'the default profile, when none is named');
  t.equal(envWins.code, 0, 'the environment wins over the default profile');
  t.equal(byEnvName.code, 0, 'CUSTODY_PROFILE names one');
  t.equal(unknown.code, 2);
  t.match(unknown.err, { code: 'invalid_config', error: /profile globex: not in .*\(it has acme, broken\)/ });
  t.same(listed.out, { file: join(home, 'config', 'threshold-custody', 'profiles.json'), default: 'broken', profiles: [{ name: 'acme', settings: ['url', 'api_key_file'] }, { name: 'broken', settings: ['url', 'api_key'] }] }, 'names and settings, never a value');
});
