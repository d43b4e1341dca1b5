// Starts a real anvil (the npm-shipped binary) on a free loopback port for a test, and stops it after.
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createPublicClient, createTestClient, http, type PublicClient, type TestClient } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { freePort, waitUntil } from '../cluster/cluster-harness.ts';

const require = createRequire(import.meta.url);

export function anvilBinary(): string {
  return join(dirname(require.resolve('@foundry-rs/anvil-linux-amd64/package.json')), 'bin', 'anvil');
}

/** Account `i` of anvil's development mnemonic: funded on every anvil these tests start, never a real key. */
export const anvilAccount = (i: number) => mnemonicToAccount('test test test test test test test test test test test junk', { addressIndex: i });

export interface Anvil {
  url: string;
  publicClient: PublicClient;
  testClient: TestClient;
  stop(): Promise<void>;
}

export async function startAnvil(extraArgs: string[] = []): Promise<Anvil> {
  const port = await freePort();
  const child: ChildProcess = spawn(anvilBinary(), ['--host', '127.0.0.1', '--port', String(port), '--silent', '--chain-id', '31337', ...extraArgs], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  const publicClient = createPublicClient({ chain: foundry, transport: http(url) }) as PublicClient;
  const testClient = createTestClient({ chain: foundry, mode: 'anvil', transport: http(url) }) as TestClient;
  await waitUntil(async () => (await publicClient.getChainId().catch(() => 0)) === 31337, 20_000, 'anvil to answer');
  return {
    url,
    publicClient,
    testClient,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
