// The stablecoin issuer (docs/platform/funding.md "Stablecoin"): a separate minter account, configured by
// its key, that mints the stablecoin (OpenZeppelin's ERC20PresetMinterPauser, 18 decimals) to a holder's
// wallet when the rail settles the fiat. The mint is the issuer's own transaction, signed with the
// issuer's key through viem; the service never signs with a customer's key for it. A mint is signed
// once, with a nonce allocated under a lock and stored in the same batch as the signed bytes, and the
// request keeps those bytes: a retry broadcasts the same transaction again, so one request mints once.
// The issuer also reads what the off-ramp needs: ERC-20 balances and the Transfer logs of a receipt.
import { createPublicClient, encodeFunctionData, erc20Abi, http, keccak256, parseEventLogs, type Hex, type PublicClient } from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { EvmChain } from '../chains/evm/evm-chain.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { EVM_NONCES } from '../transactions/collections.ts';

/** Decimals of ERC20PresetMinterPauser (fixed by the preset): 1 USD = 10^18 token units. */
export const STABLECOIN_DECIMALS = 18;
/** Decimals of the fiat currency's minor unit (cents). */
export const FIAT_DECIMALS = 2;
/** Token units per cent. */
export const UNITS_PER_CENT = 10n ** BigInt(STABLECOIN_DECIMALS - FIAT_DECIMALS);

/** Fee ceiling of one mint, wei: the issuer pays its own gas. */
const MINT_FEE_CEILING = 10n ** 17n;
const MINT_ABI = [{ type: 'function', name: 'mint', stateMutability: 'nonpayable', inputs: [{ name: 'to', type: 'address' }, { name: 'amount', type: 'uint256' }], outputs: [] }] as const;

export interface SignedMint { raw_tx: Hex; tx_hash: Hex; nonce: number }

export type MintStatus = { state: 'pending' } | { state: 'final'; block_number: number } | { state: 'reverted'; block_number: number };

export interface TransferLog { from: string; to: string; value: bigint; token: string; block_number: number }

export interface StablecoinIssuerOptions {
  store: RecordRepository;
  chain: EvmChain;
  rpcUrl: string;
  /** The issuer's key (API_FUNDING_ISSUER_KEY_FILE): a minter of `token`. */
  issuerKey: Hex;
  /** The stablecoin's contract on `chain`. */
  token: Hex;
}

export class StablecoinIssuer {
  private readonly account: PrivateKeyAccount;
  private readonly client: PublicClient;
  readonly asset: string;

  constructor(private readonly o: StablecoinIssuerOptions) {
    this.account = privateKeyToAccount(o.issuerKey);
    this.client = createPublicClient({ transport: http(o.rpcUrl, { timeout: 10_000, retryCount: 1 }) }) as PublicClient;
    this.asset = `${o.chain.network.chain}:${o.token.toLowerCase()}`;
  }

  get chainName(): string {
    return this.o.chain.network.chain;
  }

  get address(): Hex {
    return this.account.address;
  }

  get token(): Hex {
    return this.o.token;
  }

  /**
   * Signs a mint of `amount` units to `to` with the issuer's next nonce, and returns the operation that
   * records the nonce as used: the caller writes it in the batch that stores the signed bytes. Runs under
   * the issuer's nonce lock, so two mints never share a nonce, on any instance sharing the store.
   */
  async signMint(to: Hex, amount: bigint, persist: (mint: SignedMint, nonceOp: Op) => Promise<void>): Promise<SignedMint> {
    const key = `${this.chainName}/${this.address.toLowerCase()}`;
    return this.o.store.exclusive(`funding-issuer-nonce:${key}`, async () => {
      const stored = (await EVM_NONCES.in(this.o.store).get(key)) ?? 0;
      const nonce = Math.max(stored, await this.o.chain.pendingNonce(this.address));
      const data = encodeFunctionData({ abi: MINT_ABI, functionName: 'mint', args: [to, amount] });
      const t = await this.o.chain.template(this.address, { to: this.o.token, data, value: 0n }, nonce, MINT_FEE_CEILING);
      const raw = await this.account.signTransaction({
        type: 'eip1559', chainId: Number(this.o.chain.network.chainId), to: this.o.token, data, value: 0n,
        nonce: t.nonce, gas: t.gasLimit, maxFeePerGas: t.maxFeePerGas, maxPriorityFeePerGas: t.maxPriorityFeePerGas,
      });
      const mint: SignedMint = { raw_tx: raw, tx_hash: keccak256(raw), nonce };
      await persist(mint, EVM_NONCES.putOp(key, nonce + 1));
      return mint;
    });
  }

  broadcast(mint: { raw_tx: string; tx_hash: string }): Promise<void> {
    return this.o.chain.broadcast(mint.raw_tx as Hex, mint.tx_hash as Hex);
  }

  /** Where a mint is: not mined (or not deep enough), final at the chain's finality depth, or reverted. */
  async mintStatus(txHash: string): Promise<MintStatus> {
    const r = await this.o.chain.receipt(txHash as Hex);
    if (!r) return { state: 'pending' };
    const block_number = Number(r.blockNumber);
    if (r.status === 'reverted') return { state: 'reverted', block_number };
    const tip = await this.o.chain.tip();
    return tip - r.blockNumber + 1n >= BigInt(this.o.chain.network.finalityDepth) ? { state: 'final', block_number } : { state: 'pending' };
  }

  /** The chain's latest block number. */
  tip(): Promise<bigint> {
    return this.o.chain.tip();
  }

  /** Units of the stablecoin `address` holds at `block` (latest when absent). */
  balanceOf(address: string, block?: bigint): Promise<bigint> {
    return this.o.chain.tokenBalance(this.o.token, address as Hex, block ?? 'pending');
  }

  /**
   * The stablecoin's Transfer logs of a transaction, when it is final at the chain's finality depth and
   * succeeded; undefined while it is not (unknown, not deep enough, or reverted: `reverted` true).
   */
  async finalTransfers(txHash: string): Promise<{ logs: TransferLog[]; block_number: number } | { reverted: true } | undefined> {
    const r = await this.client.getTransactionReceipt({ hash: txHash as Hex }).catch((err: unknown) => {
      if ((err as Error).name === 'TransactionReceiptNotFoundError') return undefined;
      throw err;
    });
    if (!r) return undefined;
    if (r.status !== 'success') return { reverted: true };
    const tip = await this.o.chain.tip();
    if (tip - r.blockNumber + 1n < BigInt(this.o.chain.network.finalityDepth)) return undefined;
    const logs = parseEventLogs({ abi: erc20Abi, logs: r.logs, eventName: 'Transfer' })
      .filter((l) => l.address.toLowerCase() === this.o.token.toLowerCase())
      .map((l) => ({ from: l.args.from.toLowerCase(), to: l.args.to.toLowerCase(), value: l.args.value, token: l.address.toLowerCase(), block_number: Number(r.blockNumber) }));
    return { logs, block_number: Number(r.blockNumber) };
  }
}

/** Token units for `cents` of the stablecoin's currency. */
export function centsToUnits(cents: bigint): bigint {
  return cents * UNITS_PER_CENT;
}

/** Cents for `units` of stablecoin; undefined when `units` is not a whole number of cents. */
export function unitsToCents(units: bigint): bigint | undefined {
  return units % UNITS_PER_CENT === 0n ? units / UNITS_PER_CENT : undefined;
}
