// Key export on the customer's side (docs/export.md): build and sign the export request, make a
// recipient key, approve a request, and reconstruct the key offline from the sealed shares the nodes
// returned. Nothing here talks to the service: the private recipient key and the reconstructed key
// never leave the caller's process.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import {
  encodeExportRequest, exportRequestHash, signExportApproval, signExportRequest, type ExportApproval, type ExportRequest,
} from '../../core/export/export-request.ts';
import { openExportShare, type SealedExportShare } from '../../core/export/export-share.ts';
import { reconstructKey, type ReconstructedKey } from '../../core/export/reconstruct.ts';

export { newExportRecipient, exportRecipientPublicKey } from '../../core/export/export-share.ts';
export type { SealedExportShare } from '../../core/export/export-share.ts';
export type { ReconstructedKey } from '../../core/export/reconstruct.ts';

/** The body of `POST /v1/vaults/{id}/exports`: the canonical request and the API key's signature over it, hex. */
export interface ExportRequestBody {
  request: string;
  signature: string;
}

/** Builds the canonical export request and signs it with the API key's Ed25519 secret. */
export function exportRequestBody(r: ExportRequest, apiSecretKey: Uint8Array): ExportRequestBody {
  const bytes = encodeExportRequest(r);
  return { request: bytesToHex(bytes), signature: bytesToHex(signExportRequest(bytes, apiSecretKey)) };
}

/** An approver's approval of a request (its canonical bytes, hex): `{approver_key, signature}`, hex. */
export function approveExport(requestHex: string, approverSecretKey: Uint8Array): { approver_key: string; signature: string } {
  const a: ExportApproval = signExportApproval(exportRequestHash(hexToBytes(requestHex)), approverSecretKey);
  return { approver_key: bytesToHex(a.approverKey), signature: bytesToHex(a.signature) };
}

export interface ReconstructExportParameters {
  org: string;
  vaultId: string;
  /** The canonical export request, hex, as the customer signed it. */
  requestHex: string;
  requestId: string;
  /** The recipient's X25519 private key, 32 bytes. */
  recipientSecretKey: Uint8Array;
  sealed: readonly SealedExportShare[];
  /** The vault's public key (compressed, hex) and chain code (hex), as GET /v1/vaults/{id} shows them. */
  expectedPublicKeyHex?: string;
  expectedChainCodeHex?: string;
  environment?: 'production' | 'sandbox';
}

/** Opens every sealed share, then reconstructs and checks the key (core/export/reconstruct.ts). */
export async function reconstructExport(p: ReconstructExportParameters): Promise<ReconstructedKey> {
  const requestHash = exportRequestHash(hexToBytes(p.requestHex));
  const opened = [];
  for (const s of p.sealed) opened.push(await openExportShare(p.recipientSecretKey, { org: p.org, vaultId: p.vaultId, requestId: p.requestId, requestHash }, s));
  try {
    return reconstructKey(opened, {
      ...(p.expectedPublicKeyHex ? { expectedPublicKeyHex: p.expectedPublicKeyHex } : {}),
      ...(p.expectedChainCodeHex ? { expectedChainCodeHex: p.expectedChainCodeHex } : {}),
      ...(p.environment ? { environment: p.environment } : {}),
    });
  } finally {
    for (const o of opened) o.share.fill(0);
  }
}
