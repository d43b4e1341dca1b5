// What the node's session kinds share: the vault share store, the authorizers and registries, and the
// OT pair locks.
import type { BatchOp } from '../../storage/sealed-store.ts';
import type { VaultShareStore } from '../../storage/vault-shares.ts';
import type { SignAuthorizer, SignGrant } from '../authorization/sign-authorizer.ts';
import type { RosterRegistry } from '../authorization/roster-registry.ts';
import type { TrustRegistry } from '../authorization/trust-registry.ts';
import type { OtPairLocks } from '../ot-pair-locks.ts';
import type { Primitives } from '../../protocols/math/primitives.ts';
import type { ProtocolWorkers } from '../workers/protocol-workers.ts';
import type { PresignatureStore } from '../../storage/presignature-store.ts';
import type { FrostNonceStore } from '../../storage/frost-nonce-store.ts';
import type { ExportRecords } from '../../storage/export-records.ts';
import type { ExportGovernance } from '../authorization/export-governance.ts';

export interface NodeProtocolDeps {
  vault: VaultShareStore;
  authorizer: SignAuthorizer;
  trust: TrustRegistry;
  /** The newest operator-signed service-node roster this node accepted; without it no DKG or reshare is joined. */
  rosters?: RosterRegistry;
  /** Records durably what is signed for each intent and refuses a different signing of it (intent-ledger.ts). */
  ledger: { claim(grant: SignGrant, alsoWrite?: BatchOp[]): Promise<void> };
  /** Shared by every session of the node (one ECDSA run per OT pair at a time). */
  otLocks?: OtPairLocks;
  /** Hashing and PRG for the protocols' hot paths; node:crypto's (native-primitives.ts) unless given. */
  primitives?: Primitives;
  /** Worker threads for the long protocol steps (DKG, OT setup, ECDSA presigning); inline on the main thread without. */
  workers?: ProtocolWorkers;
  /** The node's ECDSA presignature pool (docs/protocols/pools.md); without it, presigning and pooled signing sessions are refused. */
  presignatures?: PresignatureStore;
  /** The node's precommitted FROST nonce pairs (docs/protocols/pools.md); without it, precommit and precommitted signing sessions are refused. */
  frostNonces?: FrostNonceStore;
  /** The node's identity key, which signs the commitments it precommits and its reshare receipts (node/runtime/identity.ts). */
  identity?: { sign(message: Uint8Array): Uint8Array };
  /** How long a share this node dealt away is kept sealed before it is erased (epoch.ts); 7 days unless given. */
  retiredShareRetentionMs?: number;
  /** The node's records of key exports (docs/export.md); without them export sessions are refused. */
  exportRecords?: ExportRecords;
  /** Export approvals and delay as this node sees them; no approvals and a 24-hour delay unless given. */
  exportGovernance?: ExportGovernance;
  /** The clock export delays are judged on (ms); Date.now unless given. */
  exportNow?: () => number;
}
