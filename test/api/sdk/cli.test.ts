// The command-line client (api/sdk/cli.ts) as a child process against the API listening on a loopback
// port: every command prints JSON, waits see state changes, and failures print {error, code, status}
// on stderr with a non-zero exit.
import t from 'tap';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { exportJWK, generateKeyPair } from 'jose';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { verifyIntentSignature } from '../../../core/intents/intent.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';
import { nodeIdentity } from '../vault/enrolled-node.ts';
import type { TransactionRecord } from '../../../api/transactions/records.ts';
import { cliApi, runCli, type Run } from './run-cli.ts';

// Each command is a fresh Node process that loads the SDK; on a busy machine that takes seconds.
t.setTimeout(360_000);

const dir = mkdtempSync(join(tmpdir(), 'cli-'));
const store = await RecordStore.open(join(dir, 'db'));
const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 5, vaultsPerOrg: 5 } });
const transactions = new TransactionService({ vaults, hasBackend: () => true });
const { secret, key, settings } = await cliApi(t, dir, vaults, transactions);

const cli = (args: string[], env: Record<string, string> = settings): Promise<Run> => runCli(args, env);

async function activate(id: string): Promise<void> {
  const v = (await store.get<VaultRecord>('vaults', id))!;
  await store.batch([vaults.vaultOp({ ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)) })]);
}

const RECIPIENT = '0x00000000000000000000000000000000000000a1';

t.test('keygen writes the secret to --out (mode 0600, never overwritten) and prints the public key', async (t) => {
  const out = join(dir, 'new.hex');
  const r = await cli(['keygen', '--out', out], {});
  t.equal(r.code, 0, r.stderr);
  const hex = readFileSync(out, 'utf8').trim();
  t.match(hex, /^[0-9a-f]{64}$/);
  t.equal(r.out.public_key, bytesToHex(ed25519.getPublicKey(hexToBytes(hex))));
  t.notOk(r.stdout.includes(hex), 'the secret is not printed');
  t.equal(statSync(out).mode & 0o777, 0o600);
  const again = await cli(['keygen', '--out', out], {});
  t.equal(again.code, 2);
  t.equal(again.err.code, 'usage');
  t.equal(readFileSync(out, 'utf8').trim(), hex, 'the existing key file is untouched');
});

t.test('keys register, list and revoke', async (t) => {
  const pub = bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
  const reg = await cli(['keys', 'register', '--public-key', pub, '--label', 'ci']);
  t.equal(reg.code, 0, reg.stderr);
  t.match(reg.out, { public_key: pub, label: 'ci', revoked: false });
  const list = await cli(['keys', 'list']);
  t.equal(list.code, 0, list.stderr);
  t.same((list.out.api_keys as { id: string }[]).map((k) => k.id).sort(), [key.id, reg.out.id].sort());
  const rev = await cli(['keys', 'revoke', reg.out.id as string]);
  t.equal(rev.code, 0, rev.stderr);
  t.match(rev.out, { id: reg.out.id, revoked: true });
});

