// Authorities (docs/platform/tokenization.md "Authorities"): the issuers behind a workspace's tokens. An
// authority proves control of an address by signing a one-use, expiring challenge bound to the authority,
// the address and the chain: EIP-191 personal_sign for an account without code, ERC-1271 isValidSignature
// for a contract account such as a Safe. Both are verified by viem's `verifyMessage` against the chain, which
// calls the contract for a contract account; nothing here verifies a signature by hand. A control Safe is a
// Safe owned only by the authority's proven addresses: deployed here through the chain layer, or an existing
// one registered after its owners and threshold are read from the chain.
import { randomBytes } from 'node:crypto';
import { getAddress, isAddress, type Address, type Hex } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { pageOf, type CursorCodec, type PageResult } from '../store/pagination.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import { bodyFingerprint } from '../idempotency.ts';
import { AUTHORITIES, PROOF_CHALLENGES, TOKENIZATION_KEYS } from './collections.ts';
import type { AuthorityRecord, ControlSafe, ProofChallengeRecord } from './records.ts';
import type { TokenChain } from './token-chain.ts';
import { SAFE_ABI } from './chain/safe-abi.ts';
import { ensureDeterministicDeployer } from './chain/deterministic-deployer.ts';
import { deploySafeInfrastructure, infrastructureAddresses } from './chain/safe-infrastructure.ts';
import { createSafe, predictSafeAddress, safeSaltNonce } from './chain/safe-proxy.ts';
import { ChainStepError } from './chain/chain-failure.ts';

export const AUTHORITY_ID = /^tka_[0-9a-f]{26}$/;
const CHALLENGE_ID = /^tkc_[0-9a-f]{26}$/;
const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);

export interface AuthorityServiceOptions {
  store: RecordRepository;
  audit: AuditLog;
  cursors: CursorCodec;
  /** The chain `name` with its deployer, if tokenization runs there. */
  chain: (name: string) => TokenChain | undefined;
  challengeTtlMs: number;
  clock: () => number;
}

export type AuthorityView = Omit<AuthorityRecord, 'v' | 'tenant' | 'workspace'>;

export function authorityView(r: AuthorityRecord): AuthorityView {
  const { v: _v, tenant: _t, workspace: _w, ...rest } = r;
  return rest;
}

export interface ControlSafeInput { chain: string; address?: string | undefined; owners?: string[] | undefined; threshold?: number | undefined }

