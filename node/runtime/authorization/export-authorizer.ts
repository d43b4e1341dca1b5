// What a node checks before it seals its share of a vault's key for export (docs/export.md), on its own
// evidence only:
// 1. the carried trust log applies, and in the registry it leaves there is a customer-signed export
//    request with this request id for this vault of the vault's owner (the request's HTTP signature and
//    its own Ed25519 signature, both by an active API key, checked when the entry was applied);
// 2. the key that signed it is still active (revoking a stolen key cancels its pending exports);
// 3. the approvals verify: at least k distinct approver keys of the node's export governance signed the
//    request's hash;
// 4. the delay has passed on this node's clock: from the later of the request's not-before and the
//    moment this node first saw the request (recorded durably the first time), plus the governance's
//    delay. Neither the request nor the coordinator can shorten it.
// The recipient key is the one in the customer-signed request; the session carries none.
import { hexToBytes } from '@noble/hashes/utils.js';
import { verifyEd25519 } from '../../../common/ed25519.ts';
import { countApprovals, type ExportApproval } from '../../../core/export/export-request.ts';
import { SessionRefused } from '../session-host.ts';
import { applyCarriedLog } from './carried-log.ts';
import type { TrustRegistry } from './trust-registry.ts';
import type { RecordedExport } from './trust-state.ts';
import type { ExportGovernance } from './export-governance.ts';
import type { ExportRecords } from '../../storage/export-records.ts';

export interface ExportAuthorizerDeps {
  trust: TrustRegistry;
  governance: ExportGovernance;
  records: ExportRecords;
  /** The node's clock, ms since the Unix epoch. */
  now: () => number;
}

export interface ExportInput {
  /** The vault's owner as stored with this node's share (never the coordinator's word). */
  owner: string;
  keyId: string;
  requestId: string;
  trustLog?: readonly Uint8Array[] | undefined;
  approvals?: readonly ExportApproval[] | undefined;
}

export interface ExportGrant {
  request: RecordedExport;
  /** Unix seconds at which this node seals its share. */
  readyAt: number;
  /** Whether the delay passed and the approvals suffice: only then is the share sealed. */
  ready: boolean;
  approvals: number;
  approvalsNeeded: number;
}

export async function authorizeExport(deps: ExportAuthorizerDeps, input: ExportInput): Promise<ExportGrant> {
  const state = await applyCarriedLog(deps.trust, input.owner, input.trustLog);
  const request = state.exports && Object.hasOwn(state.exports, input.requestId) ? state.exports[input.requestId] : undefined;
  if (!request || request.vaultId !== input.keyId) {
    throw new SessionRefused('export_not_requested', `no export request ${input.requestId} of ${input.owner} for ${input.keyId} is in the trust log this node applied`);
  }
  if (!(await deps.trust.activeKey(input.owner, request.keyId))) {
    throw new SessionRefused('bad_export_request', `the API key ${request.keyId} that signed export ${input.requestId} is revoked or unknown here`);
  }
  const rules = await deps.governance.forVault(input.owner, input.keyId);
  const approvals = countApprovals(hexToBytes(request.requestHash), input.approvals ?? [], rules.approverKeys, verifyEd25519).length;
  // The delay runs on this node's clock from its first sight of the request, whatever the request claims.
  const seen = await deps.records.seen(input.keyId, input.requestId, deps.now());
  const readyAt = Math.max(Math.ceil(seen.firstSeenMs / 1000), request.notBefore) + rules.delaySeconds;
  const ready = Math.floor(deps.now() / 1000) >= readyAt && approvals >= rules.k;
  return { request, readyAt, ready, approvals, approvalsNeeded: rules.k };
}
