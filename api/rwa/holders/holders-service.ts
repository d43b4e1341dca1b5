// Holders' eligibility and lockups (docs/platform/rwa.md "Holders, eligibility, lockups and the cap table").
// A holder reference is an account holder of the workspace (`ah_…`: its EVM wallets' addresses) or an EVM
// address. The API records the desired state and proposes, for each token concerned, one Safe operation of
// the token's admin Safe on the token's access registry (deployed first when absent); the owners sign and the
// service executes it like any other operation. What is read back compares the desired state with the
// registry's state on chain: `applied` when they agree, `pending` while they do not. Every change is appended
// to the token's log (kinds `eligibility`, `lockup`).
import { createHash } from 'node:crypto';
import { getAddress, isAddress, type Address, type PublicClient } from 'viem';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { collection } from '../../store/collection.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import type { Actor, AuditLog } from '../../tenancy/audit-log.ts';
import type { Scope } from '../../tenancy/scope.ts';
import type { Tokenization } from '../../tokenization/tokenization-setup.ts';
import type { TokenRecord } from '../../tokenization/records.ts';
import { TOKENS } from '../../tokenization/collections.ts';
import { tokenAbi } from '../../tokenization/token-calls.ts';
import { ACCOUNT_HOLDERS, ACCOUNT_HOLDER_VAULTS } from '../../account-holders/collections.ts';
import { HOLDER_ID } from '../../account-holders/account-holder-service.ts';
import { WALLETS } from '../../vaults/collections.ts';
import { ensureRegistry, registryAbi, registryAddress, registryDeployed } from './access-registry.ts';
import type { TokenLog } from '../seams.ts';

/** A holder's standing as the API takes and shows it. */
export interface EligibilityInput { verified: boolean; jurisdiction: number; category: number; expires_at: number | null }

/** The desired global eligibility of a holder reference in a workspace; key `<workspace> NUL <holder ref>`. */
export interface EligibilityRecord extends EligibilityInput {
  v: 1; tenant: string; workspace: string; holder_ref: string; addresses: string[]; revision: number;
  operations: { token_id: string; operation_id: string }[]; updated_at: string;
}
/** The desired lockup of a holder reference on a token; key `<token id> NUL <holder ref>`. */
export interface LockupRecord {
  v: 1; tenant: string; workspace: string; token_id: string; holder_ref: string; addresses: string[]; until: number; revision: number; operation_id: string; updated_at: string;
}

export const ELIGIBILITY = collection<EligibilityRecord>('rwa_holder_eligibility');
export const LOCKUPS = collection<LockupRecord>('rwa_holder_lockups');

const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);
const MAX_U16 = 65_535;
const MAX_U64 = 2 ** 53 - 1;

export interface HoldersServiceOptions {
  store: RecordRepository;
  audit: AuditLog;
  tokenization: Tokenization;
  /** Absent: changes answer 503 before anything is stored or proposed. */
  log: TokenLog | undefined;
  clock: () => number;
}

/** Checks an eligibility body's values (the route's schema checks their types). */
export function checkEligibility(e: EligibilityInput): EligibilityInput {
  if (!Number.isInteger(e.jurisdiction) || e.jurisdiction < 0 || e.jurisdiction > MAX_U16) throw invalid('jurisdiction', 'an ISO 3166-1 numeric code, 0 to 65535');
  if (!Number.isInteger(e.category) || e.category < 0 || e.category > 255) throw invalid('category', '0 to 255');
  if (e.expires_at !== null && (!Number.isInteger(e.expires_at) || e.expires_at < 1 || e.expires_at > MAX_U64)) throw invalid('expires_at', 'unix seconds above 0, or null for no expiry');
  return { verified: e.verified, jurisdiction: e.jurisdiction, category: e.category, expires_at: e.expires_at };
}

const keyOf = (...parts: string[]) => createHash('sha256').update(parts.join('\x00')).digest('hex').slice(0, 32);

export class HoldersService {
  constructor(private readonly o: HoldersServiceOptions) {}

