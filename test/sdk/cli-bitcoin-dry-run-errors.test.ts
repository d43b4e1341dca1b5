// The command-line client's Bitcoin commands and error codes, as a customer runs them: against the API
// listening on a loopback port and the local regtest service (deploy/regtest/) as its Bitcoin backend.
// `regtest fund` funds a wallet; `tx send-bitcoin --dry-run` prints the canonical intent, its SHA-256
// and what will be signed and sends nothing; `tx send-bitcoin` submits P2WPKH with named inputs and
// their amounts, and P2TR; every failure carries a code from the documented set (docs/sdk.md "Errors").
import t, { type Test } from 'tap';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { RecordStore } from '../../api/store/record-store.ts';
import { VaultService } from '../../api/vaults/vault-service.ts';
import { TransactionService } from '../../api/transactions/transaction-service.ts';
import { EsploraClient } from '../../api/chains/bitcoin/esplora-client.ts';
import { decodeIntent, verifyIntentSignature } from '../../core/intents/intent.ts';
import { ERROR_CODES } from '../../core/errors/error-codes.ts';
import type { VaultRecord } from '../../api/vaults/records.ts';
import { RegtestChain } from '../../deploy/regtest/regtest-chain.ts';
import { EsploraServer } from '../../deploy/regtest/esplora-server.ts';
import { SDK_ERROR_CODES } from '../../api/sdk/sdk-error.ts';
import { runCli, type Run } from '../api/sdk/run-cli.ts';
import { cliApi } from '../api/sdk/run-cli.ts';

// Each command is a fresh Node process; on a busy machine that takes seconds.
t.setTimeout(300_000);

const dir = mkdtempSync(join(tmpdir(), 'cli-btc-'));
const chain = new RegtestChain().init();
const regtest = new EsploraServer(chain);
const regtestUrl = await regtest.listen(0);
const esplora = new EsploraClient(regtestUrl);
const store = await RecordStore.open(join(dir, 'db'));
const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 5, vaultsPerOrg: 5 } });
const transactions = new TransactionService({ vaults, hasBackend: (c) => c === 'bitcoin-regtest' || c === 'evm-local', utxos: (_c, address) => esplora.utxos(address) });
const api = await cliApi(t, dir, vaults, transactions, () => regtest.close());
const { secret } = api;
const settings = { ...api.settings, REGTEST_URL: regtestUrl };
const cli = (args: string[], env: Record<string, string> = settings): Promise<Run> => runCli(args, env);

// An active hosted vault with a P2WPKH, a P2TR and an EVM wallet.
const vaultId = (await cli(['vault', 'create', '--tier', 'hosted'])).out.id as string;
const rec = (await store.get<VaultRecord>('vaults', vaultId))!;
await store.batch([vaults.vaultOp({ ...rec, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(ed25519.utils.randomSecretKey()) })]);
const wallet = async (args: string[]) => (await cli(['wallet', 'create', vaultId, ...args])).out as { id: string; address: string };
const segwit = await wallet(['--chain', 'bitcoin-regtest']);
const taproot = await wallet(['--chain', 'bitcoin-regtest', '--address-type', 'p2tr']);
const evm = await wallet(['--chain', 'evm-local']);
const RECIPIENT = 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080';

/** Every failure line: a known code, never the old catch-all. */
const documented = new Set<string>([...Object.keys(SDK_ERROR_CODES), ...Object.keys(ERROR_CODES)]);
function failed(t: Test, r: Run, code: string, status: number | null = null): void {
  t.not(r.code, 0, `exit status for ${code}`);
  t.equal(r.err.code, code, r.stderr);
  t.equal(r.err.status, status);
  t.ok(documented.has(r.err.code), `${r.err.code} is documented`);
  t.equal(r.stdout, '', 'nothing on stdout');
}

