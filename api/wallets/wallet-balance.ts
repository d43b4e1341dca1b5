// A wallet's on-chain balance (GET /v1/wallets/{id}/balance, docs/platform/wallets.md), read through the
// chain clients the transaction worker uses, with the reads its funds check makes (EvmChain's
// nativeBalance and tokenBalance; a Bitcoin wallet's unspent outputs). EVM balances are read at one
// block, which the answer names with its time; Bitcoin's are the backend's unspent outputs at its tip.
import type { Hex } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { ChainError } from '../chains/chain-error.ts';
import type { Chains } from '../transactions/transaction-worker.ts';
import type { WalletRecord } from '../vaults/records.ts';

export interface AssetBalance {
  /** `<chain>:native` or `<chain>:<token contract>`. */
  asset: string;
  /** Base units, decimal; null for a token contract that does not answer balanceOf. */
  amount: string | null;
  /** Bitcoin: unspent outputs not yet in a block (not counted in `amount`). */
  unconfirmed_amount?: string;
}

export interface WalletBalance {
  wallet_id: string;
  chain: string;
  address: string;
  /** EVM: the block read at; Bitcoin: the backend's tip when read. */
  block_height: number;
  /** EVM: that block's time; Bitcoin: the time of the read. */
  as_of: string;
  balances: AssetBalance[];
}

/** A backend that failed or did not answer: 502 chain_unavailable, with its own first line when it is one of ours. */
function unavailable(chain: string, err: unknown): CustodyError {
  if (err instanceof CustodyError && err.kind !== 'transport') return err;
  // Only our own errors' text is repeated: a transport error's text may name the backend's URL.
  const detail = err instanceof CustodyError ? `: ${err.message.split('\n')[0]!.slice(0, 200)}` : '';
  return new ChainError('chain_unavailable', `the ${chain} backend did not answer${detail}`, false);
}

/**
 * Reads `wallet`'s balances: the native asset, and for EVM each of `tokens` (contract addresses). A
 * chain without a backend on this service is 409 conflict, as for a wallet's unspent outputs.
 */
export async function readWalletBalance(chains: Chains, wallet: WalletRecord, tokens: readonly Hex[], now: () => Date = () => new Date()): Promise<WalletBalance> {
  const noBackend = () => new CustodyError('conflict', `chain ${wallet.chain} has no backend configured on this service`);
  const head = { wallet_id: wallet.id, chain: wallet.chain, address: wallet.address };
  if (wallet.address_type === 'evm') {
    const chain = chains.evm(wallet.chain);
    if (!chain) throw noBackend();
    const address = wallet.address as Hex;
    try {
      const block = await chain.latestBlock();
      const native = await chain.nativeBalance(address, block.number);
      const held = await Promise.all(tokens.map((contract) => chain.tokenBalance(contract, address, block.number).catch((err: unknown) => {
        // Not a token this wallet can send (the funds check's would_revert): listed, without an amount.
        if (err instanceof ChainError && err.code === 'would_revert') return null;
        throw err;
      })));
      return {
        ...head, block_height: Number(block.number), as_of: new Date(Number(block.timestamp) * 1000).toISOString(),
        balances: [{ asset: `${wallet.chain}:native`, amount: native.toString() }, ...tokens.map((c, i) => ({ asset: `${wallet.chain}:${c.toLowerCase()}`, amount: held[i]?.toString() ?? null }))],
      };
    } catch (err) {
      throw unavailable(wallet.chain, err);
    }
  }
  const chain = chains.bitcoin(wallet.chain);
  if (!chain) throw noBackend();
  try {
    const height = await chain.tipHeight();
    const utxos = await chain.utxos(wallet.address);
    const sum = (confirmed: boolean) => utxos.filter((u) => u.status.confirmed === confirmed).reduce((a, u) => a + u.value, 0n);
    return { ...head, block_height: height, as_of: now().toISOString(), balances: [{ asset: `${wallet.chain}:native`, amount: sum(true).toString(), unconfirmed_amount: sum(false).toString() }] };
  } catch (err) {
    throw unavailable(wallet.chain, err);
  }
}