  private tokenLog(): TokenLog {
    if (!this.o.log) throw new CustodyError('tokenization_unavailable', 'the tokens\' transparency log is not configured here: eligibility and lockups are changed only where every change is logged');
    return this.o.log;
  }

  private iso(): string {
    return new Date(this.o.clock()).toISOString();
  }

  /**
   * The addresses of a holder reference: an address itself, or an account holder's EVM wallets (on `chain`
   * when given). An account holder of another workspace is 404; one without an EVM wallet is 422.
   */
  async resolve(scope: Scope, ref: string, chain?: string): Promise<{ ref: string; addresses: Address[] }> {
    if (isAddress(ref, { strict: false })) {
      if (BigInt(ref) === 0n) throw invalid('holderRef', 'the zero address');
      return { ref: ref.toLowerCase(), addresses: [getAddress(ref)] };
    }
    const h = HOLDER_ID.test(ref) ? await ACCOUNT_HOLDERS.in(this.o.store).get(ref) : undefined;
    if (!HOLDER_ID.test(ref)) throw invalid('holderRef', 'an account holder id (ah_…) or an EVM address');
    if (!h || h.workspace !== scope.workspace || h.tenant !== scope.tenant) throw new CustodyError('not_found', `no account holder ${ref}`);
    const link = await ACCOUNT_HOLDER_VAULTS.in(this.o.store).get(ref);
    const addresses = new Set<string>();
    for (const w of link?.wallets ?? []) {
      const wallet = await WALLETS.in(this.o.store).get(w.wallet_id);
      if (wallet && wallet.address_type === 'evm' && (!chain || wallet.chain === chain)) addresses.add(getAddress(wallet.address));
    }
    if (!addresses.size) throw invalid('holderRef', `account holder ${ref} has no EVM wallet${chain ? ` on ${chain}` : ''}`);
    return { ref, addresses: [...addresses].sort() as Address[] };
  }

  private chainOf(token: TokenRecord) {
    const c = this.o.tokenization.chain(token.chain);
    if (!c) throw new CustodyError('tokenization_unavailable', `tokenization does not run on ${token.chain} here`);
    return c;
  }

  /** The token's registry, deployed when absent (the service deployer pays). */
  private async registryOf(token: TokenRecord): Promise<Address> {
    if (token.status !== 'deployed') throw new CustodyError('conflict', `token ${token.id} is ${token.status}; its registry needs it deployed`);
    const c = this.chainOf(token);
    try {
      return await ensureRegistry(c.client, c.sender, token.id, getAddress(token.safe));
    } catch (err) {
      throw new CustodyError('chain_backend_error', `deploying the token's access registry: ${(err as Error).message}`);
    }
  }

  /** The workspace's deployed tokens on chains this service runs. */
  private async workspaceTokens(scope: Scope): Promise<TokenRecord[]> {
    const all = await TOKENS.in(this.o.store).byIndex(`${scope.workspace}\x00all\x00`);
    return all.filter((t) => t.tenant === scope.tenant && t.status === 'deployed' && this.o.tokenization.chain(t.chain));
  }

