// An account holder's wallets (docs/platform/account-holders.md "Wallets"): the member links a hosted
// vault the customer created for it through the vault API (a key exists only by the customer's signed
// request, docs/trust.md), the wallets of the chains it asks for are derived under it, and the holder's
// wallets are that vault's wallets. The platform API never creates a vault.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import type { IndexList } from '../store/pagination.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { CustomerLinks } from '../customers/customer-links.ts';
import type { VaultService } from '../vaults/vault-service.ts';
import type { VaultRecord, WalletRecord } from '../vaults/records.ts';
import { chainInfo } from '../vaults/wallet-address.ts';
import { VAULTS, WALLETS } from '../vaults/collections.ts';
import { SESSION_COLLECTIONS } from '../member-auth/member-session-records.ts';
import type { MemberSessionRecord } from '../member-auth/member-session-records.ts';
import type { AccountHolderRecord } from './account-holder-records.ts';
import { ACCOUNT_HOLDERS, ACCOUNT_HOLDER_VAULTS, VAULT_ACCOUNT_HOLDERS } from './collections.ts';

/** The holder's linked vault, the chains asked for and the wallet derived for each (account 0). Key: holder id. */
export interface HolderVaultRecord {
  v: 1;
  account_holder_id: string;
  tenant: string;
  workspace: string;
  org: string;
  vault_id: string;
  /** Chains in the order first asked for; a chain without a wallet is still to derive (the vault had no key yet). */
  chains: string[];
  wallets: { chain: string; wallet_id: string }[];
  linked_at: string;
  updated_at: string;
}

/** Which holder a vault serves: key vault id. One holder per vault, one vault per holder. */
export interface VaultHolderRecord { v: 1; account_holder_id: string }

export type ReadinessStatus = 'not_provisioned' | 'vault_creating' | 'wallets_pending' | 'ready' | 'vault_failed';

export interface Readiness {
  account_holder_id: string;
  status: ReadinessStatus;
  vault_id: string | null;
  wallets: { chain: string; wallet_id: string; address: string }[];
  missing: string[];
}

/** Holder statuses that may get wallets: not suspended (and a closed holder is nobody's, so never reached). */
const PROVISIONABLE: readonly AccountHolderRecord['status'][] = ['pending_verification', 'active'];

export interface HolderWalletsOptions {
  store: RecordRepository;
  /** The vault API's service; absent in a deployment without it: no vault can be linked. */
  vaults: VaultService | undefined;
  links: CustomerLinks;
  audit: AuditLog;
  clock: () => number;
}

const noVault = () => new CustodyError('not_found', 'no such vault');

export class HolderWallets {
  constructor(private readonly o: HolderWalletsOptions) {}

  async link(holder: AccountHolderRecord): Promise<HolderVaultRecord | undefined> {
    const l = await ACCOUNT_HOLDER_VAULTS.in(this.o.store).get(holder.id);
    return l && l.workspace === holder.workspace && l.tenant === holder.tenant ? l : undefined;
  }