t.test('regtest fund and mine through the CLI', async (t) => {
  t.match(segwit.address, /^bcrt1q/);
  t.match(taproot.address, /^bcrt1p/);
  const funded = await cli(['regtest', 'fund', segwit.address, '150000']);
  t.equal(funded.code, 0, funded.stderr);
  t.match(funded.out, { vout: 0, sats: '150000', status: { confirmed: true } });
  const pending = await cli(['regtest', 'fund', taproot.address, '80000', '--unconfirmed']);
  t.match(pending.out, { status: { confirmed: false } });
  const mined = await cli(['regtest', 'mine', '--blocks', '2']);
  t.equal(mined.code, 0, mined.stderr);
  t.equal(mined.out.height, chain.height);
  t.match((await esplora.status(pending.out.txid as string)), { confirmed: true });
  const utxos = await cli(['wallet', 'utxos', segwit.id]);
  t.match(utxos.out, { utxos: [{ txid: funded.out.txid, vout: 0, amount: '150000', confirmed: true }] });
});

t.test('send-bitcoin --dry-run prints the intent, its SHA-256 and what is signed, and sends nothing', async (t) => {
  const dry = await cli(['tx', 'send-bitcoin', '--wallet', segwit.id, '--output', `${RECIPIENT}:40000`, '--max-fee-rate', '10', '--max-fee', '5000', '--idempotency-key', 'dry-1', '--dry-run']);
  t.equal(dry.code, 0, dry.stderr);
  const out = dry.out as { intent: { hex: string; sha256: string; decoded: Record<string, unknown> }; end_user_token: { intent_sha256: string }; signing: { nodes: string }; request: { body: { intent: string; intent_signature: string } }; send_same_intent_with: string };
  const bytes = hexToBytes(out.intent.hex);
  t.equal(out.intent.sha256, bytesToHex(sha256(bytes)), 'the SHA-256 of exactly the intent bytes');
  t.equal(out.end_user_token.intent_sha256, out.intent.sha256, 'what an end-user token names');
  const intent = decodeIntent(bytes);
  t.equal(intent.kind, 'btc.transfer');
  const funded = (await esplora.utxos(segwit.address))[0]!;
  t.match(out.intent.decoded, {
    kind: 'btc.transfer', version: 2, wallet_id: segwit.id, network: 'regtest', from: segwit.address, outputs: [{ address: RECIPIENT, amount: '40000' }],
    inputs: [{ txid: funded.txid, vout: funded.vout, amount: '150000' }], max_fee_rate: '10', max_fee: '5000', idempotency_key: 'dry-1',
  }, 'P2WPKH: the inputs are named with their amounts');
  t.match(out.signing.nodes, /BIP-143/);
  t.equal(out.request.body.intent, out.intent.hex);
  t.ok(verifyIntentSignature(bytes, hexToBytes(out.request.body.intent_signature), ed25519.getPublicKey(secret)), 'the request carries the API key\'s signature over the same bytes');
  t.match(out.send_same_intent_with, new RegExp(`--not-after \\d+ --input ${funded.txid}:${funded.vout}:150000`));
  t.same((await cli(['tx', 'list'])).out.data, [], 'nothing was submitted');

  const evmDry = await cli(['tx', 'send-evm', '--wallet', evm.id, '--to', '0x00000000000000000000000000000000000000a1', '--amount', '7', '--idempotency-key', 'dry-evm', '--not-after', '1900000000', '--nonce', '3', '--dry-run']);
  t.equal(evmDry.code, 0, evmDry.stderr);
  t.match(evmDry.out, { dry_run: true, intent: { decoded: { kind: 'evm.transfer', version: 3, chain_id: '31337', nonce: '3', amount: '7', not_after: '1900000000' } }, signing: { nodes: /EIP-1559/ } });
  t.notOk('send_same_intent_with' in evmDry.out, 'a given not_after and nonce, no selection: the same command builds the same bytes');
});

