// The regtest double's HTTP face (docs/bitcoin-regtest.md): the Esplora REST API
// (github.com/Blockstream/esplora/blob/master/API.md) over a RegtestChain, the part a wallet service
// uses (addresses and their UTXOs and transactions, transactions and their status and spends, blocks,
// the tip, the mempool, fee estimates, broadcast), plus two control routes bitcoind offers as RPCs:
// POST /regtest/fund (a faucet) and POST /regtest/mine (generate).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as bitcoin from 'bitcoinjs-lib';
import { RegtestRejection, type RegtestChain, type TxRecord } from './regtest-chain.ts';

const MAX_BODY = 4_000_000;

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
      if (body.length > MAX_BODY) {
        reject(new HttpError(413, 'body too large'));
        req.destroy();
      }
    });
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

/** An amount in satoshis from JSON: a safe integer or a base-10 string. */
function sats(value: unknown): bigint {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return BigInt(value);
  if (typeof value === 'string' && /^[1-9][0-9]{0,15}$/.test(value)) return BigInt(value);
  throw new HttpError(400, 'sats must be a positive integer (satoshis)');
}

export class EsploraServer {
  private server: Server | undefined;
  url = '';

  constructor(readonly chain: RegtestChain) {}

  private status(rec: TxRecord): { confirmed: false } | { confirmed: true; block_height: number; block_hash: string; block_time: number } {
    if (rec.height === null) return { confirmed: false };
    return { confirmed: true, block_height: rec.height, block_hash: rec.blockHash!, block_time: this.chain.blocks[rec.height]!.time };
  }

  private scriptType(script: Uint8Array): string {
    const s = Buffer.from(script);
    if (s[0] === bitcoin.opcodes.OP_RETURN) return 'op_return';
    if (s.length === 22 && s[0] === 0 && s[1] === 20) return 'v0_p2wpkh';
    if (s.length === 34 && s[0] === 0 && s[1] === 32) return 'v0_p2wsh';
    if (s.length === 34 && s[0] === 0x51 && s[1] === 32) return 'v1_p2tr';
    if (s.length === 25 && s[0] === 0x76) return 'p2pkh';
    if (s.length === 23 && s[0] === 0xa9) return 'p2sh';
    return 'unknown';
  }

  /** GET /tx/:txid, Esplora's shape. */
  private txJson(txid: string, rec: TxRecord): unknown {
    const tx = bitcoin.Transaction.fromHex(rec.hex);
    const chainNet = this.chain.network;
    const address = (script: Uint8Array) => {
      try {
        return bitcoin.address.fromOutputScript(script, chainNet);
      } catch {
        return undefined;
      }
    };
    return {
      txid, version: tx.version, locktime: tx.locktime, size: tx.byteLength(), weight: tx.weight(), fee: Number(rec.fee), status: this.status(rec),
      vin: tx.ins.map((i, n) => {
        const prev = rec.prevouts[n];
        return {
          txid: Buffer.from(i.hash).reverse().toString('hex'), vout: i.index, is_coinbase: rec.origin !== 'transaction', sequence: i.sequence,
          scriptsig: Buffer.from(i.script).toString('hex'), witness: i.witness.map((w) => Buffer.from(w).toString('hex')),
          prevout: prev ? { scriptpubkey: Buffer.from(prev.script).toString('hex'), scriptpubkey_type: this.scriptType(prev.script), ...(prev.address ? { scriptpubkey_address: prev.address } : {}), value: Number(prev.value) } : null,
        };
      }),
      vout: tx.outs.map((o) => {
        const a = address(o.script);
        return { scriptpubkey: Buffer.from(o.script).toString('hex'), scriptpubkey_type: this.scriptType(o.script), ...(a ? { scriptpubkey_address: a } : {}), value: Number(o.value) };
      }),
    };
  }

  private outspend(txid: string, vout: number): unknown {
    const by = this.chain.spends.get(`${txid}:${vout}`);
    if (!by) return { spent: false };
    return { spent: true, txid: by.txid, vin: by.vin, status: this.status(this.chain.txs.get(by.txid)!) };
  }

