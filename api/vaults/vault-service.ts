// Organizations, API keys, vaults and wallets: the vault API's domain logic over the record store.
// Every state change and its outbox event go in one batch; key generation runs from a durable job.
import { randomBytes } from 'node:crypto';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import type { TryResult } from '../store/local-locks.ts';
import { isValidEd25519PublicKeyHex } from '../../common/ed25519.ts';
import { apiKeyId } from '../../core/trust/api-key-id.ts';
import { decodeTrustEntry, signBootstrap } from '../../core/trust/trust-entry.ts';
import type { RecordRepository, Op } from '../store/record-repository.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { ApiKeyRecord, EventRecord, JobRecord, OrgRecord, Tier, VaultRecord, WalletRecord } from './records.ts';
import { chainInfo, walletAddress } from './wallet-address.ts';
import { nodeIdFor } from '../../core/trust/node-id.ts';
import type { EndUserAuthConfig } from '../../core/auth/end-user-token.ts';
import type { TeeAttestationVerifier } from '../../tee/attestation/enrolment-verifier.ts';
import { NodeService } from './node-service.ts';
import { newId as timeOrderedId } from '../store/ids.ts';
import { COORDINATOR_SHARDS } from '../coordinator/coordinator-shards.ts';
import type { IndexList } from '../store/pagination.ts';
import { API_KEYS, END_USER_AUTH, JOBS, ORGS, OUTBOX, TRUST_LOG, VAULTS, WALLETS } from './collections.ts';

export const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

export interface Limits {
  apiKeysPerOrg: number;
  vaultsPerOrg: number;
}

export interface VaultServiceOptions {
  store: RecordRepository;
  limits: Limits;
  environment: 'sandbox' | 'production';
  now?: () => Date;
  /** Verifies tee enrolments' attestations (tee/attestation/enrolment-verifier.ts); none: tee enrolments are refused. */
  verifyTee?: TeeAttestationVerifier | undefined;
  /** The coordinator shard a new vault goes to (CoordinatorShards.placement); none: the record names no shard (the first). */
  placeVault?: ((vaultId: string) => string) | undefined;
}

const iso = (d: Date) => d.toISOString();

/**
 * The version of the wallets' index entries (walletIndex); raised when an entry is added, so records
 * written before it get it when the store opens (prepareIndexes). 1: `chain/` for the chain filter.
 */
export const WALLET_INDEX_VERSION = 1;

/**
 * A wallet's index entries: its vault's wallets oldest first, and by chain (both `<created_at>/<id>`, the
 * positions its list resumes from), and its derivation, which makes one chain, type and account one wallet.
 */
export function walletIndex(w: WalletRecord): string[] {
  return [
    `vault/${w.vault_id}/${w.created_at}/${w.id}`, `chain/${w.vault_id}/${w.chain}/${w.created_at}/${w.id}`,
    `derivation/${w.vault_id}/${w.chain}/${w.address_type}/${w.account_index}/${w.id}`,
  ];
}

/** GET /v1/vaults filters. */
export interface VaultFilters {
  state?: VaultRecord['state'] | undefined;
  tier?: Tier | undefined;
}

/** What a customer's signed vault or reshare request binds of the committee (docs/trust.md "Committees"). */
export interface CommitteeFields {
  /** The node ids the customer was shown (GET /v1/committees). */
  committee?: string[] | undefined;
  /** Self and customer_tee: the customer's own node, the only one seated as the customer member. */
  customer_node?: { node_id: string; signing_key: string; encryption_key: string } | undefined;
  /** A reshare: the vault's rotation the request was made at. */
  rotation?: number | undefined;
}

/** The nodes refuse these too; checked here so a bad request is refused at once and queues nothing. */
/** The queue kind of key generations and reshares (api/vaults/vault-jobs.ts). */
export const VAULT_KEY_JOB = 'vault_key';

