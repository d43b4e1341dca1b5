// Reconciliation of the platform ledger with the chain (docs/platform/funding.md "Reconciliation"): for
// each holder stablecoin account of a workspace, the ledger's balance against what the holder's wallets
// hold on chain (ERC-20 balanceOf, every wallet of the chain read at one block). A difference is
// reported, never corrected: the ledger is append-only, and a difference means money moved that the
// funding flows did not (a transfer to or from the wallet outside them) or a flow the ledger missed.
import type { PlatformLedger } from './platform-ledger.ts';

export interface ReconciliationLine {
  account_holder_id: string;
  asset: string;
  /** The wallet addresses read, lower case. */
  addresses: string[];
  block_number: string;
  ledger_balance: string;
  chain_balance: string;
  /** chain_balance - ledger_balance; "0" when they agree. */
  difference: string;
}

export interface ReconcileParameters {
  ledger: PlatformLedger;
  workspace: string;
  /** The holder's wallet addresses on the asset's chain. */
  addressesOf: (accountHolderId: string, asset: string) => Promise<string[]>;
  /** The chain's block to read at, per asset (one block for every holder of the asset). */
  blockOf: (asset: string) => Promise<bigint>;
  /** balanceOf(address) of the asset's token at `block`; undefined when the asset has no reader here. */
  balanceOf: (asset: string, address: string, block: bigint) => Promise<bigint>;
}

export interface ReconcileReturnType { lines: ReconciliationLine[]; differences: ReconciliationLine[] }

const ACCOUNT = /^holder\/(ah_[0-9a-f]{26})\/stablecoin\/(.+)$/;

export async function reconcileStablecoin(p: ReconcileParameters): Promise<ReconcileReturnType> {
  const lines: ReconciliationLine[] = [];
  const blocks = new Map<string, bigint>();
  for (const account of await p.ledger.accounts(p.workspace, 'holder/')) {
    const m = ACCOUNT.exec(account);
    if (!m) continue;
    const [, holder, asset] = m as unknown as [string, string, string];
    const block = blocks.get(asset) ?? (await p.blockOf(asset));
    blocks.set(asset, block);
    const addresses = (await p.addressesOf(holder, asset)).map((a) => a.toLowerCase());
    let chain = 0n;
    for (const a of addresses) chain += await p.balanceOf(asset, a, block);
    const ledger = await p.ledger.balance(account, asset);
    lines.push({ account_holder_id: holder, asset, addresses, block_number: block.toString(), ledger_balance: ledger.toString(), chain_balance: chain.toString(), difference: (chain - ledger).toString() });
  }
  return { lines, differences: lines.filter((l) => l.difference !== '0') };
}
