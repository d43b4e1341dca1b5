// The member's money in one view (GET /v1/account-holders/self/balance, docs/platform/account-holders.md
// "Balance"): each linked wallet's on-chain balances as the wallets area reads them
// (api/wallets/wallet-balance.ts: the native asset and the chain's configured stablecoin), the holder's
// fiat on the platform ledger (`holder/<id>/fiat/<currency>`, the account funding credits), and its
// sandbox bank accounts. A chain backend that does not answer leaves that wallet's amounts null, marked
// `unavailable`; the rest of the answer stands.
import type { Hex } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { Chains } from '../transactions/transaction-worker.ts';
import type { CustomerLinks } from '../customers/customer-links.ts';
import { WALLETS } from '../vaults/collections.ts';
import type { WalletRecord } from '../vaults/records.ts';
import { readWalletBalance, type AssetBalance } from '../wallets/wallet-balance.ts';
import type { PlatformLedger } from '../ledger/platform-ledger.ts';
import { ACCOUNT_HOLDER_VAULTS } from './collections.ts';
import type { AccountHolderRecord } from './account-holder-records.ts';
import type { BankAccount, BankBalance } from './holder-banking.ts';

export interface HolderWalletBalance {
  wallet_id: string;
  chain: string;
  address: string;
  /** `ok`, or `unavailable`: the chain was not read (amounts null). */
  status: 'ok' | 'unavailable';
  /** Why it is unavailable: `chain_unavailable` (the backend did not answer) or `no_backend` (none configured here). */
  reason: 'chain_unavailable' | 'no_backend' | null;
  block_height: number | null;
  as_of: string | null;
  balances: AssetBalance[];
}

export interface HolderBalance {
  account_holder_id: string;
  wallets: HolderWalletBalance[];
  /** One line per currency of the holder's fiat account on the platform ledger (cents). */
  fiat: { currency: string; amount: string }[];
  /** The sandbox bank's accounts; null in production, where the sandbox bank does not exist. */
  bank: Record<BankAccount, BankBalance> | null;
}

export interface HolderBalanceOptions {
  store: RecordRepository;
  ledger: PlatformLedger;
  links: CustomerLinks;
  chains: Chains | undefined;
  /** The configured stablecoin contract of a chain (API_FUNDING_STABLECOINS), if any. */
  stablecoin: (chain: string) => Hex | undefined;
  now?: () => Date;
}

const NO_CHAINS: Chains = { evm: () => undefined, bitcoin: () => undefined };

/** One wallet's balances, or its assets with null amounts when the chain cannot be read now. */
async function walletBalance(o: HolderBalanceOptions, wallet: WalletRecord): Promise<HolderWalletBalance> {
  const token = wallet.address_type === 'evm' ? o.stablecoin(wallet.chain) : undefined;
  const tokens = token ? [token] : [];
  const head = { wallet_id: wallet.id, chain: wallet.chain, address: wallet.address };
  try {
    const b = await readWalletBalance(o.chains ?? NO_CHAINS, wallet, tokens, o.now);
    return { ...head, status: 'ok', reason: null, block_height: b.block_height, as_of: b.as_of, balances: b.balances };
  } catch (err) {
    // readWalletBalance answers a backend that failed as chain_unavailable and a chain without one as conflict.
    if (!(err instanceof CustodyError) || (err.code !== 'chain_unavailable' && err.code !== 'conflict')) throw err;
    return {
      ...head, status: 'unavailable', reason: err.code === 'conflict' ? 'no_backend' : 'chain_unavailable', block_height: null, as_of: null,
      balances: [{ asset: `${wallet.chain}:native`, amount: null }, ...tokens.map((c) => ({ asset: `${wallet.chain}:${c.toLowerCase()}`, amount: null }))],
    };
  }
}

/** The holder's linked wallets (the ones its wallet provision derived), of the workspace's organization. */
async function linkedWallets(o: HolderBalanceOptions, scope: Scope, holder: AccountHolderRecord): Promise<WalletRecord[]> {
  const link = await ACCOUNT_HOLDER_VAULTS.in(o.store).get(holder.id);
  if (!link || link.workspace !== scope.workspace) return [];
  const org = await o.links.orgOfWorkspace(scope);
  if (org === undefined || org !== link.org) return [];
  const out: WalletRecord[] = [];
  for (const w of link.wallets) {
    const wallet = await WALLETS.in(o.store).get(w.wallet_id);
    if (wallet && wallet.org === org) out.push(wallet);
  }
  return out;
}

export async function readHolderBalance(o: HolderBalanceOptions, scope: Scope, holder: AccountHolderRecord, bank: HolderBalance['bank']): Promise<HolderBalance> {
  const wallets = await Promise.all((await linkedWallets(o, scope, holder)).map((w) => walletBalance(o, w)));
  const prefix = `holder/${holder.id}/fiat/`;
  const fiat: HolderBalance['fiat'] = [];
  for (const [account, assets] of await o.ledger.balancesUnder(prefix)) {
    const currency = account.slice(prefix.length);
    fiat.push({ currency, amount: (assets.get(`fiat:${currency}`) ?? 0n).toString() });
  }
  return { account_holder_id: holder.id, wallets, fiat: fiat.sort((a, b) => (a.currency < b.currency ? -1 : 1)), bank };
}
