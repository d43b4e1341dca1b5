// A client of the Esplora HTTP API (github.com/Blockstream/esplora/blob/master/API.md): UTXOs of an
// address, fee estimates, broadcast, confirmation status, spends and raw transactions. Any
// Esplora-compatible backend works.
import { CustodyError } from '../../../core/errors/custody-error.ts';

export interface Utxo {
  txid: string;
  vout: number;
  value: bigint;
  status: { confirmed: boolean; block_height?: number };
}

export interface TxStatus {
  confirmed: boolean;
  block_height?: number;
}

/** The backend answered an error status (kept in `status`: a 4xx on broadcast is a refusal). */
export class EsploraError extends CustodyError {
  constructor(readonly status: number, message: string) {
    super('chain_backend_error', message);
    this.name = 'EsploraError';
  }
}

export class EsploraClient {
  constructor(private readonly baseUrl: string, private readonly timeoutMs = 10_000) {}

  private async request(path: string, init?: RequestInit): Promise<Response> {
    const res = await fetch(this.baseUrl.replace(/\/$/, '') + path, { ...init, signal: AbortSignal.timeout(this.timeoutMs) });
    if (!res.ok) throw new EsploraError(res.status, `${init?.method ?? 'GET'} ${path}: ${res.status} ${(await res.text()).slice(0, 300)}`);
    return res;
  }

  async utxos(address: string): Promise<Utxo[]> {
    const list = (await (await this.request(`/address/${encodeURIComponent(address)}/utxo`)).json()) as { txid: string; vout: number; value: number; status: TxStatus }[];
    return list.map((u) => ({ txid: u.txid, vout: u.vout, value: BigInt(u.value), status: u.status }));
  }

  /** sat/vB by confirmation target (blocks). */
  async feeEstimates(): Promise<Record<string, number>> {
    return (await (await this.request('/fee-estimates')).json()) as Record<string, number>;
  }

  async broadcast(rawTxHex: string): Promise<string> {
    return (await (await this.request('/tx', { method: 'POST', body: rawTxHex, headers: { 'content-type': 'text/plain' } })).text()).trim();
  }

  async status(txid: string): Promise<TxStatus> {
    return (await (await this.request(`/tx/${txid}/status`)).json()) as TxStatus;
  }

  /** Who spent output `vout` of `txid`: `{spent: false}`, or the spending transaction and its status. */
  async outspend(txid: string, vout: number): Promise<{ spent: boolean; txid?: string; status?: TxStatus }> {
    return (await (await this.request(`/tx/${txid}/outspend/${vout}`)).json()) as { spent: boolean; txid?: string; status?: TxStatus };
  }

  /** The transaction's raw bytes, hex (as broadcast: with its witnesses). */
  async rawTransaction(txid: string): Promise<string> {
    return (await (await this.request(`/tx/${txid}/hex`)).text()).trim();
  }

  async tipHeight(): Promise<number> {
    return Number(await (await this.request('/blocks/tip/height')).text());
  }
}
