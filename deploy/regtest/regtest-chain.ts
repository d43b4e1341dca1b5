// The chain state of the local Bitcoin regtest double (docs/bitcoin-regtest.md): blocks, a mempool and
// the UTXO set, with the acceptance rules of a node's mempool (Bitcoin Core's AcceptToMemoryPool, in
// its refusal words) and a miner. It is a faithful double, not bitcoind: the rules it checks and the
// ones it leaves out are listed in the doc. State is kept in memory; a RegtestStore (regtest-store.ts)
// makes it survive a restart.
import { randomBytes } from 'node:crypto';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { checkInputScripts, type Prevout } from './script-check.ts';

/** An unspent output, confirmed (height) or still in the mempool (height null). */
export interface Coin {
  txid: string;
  vout: number;
  value: bigint;
  script: Buffer;
  address: string;
  height: number | null;
  /** A block reward: spendable only after COINBASE_MATURITY confirmations. */
  coinbase: boolean;
}

export type TxOrigin = 'coinbase' | 'faucet' | 'transaction';

export interface TxRecord {
  hex: string;
  /** The block that holds it, or null while in the mempool. */
  height: number | null;
  blockHash: string | null;
  origin: TxOrigin;
  /** What each input spent (empty for a coinbase or faucet transaction). */
  prevouts: (Prevout & { address: string })[];
  fee: bigint;
  weight: number;
}

/** A mempool transaction as stored: a faucet one has no inputs to check again. */
export interface MempoolEntry {
  hex: string;
  origin: TxOrigin;
}

export interface BlockRecord {
  height: number;
  hash: string;
  hex: string;
  time: number;
  txids: string[];
}

export interface RegtestChainOptions {
  network?: bitcoin.Network;
  /** Where block rewards go; none: an unspendable output (they then never enter the UTXO set). */
  minerAddress?: string;
  /** sat/vB by confirmation target, answered by GET /fee-estimates. */
  feeEstimates?: Record<string, number>;
  /** Called after every change, with what changed (a RegtestStore persists it). */
  onChange?: (change: { block?: BlockRecord; mempool: MempoolEntry[] }) => void;
}

/** Bitcoin Core's constants, as on regtest. */
export const COINBASE_MATURITY = 100;
export const HALVING_INTERVAL = 150;
export const MAX_MONEY = 21_000_000n * 100_000_000n;
export const MAX_STANDARD_TX_WEIGHT = 400_000;
export const MAX_BLOCK_WEIGHT = 4_000_000;
/** sat/kvB, as -minrelaytxfee and -dustrelayfee default. */
export const MIN_RELAY_FEE = 1000n;
export const DUST_RELAY_FEE = 3000n;
/** Regtest's proof-of-work limit: about every second header hash meets it. */
const REGTEST_BITS = 0x207fffff;
const FAUCET_TAG = Buffer.from('regtest-faucet');
const NULL_HASH = new Uint8Array(32);
const WITNESS_COMMITMENT_HEADER = Buffer.from('aa21a9ed', 'hex');

// Taproot (bech32m, segwit v1) addresses are read and written only with an ECC library installed.
bitcoin.initEccLib(ecc);

export const DEFAULT_FEE_ESTIMATES: Readonly<Record<string, number>> = Object.freeze({ 1: 12, 2: 10, 3: 8, 6: 5, 12: 3, 25: 2, 144: 1, 504: 1, 1008: 1 });

/** A refusal of a transaction, with bitcoind's reject reason. */
export class RegtestRejection extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'RegtestRejection';
  }
}

const outpoint = (txid: string, vout: number) => `${txid}:${vout}`;
const txidOf = (hash: Uint8Array) => Buffer.from(hash).reverse().toString('hex');

/** Bitcoin Core's GetDustThreshold: the fee, at the dust relay rate, of creating and spending the output. */
export function dustThreshold(script: Uint8Array): bigint {
  if (script[0] === bitcoin.opcodes.OP_RETURN) return 0n;
  const outputSize = 8 + (script.length < 0xfd ? 1 : 3) + script.length;
  const isWitnessProgram = script.length >= 4 && script.length <= 42 && (script[0] === 0 || (script[0]! >= 0x51 && script[0]! <= 0x60)) && script[1] === script.length - 2;
  const spendSize = isWitnessProgram ? 32 + 4 + 1 + Math.floor(107 / 4) + 4 : 32 + 4 + 1 + 107 + 4;
  return (BigInt(outputSize + spendSize) * DUST_RELAY_FEE) / 1000n;
}