/**
 * The queued job that runs a vault's key job record: one per record (its id the dedupe key), under the
 * vault's ordering key, so a reshare never overtakes the generation before it, on any instance; in its
 * organization's group, so the organization's limit of jobs at once holds (`orgJobGroup`).
 */
export function vaultKeyJob(job: Pick<JobRecord, 'id' | 'vault_id'>, org: string | undefined): Op {
  return { type: 'enqueue', kind: VAULT_KEY_JOB, key: job.vault_id, payload: { job_id: job.id }, opts: { dedupeKey: job.id, orderingKey: `vault:${job.vault_id}`, ...(org === undefined ? {} : { groupKey: orgJobGroup(org) }) } };
}

/**
 * The job group of an organization's key jobs and transaction signings: claims limit how many of them
 * run at once over every instance (API_JOBS_PER_ORGANIZATION), so one organization's burst never takes
 * every worker from the others.
 */
export function orgJobGroup(org: string): string {
  return `org:${org}`;
}

function checkCommitteeFields(tier: Tier, f: CommitteeFields): void {
  if (f.committee && new Set(f.committee).size !== f.committee.length) throw new CustodyError('invalid_request', 'committee lists a node twice');
  const n = f.customer_node;
  if (!n) return;
  if (tier === 'hosted') throw new CustodyError('invalid_request', 'customer_node applies to self and customer_tee vaults only');
  if (!isValidEd25519PublicKeyHex(n.signing_key)) throw new CustodyError('invalid_request', 'customer_node.signing_key is not a valid Ed25519 public key (off the curve, of small order, or not canonically encoded)');
  if (n.node_id !== nodeIdFor(hexToBytes(n.signing_key.toLowerCase()))) throw new CustodyError('invalid_request', 'customer_node.node_id is not the id derived from its signing_key');
  if (f.committee && !f.committee.includes(n.node_id)) throw new CustodyError('invalid_request', 'customer_node is not in the committee');
}

/** The index entries a record's put writes, for the del that removes them with it. */
const unindexed = (put: Op): string[] => (put.type === 'enqueue' ? [] : (put.index ?? []));

/** Refuses what is not an Ed25519 public key someone can sign under, before any quota is looked at. */
function checkApiPublicKey(publicKeyHex: string): void {
  if (!/^[0-9a-f]{64}$/i.test(publicKeyHex)) throw new CustodyError('invalid_request', 'public_key must be 32 bytes of hex');
  if (!isValidEd25519PublicKeyHex(publicKeyHex)) throw new CustodyError('invalid_request', 'public_key is not a valid Ed25519 public key (off the curve, of small order, or not canonically encoded)');
}

export class VaultService {
  private readonly now: () => Date;
  /**
   * One writer per organization: the trust log's appends, and every check a write depends on (quotas,
   * duplicates, the last active key) together with that write, so concurrent requests cannot all pass a
   * check only some of them fit under (docs/security.md, "Quotas under concurrency"). The store's lock,
   * so it holds on every instance. Not re-entrant.
   */
  private orgLock<T>(org: string, fn: () => Promise<T>): Promise<T> {
    return this.o.store.exclusive(`vault-org:${org}`, fn);
  }

  private wake: (() => void) | undefined;
  /** The organization's enrolled customer nodes (docs/vault-api.md "Nodes"). */
  readonly nodes: NodeService;

  constructor(private readonly o: VaultServiceOptions) {
    this.now = o.now ?? (() => new Date());
    this.nodes = new NodeService(this, { verifyTee: o.verifyTee, now: this.now });
  }

  /**
   * The enrolled node a self or customer_tee vault seats (none for hosted): the one the request pins
   * with the keys it names, else the earliest active one of the tier's kind. Refused when there is none.
   */
  private async customerNode(org: string, tier: Tier, f: CommitteeFields): Promise<string | undefined> {
    const n = await this.nodes.customerNodeFor(org, tier, f.customer_node?.node_id);
    const named = f.customer_node;
    if (n && named && (named.signing_key.toLowerCase() !== n.signing_key || named.encryption_key.toLowerCase() !== n.encryption_key)) {
      throw new CustodyError('invalid_request', `customer_node names other keys than node ${n.id} was enrolled with`);
    }
    return n?.id;
  }