t.test('vault create, wait (sees the state change), get, wallets, send-evm, tx get and wait, reshare', async (t) => {
  const policyFile = join(dir, 'policy.json');
  writeFileSync(policyFile, JSON.stringify({ per_transaction_cap: { 'evm-local:native': '1000' } }));
  // A self vault seats the organization's enrolled self node (docs/self-node.md).
  const identityFile = join(dir, 'self.identity.json');
  writeFileSync(identityFile, JSON.stringify({ kind: 'self', ...nodeIdentity() }) + '\n');
  const enrolled = await cli(['nodes', 'enrol', '--kind', 'self', '--identity', identityFile]);
  t.equal(enrolled.code, 0, enrolled.stderr);
  const created = await cli(['vault', 'create', '--tier', 'self', '--name', 'treasury', '--policy-file', policyFile]);
  t.equal(created.code, 0, created.stderr);
  t.match(created.out, { tier: 'self', state: 'creating', name: 'treasury', policy: { per_transaction_cap: { 'evm-local:native': '1000' } } });
  const id = created.out.id as string;

  const waiting = cli(['vault', 'wait', id, '--timeout', '60000']);
  await new Promise((r) => setTimeout(r, 1500));
  await activate(id);
  const waited = await waiting;
  t.equal(waited.code, 0, waited.stderr);
  t.match(waited.out, { id, state: 'active' });

  // A vault whose key generation fails ends the wait at once, with exit status 1 and its problem.
  const doomed = await cli(['vault', 'create', '--tier', 'hosted']);
  const record = (await store.get<VaultRecord>('vaults', doomed.out.id as string))!;
  await store.batch([vaults.vaultOp({ ...record, state: 'failed', problem: 'unverified_committee: refused by n1' })]);
  const failed = await cli(['vault', 'wait', record.id, '--timeout', '60000']);
  t.equal(failed.code, 1, 'a failed vault is not what was waited for');
  t.match(failed.out, { id: record.id, state: 'failed', problem: /unverified_committee/ });

  const wallet = await cli(['wallet', 'create', id, '--chain', 'evm-local', '--account', '2']);
  t.equal(wallet.code, 0, wallet.stderr);
  t.match(wallet.out, { vault_id: id, chain: 'evm-local', account_index: 2, address: /^0x[0-9a-fA-F]{40}$/ });
  t.same((await cli(['wallet', 'get', wallet.out.id as string])).out, wallet.out, 'GET /v1/wallets/{id} returns the same wallet');

  // The nonce the key gets, the same again, and send-evm with that key signs at it.
  const prepared = await cli(['tx', 'prepare', '--wallet', wallet.out.id as string, '--idempotency-key', 'cli-1']);
  t.equal(prepared.code, 0, prepared.stderr);
  t.match(prepared.out, { wallet_id: wallet.out.id, chain: 'evm-local', chain_id: 31337, nonce: 0, not_after: Number });
  t.same((await cli(['tx', 'prepare', '--wallet', wallet.out.id as string, '--idempotency-key', 'cli-1'])).out, prepared.out, 'the same key: the same reservation');
  const badPrepare = await cli(['tx', 'prepare', '--wallet', wallet.out.id as string, '--idempotency-key', 'cli-x', '--not-after', '1']);
  t.not(badPrepare.code, 0, 'a passed not_after is refused');
  t.match(badPrepare.stderr, /passed/);
  const sent = await cli(['tx', 'send-evm', '--wallet', wallet.out.id as string, '--to', RECIPIENT, '--amount', '5', '--max-fee', '1000000', '--idempotency-key', 'cli-1']);
  t.equal(sent.code, 0, sent.stderr);
  t.match(sent.out, { wallet_id: wallet.out.id, state: 'created', idempotency_key: 'cli-1', nonce: 0, transfers: [{ recipient: RECIPIENT, asset: 'evm-local:native', amount: '5' }] });
  const stored = (await store.get<TransactionRecord>('transactions', sent.out.id as string))!;
  t.ok(verifyIntentSignature(hexToBytes(stored.intent), hexToBytes(stored.intent_signature), ed25519.getPublicKey(secret)), 'the intent is signed by the configured key');
  t.match((await cli(['tx', 'get', sent.out.id as string])).out, { id: sent.out.id, state: 'created' });

  const waitingTx = cli(['tx', 'wait', sent.out.id as string, '--timeout', '60000']);
  await new Promise((r) => setTimeout(r, 1500));
  await store.batch([transactions.txOp({ ...stored, state: 'final', tx_hash: '0x' + 'ab'.repeat(32) })]);
  const final = await waitingTx;
  t.equal(final.code, 0, final.stderr);
  t.match(final.out, { id: sent.out.id, state: 'final' });

  const over = await cli(['tx', 'send-evm', '--wallet', wallet.out.id as string, '--to', RECIPIENT, '--amount', '1001', '--idempotency-key', 'cli-2']);
  t.equal(over.code, 1, 'a policy\'s refusal is not a refused credential');
  t.match(over.err, { error: 'amount 1001 of evm-local:native is over the per-transaction cap of 1000', code: 'cap_exceeded', status: 403, request_id: /./ });
  t.equal(over.stdout, '', 'nothing on stdout');

  const reshare = await cli(['vault', 'reshare', id, '--target-tier', 'hosted']);
  t.equal(reshare.code, 0, reshare.stderr);
  t.match(reshare.out, { status: 'accepted' });
  t.match((await cli(['vault', 'get', id])).out, { id, state: 'resharing', tier: 'self' }, 'vault get');
});

