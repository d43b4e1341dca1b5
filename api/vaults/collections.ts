// The vault API's collections (docs/vault-api.md), each declared once with its record type
// (docs/api-storage.md, "The interface"). Index strings are written where the records are.
import type { EndUserAuthConfig } from '../../core/auth/end-user-token.ts';
import { collection } from '../store/collection.ts';
import type { ApiKeyRecord, ChainLinkRecord, EventRecord, JobRecord, NodeRecord, OrgRecord, TeeMeasurementsRecord, VaultExportRecord, VaultPolicyState, VaultRecord, WalletRecord } from './records.ts';

export const ORGS = collection<OrgRecord>('orgs');
/** Index `org/<org>/<created_at>/<id>` and `pub/<org>/<public key>`. */
export const API_KEYS = collection<ApiKeyRecord>('api_keys');
/** Index `org/<org>/<created_at>/<id>`. */
export const VAULTS = collection<VaultRecord>('vaults');
/** Index: `walletIndex` (vault-service.ts). */
export const WALLETS = collection<WalletRecord>('wallets');
/** A vault's key ceremonies still to run. */
export const JOBS = collection<JobRecord>('jobs');
/** Index `org/<org>/<created_at>/<id>`. */
export const NODES = collection<NodeRecord>('nodes');
/** Per organization. */
export const END_USER_AUTH = collection<EndUserAuthConfig>('end_user_auth');
/** Per organization: the enclave builds it allows. */
export const TEE_MEASUREMENTS = collection<TeeMeasurementsRecord>('tee_measurements');
/** `<org>/<seq, 10 digits>` → the entry's bytes as hex. */
export const TRUST_LOG = collection<string>('trust_log');
/** Events to publish, written with the change they describe (customers/event-relay.ts). */
export const OUTBOX = collection<EventRecord>('outbox');
/** `<vault>/<request id>`: key exports (docs/export.md). */
export const VAULT_EXPORTS = collection<VaultExportRecord>('vault_exports');
/** Per vault: its policy versions as the trust log leaves them, and its intent chain's head (docs/policies.md). */
export const VAULT_POLICIES = collection<VaultPolicyState>('vault_policies');
/** `<vault>/<seq, 12 digits>`: the links of a vault's intent chain, each with its intent. */
export const CHAIN_LINKS = collection<ChainLinkRecord>('chain_links');