  /** Transactions paying or spent from an address: mempool first, then confirmed ones newest first (at most 50). */
  private addressTxs(address: string): [string, TxRecord][] {
    const script = this.chain.outputScript(address);
    const touches = (rec: TxRecord) =>
      rec.prevouts.some((p) => p.address === address) || bitcoin.Transaction.fromHex(rec.hex).outs.some((o) => Buffer.from(o.script).equals(script));
    const all = [...this.chain.txs.entries()].filter(([, rec]) => touches(rec));
    return all.sort(([, a], [, b]) => (b.height ?? Infinity) - (a.height ?? Infinity)).slice(0, 50);
  }

  private addressStats(address: string): unknown {
    const script = this.chain.outputScript(address);
    const stats = () => ({ funded_txo_count: 0, funded_txo_sum: 0, spent_txo_count: 0, spent_txo_sum: 0, tx_count: 0 });
    const chain = stats();
    const mempool = stats();
    for (const rec of this.chain.txs.values()) {
      const s = rec.height === null ? mempool : chain;
      let touched = false;
      for (const p of rec.prevouts) if (p.address === address) { s.spent_txo_count++; s.spent_txo_sum += Number(p.value); touched = true; }
      for (const o of bitcoin.Transaction.fromHex(rec.hex).outs) if (Buffer.from(o.script).equals(script)) { s.funded_txo_count++; s.funded_txo_sum += Number(o.value); touched = true; }
      if (touched) s.tx_count++;
    }
    return { address, chain_stats: chain, mempool_stats: mempool };
  }

  private block(hash: string): unknown {
    const rec = this.chain.blocks.find((b) => b.hash === hash);
    if (!rec) throw new HttpError(404, 'Block not found');
    const b = bitcoin.Block.fromHex(rec.hex);
    return {
      id: rec.hash, height: rec.height, version: b.version, timestamp: rec.time, tx_count: rec.txids.length, size: b.byteLength(), weight: b.weight(),
      merkle_root: Buffer.from(b.merkleRoot!).reverse().toString('hex'), previousblockhash: rec.height > 0 ? this.chain.blocks[rec.height - 1]!.hash : null,
      nonce: b.nonce, bits: b.bits, mediantime: rec.time,
    };
  }

