// The seams between the parts of the real-world-asset layer (docs/platform/rwa.md): each part is built on
// its own and meets the others only through these interfaces, wired in `api/rwa/rwa-setup.ts`.
//
// - Every change to a token's real-world state (a field, an attestation, a document, an eligibility or
//   lockup change, a corporate action, a distribution payout, an executed operation, a schema binding) is
//   appended to the token's transparency log (docs/platform/transparency-log.md) through `TokenLog`.
// - The holders of a token at a block come from the chain's Transfer history, indexed (`CapTableSource`).
import type { Hex } from 'viem';

/** What a tenant-scoped record is keyed by. */
export interface RwaScope {
  tenant: string;
  workspace: string;
}

/** The kinds of entry a token's log holds; each names the part that appends it. */
export const LOG_ENTRY_KINDS = [
  'schema_binding',
  'field',
  'attestation',
  'attester',
  'document',
  'document_entitlement',
  'eligibility',
  'lockup',
  'corporate_action',
  'distribution',
  'payout',
  'operation',
] as const;
export type LogEntryKind = (typeof LOG_ENTRY_KINDS)[number];

/** One entry as appended: its kind and a JSON body (strings, numbers, booleans, arrays, objects; no undefined). */
export interface LogEntryInput {
  kind: LogEntryKind;
  body: Record<string, unknown>;
}

/** Where an appended entry landed. */
export interface AppendedEntry {
  /** 0-based leaf index in the token's tree. */
  index: number;
  /** The RFC 6962 leaf hash, lower-case hex. */
  leaf_hash: string;
}

/** A token's append-only transparency log. `append` is durable when it resolves. */
export interface TokenLog {
  append(scope: RwaScope, tokenId: string, entry: LogEntryInput): Promise<AppendedEntry>;
}

/** The balances of a token's holders at a block, from the indexed Transfer history (zero balances left out). */
export interface CapTableSource {
  /**
   * The balance of every holder of the token at `block` (inclusive), keyed by lower-case address; for an
   * ERC-1155, of token id `id`. Throws if the chain has not reached `block`.
   */
  balancesAt(scope: RwaScope, tokenId: string, block: bigint, id?: bigint): Promise<Map<Hex, bigint>>;
}