t.test('send-bitcoin submits a P2WPKH spend naming inputs and amounts, and a P2TR spend', async (t) => {
  const funded = (await esplora.utxos(segwit.address))[0]!;
  const args = ['tx', 'send-bitcoin', '--wallet', segwit.id, '--to', RECIPIENT, '--amount', '30000', '--max-fee-rate', '10', '--max-fee', '5000', '--idempotency-key', 'btc-1', '--not-after', String(Math.floor(Date.now() / 1000) + 3600), '--input', `${funded.txid}:${funded.vout}:150000`];
  const dry = await cli([...args, '--dry-run']);
  const sent = await cli(args);
  t.equal(sent.code, 0, sent.stderr);
  t.match(sent.out, { wallet_id: segwit.id, idempotency_key: 'btc-1', state: /created|checks/ });
  const listed = (await cli(['tx', 'list'])).out.data as { id: string }[];
  t.equal(listed.length, 1);
  const record = await store.get<{ intent: string }>('transactions', sent.out.id as string);
  t.equal(record!.intent, (dry.out as { intent: { hex: string } }).intent.hex, 'the dry run showed exactly the bytes that were then sent');

  const p2tr = await cli(['tx', 'send-btc', '--wallet', taproot.id, '--output', `${RECIPIENT}:20000`, '--output', `${segwit.address}:10000`, '--max-fee-rate', '10', '--max-fee', '5000', '--idempotency-key', 'btc-2']);
  t.equal(p2tr.code, 0, p2tr.stderr);
  const p2trIntent = decodeIntent(hexToBytes((await store.get<{ intent: string }>('transactions', p2tr.out.id as string))!.intent));
  t.match(p2trIntent, { kind: 'btc.transfer', inputs: [], outputs: [{ address: RECIPIENT, amount: 20_000n }, { address: segwit.address, amount: 10_000n }] }, 'P2TR: two outputs, inputs left to the service');
});

t.test('every failure carries a documented code', async (t) => {
  failed(t, await cli(['tx', 'send-bitcoin', '--wallet', segwit.id, '--to', RECIPIENT, '--amount', '900000', '--max-fee-rate', '10', '--max-fee', '5000', '--idempotency-key', 'big', '--dry-run']), 'insufficient_funds');
  failed(t, await cli(['tx', 'send-bitcoin', '--wallet', evm.id, '--to', RECIPIENT, '--amount', '1', '--max-fee-rate', '1', '--max-fee', '1', '--idempotency-key', 'x', '--input', `${'ab'.repeat(32)}:0:5`]), 'bad_intent');
  failed(t, await cli(['tx', 'send-bitcoin', '--wallet', segwit.id, '--output', 'nonsense', '--max-fee-rate', '1', '--max-fee', '1', '--idempotency-key', 'x']), 'usage');
  failed(t, await cli(['tx', 'send-bitcoin', '--wallet', segwit.id, '--to', RECIPIENT, '--max-fee-rate', '1', '--max-fee', '1', '--idempotency-key', 'x']), 'usage');
  failed(t, await cli(['regtest', 'fund', 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', '1000']), 'regtest_refused', 400);
  failed(t, await cli(['regtest', 'fund', segwit.address, '1000'], { ...settings, REGTEST_URL: 'http://127.0.0.1:1' }), 'network');
  failed(t, await cli(['tx', 'get', 'txn_missing']), 'not_found', 404);

  // Something that is not the API answers (a proxy's page, a wrong URL): bad_response on success,
  // and the spec's code for the status otherwise.
  const proxy = createServer((req, res) => {
    res.writeHead(req.url?.includes('wal_gone') ? 502 : 200, { 'content-type': 'text/html' });
    res.end('<html>gateway</html>');
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => proxy.close(() => r())));
  const proxied = { ...settings, CUSTODY_URL: `http://127.0.0.1:${(proxy.address() as { port: number }).port}` };
  failed(t, await cli(['wallet', 'get', 'wal_x'], proxied), 'bad_response');
  failed(t, await cli(['wallet', 'get', 'wal_gone'], proxied), 'unavailable', 502);
});

t.test('docs/sdk.md documents every SDK error code', async (t) => {
  const doc = readFileSync(new URL('../../docs/sdk.md', import.meta.url), 'utf8');
  for (const code of Object.keys(SDK_ERROR_CODES)) t.match(doc, new RegExp(`\\| \`${code}\` \\|`), `${code} in the table`);
  const cli = readFileSync(new URL('../../api/sdk/cli.ts', import.meta.url), 'utf8');
  t.notMatch(cli, /code: 'error'/, 'no catch-all code left');
});
