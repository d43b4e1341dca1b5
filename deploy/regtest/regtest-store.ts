// Keeps a regtest chain on disk (docs/bitcoin-regtest.md "State"): blocks are appended to
// `blocks.hex`, one raw block per line, and the mempool is rewritten to `mempool.json` after every
// change (a temporary file renamed over the old one, so a crash leaves the old or the new one).
// On start the blocks are connected again in order and the mempool offered again.
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BlockRecord, MempoolEntry, RegtestChain, RegtestChainOptions } from './regtest-chain.ts';

const MEMPOOL_VERSION = 1;

export class RegtestStore {
  private readonly blocksFile: string;
  private readonly mempoolFile: string;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.blocksFile = join(dir, 'blocks.hex');
    this.mempoolFile = join(dir, 'mempool.json');
  }

  /** The chain's onChange hook. */
  readonly save: NonNullable<RegtestChainOptions['onChange']> = (change: { block?: BlockRecord; mempool: MempoolEntry[] }) => {
    if (change.block) appendFileSync(this.blocksFile, change.block.hex + '\n');
    const tmp = this.mempoolFile + '.tmp';
    writeFileSync(tmp, JSON.stringify({ version: MEMPOOL_VERSION, txs: change.mempool }) + '\n');
    renameSync(tmp, this.mempoolFile);
  };

  /** Loads what was stored into an empty chain; a chain with no stored blocks stays empty. */
  load(chain: RegtestChain): void {
    const blocks = existsSync(this.blocksFile) ? readFileSync(this.blocksFile, 'utf8').split('\n').filter(Boolean) : [];
    let mempool: MempoolEntry[] = [];
    if (existsSync(this.mempoolFile)) {
      const stored = JSON.parse(readFileSync(this.mempoolFile, 'utf8')) as { version?: number; txs?: MempoolEntry[] };
      if (stored.version !== MEMPOOL_VERSION) throw new Error(`${this.mempoolFile}: version ${String(stored.version)} is not ${MEMPOOL_VERSION}`);
      mempool = stored.txs ?? [];
    }
    chain.restore(blocks, mempool);
  }
}