  get store(): RecordRepository {
    return this.o.store;
  }

  /** The networks this service serves: sandbox (test networks) or production (mainnets). */
  get environment(): 'sandbox' | 'production' {
    return this.o.environment;
  }

  /** Called when a job is queued, so the worker does not wait for its next poll. */
  onJob(wake: () => void): void {
    this.wake = wake;
  }

  event(org: string, type: string, resourceType: string, resourceId: string, data: Record<string, unknown>): Op {
    const e: EventRecord = { id: timeOrderedId('evt'), org, type, resource_type: resourceType, resource_id: resourceId, data, created_at: iso(this.now()) };
    // Keyed by the event id, time-ordered (ids.ts): its order is creation order, within one millisecond
    // too and when the wall clock steps back. (The former key, `<ms>_<random id>`, put two events of one
    // millisecond in random order.) Rows under former keys start with digits, so sort and relay first.
    return OUTBOX.putOp(e.id, e);
  }

  // Organizations and keys (organizations are made by the operator command).
  /**
   * Creates an organization with its first API key. With the operator's secret key, the key is also
   * rooted for the signer nodes by a bootstrap entry, the first of the organization's trust log.
   */
  async createOrg(name: string, publicKeyHex: string, label = 'bootstrap', operatorSecretKey?: Uint8Array): Promise<{ org: OrgRecord; key: ApiKeyRecord }> {
    const { org, key, ops } = this.orgOps(name, publicKeyHex, label, operatorSecretKey ? { operatorSecretKey } : {});
    await this.o.store.batch(ops);
    return { org, key };
  }

  /**
   * The writes that make an organization with its first API key, for a caller that commits them with its
   * own (api/customers/create-customer.ts). The bootstrap is signed here with the operator's secret key,
   * or made elsewhere and handed over signed (`bootstrap`: the operator API, whose process never holds
   * that key); `orgId` then names the organization the bootstrap binds.
   */
  orgOps(name: string, publicKeyHex: string, label: string, root: { operatorSecretKey?: Uint8Array; bootstrap?: Uint8Array; orgId?: string }): { org: OrgRecord; key: ApiKeyRecord; ops: Op[] } {
    checkApiPublicKey(publicKeyHex);
    const org: OrgRecord = { id: root.orgId ?? newId('org'), name, created_at: iso(this.now()) };
    const key = this.keyRecord(org.id, publicKeyHex.toLowerCase(), label);
    const ops: Op[] = [ORGS.putOp(org.id, org), this.keyOp(key)];
    const entry = root.bootstrap ?? (root.operatorSecretKey ? signBootstrap(org.id, key.public_key, Math.floor(this.now().getTime() / 1000), root.operatorSecretKey) : undefined);
    if (entry) ops.push(this.trustOp(org.id, 0, entry));
    return { org, key, ops };
  }

  /** Organizations in id order, at most `limit`, after `after` (the operator's list). */
  async listOrgs(after: string | undefined, limit: number): Promise<OrgRecord[]> {
    const out: OrgRecord[] = [];
    for await (const { value } of ORGS.in(this.o.store).entries({ ...(after !== undefined ? { after } : {}), limit })) out.push(value);
    return out;
  }

