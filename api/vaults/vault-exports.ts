// Key export on the API's side (docs/export.md). The API is a relay here: it keeps the customer's signed
// request in the organization's trust log (so every node sees it), collects approvals, and asks the
// coordinator for each node's answer; what it stores and hands out are ciphertexts only the customer's
// recipient key opens. Every check that matters is the nodes' own; the API checks first to answer fast.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { verifyEd25519 } from '../../common/ed25519.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { decodeExportRequest, ExportRequestError, exportApprovalMessage, exportRequestHash, exportRequestMessage } from '../../core/export/export-request.ts';
import type { CoordinatorShards } from '../coordinator/coordinator-shards.ts';
import type { VaultService } from './vault-service.ts';
import type { VaultExportRecord } from './records.ts';
import { VAULT_EXPORTS } from './collections.ts';
import type { Op } from '../store/record-repository.ts';

export interface ExportRequestInput {
  request: string;
  signature: string;
}

const HEX = /^(?:[0-9a-f]{2})+$/;

export class VaultExports {
  constructor(private readonly vaults: VaultService, private readonly coordinators: CoordinatorShards | undefined, private readonly now: () => Date = () => new Date()) {}

  private iso(): string {
    return this.now().toISOString();
  }

  /**
   * POST /v1/vaults/{id}/exports: records the request, appends the signed HTTP request to the trust log
   * and emits `vault.export.requested` in one batch, then asks every node once, so each starts its delay.
   * The same request again answers the record as it is (`replayed`); other bytes under its id are 409.
   */
  async request(org: string, callerKeyId: string, vaultId: string, body: ExportRequestInput, entry: Uint8Array): Promise<{ record: VaultExportRecord; replayed: boolean }> {
    if (!HEX.test(body.request) || !/^[0-9a-f]{128}$/.test(body.signature)) throw new CustodyError('invalid_request', 'request and signature are lower-case hex (signature 64 bytes)');
    const bytes = hexToBytes(body.request);
    let r;
    try {
      r = decodeExportRequest(bytes);
    } catch (err) {
      if (err instanceof ExportRequestError) throw new CustodyError('invalid_request', err.message);
      throw err;
    }
    if (r.org !== org) throw new CustodyError('invalid_request', `the export request names organization ${r.org}`);
    if (r.vaultId !== vaultId) throw new CustodyError('invalid_request', `the export request names vault ${r.vaultId}, the path ${vaultId}`);
    const key = await this.vaults.activeKey(callerKeyId);
    if (!key || key.org !== org || !verifyEd25519(hexToBytes(body.signature), exportRequestMessage(bytes), key.publicKey)) {
      throw new CustodyError('bad_export_request', 'the export request is not signed by the API key that sends it');
    }
    const created = await this.vaults.withOrgLock(org, async () => {
      const v = await this.vaults.vault(org, vaultId);
      if (!v.public_key) throw new CustodyError('conflict', `the vault is ${v.state}; it has no key to export`);
      const had = await VAULT_EXPORTS.in(this.vaults.store).get(`${vaultId}/${r.requestId}`);
      if (had) {
        if (had.request !== body.request) throw new CustodyError('conflict', `export ${r.requestId} exists with another request`);
        return { record: had, replayed: true };
      }
      const at = this.iso();
      const record: VaultExportRecord = {
        id: r.requestId, org, vault_id: vaultId, request: body.request, signature: body.signature, request_sha256: bytesToHex(exportRequestHash(bytes)),
        recipient_key: bytesToHex(r.recipientKey), not_before: r.notBefore, state: 'waiting', approvals: [], nodes: [], shares: [], threshold: null, created_at: at, updated_at: at,
      };
      await this.vaults.appendTrustLocked(org, entry, [
        VAULT_EXPORTS.putOp(`${vaultId}/${r.requestId}`, record, { index: [`vault/${vaultId}/${at}/${r.requestId}`] }),
        this.vaults.event(org, 'vault.export.requested', 'vault', vaultId, { vault_id: vaultId, export_id: r.requestId, not_before: r.notBefore }),
      ]);
      return { record, replayed: false };
    });
    if (created.replayed) return created;
    // Each node starts its delay when it first sees the request; a cluster that is down now starts it at
    // the first collect instead (the record then shows no ready_at yet).
    try {
      return { record: await this.collect(org, vaultId, r.requestId), replayed: false };
    } catch (err) {
      if (err instanceof CustodyError && (err.kind === 'unavailable' || err.kind === 'transport')) return created;
      throw err;
    }
  }