  private async route(req: IncomingMessage, url: URL): Promise<{ status?: number; body: unknown; text?: boolean }> {
    const chain = this.chain;
    const path = url.pathname;
    let m: RegExpExecArray | null;
    const tx = (id: string) => {
      const rec = chain.txs.get(id);
      if (!rec) throw new HttpError(404, 'Transaction not found');
      return rec;
    };
    if (req.method === 'GET') {
      if ((m = /^\/address\/([^/]+)\/utxo$/.exec(path))) {
        const addr = decodeURIComponent(m[1]!);
        chain.outputScript(addr);
        return {
          body: [...chain.coins.values()].filter((c) => c.address === addr).map((c) => ({
            txid: c.txid, vout: c.vout, value: Number(c.value),
            status: c.height === null ? { confirmed: false } : { confirmed: true, block_height: c.height, block_hash: chain.blocks[c.height]!.hash, block_time: chain.blocks[c.height]!.time },
          })),
        };
      }
      if ((m = /^\/address\/([^/]+)\/txs$/.exec(path))) return { body: this.addressTxs(decodeURIComponent(m[1]!)).map(([id, rec]) => this.txJson(id, rec)) };
      if ((m = /^\/address\/([^/]+)$/.exec(path))) return { body: this.addressStats(decodeURIComponent(m[1]!)) };
      if ((m = /^\/tx\/([0-9a-f]{64})$/.exec(path))) return { body: this.txJson(m[1]!, tx(m[1]!)) };
      if ((m = /^\/tx\/([0-9a-f]{64})\/status$/.exec(path))) return { body: this.status(tx(m[1]!)) };
      if ((m = /^\/tx\/([0-9a-f]{64})\/hex$/.exec(path))) return { body: tx(m[1]!).hex, text: true };
      if ((m = /^\/tx\/([0-9a-f]{64})\/outspends$/.exec(path))) {
        const id = m[1]!;
        return { body: bitcoin.Transaction.fromHex(tx(id).hex).outs.map((_o, vout) => this.outspend(id, vout)) };
      }
      if ((m = /^\/tx\/([0-9a-f]{64})\/outspend\/(\d+)$/.exec(path))) {
        tx(m[1]!);
        return { body: this.outspend(m[1]!, Number(m[2])) };
      }
      if (path === '/fee-estimates') return { body: chain.feeEstimates };
      if (path === '/blocks/tip/height') return { body: String(chain.height), text: true };
      if (path === '/blocks/tip/hash') return { body: chain.tip!.hash, text: true };
      if ((m = /^\/block-height\/(\d+)$/.exec(path))) {
        const b = chain.blocks[Number(m[1])];
        if (!b) throw new HttpError(404, 'Block not found');
        return { body: b.hash, text: true };
      }
      if ((m = /^\/block\/([0-9a-f]{64})$/.exec(path))) return { body: this.block(m[1]!) };
      if ((m = /^\/block\/([0-9a-f]{64})\/txids$/.exec(path))) {
        const b = chain.blocks.find((x) => x.hash === m![1]);
        if (!b) throw new HttpError(404, 'Block not found');
        return { body: b.txids };
      }
      if ((m = /^\/block\/([0-9a-f]{64})\/status$/.exec(path))) {
        const b = chain.blocks.find((x) => x.hash === m![1]);
        if (!b) throw new HttpError(404, 'Block not found');
        return { body: { in_best_chain: true, height: b.height, next_best: chain.blocks[b.height + 1]?.hash ?? null } };
      }
      if (path === '/mempool/txids') return { body: chain.mempool };
      if (path === '/mempool') {
        const recs = chain.mempool.map((id) => chain.txs.get(id)!);
        return { body: { count: recs.length, vsize: recs.reduce((a, r) => a + Math.ceil(r.weight / 4), 0), total_fee: Number(recs.reduce((a, r) => a + r.fee, 0n)), fee_histogram: [] } };
      }
      if (path === '/regtest/info') {
        return { body: { network: 'regtest', height: chain.height, tip: chain.tip?.hash ?? null, mempool: chain.mempool.length, utxos: chain.coins.size } };
      }
    }
    if (req.method === 'POST' && path === '/tx') {
      const body = (await readBody(req)).trim();
      try {
        return { body: chain.submit(body), text: true };
      } catch (err) {
        if (err instanceof RegtestRejection) throw new HttpError(400, `sendrawtransaction RPC error: {"code":${err.reason.startsWith('bad-txns-inputs-missingorspent') ? -25 : -26},"message":"${err.reason}"}`);
        throw err;
      }
    }
    if (req.method === 'POST' && (path === '/regtest/fund' || path === '/regtest/mine')) {
      const text = await readBody(req);
      let j: Record<string, unknown>;
      try {
        j = (text.trim() ? JSON.parse(text) : {}) as Record<string, unknown>;
      } catch {
        throw new HttpError(400, 'the body must be JSON');
      }
      if (typeof j !== 'object' || j === null || Array.isArray(j)) throw new HttpError(400, 'the body must be a JSON object');
      if (path === '/regtest/mine') {
        const blocks = j.blocks ?? 1;
        if (typeof blocks !== 'number' || !Number.isInteger(blocks) || blocks < 1 || blocks > 1000) throw new HttpError(400, 'blocks must be an integer from 1 to 1000');
        const hashes = chain.mine(blocks);
        return { body: { height: chain.height, blocks: hashes } };
      }
      if (typeof j.address !== 'string') throw new HttpError(400, 'address is required');
      if (j.confirm !== undefined && typeof j.confirm !== 'boolean') throw new HttpError(400, 'confirm must be true or false');
      const value = sats(j.sats);
      const out = chain.fund(j.address, value, { confirm: j.confirm !== false });
      const rec = chain.txs.get(out.txid)!;
      return { body: { txid: out.txid, vout: out.vout, address: j.address, sats: value.toString(), status: this.status(rec) } };
    }
    throw new HttpError(404, 'not found');
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://regtest');
    this.route(req, url).then(
      (r) => {
        res.writeHead(r.status ?? 200, { 'content-type': r.text ? 'text/plain' : 'application/json' });
        res.end(r.text ? String(r.body) : JSON.stringify(r.body));
      },
      (err: unknown) => {
        const status = err instanceof HttpError ? err.status : err instanceof RegtestRejection ? 400 : 500;
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end(err instanceof Error ? err.message : String(err));
      },
    );
  }

  /** Listens; port 0 picks a free one. Returns the base URL. */
  async listen(port = 0, host = '127.0.0.1'): Promise<string> {
    const server = createServer((req, res) => this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const addr = server.address() as AddressInfo;
    this.url = `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}`;
    return this.url;
  }

  close(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }
}