t.test('end-user-auth set registers a JWK Set from a file', async (t) => {
  const { publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwksFile = join(dir, 'jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] }));
  const r = await cli(['end-user-auth', 'set', '--jwks-file', jwksFile, '--audience', 'https://wallet.acme.test']);
  t.equal(r.code, 0, r.stderr);
  t.same(r.out, { status: 'registered', audience: 'https://wallet.acme.test', key_count: 1, account_center: false }, 'no Account Center opt-in unless the registration names one');
});

t.test('failures: {error, code, status, request_id, hint} on stderr and the exit status of their class', async (t) => {
  const missing = await cli(['tx', 'get', 'txn_missing']);
  t.equal(missing.code, 4, 'not found: exit 4');
  t.match(missing.err, { error: 'no such transaction', code: 'not_found', status: 404, request_id: /./, hint: /check the id/ });
  t.equal(missing.stdout, '');
  const wrongKey = await cli(['keys', 'list'], { ...settings, CUSTODY_KEY_ID: 'key_nope' });
  t.equal(wrongKey.code, 3, 'a refused credential: exit 3');
  t.match(wrongKey.err, { code: 'unauthorized', status: 401, error: /unknown or revoked key/ });
  const down = await cli(['keys', 'list'], { ...settings, CUSTODY_URL: 'http://127.0.0.1:1' });
  t.equal(down.code, 5, 'unreachable: exit 5');
  t.match(down.err, { code: 'network', status: null, error: /cannot reach the API/ });
});

t.test('usage and settings errors answer before any request: exit 2, status null', async (t) => {
  const cases: [string, string[], Record<string, string> | undefined, RegExp, string][] = [
    ['fractional account', ['wallet', 'create', 'vlt_x', '--chain', 'evm-local', '--account', '1.5'], undefined, /--account must be a non-negative base-10 integer/, 'usage'],
    ['amount not base-10', ['tx', 'send-evm', '--wallet', 'w', '--to', RECIPIENT, '--amount', '1e3', '--idempotency-key', 'k'], undefined, /--amount must be base units/, 'usage'],
    ['missing option', ['vault', 'create'], undefined, /needs --tier/, 'usage'],
    ['option of another command', ['vault', 'create', '--tier', 'self', '--chain', 'x'], undefined, /does not take --chain/, 'usage'],
    ['unknown tier', ['vault', 'create', '--tier', 'cold'], undefined, /--tier must be one of hosted, self, customer_tee/, 'usage'],
    ['unknown command', ['vault', 'destroy', 'v'], undefined, /unknown command: vault destroy/, 'usage'],
    ['export recipient key not 32 bytes', ['export', 'approve', 'vlt_x', 'exp_x', '--approver-key-file', join(dir, 'none.key'), '--recipient-key', 'ab'], undefined, /--recipient-key must be 32 bytes in hex/, 'usage'],
    ['no settings', ['keys', 'list'], {}, /CUSTODY_URL/, 'invalid_config'],
    ['plain http to another host', ['keys', 'list'], { ...settings, CUSTODY_URL: 'http://api.example.com' }, /plain http only to a loopback address/, 'invalid_config'],
    ['secret key file not hex', ['keys', 'list'], { ...settings, CUSTODY_SECRET_KEY_FILE: join(dir, 'policy.json') }, /must hold 64 hex characters/, 'invalid_config'],
  ];
  const runs = await Promise.all(cases.map(([, args, env]) => cli(args, env)));
  cases.forEach(([what, , , message, code], i) => {
    const r = runs[i]!;
    t.equal(r.code, 2, what);
    t.match(r.err, { code, status: null, error: message }, what);
    t.equal(r.stdout, '', `${what}: nothing on stdout`);
  });
});

t.test('the SDK is the package\'s ./sdk subpath', async (t) => {
  const sdk = await import('threshold-custody/sdk');
  for (const name of ['CustodyClient', 'CustodyApiError', 'WaitTimeoutError', 'signedHeaders', 'verifyWebhook', 'verifyWebhookHmac', 'verifyWebhookEd25519', 'EventDeduper']) t.ok(name in sdk, name);
});
