// `npm start`'s tokenization set-up (deploy/local/sandbox-tokenization.mjs, docs/platform/tokenization.md
// "Who pays") on a real anvil, with the sources in place of dist/: the first start deploys the shared Safe
// infrastructure and the forwarder at their CREATE2 addresses, from anvil's development account 7, and
// writes the deployer key file the API reads; a second start finds everything there and sends nothing.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { privateKeyToAccount } from 'viem/accounts';
import type { Address, Hex } from 'viem';
import { startAnvil } from '../chains/anvil.ts';
import { infrastructureAddresses, infrastructureSteps } from '../../api/tokenization/chain/safe-infrastructure.ts';
import { readDeployerKey } from '../../api/tokenization/tokenization-setup.ts';
// @ts-expect-error: a plain ES module of the launcher, without types
import { sandboxTokenization } from '../../deploy/local/sandbox-tokenization.mjs';

const root = resolve(import.meta.dirname, '../..');
const load = (path: string) => import(pathToFileURL(join(root, `${path}.ts`)).href);

interface Result { env: Record<string, string>; deployed: string[]; skipped: string[]; deployer: Address; addresses: Record<string, Address> }

t.test('npm start deploys the Safe infrastructure once and configures the deployer key; a second start sends nothing', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const data = mkdtempSync(join(tmpdir(), 'sandbox-tokenization-'));
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const lines: string[] = [];
  const start = () => sandboxTokenization({ data, rpcUrl: anvil.url, load, log: (l: string) => lines.push(l) }) as Promise<Result>;
  const client = anvil.publicClient;

  const first = await start();
  const names = infrastructureSteps().map((s) => s.name);
  t.same(first.deployed, names, 'the first start deploys the six Safe contracts and the forwarder, in order');
  t.same(first.addresses, infrastructureAddresses(), 'at the addresses the chain layer computes');
  for (const s of infrastructureSteps()) t.not(await client.getCode({ address: s.address }) ?? '0x', '0x', `${s.name}: code at ${s.address}`);
  const keyFile = first.env.API_TOKENIZATION_DEPLOYER_KEY_FILE!;
  t.equal(keyFile, join(data, 'tokenization-deployer.key'), 'the API is given the key file in the data directory');
  t.equal(statSync(keyFile).mode & 0o777, 0o600, 'readable by the owner only');
  const key = readDeployerKey(keyFile);
  t.equal(privateKeyToAccount(key).address, '0x14dC79964da2C08b23698B3D3cc7Ca32193d9955', 'anvil\'s development account 7');
  t.equal(first.deployer, privateKeyToAccount(key).address, 'which paid for the deployment');
  const relayerFile = first.env.API_TOKENIZATION_RELAYER_KEY_FILE!;
  t.same([relayerFile, statSync(relayerFile).mode & 0o777], [join(data, 'tokenization-relayer.key'), 0o600], 'the gasless relayer\'s key file, beside it, owner only');
  t.equal(privateKeyToAccount(readDeployerKey(relayerFile)).address, '0x976EA74026E726554dB657fA54763abd0C3a0aa9', 'anvil\'s development account 6, not the deployer');
  t.match(lines[0], /^Safe 1\.4\.1 infrastructure and forwarder deployed on evm-local/);

  const nonce = await client.getTransactionCount({ address: first.deployer });
  const second = await start();
  t.same([second.deployed, second.skipped], [[], names], 'the second start finds everything there');
  t.equal(await client.getTransactionCount({ address: first.deployer }), nonce, 'and sends nothing');
  t.equal(readFileSync(keyFile, 'utf8').trim(), key as Hex, 'the same key file');
  t.match(lines[1], /^Safe 1\.4\.1 infrastructure and forwarder present on evm-local/);
});
