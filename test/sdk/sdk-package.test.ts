// The SDK as a customer's project gets it (docs/sdk.md "Installing"): `npm run build:sdk` compiles it
// to JavaScript with declarations, `npm pack` makes the tarball, and a project in a temporary folder
// outside the repository installs it, type-checks against its declarations, and runs the compiled
// JavaScript: it builds and signs an intent, previews it, and verifies the signature with the
// Ed25519 of its own installed dependencies.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROGRAM_LAUNCHER, untracked } from '../support/program.ts';

t.setTimeout(240_000);
const root = fileURLToPath(new URL('../../', import.meta.url));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const CONSUMER = `
import { CustodyClient, CustodyApiError, SdkError, SDK_ERROR_CODES, previewIntent, type Wallet, type IntentPreview } from 'threshold-custody/sdk';
import { ed25519 } from '@noble/curves/ed25519.js';
import { hexToBytes } from '@noble/hashes/utils.js';

const secretKey = new Uint8Array(32).fill(7);
const client = new CustodyClient({ baseUrl: 'https://api.example.com', organization: 'org_demo', keyId: 'key_demo', secretKey });
const wallet: Pick<Wallet, 'id' | 'chain' | 'address'> = { id: 'wal_demo', chain: 'evm-local', address: '0x00000000000000000000000000000000000000b1' };
const intent: Uint8Array = await client.evmIntent({ wallet, to: '0x00000000000000000000000000000000000000a1', amount: 1000n, idempotencyKey: 'pay-1', notAfter: 1_900_000_000n, nonce: 5n });
const signature: string = client.signIntent(intent);
const preview: IntentPreview = previewIntent(intent);
let refused = '';
try {
  client.bitcoinIntent({ wallet, outputs: [{ address: 'bcrt1q', amount: 1n }], maxFeeRate: 1n, maxFee: 1n, idempotencyKey: 'x' });
} catch (err) {
  if (err instanceof SdkError) refused = err.code;
}
console.log(JSON.stringify({
  verified: ed25519.verify(hexToBytes(signature), intent, ed25519.getPublicKey(secretKey)),
  sha256: preview.sha256,
  decoded: preview.decoded,
  refused,
  codes: Object.keys(SDK_ERROR_CODES),
  apiError: new CustodyApiError(404, 'not_found', 'no such vault').kind,
}));
`;

t.test('built, packed, installed in a project outside the repository, type-checked and run', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sdk-customer-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync(PROGRAM_LAUNCHER, untracked(process.execPath, [join(root, 'deploy/sdk/build-sdk.mjs'), '--out', join(dir, 'sdk')]), { cwd: root, stdio: 'pipe' });
  t.ok(existsSync(join(dir, 'sdk/api/sdk/index.d.ts')), 'declarations emitted');
  execFileSync(PROGRAM_LAUNCHER, untracked(npm, ['pack', join(dir, 'sdk'), '--pack-destination', dir]), { cwd: dir, stdio: 'pipe' });
  const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'))!;
  t.ok(tarball, 'npm pack made a tarball');

  const app = join(dir, 'app');
  execFileSync('mkdir', [app]);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'customer-app', private: true, type: 'module' }));
  execFileSync(PROGRAM_LAUNCHER, untracked(npm, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', join(dir, tarball)]), { cwd: app, stdio: 'pipe' });
  writeFileSync(join(app, 'main.ts'), CONSUMER);

  // The customer's compiler, strict, Node's module resolution: the package's exports and `types`.
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const compile = [tsc, '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--outDir', 'out',
    '--typeRoots', join(root, 'node_modules/@types'), '--types', 'node', 'main.ts'];
  try {
    execFileSync(PROGRAM_LAUNCHER, untracked(process.execPath, compile), { cwd: app, stdio: 'pipe' });
  } catch (err) {
    t.fail(`the customer's tsc refused: ${String((err as { stdout?: Buffer }).stdout)}`);
    return;
  }
  t.pass('type-checks against the declarations under strict NodeNext resolution');
  const out = JSON.parse(execFileSync(PROGRAM_LAUNCHER, untracked(process.execPath, ['out/main.js']), { cwd: app, encoding: 'utf8' })) as Record<string, unknown>;
  t.equal(out.verified, true, 'the intent signature made by the compiled SDK verifies under the API key');
  t.match(out.sha256, /^[0-9a-f]{64}$/);
  t.match(out.decoded, { kind: 'evm.transfer', version: 3, organization: 'org_demo', wallet_id: 'wal_demo', chain_id: '31337', nonce: '5', amount: '1000', not_after: '1900000000' });
  t.equal(out.refused, 'bad_intent', 'errors carry their documented code');
  t.ok((out.codes as string[]).includes('insufficient_funds'));
  t.equal(out.apiError, 'not_found');
  t.notOk(existsSync(join(app, 'node_modules/threshold-custody/api/sdk/client.ts')), 'the package holds compiled JavaScript, not the sources');
});
