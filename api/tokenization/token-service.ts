// Token deployments (docs/platform/tokenization.md "Deploying"): an ERC-20, ERC-721 or ERC-1155 whose admin is
// a Safe of m-of-n owners, the addresses of the customer's own vault wallets and optionally outside signers.
// Every address is computed before anything is sent (CREATE2, the chain layer's plan); the plan is recorded
// with the token, in state `deploying`, before the first step; each step is recorded `sent` before it is
// sent. A failed step leaves `failed_resumable` with the reason (a revert, decoded, or an engine error);
// `resume` runs the plan again, which reads the chain first and skips every step already there, so nothing
// is deployed twice. The service deployer account pays (api/tokenization/token-chain.ts). Runs of one token
// hold its lock, so a resume racing a run waits for it.
import { getAddress, isAddress } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { pageOf, type CursorCodec, type PageResult } from '../store/pagination.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { DeliveryEngine } from '../webhooks/delivery-engine.ts';
import type { CustomerLinks } from '../customers/customer-links.ts';
import { filteredWalk } from '../account-holders/filtered-walk.ts';
import { WALLETS } from '../vaults/collections.ts';
import { walletState } from '../wallets/wallet-view.ts';
import { bodyFingerprint } from '../idempotency.ts';
import { AUTHORITIES, TOKENIZATION_KEYS, TOKENS } from './collections.ts';
import type { DeployFailure, SafeOwner, TokenRecord } from './records.ts';
import { tokenMayBecome, type TokenStatus } from './token-states.ts';
import type { TokenChain } from './token-chain.ts';
import { AUTHORITY_ID } from './authority-service.ts';
import { planAddresses, planProgress, runDeployPlan, tokenDeployPlan } from './chain/deploy-plan.ts';
import { failureOf } from './chain/chain-failure.ts';
import type { TokenConstructor } from './chain/token-deployment.ts';
import type { TokenKind } from './chain/artifacts.ts';

export const TOKEN_ID = /^tok_[0-9a-f]{26}$/;
const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);
const MAX_OWNERS = 20;

export interface TokenServiceOptions {
  store: RecordRepository;
  audit: AuditLog;
  cursors: CursorCodec;
  deliveries: DeliveryEngine;
  links: CustomerLinks;
  chain: (name: string) => TokenChain | undefined;
  clock: () => number;
  log?: { warn(obj: object, msg: string): void } | undefined;
}

export type OwnerInput = { wallet_id: string } | { address: string };

export interface DeployTokenInput {
  chain: string;
  name?: string | undefined;
  symbol?: string | undefined;
  decimals?: number | undefined;
  base_uri?: string | undefined;
  uri?: string | undefined;
  authority_id?: string | undefined;
  admin: { owners: OwnerInput[]; threshold: number };
}

export interface TokenFilters { status?: TokenStatus | undefined; kind?: TokenKind | undefined; chain?: string | undefined; authority_id?: string | undefined }

export function tokenView(r: TokenRecord) {
  return {
    id: r.id, kind: r.kind, chain: r.chain, chain_id: r.chain_id, name: r.name, symbol: r.symbol, decimals: r.decimals, base_uri: r.base_uri, uri: r.uri,
    authority_id: r.authority_id, admin: { owners: r.owners, threshold: r.threshold }, address: r.address, safe: r.safe, forwarder: r.forwarder,
    status: r.status, steps: r.steps, failure: r.failure, deploy_attempts: r.deploy_attempts, created_at: r.created_at, updated_at: r.updated_at, deployed_at: r.deployed_at,
  };
}
export type TokenView = ReturnType<typeof tokenView>;

const indexOf = (r: TokenRecord): string[] => [`${r.workspace}\x00all\x00${r.id}`];

