// Runs the command-line client (`npm run cli`) as a fresh Node process, as a customer does, with only
// PATH and the given settings in its environment; what it printed comes back as text and parsed.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

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
    const child = spawn(process.execPath, ['--import', 'tsx', 'api/sdk/cli.ts', ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
