// `npm run regtest`: the local Bitcoin regtest double as a service (docs/bitcoin-regtest.md): the
// Esplora REST API over a chain with block, mempool and UTXO rules, a faucet and a miner. Settings
// are read once from the environment; `npm start` runs it with REGTEST_DATA_DIR=data/regtest.
import { Type } from '@sinclair/typebox';
import { ConfigError, helpAsked, loadConfig, settingsUsage } from '../../common/config.ts';
import { RegtestChain } from './regtest-chain.ts';
import { RegtestStore } from './regtest-store.ts';
import { EsploraServer } from './esplora-server.ts';

export const RegtestConfigSchema = Type.Object({
  host: Type.String({ env: 'REGTEST_HOST', default: '127.0.0.1' }),
  port: Type.Integer({ env: 'REGTEST_PORT', default: 3002, minimum: 0, maximum: 65535 }),
  dataDir: Type.String({ env: 'REGTEST_DATA_DIR', default: '', description: 'where the chain is kept; empty: in memory only, gone at exit' }),
  blockTime: Type.Number({ env: 'REGTEST_BLOCK_TIME', default: 5, minimum: 0, description: 'seconds between blocks; 0: only on demand (POST /regtest/mine)' }),
  mineEmpty: Type.Boolean({ env: 'REGTEST_MINE_EMPTY', default: false, description: 'mine on the interval even with an empty mempool' }),
  minerAddress: Type.String({ env: 'REGTEST_MINER_ADDRESS', default: '', description: 'where block rewards go; empty: an unspendable output' }),
});

if (helpAsked()) {
  process.stdout.write(settingsUsage('usage: npm run regtest (npm start runs it; docs/bitcoin-regtest.md)\nThe local Bitcoin regtest chain: the Esplora REST API, a faucet and a miner.', RegtestConfigSchema));
  process.exit(0);
}

let config;
try {
  config = loadConfig(RegtestConfigSchema);
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  throw err;
}

const store = config.dataDir ? new RegtestStore(config.dataDir) : undefined;
const chain = new RegtestChain({ ...(config.minerAddress ? { minerAddress: config.minerAddress } : {}), ...(store ? { onChange: store.save } : {}) });
store?.load(chain);
chain.init();
const server = new EsploraServer(chain);
try {
  await server.listen(config.port, config.host);
} catch (err) {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'EADDRINUSE') {
    console.error(`port ${config.port} on ${config.host} is in use; set REGTEST_PORT to another port`);
    process.exit(1);
  }
  throw err;
}
console.log(`Esplora API on ${server.url} (network regtest, tip height ${chain.height}, ${chain.mempool.length} in the mempool); ${store ? `chain kept in ${store.dir}` : 'in memory only: the chain is gone when this process exits'}`);
console.log(`fund: curl -X POST ${server.url}/regtest/fund -d '{"address":"bcrt1...","sats":100000}'; mine: curl -X POST ${server.url}/regtest/mine -d '{"blocks":1}'`);

let timer: NodeJS.Timeout | undefined;
if (config.blockTime > 0) {
  timer = setInterval(() => {
    if (chain.mempool.length === 0 && !config.mineEmpty) return;
    const n = chain.mempool.length;
    chain.mine(1);
    console.log(`block ${chain.height} ${chain.tip!.hash} (${n} transaction${n === 1 ? '' : 's'})`);
  }, config.blockTime * 1000);
}

const stop = () => {
  if (timer) clearInterval(timer);
  void server.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
