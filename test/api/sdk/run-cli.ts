// Runs the command-line client (`npm run cli`) as a fresh Node process, as a customer does, with only
// PATH and the given settings in its environment; what it printed comes back as text and parsed.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import type { VaultService } from '../../../api/vaults/vault-service.ts';
import type { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { PROGRAM_LAUNCHER, programArgs } from '../../support/program.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));

export interface Run<Out = Record<string, unknown>> {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed. */
  out: Out;
  /** stderr parsed (the error line). */
  err: { error: string; code: string; status: number | null };
}

export function runCli<Out = Record<string, unknown>>(args: string[], env: Record<string, string>): Promise<Run<Out>> {
  return new Promise((resolve, reject) => {
    const child = spawn(PROGRAM_LAUNCHER, [...programArgs('api/sdk/cli.ts'), ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const parse = (s: string) => {
        try {
          return JSON.parse(s);
        } catch {
          return {};
        }
      };
      resolve({ code, stdout, stderr, out: parse(stdout), err: parse(stderr) });
    });
  });
}

/**
 * The API in this process on a loopback port, with an organization whose secret key is in a file:
 * the settings the command-line client reads, and what a test needs to look behind it.
 */
export async function cliApi(t: Test, dir: string, vaults: VaultService, transactions: TransactionService, extraTeardown?: () => Promise<void>) {
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api', 'silent'), vaults, transactions });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as { port: number }).port;
  t.teardown(async () => {
    await app.close();
    await vaults.store.close();
    await extraTeardown?.();
  });
  const secret = ed25519.utils.randomSecretKey();
  const { org, key } = await vaults.createOrg('Acme', bytesToHex(ed25519.getPublicKey(secret)));
  const secretFile = join(dir, 'key.hex');
  writeFileSync(secretFile, bytesToHex(secret) + '\n', { mode: 0o600 });
  const settings = { CUSTODY_URL: `http://127.0.0.1:${port}`, CUSTODY_ORGANIZATION: org.id, CUSTODY_KEY_ID: key.id, CUSTODY_SECRET_KEY_FILE: secretFile };
  return { app, port, secret, org, key, secretFile, settings };
}
