// The coordinator's durable record of every vault's threshold key: who holds it, at which epoch, and
// where a reshare stands. It holds no secret: public key, chain code, committee and counters only.
//
// On disk each record is JSON under `key/<vault id>` (the prefix predates the vault vocabulary and is
// kept so existing data needs no migration). Version 2 records carry `vaultId` and the vault API's state
// names; version 1 records (`keyId`, `generating`, `needs_attention`) are read as version 2 and
// rewritten as version 2 at their next change.
import type { Level } from 'level';
import type { KeyPackage } from '../../core/session/key-package.ts';

/** The vault API's states (docs/vault-api.md): the coordinator uses the same names. */
export type VaultState = 'creating' | 'active' | 'resharing' | 'reshare_pending' | 'failed';

export interface CommitteeMember {
  nodeId: string;
  index: number;
}

export interface VaultRecord {
  v: 2;
  vaultId: string;
  owner: string;
  tier: string;
  threshold: number;
  committee: CommitteeMember[];
  epoch: number;
  /** Increments at each committed reshare; the vault API's rotation counter. */
  rotation: number;
  /** Compressed secp256k1 group key, hex; empty until generated. */
  publicKey: string;
  chainCode: string;
  state: VaultState;
  /** Public package of the current epoch: verification shares and group commitment (no secret). */
  pkg?: KeyPackage | undefined;
  /**
   * The new committee's signed receipts for the current epoch (reshare only; `signature` hex): what the
   * nodes commit on, sent again to a member that missed the commit.
   */
  receipts?: { party: number; signature: string }[] | undefined;
  /** Epoch that `otPairs` speak of. */
  otEpoch?: number | undefined;
  /**
   * Committee pairs ("i-j", i < j) whose ECDSA OT setup completed at `otEpoch` (ot-pairs.ts). Absent
   * with `otEpoch` set: a record from before per-pair setups, whose setup ran on the whole committee.
   */
  otPairs?: string[] | undefined;
  /** Why the vault failed or waits for a reshare, when it does. */
  problem?: string | undefined;
  /** A failed generation the nodes refused (final), as opposed to one that lacked a party (retried). */
  refused?: boolean | undefined;
  /**
   * Rebuilt from the nodes (vault-rebuild.ts): whether the committee holds an OT setup of this epoch is
   * not known. ECDSA signs as if it did, and a node's `no_ot_setup` runs a new one; pools wait for a setup
   * or a signing to show it.
   */
  otAssumed?: boolean | undefined;
  /** When the record was last rebuilt from the nodes' inventories. */
  rebuiltAtMs?: number | undefined;
  /** The shard the vault moved to: this coordinator refuses its sessions (vault_moved). */
  movedTo?: string | undefined;
  createdAtMs: number;
  updatedAtMs: number;
}

const V1_STATES: Readonly<Record<string, VaultState>> = {
  generating: 'creating', active: 'active', resharing: 'resharing', needs_attention: 'reshare_pending', failed: 'failed',
};

/** A stored record of either version as version 2. */
export function readVaultRecord(raw: string): VaultRecord {
  const r = JSON.parse(raw) as Record<string, unknown>;
  if (r.v === 2) return r as unknown as VaultRecord;
  if (r.v !== 1 || typeof r.keyId !== 'string' || typeof r.state !== 'string' || !Object.hasOwn(V1_STATES, r.state)) {
    throw new Error(`unreadable vault record (version ${String(r.v)})`);
  }
  const { keyId, ...rest } = r;
  return { ...(rest as Omit<VaultRecord, 'v' | 'vaultId' | 'state'>), v: 2, vaultId: keyId, state: V1_STATES[r.state]! };
}

export class VaultStore {
  constructor(private readonly db: Level<string, string>) {}

  async get(vaultId: string): Promise<VaultRecord | undefined> {
    const raw = await this.db.get(`key/${vaultId}`);
    return raw === undefined ? undefined : readVaultRecord(raw);
  }

  /** On disk (fsync) before this resolves: a committed epoch must not be forgotten after nodes dropped the old one. */
  async put(record: VaultRecord): Promise<void> {
    await this.db.put(`key/${record.vaultId}`, JSON.stringify(record), { sync: true });
  }

  /** Creates the record; false when the vault id is taken. */
  async create(record: VaultRecord): Promise<boolean> {
    if (await this.get(record.vaultId)) return false;
    await this.put(record);
    return true;
  }

  async *all(): AsyncGenerator<VaultRecord> {
    for await (const v of this.db.values({ gte: 'key/', lt: 'key/\xff' })) yield readVaultRecord(v);
  }
}
