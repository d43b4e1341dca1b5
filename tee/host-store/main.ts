// `npm run enclave-host-store -- --dir <path> --listen <host:port>`: on an enclave's parent instance,
// serves the node's store directory to the enclave (deploy/enclave/README.md; the parent's socat carries
// vsock to this TCP port). One JSON line per event on stderr. Exits 2 on a usage error, 1 on a failure.
import { parseArgs } from 'node:util';
import { LevelHostKv, startHostStoreServer } from './host-store-server.ts';

const USAGE = `usage: npm run enclave-host-store -- --dir <path> --listen <host:port>
Serves the LevelDB directory <path> (made if absent) to one enclave node at a time on <host:port>
(TCP; bind it to loopback and let socat carry the enclave's vsock port to it). What it keeps is the
node's sealed store: ciphertext, public records and an authenticated head the node checks.`;

function usage(message: string): never {
  process.stderr.write(`enclave-host-store: ${message}\n${USAGE}\n`);
  process.exit(2);
}

let values: { dir?: string; listen?: string; help?: boolean };
try {
  ({ values } = parseArgs({ args: process.argv.slice(2), options: { dir: { type: 'string' }, listen: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false }));
} catch (err) {
  usage((err as Error).message);
}
if (values.help) {
  process.stdout.write(USAGE + '\n');
  process.exit(0);
}
if (!values.dir) usage('--dir is required');
const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(values.listen ?? '');
if (!m || Number(m[2]) > 65535) usage('--listen is host:port');
const host = m[1]!.replace(/^\[|\]$/g, '');
const log = (line: Record<string, unknown>) => process.stderr.write(JSON.stringify({ time: new Date().toISOString(), ...line }) + '\n');

try {
  const store = await LevelHostKv.open(values.dir);
  const server = await startHostStoreServer({ store, host, port: Number(m[2]), log });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log({ msg: 'host store stopping', signal });
    server.close().then(() => store.close()).then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
} catch (err) {
  process.stderr.write(`enclave-host-store: failed to start: ${(err as Error).message}\n`);
  process.exit(1);
}
