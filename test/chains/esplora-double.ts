// A local Esplora-compatible regtest double. No Bitcoin node can run here, so this stands in for one
// with the parts the service uses (UTXOs, fee estimates, broadcast, status, tip) and, before it accepts
// a transaction, verifies every input with an independent script interpreter (bitcore-lib's
// Script.Interpreter with P2SH, segwit and taproot rules), the way a node's mempool would.
//
// One repair: bitcore-lib 11's BIP-340 verification refuses every valid signature under an x-only key
// whose first byte is zero (1 key in 256), so the interpreter keeps its own BIP-341 sighash and script
// rules but checks the final Schnorr equation with noble's BIP-340 verifier (test/chains/bitcoin-spend
// holds both sides: such a key's spend is accepted, a wrong signature under it refused).
import { createServer, type Server } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
// @ts-expect-error bitcore-lib ships no types
import bitcore from 'bitcore-lib';
import * as bitcoin from 'bitcoinjs-lib';
import { schnorr } from '@noble/curves/secp256k1.js';

interface BitcoreSignatureLike { toBuffer(): Buffer }
interface BitcorePublicKeyLike { point: { x: { toBuffer(opts: { size: number }): Buffer } } }
bitcore.crypto.Schnorr.verify = (publicKey: Buffer | BitcorePublicKeyLike, message: Buffer, signature: Buffer | BitcoreSignatureLike): boolean => {
  const key = Buffer.isBuffer(publicKey) ? publicKey : publicKey.point.x.toBuffer({ size: 32 });
  const sig = Buffer.isBuffer(signature) ? signature : signature.toBuffer().subarray(0, 64);
  if (key.length !== 32 || message.length !== 32 || sig.length !== 64) return false;
  try {
    return schnorr.verify(sig, message, key);
  } catch {
    return false;
  }
};

interface Coin {
  txid: string;
  vout: number;
  value: bigint;
  script: Buffer;
  address: string;
  height: number | null;
}

const FLAGS = (() => {
  const I = bitcore.Script.Interpreter;
  return I.SCRIPT_VERIFY_P2SH | I.SCRIPT_VERIFY_WITNESS | I.SCRIPT_VERIFY_STRICTENC | I.SCRIPT_VERIFY_DERSIG | I.SCRIPT_VERIFY_LOW_S |
    I.SCRIPT_VERIFY_NULLFAIL | I.SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY | I.SCRIPT_VERIFY_CHECKSEQUENCEVERIFY | I.SCRIPT_VERIFY_TAPROOT |
    I.SCRIPT_VERIFY_WITNESS_PUBKEYTYPE;
})();

export class EsploraDouble {
  private server: Server | undefined;
  readonly coins = new Map<string, Coin>();
  readonly txs = new Map<string, { hex: string; height: number | null }>();
  readonly rejected: string[] = [];
  height = 100;
  url = '';

  constructor(private readonly network = bitcoin.networks.regtest) {}

  /** Creates an output paying `value` to `address` out of thin air (a coinbase of the double), confirmed. */
  fund(address: string, value: bigint): { txid: string; vout: number } {
    const txid = randomBytes(32).toString('hex');
    const script = Buffer.from(bitcoin.address.toOutputScript(address, this.network));
    this.coins.set(`${txid}:0`, { txid, vout: 0, value, script, address, height: this.height });
    return { txid, vout: 0 };
  }

  mine(blocks = 1): void {
    this.height += blocks;
    for (const c of this.coins.values()) if (c.height === null) c.height = this.height;
    for (const t of this.txs.values()) if (t.height === null) t.height = this.height;
  }

  /** Verifies and accepts a raw transaction; returns an error text when refused. */
  accept(hex: string): { txid?: string; error?: string } {
    let tx: bitcoin.Transaction;
    try {
      tx = bitcoin.Transaction.fromHex(hex);
    } catch {
      return { error: 'TX decode failed' };
    }
    const spent = tx.ins.map((i) => this.coins.get(`${Buffer.from(i.hash).reverse().toString('hex')}:${i.index}`));
    if (spent.some((c) => !c)) return { error: 'bad-txns-inputs-missingorspent' };
    const inValue = spent.reduce((a, c) => a + c!.value, 0n);
    const outValue = tx.outs.reduce((a, o) => a + BigInt(o.value), 0n);
    if (outValue > inValue) return { error: 'bad-txns-in-belowout' };
    const btx = new bitcore.Transaction(hex);
    btx.inputs.forEach((input: { output?: unknown }, i: number) => {
      input.output = new bitcore.Transaction.Output({ script: new bitcore.Script(spent[i]!.script), satoshis: Number(spent[i]!.value) });
    });
    for (let i = 0; i < tx.ins.length; i++) {
      const interpreter = new bitcore.Script.Interpreter();
      const witness = tx.ins[i]!.witness.map((w) => Buffer.from(w));
      const ok = interpreter.verify(new bitcore.Script(Buffer.from(tx.ins[i]!.script)), new bitcore.Script(spent[i]!.script), btx, i, FLAGS, witness, Number(spent[i]!.value));
      if (!ok) return { error: `mandatory-script-verify-flag-failed (input ${i}: ${interpreter.errstr})` };
    }
    const txid = tx.getId();
    for (const i of tx.ins) this.coins.delete(`${Buffer.from(i.hash).reverse().toString('hex')}:${i.index}`);
    tx.outs.forEach((o, vout) => {
      let address = '';
      try {
        address = bitcoin.address.fromOutputScript(o.script, this.network);
      } catch {
        // non-standard output: kept, not indexed by address
      }
      this.coins.set(`${txid}:${vout}`, { txid, vout, value: BigInt(o.value), script: Buffer.from(o.script), address, height: null });
    });
    this.txs.set(txid, { hex, height: null });
    return { txid };
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const send = (status: number, body: unknown, type = 'application/json') => {
        res.writeHead(status, { 'content-type': type });
        res.end(type === 'application/json' ? JSON.stringify(body) : String(body));
      };
      let m: RegExpExecArray | null;
      if (req.method === 'GET' && (m = /^\/address\/([^/]+)\/utxo$/.exec(url.pathname))) {
        const addr = decodeURIComponent(m[1]!);
        return send(200, [...this.coins.values()].filter((c) => c.address === addr).map((c) => ({
          txid: c.txid, vout: c.vout, value: Number(c.value), status: c.height === null ? { confirmed: false } : { confirmed: true, block_height: c.height },
        })));
      }
      if (req.method === 'GET' && url.pathname === '/fee-estimates') return send(200, { 1: 12, 3: 8, 6: 5, 144: 1 });
      if (req.method === 'GET' && url.pathname === '/blocks/tip/height') return send(200, this.height, 'text/plain');
      if (req.method === 'GET' && (m = /^\/tx\/([0-9a-f]{64})\/status$/.exec(url.pathname))) {
        const t = this.txs.get(m[1]!);
        if (!t) return send(404, 'Transaction not found', 'text/plain');
        return send(200, t.height === null ? { confirmed: false } : { confirmed: true, block_height: t.height });
      }
      if (req.method === 'POST' && url.pathname === '/tx') {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          const r = this.accept(body.trim());
          if (r.error) {
            this.rejected.push(r.error);
            return send(400, `sendrawtransaction RPC error: ${r.error}`, 'text/plain');
          }
          return send(200, r.txid, 'text/plain');
        });
        return;
      }
      send(404, 'not found', 'text/plain');
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    const addr = this.server.address();
    this.url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    return this.url;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

export const sha256hex = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