  /**
   * Roots an organization made without the operator key (docs/trust.md "Roots"): its log gets, first,
   * an operator bootstrap of the organization's first API key, and keeps every later entry in order
   * after it, so the nodes can verify the whole log. False when the log already starts with one.
   */
  async repairBootstrap(org: string, operatorSecretKey: Uint8Array): Promise<boolean> {
    return this.orgLock(org, async () => {
      if (!(await ORGS.in(this.o.store).get(org))) throw new CustodyError('not_found', `no organization ${org}`);
      const log = await this.trustLog(org);
      if (log[0] && decodeTrustEntry(log[0]).kind === 'bootstrap') return false;
      const first = (await this.listKeys(org))[0];
      if (!first) throw new CustodyError('conflict', `organization ${org} has no API key to root`);
      const bootstrap = signBootstrap(org, first.public_key, Math.floor(this.now().getTime() / 1000), operatorSecretKey);
      await this.o.store.batch([bootstrap, ...log].map((entry, i) => this.trustOp(org, i, entry)));
      return true;
    });
  }

  private keyRecord(org: string, publicKey: string, label: string | null): ApiKeyRecord {
    // The id derives from the key, so the nodes name it the same without being told (docs/trust.md).
    return { id: apiKeyId(org, publicKey), org, public_key: publicKey, label, created_at: iso(this.now()), revoked: false };
  }

  // The organization's trust log (docs/trust.md): entries the nodes verify and apply, in order.
  private trustOp(org: string, seq: number, entry: Uint8Array): Op {
    return TRUST_LOG.putOp(`${org}/${String(seq).padStart(10, '0')}`, bytesToHex(entry));
  }

  async trustLog(org: string): Promise<Uint8Array[]> {
    const out: Uint8Array[] = [];
    for await (const hex of TRUST_LOG.in(this.o.store).range({ after: `${org}/`, lt: `${org}/\xff` })) out.push(hexToBytes(hex));
    return out;
  }

  /** Applies `ops` with `entry` appended to the organization's log, one writer per organization. */
  private appendTrust(org: string, entry: Uint8Array | undefined, ops: Op[]): Promise<void> {
    if (!entry) return this.o.store.batch(ops);
    return this.orgLock(org, () => this.appendTrustLocked(org, entry, ops));
  }

  /** Runs `f` as the organization's one writer (see orgLock). Not re-entrant. */
  withOrgLock<T>(org: string, f: () => Promise<T>): Promise<T> {
    return this.orgLock(org, f);
  }

  /** appendTrust for a caller that already holds the organization's lock (withOrgLock). */
  async appendTrustLocked(org: string, entry: Uint8Array | undefined, ops: Op[]): Promise<void> {
    if (!entry) return this.o.store.batch(ops);
    const seq = (await this.trustLog(org)).length;
    await this.o.store.batch([...ops, this.trustOp(org, seq, entry)]);
  }

  private keyOp(k: ApiKeyRecord): Op {
    return API_KEYS.putOp(k.id, k, { index: [`org/${k.org}/${k.created_at}/${k.id}`, `pub/${k.org}/${k.public_key}`] });
  }

  async activeKey(keyId: string): Promise<{ org: string; publicKey: Uint8Array } | undefined> {
    const k = await API_KEYS.in(this.o.store).get(keyId);
    if (!k || k.revoked) return undefined;
    return { org: k.org, publicKey: new Uint8Array(Buffer.from(k.public_key, 'hex')) };
  }

  /** `extra`: writes that go with the key (the operator API's audit entries). */
  async registerKey(org: string, publicKeyHex: string, label: string | null, entry?: Uint8Array, extra: (key: ApiKeyRecord) => Op[] = () => []): Promise<ApiKeyRecord> {
    checkApiPublicKey(publicKeyHex);
    const pub = publicKeyHex.toLowerCase();
    // The count and the insert under one lock: N concurrent registrations at a quota of Q make Q keys.
    return this.orgLock(org, async () => {
      const keys = await this.listKeys(org);
      if (keys.some((k) => k.public_key === pub)) throw new CustodyError('invalid_request', 'this public key is already registered');
      if (keys.filter((k) => !k.revoked).length >= this.o.limits.apiKeysPerOrg) throw new CustodyError('rate_limited', `API key quota reached (${this.o.limits.apiKeysPerOrg} active keys)`);
      const key = this.keyRecord(org, pub, label);
      await this.appendTrustLocked(org, entry, [this.keyOp(key), this.event(org, 'api_key.created', 'api_key', key.id, { id: key.id }), ...extra(key)]);
      return key;
    });
  }