export class TokenService {
  /** Deploy runs started by this process, so a caller (and a test) can wait for them. */
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly o: TokenServiceOptions) {}

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  private lock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    return this.o.store.exclusive(`tokenization:token:${id}`, fn);
  }

  /** Resolves once every deploy run this process started has ended. */
  async settled(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running]);
  }

  async get(scope: Scope, id: string): Promise<TokenRecord> {
    const r = TOKEN_ID.test(id) ? await TOKENS.in(this.o.store).get(id) : undefined;
    if (!r || r.workspace !== scope.workspace || r.tenant !== scope.tenant) throw new CustodyError('not_found', `no token ${id}`);
    return r;
  }

  async list(scope: Scope, f: TokenFilters, cursor: string | undefined, limit: number): Promise<PageResult<TokenView>> {
    const filters = { ...f };
    const after = this.o.cursors.decode(cursor, 'tokens', scope.workspace, filters);
    const keep = (r: TokenRecord) => r.workspace === scope.workspace && (!f.status || r.status === f.status) && (!f.kind || r.kind === f.kind)
      && (!f.chain || r.chain === f.chain) && (!f.authority_id || r.authority_id === f.authority_id);
    const rows = await filteredWalk(this.o.store, TOKENS, `${scope.workspace}\x00all\x00`, after, limit, keep);
    const page = pageOf(this.o.cursors, rows, limit, 'tokens', scope.workspace, filters);
    return { ...page, data: page.data.map(tokenView) };
  }

  /** The Safe's owners: each vault wallet the customer's own EVM wallet on the chain, each outside signer an address. */
  private async owners(scope: Scope, chain: string, input: OwnerInput[]): Promise<SafeOwner[]> {
    if (input.length < 1 || input.length > MAX_OWNERS) throw invalid('admin.owners', `1 to ${MAX_OWNERS} owners`);
    const org = await this.o.links.orgOfWorkspace(scope);
    const out: SafeOwner[] = [];
    for (const [i, o] of input.entries()) {
      const field = `admin.owners[${i}]`;
      if ('wallet_id' in o) {
        const w = org !== undefined ? await WALLETS.in(this.o.store).get(o.wallet_id) : undefined;
        if (!w || w.org !== org) throw invalid(field, `no wallet ${o.wallet_id} of this workspace's organization`);
        if (w.address_type !== 'evm' || w.chain !== chain) throw invalid(field, `wallet ${w.id} is not an EVM wallet on ${chain}`);
        if (walletState(w) === 'decommissioned') throw new CustodyError('wallet_decommissioned', `wallet ${w.id} is decommissioned`);
        out.push({ address: w.address.toLowerCase(), kind: 'vault', wallet_id: w.id });
      } else {
        if (!isAddress(o.address, { strict: false }) || BigInt(o.address) === 0n) throw invalid(field, 'not a non-zero EVM address');
        out.push({ address: o.address.toLowerCase(), kind: 'outside', wallet_id: null });
      }
    }
    if (new Set(out.map((o) => o.address)).size !== out.length) throw invalid('admin.owners', 'an address is listed twice');
    if (!out.some((o) => o.kind === 'vault')) throw invalid('admin.owners', 'at least one owner is a vault wallet of the customer');
    return out;
  }

  private constructorOf(kind: TokenKind, input: DeployTokenInput): TokenConstructor {
    const need = (field: 'name' | 'symbol' | 'base_uri' | 'uri') => {
      const v = input[field];
      if (v === undefined) throw invalid(field, `required for ${kind}`);
      return v;
    };
    const refuse = (fields: (keyof DeployTokenInput)[]) => {
      for (const f of fields) if (input[f] !== undefined) throw invalid(f, `not a field of ${kind}`);
    };
    if (kind === 'erc20') {
      refuse(['base_uri', 'uri']);
      return { kind, name: need('name'), symbol: need('symbol'), decimals: input.decimals ?? 18 };
    }
    if (kind === 'erc721') {
      refuse(['decimals', 'uri']);
      return { kind, name: need('name'), symbol: need('symbol'), baseURI: input.base_uri ?? '' };
    }
    refuse(['decimals', 'base_uri', 'name', 'symbol']);
    return { kind, uri: need('uri') };
  }

  /** Records the token with its plan, then starts its deployment; answers the record in `deploying`. */
  async deploy(scope: Scope, actor: Actor, kind: TokenKind, input: DeployTokenInput, key: string): Promise<TokenRecord> {
    const keyId = `${scope.workspace}\x00deploy_${kind}\x00${key}`;
    const prior = await TOKENIZATION_KEYS.in(this.o.store).get(keyId);
    if (prior) {
      if (prior.fingerprint !== bodyFingerprint(input)) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
      return this.get(scope, prior.id);
    }
    const ctor = this.constructorOf(kind, input);
    const chain = this.o.chain(input.chain);
    if (!chain) throw invalid('chain', `tokenization does not run on ${input.chain} here (an EVM chain with a backend and the deployer configured)`);
    if (input.authority_id !== undefined) {
      const a = AUTHORITY_ID.test(input.authority_id) ? await AUTHORITIES.in(this.o.store).get(input.authority_id) : undefined;
      if (!a || a.workspace !== scope.workspace || a.tenant !== scope.tenant) throw invalid('authority_id', 'no such authority in this workspace');
    }
    const owners = await this.owners(scope, chain.chain, input.admin.owners);
    const threshold = input.admin.threshold;
    if (!Number.isInteger(threshold) || threshold < 1 || threshold > owners.length) throw invalid('admin.threshold', `between 1 and the ${owners.length} owners`);
    const org = (await this.o.links.orgOfWorkspace(scope))!;
    const id = newId('tok', this.o.clock());
    const plan = tokenDeployPlan({ tokenId: id, token: ctor, owners: owners.map((o) => getAddress(o.address)), threshold });
    const addr = planAddresses(plan);
    const now = this.iso();
    const r: TokenRecord = {
      v: 1, id, tenant: scope.tenant, workspace: scope.workspace, org, kind, chain: chain.chain, chain_id: chain.chainId,
      name: ctor.kind === 'erc1155' ? null : ctor.name, symbol: ctor.kind === 'erc1155' ? null : ctor.symbol, decimals: ctor.kind === 'erc20' ? ctor.decimals : null,
      base_uri: ctor.kind === 'erc721' ? ctor.baseURI : null, uri: ctor.kind === 'erc1155' ? ctor.uri : null, authority_id: input.authority_id ?? null, owners, threshold,
      address: addr.token.toLowerCase(), safe: addr.safe.toLowerCase(), forwarder: addr.forwarder.toLowerCase(), status: 'deploying', plan,
      steps: plan.steps.map((s) => ({ name: s.name, address: s.address.toLowerCase(), status: 'pending' })), failure: null, deploy_attempts: 1,
      created_at: now, updated_at: now, deployed_at: null,
    };
    await this.o.store.batch([
      TOKENS.putOp(id, r, { index: indexOf(r) }),
      TOKENIZATION_KEYS.putOp(keyId, { v: 1, id, fingerprint: bodyFingerprint(input) }),
      this.o.audit.op(scope, actor, `tokenization.token.deploy`, id, null, tokenView(r)),
    ]);
    this.start(id);
    return r;
  }

  /** POST /tokenization/tokens/{id}/deploy/resume: a `failed_resumable` (or interrupted `deploying`) deploy continues. */
  async resume(scope: Scope, actor: Actor, id: string): Promise<TokenRecord> {
    const r0 = await this.get(scope, id);
    if (r0.status === 'deployed') throw new CustodyError('conflict', `token ${id} is deployed; there is nothing to resume`);
    const r = await this.lock(id, async () => {
      const r1 = await this.get(scope, id);
      if (r1.status === 'deployed') throw new CustodyError('conflict', `token ${id} is deployed; there is nothing to resume`);
      if (r1.status === 'deploying') return r1;
      if (!tokenMayBecome(r1.status, 'deploying')) throw new CustodyError('conflict', `token ${id} is ${r1.status}`);
      const next: TokenRecord = { ...r1, status: 'deploying', failure: null, deploy_attempts: r1.deploy_attempts + 1, updated_at: this.iso() };
      await this.o.store.batch([TOKENS.putOp(id, next, { index: indexOf(next) }), this.o.audit.op(scope, actor, 'tokenization.token.resume', id, { status: r1.status }, { status: 'deploying' })]);
      return next;
    });
    this.start(id);
    return r;
  }

  private start(id: string): void {
    const p = this.run(id).catch((err: unknown) => this.o.log?.warn({ category: (err as { code?: string }).code ?? 'error', token: id }, 'token deploy run failed'));
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
  }

  /** Runs the token's plan under its lock: steps already on chain are skipped, each other step recorded before it is sent. */
  private async run(id: string): Promise<void> {
    await this.lock(id, async () => {
      let r = (await TOKENS.in(this.o.store).get(id))!;
      if (r.status !== 'deploying') return;
      const chain = this.o.chain(r.chain);
      const save = async (next: TokenRecord, extra: Parameters<RecordRepository['batch']>[0] = []) => {
        await this.o.store.batch([TOKENS.putOp(id, next, { index: indexOf(next) }), ...extra]);
        r = next;
      };
      let current = '';
      try {
        if (!chain) throw new CustodyError('tokenization_unavailable', `tokenization does not run on ${r.chain} here`);
        await runDeployPlan(chain.client, chain.sender, r.plan, {
          onStep: async (step) => {
            current = step.name;
            // By address: two steps share the name `Safe` (the singleton and the token's Safe).
            await save({ ...r, steps: r.steps.map((s) => (s.address === step.address.toLowerCase() ? { ...s, status: 'sent' } : s)), updated_at: this.iso() });
          },
        });
        current = '';
        const now = this.iso();
        const done: TokenRecord = { ...r, status: 'deployed', steps: r.steps.map((s) => ({ ...s, status: 'done' })), failure: null, deployed_at: now, updated_at: now };
        const scope = { tenant: r.tenant, workspace: r.workspace };
        await this.o.deliveries.emitAll(scope, [{ type: 'token.deployed', resource: { type: 'token', id }, actor: { type: 'system', id: 'tokenization' }, data: { token_id: id, standard: r.kind, chain: r.chain, address: r.address } }],
          [TOKENS.putOp(id, done, { index: indexOf(done) })]);
        r = done;
      } catch (err) {
        const f = failureOf(err);
        const now = this.iso();
        const failure: DeployFailure = f.kind === 'reverted'
          ? { reason: 'revert', step: current, message: f.reason, error_name: f.errorName, at: now }
          : { reason: 'engine', step: current, message: err instanceof CustodyError ? err.message : f.message, error_name: null, at: now };
        // What the chain shows now, where it still answers; else the steps as recorded.
        const progress = chain ? await planProgress(chain.client, r.plan).catch(() => undefined) : undefined;
        const steps = progress ? r.steps.map((s, i) => ({ ...s, status: progress[i]!.done ? 'done' as const : s.status })) : r.steps;
        await save({ ...r, status: 'failed_resumable', steps, failure, updated_at: now });
      }
    });
  }

}
