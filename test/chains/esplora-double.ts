// The Esplora-compatible regtest double the tests run: the local regtest service of deploy/regtest/
// (docs/bitcoin-regtest.md), in memory, on a free port. It keeps the block, mempool and UTXO rules of
// that service and checks every input with an independent script interpreter (bitcore-lib, with the
// BIP-340 repair in deploy/regtest/script-check.ts) before it accepts a transaction.
import { createHash } from 'node:crypto';
import * as bitcoin from 'bitcoinjs-lib';
import { RegtestChain } from '../../deploy/regtest/regtest-chain.ts';
import { EsploraServer } from '../../deploy/regtest/esplora-server.ts';

export class EsploraDouble extends RegtestChain {
  private server: EsploraServer | undefined;
  url = '';

  constructor(network = bitcoin.networks.regtest) {
    super({ network });
    this.init();
  }

  /** Verifies and accepts a raw transaction; returns an error text when refused. */
  accept(hex: string): { txid?: string; error?: string } {
    return this.tryAccept(hex);
  }

  async start(): Promise<string> {
    this.server = new EsploraServer(this);
    this.url = await this.server.listen(0, '127.0.0.1');
    return this.url;
  }

  stop(): Promise<void> {
    return this.server ? this.server.close() : Promise.resolve();
  }
}

export const sha256hex = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