  listKeys(org: string): Promise<ApiKeyRecord[]> {
    return API_KEYS.in(this.o.store).byIndex(`org/${org}/`);
  }

  async revokeKey(org: string, keyId: string, entry?: Uint8Array): Promise<ApiKeyRecord> {
    // Under the lock: two concurrent revocations of an organization's last two keys must not both pass.
    return this.orgLock(org, async () => {
      const k = await API_KEYS.in(this.o.store).get(keyId);
      if (!k || k.org !== org) throw new CustodyError('not_found', 'no such API key');
      if (k.revoked) throw new CustodyError('conflict', 'the key is already revoked');
      const active = (await this.listKeys(org)).filter((x) => !x.revoked);
      if (active.length === 1) throw new CustodyError('conflict', 'the last active key cannot be revoked; register another first');
      const revoked: ApiKeyRecord = { ...k, revoked: true, revoked_at: iso(this.now()) };
      await this.appendTrustLocked(org, entry, [this.keyOp(revoked), this.event(org, 'api_key.revoked', 'api_key', k.id, { id: k.id })]);
      return revoked;
    });
  }

  // Vaults.
  /** `creationRequest`: the signed POST /vaults as a trust entry, which the nodes check at key generation. */
  async createVault(org: string, input: { tier: Tier; name?: string | undefined; policy?: Record<string, unknown> | undefined; end_user_subject?: string | undefined } & CommitteeFields, creationRequest?: Uint8Array): Promise<VaultRecord> {
    if (input.tier !== 'hosted' && input.end_user_subject !== undefined) throw new CustodyError('invalid_request', 'end_user_subject applies to hosted vaults only');
    checkCommitteeFields(input.tier, input);
    const customerNodeId = await this.customerNode(org, input.tier, input);
    // The count and the insert under one lock: N concurrent creations at a quota of Q make Q vaults.
    const v = await this.orgLock(org, async () => {
      const existing = await VAULTS.in(this.o.store).byIndex(`org/${org}/`, this.o.limits.vaultsPerOrg + 1);
      if (existing.length >= this.o.limits.vaultsPerOrg) throw new CustodyError('rate_limited', `vault quota reached (${this.o.limits.vaultsPerOrg})`);
      const t = iso(this.now());
      const endUserAuth = input.tier === 'hosted' && (await this.endUserAuth(org)) !== undefined;
      const id = newId('vlt');
      // Placed once, here: the shard's coordinator keeps the vault's key record for good.
      const shard = this.o.placeVault?.(id);
      const v: VaultRecord = {
        id, org, name: input.name ?? null, tier: input.tier, state: 'creating', rotation: 0, public_key: null, chain_code: null,
        policy: input.policy ?? null, end_user_subject: input.end_user_subject ?? null, end_user_auth: endUserAuth, created_at: t, updated_at: t,
        ...(creationRequest ? { creation_request: bytesToHex(creationRequest) } : {}), ...(customerNodeId ? { customer_node_id: customerNodeId } : {}),
        ...(shard ? { coordinator_shard: shard } : {}),
      };
      const job: JobRecord = { id: newId('job'), kind: 'create_key', vault_id: v.id, attempts: 0, next_at: 0 };
      await this.o.store.batch([
        this.vaultOp(v), JOBS.putOp(job.id, job), vaultKeyJob(job, org), this.event(org, 'vault.created', 'vault', v.id, { vault_id: v.id, state: 'creating', tier: v.tier }),
        // The shards holding vaults, which the API checks its configuration against at start (CoordinatorShards.checkPlacements).
        ...(shard ? [COORDINATOR_SHARDS.putOp(shard, { name: shard })] : []),
      ]);
      return v;
    });
    this.wake?.();
    return v;
  }