  /**
   * POST /account-holders/self/wallet-provision: checks, in this order, the holder's status, the vault (the linked organization's, hosted, with end-user auth, for this member's subject,
   * not failed), the links (this vault is no other holder's; this holder has no other vault) and the
   * chains; then derives the missing wallets (idempotent per chain) and writes the link with its audit
   * entry in one batch. A vault still creating is linked with its chains to derive: call again once active.
   */
  async provision(scope: Scope & { environment: string }, actor: Actor, holder: AccountHolderRecord, session: MemberSessionRecord, vaultId: string, chains: string[]): Promise<Readiness> {
    const vaults = this.o.vaults;
    for (const c of chains) {
      const info = chainInfo(c);
      if (!info || info.environment !== scope.environment) throw new CustodyError('invalid_request', `chains: ${c} is not served in ${scope.environment}`);
    }
    if (new Set(chains).size !== chains.length) throw new CustodyError('invalid_request', 'chains: each chain once');
    return this.o.store.exclusive(`account-holder:${holder.id}`, () => this.o.store.exclusive(`account-holder-vault:${vaultId}`, async () => {
      // Read again under the holder's lock: a status change (PATCH) takes the same lock.
      const h = (await ACCOUNT_HOLDERS.in(this.o.store).get(holder.id)) ?? holder;
      if (!PROVISIONABLE.includes(h.status)) throw new CustodyError('account_holder_suspended', `the account holder is ${h.status}; wallets are provisioned for pending_verification and active holders`);
      const org = await this.o.links.orgOfWorkspace(scope);
      const vault = org === undefined || !vaults ? undefined : await VAULTS.in(vaults.store).get(vaultId);
      if (!vaults || !vault || vault.org !== org) throw noVault();
      if (vault.tier !== 'hosted') throw new CustodyError('holder_vault_not_hosted', `the vault is ${vault.tier}; an account holder's vault is hosted`);
      if (!vault.end_user_auth) throw new CustodyError('holder_vault_no_end_user_auth', 'the vault was created without end-user auth; create it after registering end-user auth');
      // The subject the vault's member proofs name: a BYO member's provider subject; a Hosted Auth
      // member's hosted subject id, which its passkey's member credential names (member-actions.md).
      const subject = await this.subjectOf(h, session);
      if (subject === undefined || vault.end_user_subject === null || vault.end_user_subject !== subject) {
        throw new CustodyError('holder_vault_subject_mismatch', 'the vault\'s end_user_subject is not this member\'s subject');
      }
      if (vault.state === 'failed') throw new CustodyError('holder_vault_failed', 'the vault\'s key generation failed; retry the vault first');
      const other = await VAULT_ACCOUNT_HOLDERS.in(this.o.store).get(vault.id);
      if (other && other.account_holder_id !== h.id) throw new CustodyError('holder_vault_taken', 'the vault is linked to another account holder');
      const before = await this.link(h);
      if (before && before.vault_id !== vault.id) throw new CustodyError('holder_vault_taken', `the account holder is linked to vault ${before.vault_id}; one vault per holder`);

      const wanted = [...(before?.chains ?? []), ...chains.filter((c) => !before?.chains.includes(c))];
      const wallets = [...(before?.wallets ?? [])];
      if (vault.public_key) {
        for (const c of wanted) {
          if (wallets.some((w) => w.chain === c)) continue;
          const { wallet } = await vaults.createWallet(vault.org, vault.id, c, 0, undefined);
          wallets.push({ chain: c, wallet_id: wallet.id });
        }
      }
      const now = new Date(this.o.clock()).toISOString();
      const after: HolderVaultRecord = {
        v: 1, account_holder_id: h.id, tenant: h.tenant, workspace: h.workspace, org: vault.org, vault_id: vault.id,
        chains: wanted, wallets, linked_at: before?.linked_at ?? now, updated_at: now,
      };
      if (!before || JSON.stringify(before.wallets) !== JSON.stringify(wallets) || before.chains.length !== wanted.length) {
        const ops: Op[] = [
          ACCOUNT_HOLDER_VAULTS.putOp(h.id, after),
          VAULT_ACCOUNT_HOLDERS.putOp(vault.id, { v: 1, account_holder_id: h.id }),
          this.o.audit.op(scope, actor, 'account_holder.wallet_provision', h.id, before && auditView(before), auditView(after)),
        ];
        await this.o.store.batch(ops);
      }
      return this.readinessOf(h, after, vault);
    }));
  }

  /** The member's subject as member proofs name it, when the session is the holder's member. */
  private async subjectOf(h: AccountHolderRecord, session: MemberSessionRecord): Promise<string | undefined> {
    if (h.member_kind === 'hosted') return session.member_id === h.member_id ? session.member_id : undefined;
    const binding = await SESSION_COLLECTIONS.bindings.in(this.o.store).get(session.binding);
    return binding && binding.member_id === h.member_id ? binding.subject : undefined;
  }

  /** GET /account-holders/self/wallet-readiness. */
  async readiness(holder: AccountHolderRecord): Promise<Readiness> {
    const l = await this.link(holder);
    const vault = l && this.o.vaults ? await VAULTS.in(this.o.vaults.store).get(l.vault_id) : undefined;
    return this.readinessOf(holder, l, vault);
  }

  private async readinessOf(holder: AccountHolderRecord, l: HolderVaultRecord | undefined, vault: VaultRecord | undefined): Promise<Readiness> {
    if (!l) return { account_holder_id: holder.id, status: 'not_provisioned', vault_id: null, wallets: [], missing: [] };
    const wallets: Readiness['wallets'] = [];
    for (const w of l.wallets) {
      const rec = this.o.vaults ? await WALLETS.in(this.o.vaults.store).get(w.wallet_id) : undefined;
      if (rec) wallets.push({ chain: w.chain, wallet_id: w.wallet_id, address: rec.address });
    }
    const missing = l.chains.filter((c) => !wallets.some((w) => w.chain === c));
    const status: ReadinessStatus = !vault || vault.state === 'failed' ? 'vault_failed'
      : !vault.public_key ? 'vault_creating'
        : missing.length ? 'wallets_pending' : 'ready';
    return { account_holder_id: holder.id, status, vault_id: l.vault_id, wallets, missing };
  }

  /**
   * The holder's wallets: its linked vault's, oldest first, as the vault's list walks them, under a list
   * name of its own so a cursor of another holder or of the vault API's list is refused. None when unlinked.
   */
  async walletList(scope: Scope, holder: AccountHolderRecord): Promise<IndexList<WalletRecord>> {
    const l = await this.link(holder);
    const org = l ? await this.o.links.orgOfWorkspace(scope) : undefined;
    const list = `account_holder_wallets/${holder.id}`;
    // A vault deleted after its key generation failed has no wallets: an empty list, not a 404.
    const vault = l && this.o.vaults ? await VAULTS.in(this.o.vaults.store).get(l.vault_id) : undefined;
    if (!l || !this.o.vaults || org !== l.org || !vault || vault.org !== org) return { list, scope: holder.workspace, filters: {}, collection: WALLETS.name, prefix: undefined, keep: () => false };
    const base = await this.o.vaults.walletList(org, l.vault_id, {});
    return { ...base, list, scope: holder.workspace };
  }
}

const auditView = ({ v: _v, tenant: _t, workspace: _w, ...rest }: HolderVaultRecord) => rest;
