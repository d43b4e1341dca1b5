// Inside a Nitro enclave an attestation document comes from the Nitro Security Module, through an ioctl
// on /dev/nsm that Node.js cannot issue itself, so the node and `npm run tee-attest` run a small external
// command that can (docs/tee.md): `<command> --user-data <hex>` or `<command> --public-key <hex DER>`,
// printing the document, base64, on stdout. The command gets no environment (the node's KMS credentials
// are in it) and no input, a deadline of its own (spawn's `timeout` outlives a command that never
// started), and a cap on what it prints.
import { spawn } from 'node:child_process';

export const NSM_COMMAND_TIMEOUT_MS = 30_000;
export const MAX_NSM_OUTPUT = 64 * 1024;

/** What the command printed; rejects with an Error whose message starts with `label`. */
export function runNsmCommand(command: string, args: string[], label: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'], env: {} });
    const deadline = setTimeout(() => child.kill('SIGKILL'), NSM_COMMAND_TIMEOUT_MS);
    const chunks: Buffer[] = [];
    let size = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_NSM_OUTPUT) child.kill('SIGKILL');
      else chunks.push(chunk);
    });
    child.on('error', (err) => {
      clearTimeout(deadline);
      reject(new Error(`${label}: ${err.message}`, { cause: err }));
    });
    child.on('close', (code, signal) => {
      clearTimeout(deadline);
      if (size > MAX_NSM_OUTPUT) return reject(new Error(`${label} printed more than ${MAX_NSM_OUTPUT} bytes`));
      if (signal === 'SIGKILL') return reject(new Error(`${label} gave no document in ${NSM_COMMAND_TIMEOUT_MS} ms`));
      if (code !== 0) return reject(new Error(`${label} failed (${signal ? `signal ${signal}` : `exit ${code}`})`));
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}