  vaultOp(v: VaultRecord): Op {
    return VAULTS.putOp(v.id, v, { index: [`org/${v.org}/${v.created_at}/${v.id}`] });
  }

  /**
   * Brings the indexes the lists walk up to date for records written by an earlier version (the wallets'
   * chain entries); run once the store opens, before the API serves (api/app.ts).
   */
  async prepareIndexes(): Promise<void> {
    await WALLETS.in(this.o.store).reindex(WALLET_INDEX_VERSION, walletIndex);
  }

  /**
   * GET /v1/vaults: the organization's vaults oldest first (by created_at, then id). The filters are
   * checked on each vault of the organization's index: an organization has at most its vault quota of them.
   */
  vaultList(org: string, filters: VaultFilters): IndexList<VaultRecord> {
    return {
      list: 'vaults', scope: org, filters: { state: filters.state, tier: filters.tier }, collection: VAULTS.name, prefix: `org/${org}/`,
      keep: (v) => v.org === org && (filters.state === undefined || v.state === filters.state) && (filters.tier === undefined || v.tier === filters.tier),
    };
  }

  /**
   * GET /v1/vaults/{vaultId}/wallets: the vault's wallets oldest first, from the vault's index, or its
   * index by chain when filtered. 404 for a vault the organization does not have; each vault's list
   * is its own, so its cursors serve no other vault's.
   */
  async walletList(org: string, vaultId: string, filters: { chain?: string | undefined }): Promise<IndexList<WalletRecord>> {
    const v = await this.vault(org, vaultId);
    return {
      list: `vault_wallets/${v.id}`, scope: org, filters: { chain: filters.chain }, collection: WALLETS.name,
      prefix: filters.chain === undefined ? `vault/${v.id}/` : `chain/${v.id}/${filters.chain}/`,
      keep: (w) => w.org === org && w.vault_id === v.id && (filters.chain === undefined || w.chain === filters.chain),
    };
  }

  async vault(org: string, id: string): Promise<VaultRecord> {
    const v = await VAULTS.in(this.o.store).get(id);
    if (!v || v.org !== org) throw new CustodyError('not_found', 'no such vault');
    return v;
  }

  /**
   * Starts a reshare (new shares, same key), optionally moving the vault to `targetTier`. Allowed from
   * active, and from reshare_pending to finish a rotation that needs attention; 409 otherwise.
   */
  async reshare(org: string, vaultId: string, targetTier: Tier | undefined, committee: CommitteeFields = {}, reshareRequest?: Uint8Array): Promise<{ id: string; status: 'accepted' }> {
    // Under the organization's lock: of concurrent requests for one vault, one starts a reshare and the
    // others see it resharing.
    return this.orgLock(org, () => this.startReshare(org, vaultId, targetTier, committee, reshareRequest));
  }

  private async startReshare(org: string, vaultId: string, targetTier: Tier | undefined, committee: CommitteeFields, reshareRequest?: Uint8Array): Promise<{ id: string; status: 'accepted' }> {
    const v = await this.vault(org, vaultId);
    if (v.state !== 'active' && v.state !== 'reshare_pending') throw new CustodyError('conflict', `the vault is ${v.state}; a reshare needs it active`);
    // The nodes would refuse it anyway (a replay of an older request); say so before anything is queued.
    if (committee.rotation !== undefined && committee.rotation !== v.rotation) throw new CustodyError('conflict', `the request names rotation ${committee.rotation}; the vault is at rotation ${v.rotation}`);
    checkCommitteeFields(targetTier ?? v.tier, committee);
    const customerNodeId = await this.customerNode(org, targetTier ?? v.tier, committee);
    const job: JobRecord = {
      id: newId('rsh'), kind: 'reshare', vault_id: v.id, attempts: 0, next_at: 0, ...(targetTier ? { target_tier: targetTier } : {}),
      ...(customerNodeId ? { customer_node_id: customerNodeId } : {}),
      ...(reshareRequest ? { reshare_request: bytesToHex(reshareRequest) } : {}),
    };
    const next: VaultRecord = { ...v, state: 'resharing', updated_at: iso(this.now()) };
    await this.o.store.batch([
      this.vaultOp(next), JOBS.putOp(job.id, job), vaultKeyJob(job, org),
      this.event(org, 'vault.reshare.started', 'vault', v.id, { vault_id: v.id, state: 'resharing', rotation: v.rotation, tier: v.tier, target_tier: targetTier ?? v.tier }),
    ]);
    this.wake?.();
    return { id: job.id, status: 'accepted' };
  }