  /**
   * PUT /rwa/holders/{holderRef}/eligibility: the holder's global eligibility, pushed to the registry of each
   * of the workspace's deployed tokens by one Safe operation each. The same state again changes nothing.
   */
  async setEligibility(scope: Scope, actor: Actor, holderRef: string, input: EligibilityInput): Promise<{ record: EligibilityRecord; changed: boolean }> {
    const log = this.tokenLog();
    const e = checkEligibility(input);
    const { ref, addresses } = await this.resolve(scope, holderRef);
    const id = `${scope.workspace}\x00${ref}`;
    return this.o.store.exclusive(`rwa:eligibility:${id}`, async () => {
      const prior = await ELIGIBILITY.in(this.o.store).get(id);
      const same = prior && prior.verified === e.verified && prior.jurisdiction === e.jurisdiction && prior.category === e.category && prior.expires_at === e.expires_at
        && prior.addresses.join() === addresses.map((a) => a.toLowerCase()).join();
      if (prior && same) return { record: prior, changed: false };
      const revision = (prior?.revision ?? 0) + 1;
      const tokens = await this.workspaceTokens(scope);
      // Every registry first, so a chain that fails leaves nothing proposed.
      const registries = new Map<string, Address>();
      for (const t of tokens) registries.set(t.id, await this.registryOf(t));
      const operations: EligibilityRecord['operations'] = [];
      for (const t of tokens) {
        const body = { registry: registries.get(t.id)!.toLowerCase(), holders: addresses.map((a) => a.toLowerCase()), verified: e.verified, jurisdiction: e.jurisdiction, category: e.category, expires_at: e.expires_at ?? 0 };
        const { op } = await this.o.tokenization.operations.propose(scope, actor, t.id, 'registry_set_eligibility', body, `rwa-eligibility-${keyOf(ref, String(revision))}`);
        operations.push({ token_id: t.id, operation_id: op.id });
      }
      const record: EligibilityRecord = { v: 1, tenant: scope.tenant, workspace: scope.workspace, holder_ref: ref, addresses: addresses.map((a) => a.toLowerCase()), ...e, revision, operations, updated_at: this.iso() };
      await this.o.store.batch([ELIGIBILITY.putOp(id, record), this.o.audit.op(scope, actor, 'rwa.holder.eligibility', ref, prior ? eligibilityOf(prior) : null, eligibilityOf(record))]);
      for (const { token_id, operation_id } of operations) {
        await log.append(scope, token_id, { kind: 'eligibility', body: { scope: 'global', holder_ref: ref, addresses: record.addresses, ...eligibilityOf(record), revision, operation_id } });
      }
      return { record, changed: true };
    });
  }

  /** PUT /rwa/tokens/{id}/lockups/{holderRef}: the holder's lockup on the token until `until` (unix seconds; 0 lifts it). */
  async setLockup(scope: Scope, actor: Actor, tokenId: string, holderRef: string, until: number): Promise<{ record: LockupRecord; changed: boolean }> {
    const log = this.tokenLog();
    if (!Number.isInteger(until) || until < 0 || until > MAX_U64) throw invalid('until', 'unix seconds, or 0 to lift the lockup');
    const token = await this.o.tokenization.tokens.get(scope, tokenId);
    const { ref, addresses } = await this.resolve(scope, holderRef, token.chain);
    const id = `${token.id}\x00${ref}`;
    return this.o.store.exclusive(`rwa:lockup:${id}`, async () => {
      const prior = await LOCKUPS.in(this.o.store).get(id);
      const lower = addresses.map((a) => a.toLowerCase());
      if (prior && prior.until === until && prior.addresses.join() === lower.join()) return { record: prior, changed: false };
      const revision = (prior?.revision ?? 0) + 1;
      const registry = await this.registryOf(token);
      const { op } = await this.o.tokenization.operations.propose(scope, actor, token.id, 'registry_set_lockup', { registry: registry.toLowerCase(), holders: lower, until }, `rwa-lockup-${keyOf(ref, String(revision))}`);
      const record: LockupRecord = { v: 1, tenant: scope.tenant, workspace: scope.workspace, token_id: token.id, holder_ref: ref, addresses: lower, until, revision, operation_id: op.id, updated_at: this.iso() };
      await this.o.store.batch([LOCKUPS.putOp(id, record), this.o.audit.op(scope, actor, 'rwa.holder.lockup', `${token.id}/${ref}`, prior ? { until: prior.until } : null, { until })]);
      await log.append(scope, token.id, { kind: 'lockup', body: { holder_ref: ref, addresses: lower, until, revision, operation_id: op.id } });
      return { record, changed: true };
    });
  }

  /** A token of the workspace (another workspace's is 404). */
  token(scope: Scope, tokenId: string): Promise<TokenRecord> {
    return this.o.tokenization.tokens.get(scope, tokenId);
  }