export class AuthorityService {
  constructor(private readonly o: AuthorityServiceOptions) {}

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  private lock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    return this.o.store.exclusive(`tokenization:authority:${id}`, fn);
  }

  /** The chain, or 422 naming `field` when tokenization does not run on it. */
  chainOf(name: string, field = 'chain'): TokenChain {
    const c = this.o.chain(name);
    if (!c) throw invalid(field, `tokenization does not run on ${name} here (an EVM chain with a backend and the deployer configured)`);
    return c;
  }

  async create(scope: Scope, actor: Actor, input: { name: string }, key: string): Promise<AuthorityRecord> {
    const keyId = `${scope.workspace}\x00create_authority\x00${key}`;
    const prior = await TOKENIZATION_KEYS.in(this.o.store).get(keyId);
    if (prior) {
      if (prior.fingerprint !== bodyFingerprint(input)) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
      return this.get(scope, prior.id);
    }
    const now = this.iso();
    const r: AuthorityRecord = { v: 1, id: newId('tka', this.o.clock()), tenant: scope.tenant, workspace: scope.workspace, name: input.name, addresses: [], control_safes: [], created_at: now, updated_at: now };
    await this.o.store.batch([
      AUTHORITIES.putOp(r.id, r, { index: [`${scope.workspace}\x00${r.id}`] }),
      TOKENIZATION_KEYS.putOp(keyId, { v: 1, id: r.id, fingerprint: bodyFingerprint(input) }),
      this.o.audit.op(scope, actor, 'tokenization.authority.create', r.id, null, authorityView(r)),
    ]);
    return r;
  }

  async get(scope: Scope, id: string): Promise<AuthorityRecord> {
    const r = AUTHORITY_ID.test(id) ? await AUTHORITIES.in(this.o.store).get(id) : undefined;
    if (!r || r.workspace !== scope.workspace || r.tenant !== scope.tenant) throw new CustodyError('not_found', `no authority ${id}`);
    return r;
  }

  async list(scope: Scope, cursor: string | undefined, limit: number): Promise<PageResult<AuthorityView>> {
    const after = this.o.cursors.decode(cursor, 'token_authorities', scope.workspace, {});
    const rows = await AUTHORITIES.in(this.o.store).byIndexAfter(`${scope.workspace}\x00`, after, limit + 1);
    const page = pageOf(this.o.cursors, rows, limit, 'token_authorities', scope.workspace, {});
    return { ...page, data: page.data.map(authorityView) };
  }

  /** A one-use challenge for `address` on `chain`, expiring after the configured time. */
  async challenge(scope: Scope, id: string, input: { address: string; chain: string }): Promise<ProofChallengeRecord> {
    const a = await this.get(scope, id);
    if (!isAddress(input.address, { strict: false })) throw invalid('address', 'not an EVM address');
    const chain = this.chainOf(input.chain);
    const address = input.address.toLowerCase();
    const cid = newId('tkc', this.o.clock());
    const expires = this.iso(this.o.clock() + this.o.challengeTtlMs);
    const message = [
      'custody tokenization: proof of control',
      `authority: ${a.id}`,
      `address: ${getAddress(address)}`,
      `chain: ${chain.chain} (chain id ${chain.chainId})`,
      `challenge: ${cid}`,
      `nonce: ${randomBytes(16).toString('hex')}`,
      `expires: ${expires}`,
    ].join('\n');
    const c: ProofChallengeRecord = { v: 1, id: cid, authority_id: a.id, workspace: scope.workspace, address, chain: chain.chain, message, expires_at: expires, used_at: null };
    await PROOF_CHALLENGES.in(this.o.store).put(cid, c, [`authority/${a.id}/${cid}`]);
    return c;
  }

  /**
   * Verifies `signature` over the challenge's message for its address on its chain and records the address
   * as proven. The challenge is used by the proof that verifies; a wrong signature leaves it unused.
   */
  async prove(scope: Scope, actor: Actor, id: string, input: { challenge_id: string; signature: string }): Promise<AuthorityRecord> {
    const a0 = await this.get(scope, id);
    return this.lock(a0.id, async () => {
      const c = CHALLENGE_ID.test(input.challenge_id) ? await PROOF_CHALLENGES.in(this.o.store).get(input.challenge_id) : undefined;
      if (!c || c.authority_id !== a0.id || c.workspace !== scope.workspace) throw invalid('challenge_id', 'no such challenge of this authority');
      if (c.used_at) throw new CustodyError('challenge_used', `challenge ${c.id} was already used`);
      if (Date.parse(c.expires_at) <= this.o.clock()) throw new CustodyError('challenge_expired', `challenge ${c.id} expired at ${c.expires_at}`);
      if (!/^0x[0-9a-fA-F]+$/.test(input.signature)) throw invalid('signature', 'hex with 0x');
      const chain = this.chainOf(c.chain);
      const address = getAddress(c.address);
      let code: Hex | undefined;
      let valid: boolean;
      try {
        code = await chain.client.getCode({ address });
        // viem checks an ERC-1271 contract account through the chain (isValidSignature), an EOA by recovery.
        valid = await chain.client.verifyMessage({ address, message: c.message, signature: input.signature as Hex });
      } catch (err) {
        throw ChainStepError.from(err, `verifying the proof of ${address}`);
      }
      if (!valid) throw new CustodyError('address_proof_invalid', `the signature does not prove control of ${address} on ${c.chain} for challenge ${c.id}`);
      const a = await this.get(scope, id);
      const now = this.iso();
      const kind = code && code !== '0x' ? 'contract' as const : 'eoa' as const;
      const after: AuthorityRecord = {
        ...a,
        addresses: [...a.addresses.filter((p) => !(p.address === c.address && p.chain === c.chain)), { address: c.address, chain: c.chain, kind, proven_at: now }],
        updated_at: now,
      };
      await this.o.store.batch([
        PROOF_CHALLENGES.putOp(c.id, { ...c, used_at: now }, { index: [`authority/${a.id}/${c.id}`] }),
        AUTHORITIES.putOp(a.id, after, { index: [`${scope.workspace}\x00${a.id}`] }),
        this.o.audit.op(scope, actor, 'tokenization.authority.prove', a.id, { addresses: a.addresses }, { addresses: after.addresses }),
      ]);
      return after;
    });
  }

  /**
   * A control Safe for the authority: `address` registers an existing Safe after reading its owners and
   * threshold on chain; `owners` and `threshold` deploy a new one through the chain layer (the service
   * deployer pays). Either way every owner must be an address the authority proved on that chain.
   */
  async controlSafe(scope: Scope, actor: Actor, authorityId: string, input: ControlSafeInput, key: string): Promise<AuthorityRecord> {
    const a0 = await this.get(scope, authorityId);
    const keyId = `${scope.workspace}\x00control_safe\x00${key}`;
    return this.lock(a0.id, async () => {
      const body = { authority_id: authorityId, ...input };
      const prior = await TOKENIZATION_KEYS.in(this.o.store).get(keyId);
      if (prior) {
        if (prior.fingerprint !== bodyFingerprint(body)) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
        return this.get(scope, authorityId);
      }
      const chain = this.chainOf(input.chain);
      const proven = new Set(a0.addresses.filter((p) => p.chain === chain.chain).map((p) => p.address));
      const mustBeProven = (owners: string[], field: string) => {
        const stranger = owners.find((o) => !proven.has(o.toLowerCase()));
        if (stranger !== undefined) throw invalid(field, `${stranger} is not an address this authority proved on ${chain.chain}`);
      };
      let safe: ControlSafe;
      const now = this.iso();
      if (input.address !== undefined) {
        if (input.owners !== undefined || input.threshold !== undefined) throw invalid('address', 'give either an existing Safe\'s address or owners and threshold for a new one');
        if (!isAddress(input.address, { strict: false })) throw invalid('address', 'not an EVM address');
        const address = getAddress(input.address);
        let owners: readonly Address[];
        let threshold: bigint;
        try {
          const code = await chain.client.getCode({ address });
          if (!code || code === '0x') throw invalid('address', `no contract at ${address} on ${chain.chain}`);
          [owners, threshold] = await Promise.all([
            chain.client.readContract({ address, abi: SAFE_ABI, functionName: 'getOwners' }),
            chain.client.readContract({ address, abi: SAFE_ABI, functionName: 'getThreshold' }),
          ]);
        } catch (err) {
          if (err instanceof CustodyError && err.code === 'validation_failed') throw err;
          const f = ChainStepError.from(err, `reading the Safe ${address}`);
          if (f.failure.kind === 'reverted') throw invalid('address', `${address} is not a Safe (getOwners/getThreshold: ${f.failure.reason})`);
          throw f;
        }
        mustBeProven([...owners], 'address');
        safe = { address: address.toLowerCase(), chain: chain.chain, owners: owners.map((o) => o.toLowerCase()), threshold: Number(threshold), origin: 'registered', added_at: now };
      } else {
        const owners = input.owners ?? [];
        if (!owners.length) throw invalid('owners', 'give either an existing Safe\'s address or owners and threshold for a new one');
        if (owners.some((o) => !isAddress(o, { strict: false }))) throw invalid('owners', 'not EVM addresses');
        if (new Set(owners.map((o) => o.toLowerCase())).size !== owners.length) throw invalid('owners', 'an owner is listed twice');
        const threshold = input.threshold ?? 0;
        if (!Number.isInteger(threshold) || threshold < 1 || threshold > owners.length) throw invalid('threshold', `between 1 and the ${owners.length} owners`);
        mustBeProven(owners, 'owners');
        const params = { owners: owners.map((o) => getAddress(o)), threshold, saltNonce: safeSaltNonce(`${a0.id}:${a0.control_safes.length}`) };
        const infra = infrastructureAddresses();
        try {
          await ensureDeterministicDeployer(chain.client, chain.sender);
          await deploySafeInfrastructure(chain.client, chain.sender);
          await createSafe(chain.client, chain.sender, params, infra);
        } catch (err) {
          throw ChainStepError.from(err, 'deploying the control Safe');
        }
        safe = { address: predictSafeAddress(params, infra).toLowerCase(), chain: chain.chain, owners: owners.map((o) => o.toLowerCase()), threshold, origin: 'deployed', added_at: now };
      }
      const a = await this.get(scope, authorityId);
      if (a.control_safes.some((s) => s.address === safe.address && s.chain === safe.chain)) throw new CustodyError('conflict', `${safe.address} is already a control Safe of ${a.id}`);
      const after: AuthorityRecord = { ...a, control_safes: [...a.control_safes, safe], updated_at: now };
      await this.o.store.batch([
        AUTHORITIES.putOp(a.id, after, { index: [`${scope.workspace}\x00${a.id}`] }),
        TOKENIZATION_KEYS.putOp(keyId, { v: 1, id: a.id, fingerprint: bodyFingerprint(body) }),
        this.o.audit.op(scope, actor, 'tokenization.authority.control_safe', a.id, { control_safes: a.control_safes }, { control_safes: after.control_safes }),
      ]);
      return after;
    });
  }
}