  /**
   * Runs `fn` as the one key job or deletion working on the vault now, on any instance; `{ ran: false }`
   * while another holds it. So a deletion never removes a vault under a running key generation, nor
   * does a generation start for a vault being deleted (a key would exist with no vault to spend from).
   */
  withVault<T>(vaultId: string, fn: () => Promise<T>): Promise<TryResult<T>> {
    return this.o.store.tryExclusive(`vault:${vaultId}`, fn);
  }

  /**
   * POST /v1/vaults/{id}/retry: a failed vault generates its key afresh (creating, a new job with a full
   * set of attempts, its original signed creation request). Idempotent: a vault already creating is
   * answered as it is and nothing more is queued. Any other state has or had a key: 409.
   */
  async retryVault(org: string, vaultId: string): Promise<VaultRecord> {
    const out = await this.orgLock(org, async () => {
      const v = await this.vault(org, vaultId);
      if (v.state === 'creating') return { vault: v, queued: false };
      if (v.state !== 'failed' || v.public_key) throw new CustodyError('conflict', `the vault is ${v.state}; only a failed vault can be retried`);
      const job: JobRecord = { id: newId('job'), kind: 'create_key', vault_id: v.id, attempts: 0, next_at: 0 };
      const next: VaultRecord = { ...v, state: 'creating', problem: null, updated_at: iso(this.now()) };
      await this.o.store.batch([
        this.vaultOp(next), JOBS.putOp(job.id, job), vaultKeyJob(job, org),
        this.event(org, 'vault.retried', 'vault', v.id, { vault_id: v.id, state: 'creating', previous_problem: v.problem ?? null }),
      ]);
      return { vault: next, queued: true };
    });
    if (out.queued) this.wake?.();
    return out.vault;
  }

  /**
   * DELETE /v1/vaults/{id}: only a vault that never got a key (failed, or creating between attempts);
   * a vault with a key is never deleted, nor one whose key generation is running now (409). Its queued
   * job goes with it; it has no wallets (they need the key), so no transactions either.
   */
  async deleteVault(org: string, vaultId: string): Promise<void> {
    await this.orgLock(org, async () => {
      await this.vault(org, vaultId);
      // Held before the read below, so what is read is what is deleted: no generation runs in between.
      const deleted = await this.withVault(vaultId, async () => {
        const v = await this.vault(org, vaultId);
        if (v.public_key || (v.state !== 'failed' && v.state !== 'creating')) throw new CustodyError('conflict', `the vault is ${v.state} and has a key; a vault with a key is never deleted`);
        const jobs: Op[] = [];
        for await (const j of JOBS.in(this.o.store).all()) if (j.vault_id === v.id) jobs.push(JOBS.delOp(j.id));
        await this.o.store.batch([
          VAULTS.delOp(v.id, unindexed(this.vaultOp(v))), ...jobs,
          this.event(org, 'vault.deleted', 'vault', v.id, { vault_id: v.id, state: v.state }),
        ]);
      });
      if (!deleted.ran) throw new CustodyError('conflict', 'the vault\'s key generation is running now; delete it once it has failed');
    });
  }

