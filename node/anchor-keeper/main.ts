// `npm run anchor-keeper -- --data <dir> --listen <host:port>`: keeps the rollback anchor of nodes whose
// host must not be the one to keep it (docs/storage.md "Anchor keepers", docs/tee.md "A rollback anchor
// outside the parent"). Run by a party other than the node's host: the customer's other account, a third
// party, or several of them. One JSON line per event on stderr. Exits 2 on a usage error, 1 on a failure.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { toHex } from '../../common/bytes.ts';
import { isLoopbackHost } from '../../common/config.ts';
import { loadOrCreateKeeperKey } from './keeper-key.ts';
import { LevelKeeperRecords } from './keeper-records.ts';
import { startAnchorKeeperServer } from './keeper-server.ts';
import { AnchorKeeper } from './keeper-service.ts';

const USAGE = `usage: npm run anchor-keeper -- --data <dir> --listen <host:port> [--tls-cert <pem> --tls-key <pem>] [--max-clients <n>]
       npm run anchor-keeper -- --data <dir> --public-key
Keeps, for each node that writes to it, the highest version of the node's store the node signed, and
never lowers it; answers each read with a signature over the reader's challenge. <dir> holds the
keeper's Ed25519 key (keeper.key, made at the first start, mode 0600) and its records (db/, LevelDB).
--public-key prints the keeper's public key (hex; nodes pin it in NODE_ROLLBACK_ANCHOR_KEEPER_KEYS),
making the key if absent, and exits. Serve https (--tls-cert, --tls-key) anywhere but loopback: nodes
outside development refuse a keeper over plain http. --max-clients bounds the clients held (default 1000).`;

function usage(message: string): never {
  process.stderr.write(`anchor-keeper: ${message}\n${USAGE}\n`);
  process.exit(2);
}

let values: { data?: string; listen?: string; 'tls-cert'?: string; 'tls-key'?: string; 'max-clients'?: string; 'public-key'?: boolean; help?: boolean };
try {
  ({ values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      data: { type: 'string' }, listen: { type: 'string' }, 'tls-cert': { type: 'string' }, 'tls-key': { type: 'string' }, 'max-clients': { type: 'string' },
      'public-key': { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
    },
    strict: true, allowPositionals: false,
  }));
} catch (err) {
  usage((err as Error).message);
}
if (values.help) {
  process.stdout.write(USAGE + '\n');
  process.exit(0);
}
if (!values.data) usage('--data is required');
const keyFile = join(values.data, 'keeper.key');
if (values['public-key']) {
  try {
    process.stdout.write(toHex(loadOrCreateKeeperKey(keyFile).publicKey) + '\n');
    process.exit(0);
  } catch (err) {
    process.stderr.write(`anchor-keeper: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(values.listen ?? '');
if (!m || Number(m[2]) > 65535) usage('--listen is host:port');
const host = m[1]!.replace(/^\[|\]$/g, '');
if (Boolean(values['tls-cert']) !== Boolean(values['tls-key'])) usage('--tls-cert and --tls-key go together');
const maxClients = values['max-clients'] === undefined ? 1000 : /^[1-9][0-9]{0,6}$/.test(values['max-clients']) ? Number(values['max-clients']) : usage('--max-clients is a whole number from 1 to 9999999');
const log = (line: Record<string, unknown>) => process.stderr.write(JSON.stringify({ time: new Date().toISOString(), ...line }) + '\n');

try {
  const key = loadOrCreateKeeperKey(keyFile);
  if (key.created) log({ msg: 'keeper key created', keyFile, publicKey: toHex(key.publicKey) });
  const records = await LevelKeeperRecords.open(join(values.data, 'db'), maxClients);
  const keeper = new AnchorKeeper(records, key.seed);
  key.seed.fill(0);
  const tls = values['tls-cert'] ? { cert: readFileSync(values['tls-cert']), key: readFileSync(values['tls-key']!) } : undefined;
  if (!tls && !isLoopbackHost(host)) log({ msg: 'plain http off loopback: nodes outside development refuse it; put TLS in front, or give --tls-cert and --tls-key', host });
  const server = await startAnchorKeeperServer({ keeper, host, port: Number(m[2]), ...(tls ? { tls } : {}), log });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log({ msg: 'anchor keeper stopping', signal });
    server.close().then(() => records.close()).then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
} catch (err) {
  process.stderr.write(`anchor-keeper: failed to start: ${(err as Error).message}\n`);
  process.exit(1);
}