/** Block reward on regtest: 50 BTC halving every 150 blocks. */
export function subsidy(height: number): bigint {
  const halvings = Math.floor(height / HALVING_INTERVAL);
  return halvings >= 64 ? 0n : (50n * 100_000_000n) >> BigInt(halvings);
}

const isFaucetTx = (tx: bitcoin.Transaction) => tx.isCoinbase() && Buffer.from(tx.ins[0]!.script).includes(FAUCET_TAG);

export class RegtestChain {
  /** The UTXO set, mempool outputs included (as Esplora lists them), without outputs the mempool spends. */
  readonly coins = new Map<string, Coin>();
  readonly txs = new Map<string, TxRecord>();
  readonly blocks: BlockRecord[] = [];
  /** Mempool transaction ids in acceptance order, so every parent precedes its children. */
  readonly mempool: string[] = [];
  /** Who spent an outpoint: `{txid, vin}`, for the mempool conflict rule and GET /tx/:id/outspend. */
  readonly spends = new Map<string, { txid: string; vin: number }>();
  /** Every refusal, newest last (tests and the log read it). */
  readonly rejected: string[] = [];
  readonly network: bitcoin.Network;
  readonly feeEstimates: Readonly<Record<string, number>>;
  private readonly minerScript: Buffer;
  private onChange: RegtestChainOptions['onChange'];

  constructor(options: RegtestChainOptions = {}) {
    this.network = options.network ?? bitcoin.networks.regtest;
    this.feeEstimates = Object.freeze({ ...(options.feeEstimates ?? DEFAULT_FEE_ESTIMATES) });
    this.minerScript = options.minerAddress
      ? Buffer.from(bitcoin.address.toOutputScript(options.minerAddress, this.network))
      : Buffer.from(bitcoin.script.compile([bitcoin.opcodes.OP_RETURN, Buffer.from('regtest-double')]));
    this.onChange = options.onChange;
  }

  /** Tip height; -1 before the genesis block. */
  get height(): number {
    return this.blocks.length - 1;
  }

  get tip(): BlockRecord | undefined {
    return this.blocks.at(-1);
  }

  /** Mines the genesis block when the chain is empty (a fresh chain, or a store that held none). */
  init(): this {
    if (this.blocks.length === 0) this.mine(1);
    return this;
  }

  /** The script an address pays to; throws RegtestRejection for an address of another network. */
  outputScript(address: string): Buffer {
    try {
      return Buffer.from(bitcoin.address.toOutputScript(address, this.network));
    } catch {
      throw new RegtestRejection(`not a ${this.network === bitcoin.networks.regtest ? 'regtest' : 'valid'} address: ${address}`);
    }
  }

  private addressOf(script: Uint8Array): string {
    try {
      return bitcoin.address.fromOutputScript(script, this.network);
    } catch {
      return ''; // non-standard or unspendable: kept, not indexed by address
    }
  }

  /**
   * The faucet: a transaction the double mints paying `value` to `address` (a coinbase-shaped input
   * tagged `regtest-faucet`, not a block reward, so no maturity applies). With `confirm` (the default)
   * it is mined at once in a new block; otherwise it waits in the mempool for the next block.
   */
  fund(address: string, value: bigint, options: { confirm?: boolean } = {}): { txid: string; vout: number } {
    if (value <= 0n || value > MAX_MONEY) throw new RegtestRejection('the amount must be 1 sat to 21 million BTC');
    const script = this.outputScript(address);
    if (value < dustThreshold(script)) throw new RegtestRejection(`dust: ${address} needs at least ${dustThreshold(script)} sat`);
    const tx = new bitcoin.Transaction();
    tx.version = 2;
    tx.addInput(NULL_HASH, 0xffffffff, 0xffffffff, bitcoin.script.compile([FAUCET_TAG, randomBytes(8)]));
    tx.addOutput(script, value);
    const txid = tx.getId();
    this.applyOutputs(tx, txid, null, false);
    this.txs.set(txid, { hex: tx.toHex(), height: null, blockHash: null, origin: 'faucet', prevouts: [], fee: 0n, weight: tx.weight() });
    this.mempool.push(txid);
    if (options.confirm ?? true) this.mine(1);
    else this.onChange?.({ mempool: this.mempoolHexes() });
    return { txid, vout: 0 };
  }