  /** Operator: a frozen vault signs nothing until unfrozen (docs/vault-api.md, vault states). */
  async freeze(vaultId: string, frozen: boolean, extra: (before: VaultRecord, after: VaultRecord) => Op[] = () => []): Promise<VaultRecord> {
    const v = await VAULTS.in(this.o.store).get(vaultId);
    if (!v) throw new CustodyError('not_found', 'no such vault');
    if (frozen && v.state === 'frozen') throw new CustodyError('conflict', 'the vault is already frozen');
    if (frozen && v.state !== 'active' && v.state !== 'reshare_pending') throw new CustodyError('conflict', `a ${v.state} vault cannot be frozen; wait until it settles`);
    if (!frozen && v.state !== 'frozen') throw new CustodyError('conflict', 'the vault is not frozen');
    const { frozen_from: from, ...rest } = v;
    const next: VaultRecord = frozen ? { ...v, state: 'frozen', frozen_from: v.state, updated_at: iso(this.now()) } : { ...rest, state: from ?? 'active', updated_at: iso(this.now()) };
    await this.o.store.batch([this.vaultOp(next), this.event(v.org, frozen ? 'vault.frozen' : 'vault.unfrozen', 'vault', v.id, { vault_id: v.id, state: next.state }), ...extra(v, next)]);
    return next;
  }

  // Hosted-tier end-user authentication (docs/end-user-auth.md).
  endUserAuth(org: string): Promise<EndUserAuthConfig | undefined> {
    return END_USER_AUTH.in(this.o.store).get(org);
  }

  async setEndUserAuth(org: string, config: EndUserAuthConfig, entry?: Uint8Array): Promise<void> {
    await this.appendTrust(org, entry, [
      END_USER_AUTH.putOp(org, config),
      this.event(org, 'end_user_auth.registered', 'organization', org, { audience: config.audience, keys: config.jwks.keys.length }),
    ]);
  }

  async createWallet(org: string, vaultId: string, chain: string, accountIndex: number, addressType: 'p2wpkh' | 'p2tr' | undefined): Promise<{ wallet: WalletRecord; created: boolean }> {
    const v = await this.vault(org, vaultId);
    const info = chainInfo(chain);
    if (!info || info.environment !== this.o.environment) throw new CustodyError('invalid_request', `chain ${chain} is not served in ${this.o.environment}`);
    if (info.family === 'evm' && addressType !== undefined) throw new CustodyError('invalid_request', 'address_type applies to Bitcoin chains only');
    if (!v.public_key || !v.chain_code) throw new CustodyError('invalid_request', `the vault key is not generated yet (the vault is ${v.state}); derive wallets once it is active`);
    const type = info.family === 'evm' ? 'evm' : (addressType ?? 'p2wpkh');
    const derivation = `derivation/${v.id}/${chain}/${type}/${accountIndex}/`;
    // One wallet per derivation, on every instance: concurrent requests for it get the same record.
    return this.o.store.exclusive(`wallet-${derivation}`, async () => {
      const existing = await WALLETS.in(this.o.store).byIndex(derivation);
      if (existing[0]) return { wallet: existing[0], created: false };
      const { address, path } = walletAddress(v.public_key!, v.chain_code!, info, type, accountIndex);
      const w: WalletRecord = {
        id: newId('wal'), org, vault_id: v.id, chain, address_type: type, account_index: accountIndex, address, derivation_path: 'm/' + path.join('/'), created_at: iso(this.now()),
      };
      await this.o.store.batch([
        WALLETS.putOp(w.id, w, { index: walletIndex(w) }),
        this.event(org, 'vault.wallet.created', 'wallet', w.id, { vault_id: v.id, wallet_id: w.id, chain, address: w.address }),
      ]);
      return { wallet: w, created: true };
    });
  }
}
