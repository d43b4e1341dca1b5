// The vault API's records as stored (snake_case is the wire form; docs/vault-api.md).
import type { TierName } from '../../core/tiers.ts';
import type { VaultPolicyRecord } from '../../core/policy/policy-log.ts';
import type { VaultExportView } from '../../core/api-schemas/governance.ts';

export type Tier = TierName;
export type VaultState = 'creating' | 'active' | 'resharing' | 'reshare_pending' | 'frozen' | 'failed';

export interface OrgRecord {
  id: string;
  name: string;
  created_at: string;
}

export interface ApiKeyRecord {
  id: string;
  org: string;
  public_key: string;
  label: string | null;
  created_at: string;
  revoked: boolean;
  revoked_at?: string;
}

export interface VaultRecord {
  id: string;
  org: string;
  name: string | null;
  tier: Tier;
  state: VaultState;
  rotation: number;
  public_key: string | null;
  chain_code: string | null;
  policy: Record<string, unknown> | null;
  end_user_subject: string | null;
  /** Hosted vaults created while the organization had end-user auth registered need a token per transaction. */
  end_user_auth?: boolean;
  /** The state a frozen vault returns to when unfrozen. */
  frozen_from?: VaultState;
  /** The signed POST /vaults request (trust entry, hex) the nodes check at key generation. */
  creation_request?: string;
  /** Why the last reshare needs attention (reshare_pending), or why key generation failed (failed). */
  problem?: string | null;
  /** Self and customer_tee: the enrolled node seated (or to be seated) as the customer member. */
  customer_node_id?: string;
  /** The nodes holding the shares, once generated (docs/vault-api.md "Nodes"). */
  committee?: CommitteeMemberView[];
  /**
   * The coordinator shard that holds the vault's key record and runs its sessions, fixed at creation
   * (api/coordinator/coordinator-shards.ts); absent on records from before shards: the first shard.
   */
  coordinator_shard?: string;
  created_at: string;
  updated_at: string;
}

export interface CommitteeMemberView {
  node_id: string;
  kind: 'service' | 'self' | 'tee';
}

/** A customer node the organization enrolled (POST /v1/nodes); the id is the node id, unique across organizations. */
export interface NodeRecord {
  id: string;
  org: string;
  kind: 'self' | 'tee';
  signing_key: string;
  encryption_key: string;
  label: string | null;
  state: 'active' | 'revoked';
  /** tee: the PCRs its attestation showed at enrolment, index -> hex. */
  pcrs: Record<string, string> | null;
  created_at: string;
  revoked_at: string | null;
}

/** The organization's allowed enclave measurements (PUT /v1/tee/measurements). */
export interface TeeMeasurementsRecord {
  org: string;
  version: number;
  allowed: Record<string, string>[];
  updated_at: string;
}

export interface WalletRecord {
  id: string;
  org: string;
  vault_id: string;
  chain: string;
  address_type: 'evm' | 'p2wpkh' | 'p2tr';
  account_index: number;
  address: string;
  derivation_path: string;
  created_at: string;
  /** Absent on wallets stored before decommissioning existed: they read as active. */
  state?: WalletState;
  decommissioned_at?: string;
}

/** A decommissioned wallet sends nothing again; deriving it again returns it as it is (docs/platform/wallets.md). */
export type WalletState = 'active' | 'decommissioned';

export interface JobRecord {
  id: string;
  kind: 'create_key' | 'reshare';
  vault_id: string;
  /** Reshare: the tier the vault moves to (its own when absent). */
  target_tier?: Tier;
  /** Reshare: the customer's signed POST /v1/vaults/{id}/reshare as a trust entry, hex (nodes check it). */
  reshare_request?: string;
  /** Reshare to self or customer_tee: the enrolled node to seat. */
  customer_node_id?: string;
  attempts: number;
  next_at: number;
  last_error?: string;
}

export interface EventRecord {
  id: string;
  org: string;
  type: string;
  resource_type: string;
  resource_id: string;
  data: Record<string, unknown>;
  created_at: string;
}

/** A key export as stored (docs/export.md): its view, the organization, and the API key's signature over the request. */
export interface VaultExportRecord extends VaultExportView {
  org: string;
  signature: string;
}

/**
 * A vault's policy as the API reads its trust log (docs/policies.md): the versions the nodes accept, by
 * the same rules (core/policy/policy-log.ts), with the time the API saw each; and the head of the vault's
 * intent chain as the API extended it.
 */
export interface VaultPolicyState {
  org: string;
  vault_id: string;
  /** core/policy/policy-log.ts VaultPolicyRecord, as JSON. */
  record: VaultPolicyRecord;
  /** The last link the API accepted for the vault's chain, or null before the first. */
  head: { seq: number; hash: string; until: number; link: string } | null;
  updated_at: string;
}

/** One link of a vault's intent chain, with its intent: what the API relays to the nodes. */
export interface ChainLinkRecord {
  vault_id: string;
  seq: number;
  /** The signed link, hex. */
  link: string;
  /** Its intent's bytes, hex. */
  intent: string;
  hash: string;
  until: number;
  transaction_id: string;
  created_at: string;
}