  /**
   * Mempool acceptance of a raw transaction (what POST /tx does). Returns the txid; throws
   * RegtestRejection with bitcoind's reason. A transaction already in the mempool is answered with its
   * id again, as sendrawtransaction does.
   */
  submit(hex: string): string {
    try {
      return this.acceptToMempool(hex);
    } catch (err) {
      if (err instanceof RegtestRejection) this.rejected.push(err.reason);
      throw err;
    }
  }

  /** The old double's answer shape: `{txid}` or `{error}`. */
  tryAccept(hex: string): { txid?: string; error?: string } {
    try {
      return { txid: this.submit(hex) };
    } catch (err) {
      if (err instanceof RegtestRejection) return { error: err.reason };
      throw err;
    }
  }

  private acceptToMempool(hex: string): string {
    let tx: bitcoin.Transaction;
    try {
      tx = bitcoin.Transaction.fromHex(hex);
    } catch {
      throw new RegtestRejection('TX decode failed');
    }
    const txid = tx.getId();
    if (this.txs.get(txid)?.height === null) return txid;
    if (tx.ins.length === 0) throw new RegtestRejection('bad-txns-vin-empty');
    if (tx.outs.length === 0) throw new RegtestRejection('bad-txns-vout-empty');
    if (tx.isCoinbase() || tx.ins.some((i) => Buffer.from(i.hash).equals(NULL_HASH))) throw new RegtestRejection('coinbase');
    const seen = new Set<string>();
    for (const i of tx.ins) {
      const key = outpoint(txidOf(i.hash), i.index);
      if (seen.has(key)) throw new RegtestRejection('bad-txns-inputs-duplicate');
      seen.add(key);
    }
    let outValue = 0n;
    for (const o of tx.outs) {
      const v = BigInt(o.value);
      if (v < 0n) throw new RegtestRejection('bad-txns-vout-negative');
      if (v > MAX_MONEY) throw new RegtestRejection('bad-txns-vout-toolarge');
      outValue += v;
      if (outValue > MAX_MONEY) throw new RegtestRejection('bad-txns-txouttotal-toolarge');
    }
    if (tx.version < 1 || tx.version > 3) throw new RegtestRejection('version');
    if (tx.weight() > MAX_STANDARD_TX_WEIGHT) throw new RegtestRejection('tx-size');
    for (const o of tx.outs) if (BigInt(o.value) < dustThreshold(o.script)) throw new RegtestRejection('dust');
    if (!this.isFinal(tx)) throw new RegtestRejection('non-final');

    const nextHeight = this.height + 1;
    const spent: Coin[] = [];
    for (const i of tx.ins) {
      const key = outpoint(txidOf(i.hash), i.index);
      const coin = this.coins.get(key);
      if (!coin) {
        const by = this.spends.get(key);
        throw new RegtestRejection(by && this.txs.get(by.txid)?.height === null ? 'txn-mempool-conflict' : 'bad-txns-inputs-missingorspent');
      }
      if (coin.coinbase && (coin.height === null || nextHeight - coin.height < COINBASE_MATURITY)) {
        throw new RegtestRejection(`bad-txns-premature-spend-of-coinbase, tried to spend coinbase at depth ${coin.height === null ? 0 : nextHeight - coin.height}`);
      }
      spent.push(coin);
    }
    // BIP-68 relative lock times by height; time-based ones are not modelled (docs/bitcoin-regtest.md).
    if (tx.version >= 2) {
      tx.ins.forEach((i, n) => {
        if (i.sequence & 0x80000000 || i.sequence & 0x00400000) return;
        const lock = i.sequence & 0xffff;
        const coin = spent[n]!;
        const confirmedAt = coin.height ?? nextHeight;
        if (lock > 0 && nextHeight - confirmedAt < lock) throw new RegtestRejection('non-BIP68-final');
      });
    }
    const inValue = spent.reduce((a, c) => a + c.value, 0n);
    if (inValue > MAX_MONEY) throw new RegtestRejection('bad-txns-inputvalues-outofrange');
    if (outValue > inValue) throw new RegtestRejection(`bad-txns-in-belowout, value in (${inValue}) < value out (${outValue})`);
    const fee = inValue - outValue;
    const vsize = BigInt(tx.virtualSize());
    const minFee = (vsize * MIN_RELAY_FEE + 999n) / 1000n;
    if (fee < minFee) throw new RegtestRejection(`min relay fee not met, ${fee} < ${minFee}`);

    const prevouts = spent.map((c) => ({ script: c.script, value: c.value, address: c.address }));
    const scriptError = checkInputScripts(tx, hex, prevouts);
    if (scriptError) throw new RegtestRejection(scriptError);

    tx.ins.forEach((i, vin) => {
      const key = outpoint(txidOf(i.hash), i.index);
      this.coins.delete(key);
      this.spends.set(key, { txid, vin });
    });
    this.applyOutputs(tx, txid, null, false);
    this.txs.set(txid, { hex, height: null, blockHash: null, origin: 'transaction', prevouts, fee, weight: tx.weight() });
    this.mempool.push(txid);
    this.onChange?.({ mempool: this.mempoolHexes() });
    return txid;
  }

