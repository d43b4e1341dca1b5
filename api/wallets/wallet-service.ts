// The platform API's wallet operations (docs/platform/wallets.md) over the vault API's wallets: one
// resource, one id space (docs/customers.md "Wallets: one resource, one path"). A workspace bearer key
// reaches the wallets of the organization linked to its workspace; every other wallet is 404, the same
// answer as for one that does not exist.
import type { Hex } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { evmNetwork } from '../../core/chains/evm/evm-networks.ts';
import type { Policy } from '../../core/api-schemas/policy.ts';
import type { CustomerLinks } from '../customers/customer-links.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { IndexList } from '../store/pagination.ts';
import type { TransactionService } from '../transactions/transaction-service.ts';
import type { TransactionRecord, TransactionState } from '../transactions/records.ts';
import type { Chains } from '../transactions/transaction-worker.ts';
import type { WalletRecord } from '../vaults/records.ts';
import { walletIndex, type VaultService } from '../vaults/vault-service.ts';
import type { LedgerEntryRecord } from './wallet-ledger.ts';
import { readWalletBalance, type WalletBalance } from './wallet-balance.ts';
import { bip21Uri, evmPaymentUri, type EvmAsset } from './payment-uri.ts';
import { paymentQr, type PaymentQr } from './payment-qr.ts';
import { walletState, walletView } from './wallet-view.ts';
import { VAULTS, WALLETS } from '../vaults/collections.ts';
import { TRANSACTIONS } from '../transactions/collections.ts';

export interface WalletServiceOptions {
  vaults: VaultService;
  transactions: TransactionService;
  /** The chain backends; without them a balance is 409, as for a chain without a backend. */
  chains?: Chains | undefined;
  links: CustomerLinks;
  audit: AuditLog;
  now?: () => Date;
}

export interface PaymentRequestInput {
  amount?: string | undefined;
  asset?: string | undefined;
  label?: string | undefined;
  message?: string | undefined;
}

const TOKEN_ASSET = /^([a-z0-9-]+):(0x[0-9a-f]{40})$/;
const bad = (message: string) => new CustodyError('invalid_request', message);

export class WalletService {
  private readonly now: () => Date;

  constructor(private readonly o: WalletServiceOptions) {
    this.now = o.now ?? (() => new Date());
  }

  /** The wallet, when the workspace's linked organization holds it; 404 otherwise. Returns the organization too. */
  async wallet(scope: Scope, walletId: string): Promise<{ org: string; wallet: WalletRecord }> {
    const org = await this.o.links.orgOfWorkspace(scope);
    const wallet = org === undefined ? undefined : await WALLETS.in(this.o.vaults.store).get(walletId);
    if (org === undefined || !wallet || wallet.org !== org) throw new CustodyError('not_found', 'no such wallet');
    return { org, wallet };
  }

  /**
   * The native balance and, on EVM chains, the balances of the tokens the wallet has sent (its
   * transactions' assets) or its vault's policy names for its chain.
   */
  async balance(scope: Scope, walletId: string): Promise<WalletBalance> {
    const { wallet } = await this.wallet(scope, walletId);
    const tokens = wallet.address_type === 'evm' ? await this.tokensOf(wallet) : [];
    return readWalletBalance(this.o.chains ?? { evm: () => undefined, bitcoin: () => undefined }, wallet, tokens, this.now);
  }

  private async tokensOf(wallet: WalletRecord): Promise<Hex[]> {
    const assets = new Set<string>();
    for (const t of await TRANSACTIONS.in(this.o.vaults.store).byIndex(`wallet/${wallet.id}/`, 10_000)) for (const x of t.transfers) assets.add(x.asset);
    const policy = (await VAULTS.in(this.o.vaults.store).get(wallet.vault_id))?.policy as Policy | null | undefined;
    for (const a of [...(policy?.asset_allowlist ?? []), ...Object.keys(policy?.per_transaction_cap ?? {}), ...Object.keys(policy?.rolling_window?.caps ?? {})]) assets.add(a.toLowerCase());
    return [...assets].flatMap((a) => {
      const m = TOKEN_ASSET.exec(a);
      return m && m[1] === wallet.chain ? [m[2] as Hex] : [];
    }).sort();
  }