  /**
   * GET /rwa/tokens/{id}/eligibility/{holderRef}: per address, what applies on chain (the registry's effective
   * eligibility and lockup for this token) against the desired global eligibility and lockup.
   */
  async view(scope: Scope, tokenId: string, holderRef: string) {
    const token = await this.o.tokenization.tokens.get(scope, tokenId);
    const { ref, addresses } = await this.resolve(scope, holderRef, token.chain);
    const desired = await ELIGIBILITY.in(this.o.store).get(`${scope.workspace}\x00${ref}`);
    const lockup = await LOCKUPS.in(this.o.store).get(`${token.id}\x00${ref}`);
    const registry = registryAddress(token.id, getAddress(token.safe));
    const c = this.o.tokenization.chain(token.chain);
    let deployed = false;
    let attached = false;
    const onChain = new Map<string, { eligibility: EligibilityInput & { eligible_now: boolean }; locked_until: number }>();
    if (c && token.status === 'deployed') {
      try {
        deployed = await registryDeployed(c.client, token.id, getAddress(token.safe));
        attached = (await c.client.readContract({ address: getAddress(token.address), abi: tokenAbi(token.kind), functionName: 'accessRegistry' }) as string).toLowerCase() === registry.toLowerCase();
        if (deployed) for (const a of addresses) onChain.set(a.toLowerCase(), await readHolder(c.client, registry, getAddress(token.address), a));
      } catch (err) {
        throw new CustodyError('chain_backend_error', `reading the access registry: ${(err as Error).message}`);
      }
    }
    const wanted = desired ? eligibilityOf(desired) : null;
    const entries = addresses.map((a) => {
      const chain = onChain.get(a.toLowerCase()) ?? null;
      const eligibilityApplied = !wanted || (chain !== null && sameEligibility(chain.eligibility, wanted));
      const lockupApplied = !lockup || (chain !== null && chain.locked_until === lockup.until);
      return {
        address: a.toLowerCase(),
        on_chain: chain,
        eligibility_status: statusOf(wanted !== null, eligibilityApplied),
        lockup_status: statusOf(lockup !== undefined, lockupApplied),
      };
    });
    return {
      token_id: token.id, holder_ref: ref,
      registry: { address: registry.toLowerCase(), deployed, attached },
      desired: {
        eligibility: desired ? { ...wanted!, revision: desired.revision, operation_id: desired.operations.find((o) => o.token_id === token.id)?.operation_id ?? null, updated_at: desired.updated_at } : null,
        lockup: lockup ? { until: lockup.until, revision: lockup.revision, operation_id: lockup.operation_id, updated_at: lockup.updated_at } : null,
      },
      addresses: entries,
    };
  }
}

export type ApplyStatus = 'none' | 'pending' | 'applied';
const statusOf = (desired: boolean, applied: boolean): ApplyStatus => (!desired ? 'none' : applied ? 'applied' : 'pending');
export const eligibilityOf = (r: EligibilityInput): EligibilityInput => ({ verified: r.verified, jurisdiction: r.jurisdiction, category: r.category, expires_at: r.expires_at });
const sameEligibility = (a: EligibilityInput, b: EligibilityInput) => a.verified === b.verified && a.jurisdiction === b.jurisdiction && a.category === b.category && a.expires_at === b.expires_at;

async function readHolder(client: PublicClient, registry: Address, token: Address, holder: Address) {
  const abi = registryAbi();
  const e = await client.readContract({ address: registry, abi, functionName: 'effectiveEligibility', args: [token, holder] }) as { verified: boolean; jurisdiction: number; category: number; expiresAt: bigint };
  const ok = await client.readContract({ address: registry, abi, functionName: 'isEligible', args: [token, holder] }) as boolean;
  const until = await client.readContract({ address: registry, abi, functionName: 'lockedUntil', args: [token, holder] }) as bigint;
  return {
    eligibility: { verified: e.verified, jurisdiction: Number(e.jurisdiction), category: Number(e.category), expires_at: e.expiresAt === 0n ? null : Number(e.expiresAt), eligible_now: ok },
    locked_until: Number(until),
  };
}