  /** Bitcoin Core's IsFinalTx for the next block: a lock time below it (height, or the tip's time) or every sequence final. */
  private isFinal(tx: bitcoin.Transaction): boolean {
    if (tx.locktime === 0) return true;
    const limit = tx.locktime < 500_000_000 ? this.height + 1 : (this.tip?.time ?? 0);
    if (tx.locktime < limit) return true;
    return tx.ins.every((i) => i.sequence === 0xffffffff);
  }

  private applyOutputs(tx: bitcoin.Transaction, txid: string, height: number | null, coinbase: boolean): void {
    tx.outs.forEach((o, vout) => {
      // Unspendable outputs never enter the UTXO set.
      if (o.script[0] === bitcoin.opcodes.OP_RETURN) return;
      this.coins.set(outpoint(txid, vout), { txid, vout, value: BigInt(o.value), script: Buffer.from(o.script), address: this.addressOf(o.script), height, coinbase });
    });
  }

  private mempoolHexes(): MempoolEntry[] {
    return this.mempool.map((id) => ({ hex: this.txs.get(id)!.hex, origin: this.txs.get(id)!.origin }));
  }

  /**
   * Mines `count` blocks on the tip: the first takes the mempool (in acceptance order, up to the block
   * weight limit), each has a BIP-34 coinbase paying the subsidy and the fees, a BIP-141 witness
   * commitment, and a header meeting regtest's proof of work. Returns the new blocks' hashes.
   */
  mine(count = 1): string[] {
    const hashes: string[] = [];
    for (let n = 0; n < count; n++) hashes.push(this.mineOne());
    return hashes;
  }

  private mineOne(): string {
    const height = this.height + 1;
    const chosen: string[] = [];
    let weight = 4000; // room for the header and the coinbase
    for (const id of this.mempool) {
      const rec = this.txs.get(id)!;
      if (weight + rec.weight > MAX_BLOCK_WEIGHT) break; // later ones may depend on this one: stop here
      chosen.push(id);
      weight += rec.weight;
    }
    const txs = chosen.map((id) => bitcoin.Transaction.fromHex(this.txs.get(id)!.hex));
    const fees = chosen.reduce((a, id) => a + this.txs.get(id)!.fee, 0n);
    const coinbase = new bitcoin.Transaction();
    coinbase.version = 2;
    coinbase.addInput(NULL_HASH, 0xffffffff, 0xffffffff, bitcoin.script.compile([bitcoin.script.number.encode(height), randomBytes(4)]));
    coinbase.addOutput(this.minerScript, subsidy(height) + fees);
    const all = [coinbase, ...txs];
    if (txs.some((t) => t.hasWitnesses())) {
      coinbase.setWitness(0, [new Uint8Array(32)]);
      const commitment = bitcoin.Block.calculateMerkleRoot(all, true);
      coinbase.addOutput(Buffer.concat([Buffer.from([bitcoin.opcodes.OP_RETURN, 0x24]), WITNESS_COMMITMENT_HEADER, commitment]), 0n);
    }
    const block = new bitcoin.Block();
    block.version = 0x20000000;
    block.prevHash = this.tip ? Buffer.from(this.tip.hash, 'hex').reverse() : new Uint8Array(32);
    block.transactions = all;
    block.merkleRoot = bitcoin.Block.calculateMerkleRoot(all);
    block.timestamp = Math.max(Math.floor(Date.now() / 1000), (this.tip?.time ?? 0) + 1);
    block.bits = REGTEST_BITS;
    block.nonce = 0;
    while (!block.checkProofOfWork()) block.nonce++;
    const record = this.connect(block, height);
    this.onChange?.({ block: record, mempool: this.mempoolHexes() });
    return record.hash;
  }

