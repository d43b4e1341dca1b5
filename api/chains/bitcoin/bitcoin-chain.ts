// One Bitcoin network the service talks to through an Esplora-compatible backend: UTXOs of a wallet,
// a fee rate, broadcast and confirmation depth, and who spent an output (with that transaction's bytes),
// for the transaction worker; the tip's height, for the freshness of a wallet's balance.
import * as bitcoin from 'bitcoinjs-lib';
import { EsploraClient, EsploraError, type TxStatus, type Utxo } from './esplora-client.ts';
import { ChainError } from '../chain-error.ts';
import type { BitcoinNetworkInfo } from '../../../core/chains/bitcoin/bitcoin-networks.ts';

export class BitcoinChain {
  private readonly client: EsploraClient;

  constructor(readonly info: BitcoinNetworkInfo, baseUrl: string) {
    this.client = new EsploraClient(baseUrl);
  }

  utxos(address: string): Promise<Utxo[]> {
    return this.client.utxos(address);
  }

  /** sat/vB for confirmation within about six blocks; 1 when the backend has no estimate (regtest). */
  async feeRate(): Promise<bigint> {
    const est = await this.client.feeEstimates();
    const rate = est['6'] ?? est['3'] ?? est['1'];
    return rate === undefined ? 1n : BigInt(Math.max(1, Math.ceil(rate)));
  }

  async broadcast(rawHex: string, txid: string): Promise<void> {
    try {
      const got = await this.client.broadcast(rawHex);
      if (got !== txid) throw new ChainError('broadcast_rejected', `backend answered txid ${got.slice(0, 80)}, expected ${txid}`, true);
    } catch (err) {
      if (err instanceof ChainError) throw err;
      if (err instanceof EsploraError && err.status >= 400 && err.status < 500) {
        if (/already in block chain|txn-already-known|already known/i.test(err.message)) return;
        throw new ChainError('broadcast_rejected', err.message, true);
      }
      throw new ChainError('rpc_error', (err as Error).message, false);
    }
  }

  tipHeight(): Promise<number> {
    return this.client.tipHeight();
  }

  /** Confirmations of `txid`: 0 while unconfirmed, or unknown to the backend (not in its mempool or chain). */
  async confirmations(txid: string): Promise<{ confirmations: number; blockHeight?: number }> {
    const s = await this.client.status(txid).catch((err: unknown) => {
      if (err instanceof EsploraError && err.status === 404) return { confirmed: false } satisfies TxStatus as TxStatus;
      throw err;
    });
    if (!s.confirmed || s.block_height === undefined) return { confirmations: 0 };
    const tip = await this.client.tipHeight();
    return { confirmations: tip - s.block_height + 1, blockHeight: s.block_height };
  }

  /** A transaction as the backend holds it (mempool or chain), decoded; its txid is checked against the one asked for. */
  async transaction(txid: string): Promise<bitcoin.Transaction> {
    const tx = bitcoin.Transaction.fromHex(await this.client.rawTransaction(txid));
    // The backend's word is not taken for which transaction this is: its bytes must hash to the id.
    if (tx.getId() !== txid) throw new ChainError('rpc_error', `the backend answered another transaction for ${txid}`, false);
    return tx;
  }

  /** The amount of output `vout` of transaction `txid`, read from the transaction's own bytes. */
  async outputValue(txid: string, vout: number): Promise<bigint> {
    const out = (await this.transaction(txid)).outs[vout];
    if (!out) throw new ChainError('rpc_error', `${txid} has no output ${vout}`, false);
    return out.value;
  }

  /** The transaction that spent outpoint `txid:vout`, with its confirmations (0 in the mempool); undefined while unspent. */
  async spentBy(outpoint: string): Promise<{ txid: string; confirmations: number } | undefined> {
    const [txid, vout] = outpoint.split(':');
    const o = await this.client.outspend(txid!, Number(vout));
    if (!o.spent || !o.txid) return undefined;
    if (!o.status?.confirmed || o.status.block_height === undefined) return { txid: o.txid, confirmations: 0 };
    return { txid: o.txid, confirmations: (await this.client.tipHeight()) - o.status.block_height + 1 };
  }
}