  /** GET /v1/wallets/{id}/history: the wallet's transactions newest first, from the index GET /v1/transactions walks. */
  async history(scope: Scope, walletId: string, state: TransactionState | undefined): Promise<IndexList<TransactionRecord>> {
    const { org, wallet } = await this.wallet(scope, walletId);
    const list = await this.o.transactions.transactionList(org, { wallet_id: wallet.id, state });
    // A list of its own: a cursor of GET /v1/transactions (oldest first) is refused here, and the reverse.
    return { ...list, list: `wallet_history/${wallet.id}`, newestFirst: true };
  }

  async ledger(scope: Scope, walletId: string): Promise<IndexList<LedgerEntryRecord>> {
    const { org, wallet } = await this.wallet(scope, walletId);
    return this.o.transactions.ledger.list(org, wallet.id);
  }

  /**
   * Decommissions the wallet: it takes no transaction afterwards. Idempotent (a decommissioned wallet is
   * answered as it is, and audited once); 409 transactions_in_flight while a transaction of the wallet
   * is not final, failed or rejected. Under the lock submissions take, so none slips in between the
   * check and the write.
   */
  async decommission(scope: Scope, actor: Actor, walletId: string): Promise<WalletRecord> {
    const { org } = await this.wallet(scope, walletId);
    return this.o.transactions.exclusive(org, async () => {
      const { wallet } = await this.wallet(scope, walletId);
      if (walletState(wallet) === 'decommissioned') return wallet;
      if (await this.o.transactions.inFlight(wallet.id)) {
        throw new CustodyError('transactions_in_flight', 'a transaction of this wallet is still in flight; decommission it once its transactions are final, failed or rejected');
      }
      const next: WalletRecord = { ...wallet, state: 'decommissioned', decommissioned_at: this.now().toISOString() };
      await this.o.vaults.store.batch([
        WALLETS.putOp(next.id, next, { index: walletIndex(next) }),
        this.o.audit.op(scope, actor, 'wallet.decommission', next.id, walletView(wallet), walletView(next)),
      ]);
      return next;
    });
  }

  /** POST /v1/wallets/{id}/qr: an EIP-681 or BIP-21 URI for a payment to the wallet, and its QR code. */
  async paymentRequest(scope: Scope, walletId: string, input: PaymentRequestInput): Promise<{ uri: string; asset: string; amount: string | null } & PaymentQr> {
    const { wallet } = await this.wallet(scope, walletId);
    if (walletState(wallet) === 'decommissioned') throw new CustodyError('wallet_decommissioned', `wallet ${wallet.id} is decommissioned; it takes no payment request`);
    const asset = (input.asset ?? `${wallet.chain}:native`).toLowerCase();
    const amount = input.amount === undefined ? undefined : BigInt(input.amount);
    let uri: string;
    if (wallet.address_type === 'evm') {
      if (input.label !== undefined || input.message !== undefined) throw bad('label and message are BIP-21 fields; EIP-681 has none');
      const net = evmNetwork(wallet.chain);
      if (!net) throw new CustodyError('bug', `wallet ${wallet.id} is on ${wallet.chain}, not a known EVM chain`);
      let kind: EvmAsset;
      if (asset === `${wallet.chain}:native`) kind = { kind: 'native' };
      else {
        const m = TOKEN_ASSET.exec(asset);
        if (!m || m[1] !== wallet.chain) throw bad(`asset must be ${wallet.chain}:native or ${wallet.chain}:<token contract>`);
        kind = { kind: 'erc20', contract: m[2]! };
      }
      uri = evmPaymentUri(net.chainId, wallet.address, kind, amount);
    } else {
      if (asset !== `${wallet.chain}:native`) throw bad(`a Bitcoin wallet takes ${wallet.chain}:native only`);
      uri = bip21Uri(wallet.address, { amountSats: amount, label: input.label, message: input.message });
    }
    return { uri, asset, amount: amount === undefined ? null : amount.toString(), ...(await paymentQr(uri)) };
  }
}