  /** Applies a block on the tip: its coinbase's outputs, and confirms (or, on replay, adds) its transactions. */
  private connect(block: bitcoin.Block, height: number): BlockRecord {
    const hash = block.getId();
    const txs = block.transactions ?? [];
    const record: BlockRecord = { height, hash, hex: block.toHex(), time: block.timestamp, txids: txs.map((t) => t.getId()) };
    txs.forEach((tx, index) => {
      const txid = record.txids[index]!;
      const known = this.txs.get(txid);
      if (known) {
        known.height = height;
        known.blockHash = hash;
        tx.outs.forEach((_o, vout) => {
          const coin = this.coins.get(outpoint(txid, vout));
          if (coin) coin.height = height;
        });
        return;
      }
      // A block read back from the store: its transactions were checked when they were accepted.
      const origin: TxOrigin = index === 0 ? 'coinbase' : isFaucetTx(tx) ? 'faucet' : 'transaction';
      const prevouts: TxRecord['prevouts'] = [];
      if (origin === 'transaction') {
        tx.ins.forEach((i, vin) => {
          const key = outpoint(txidOf(i.hash), i.index);
          const coin = this.coins.get(key);
          if (!coin) throw new Error(`stored block ${hash} spends ${key}, which is not in the UTXO set`);
          prevouts.push({ script: coin.script, value: coin.value, address: coin.address });
          this.coins.delete(key);
          this.spends.set(key, { txid, vin });
        });
      }
      this.applyOutputs(tx, txid, height, origin === 'coinbase');
      const inValue = prevouts.reduce((a, p) => a + p.value, 0n);
      const outValue = tx.outs.reduce((a, o) => a + BigInt(o.value), 0n);
      this.txs.set(txid, { hex: tx.toHex(), height, blockHash: hash, origin, prevouts, fee: origin === 'transaction' ? inValue - outValue : 0n, weight: tx.weight() });
    });
    const inBlock = new Set(record.txids);
    const left = this.mempool.filter((id) => !inBlock.has(id));
    this.mempool.length = 0;
    this.mempool.push(...left);
    this.blocks.push(record);
    return record;
  }

  /**
   * Rebuilds the state from stored blocks, then offers the stored mempool again (a transaction that no
   * longer passes is dropped, as a restarted node's mempool would).
   */
  restore(blocks: readonly string[], mempool: readonly MempoolEntry[]): void {
    const silent = this.onChangeMuted();
    try {
      for (const hex of blocks) {
        const block = bitcoin.Block.fromHex(hex);
        const prev = block.prevHash ? Buffer.from(block.prevHash).reverse().toString('hex') : '';
        if (this.tip && prev !== this.tip.hash) throw new Error(`stored block ${block.getId()} does not extend ${this.tip.hash}`);
        this.connect(block, this.height + 1);
      }
      for (const { hex, origin } of mempool) {
        if (origin !== 'faucet') {
          try {
            this.acceptToMempool(hex);
          } catch (err) {
            if (!(err instanceof RegtestRejection)) throw err;
          }
          continue;
        }
        const tx = bitcoin.Transaction.fromHex(hex);
        const txid = tx.getId();
        this.applyOutputs(tx, txid, null, false);
        this.txs.set(txid, { hex, height: null, blockHash: null, origin: 'faucet', prevouts: [], fee: 0n, weight: tx.weight() });
        this.mempool.push(txid);
      }
    } finally {
      silent();
    }
  }

  private onChangeMuted(): () => void {
    const saved = this.onChange;
    this.onChange = undefined;
    return () => {
      this.onChange = saved;
    };
  }
}