  async get(org: string, vaultId: string, exportId: string): Promise<VaultExportRecord> {
    await this.vaults.vault(org, vaultId);
    const rec = await VAULT_EXPORTS.in(this.vaults.store).get(`${vaultId}/${exportId}`);
    if (!rec || rec.org !== org) throw new CustodyError('not_found', 'no such export');
    return rec;
  }

  /** POST /v1/vaults/{id}/exports/{export_id}/approvals: keeps an approval whose signature verifies over the request's hash. */
  async approve(org: string, vaultId: string, exportId: string, a: { approver_key: string; signature: string }): Promise<VaultExportRecord> {
    if (!/^[0-9a-f]{64}$/.test(a.approver_key) || !/^[0-9a-f]{128}$/.test(a.signature)) throw new CustodyError('invalid_request', 'approver_key and signature are 32 and 64 bytes of lower-case hex');
    return this.vaults.withOrgLock(org, async () => {
      const rec = await this.get(org, vaultId, exportId);
      if (!verifyEd25519(hexToBytes(a.signature), exportApprovalMessage(hexToBytes(rec.request_sha256)), hexToBytes(a.approver_key))) {
        throw new CustodyError('invalid_request', 'the approval does not verify over this export request');
      }
      if (rec.approvals.some((x) => x.approver_key === a.approver_key)) return rec;
      const next: VaultExportRecord = { ...rec, approvals: [...rec.approvals, { ...a, created_at: this.iso() }], updated_at: this.iso() };
      await this.vaults.store.batch([VAULT_EXPORTS.putOp(`${vaultId}/${exportId}`, next, { index: [`vault/${vaultId}/${rec.created_at}/${exportId}`] })]);
      return next;
    });
  }

  /**
   * POST /v1/vaults/{id}/exports/{export_id}/collect: asks each node of the committee (through the
   * coordinator) with the trust log and the approvals; stores what they answer. Once `threshold` nodes
   * sealed, the export is `sealed` and `vault.exported` is emitted (once).
   */
  async collect(org: string, vaultId: string, exportId: string): Promise<VaultExportRecord> {
    const rec = await this.get(org, vaultId, exportId);
    const v = await this.vaults.vault(org, vaultId);
    if (!this.coordinators) throw new CustodyError('unavailable', 'no coordinator is configured');
    const coordinator = this.coordinators.forVault(v);
    const out = await coordinator.exportVault({
      vaultId, exportId, trustLog: await this.vaults.trustLog(org),
      approvals: rec.approvals.map((a) => ({ approverKey: hexToBytes(a.approver_key), signature: hexToBytes(a.signature) })),
    });
    return this.vaults.withOrgLock(org, async () => {
      const now = await this.get(org, vaultId, exportId);
      const shares = new Map(now.shares.map((s) => [s.node_id, s]));
      for (const s of out.shares) {
        if (s.status === 'sealed') shares.set(s.nodeId, { node_id: s.nodeId, party: s.party, enc: bytesToHex(s.enc), ciphertext: bytesToHex(s.ciphertext) });
      }
      const nodes = out.shares.map((s) => ({
        node_id: s.nodeId, status: (s.status === 'sealed' || s.status === 'waiting' ? s.status : 'failed') as 'waiting' | 'sealed' | 'failed',
        ready_at: s.status === 'failed' ? null : Number(s.readyAt), code: s.status === 'failed' ? s.code || 'failed' : null,
      }));
      const sealed = shares.size >= out.threshold && out.threshold > 0;
      const next: VaultExportRecord = { ...now, nodes, shares: [...shares.values()], threshold: out.threshold, state: sealed ? 'sealed' : 'waiting', updated_at: this.iso() };
      const ops: Op[] = [VAULT_EXPORTS.putOp(`${vaultId}/${exportId}`, next, { index: [`vault/${vaultId}/${now.created_at}/${exportId}`] })];
      if (sealed && now.state !== 'sealed') ops.push(this.vaults.event(org, 'vault.exported', 'vault', vaultId, { vault_id: vaultId, export_id: exportId, shares: shares.size }));
      await this.vaults.store.batch(ops);
      return next;
    });
  }
}
