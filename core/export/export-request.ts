// A customer's request to export a vault's key (docs/export.md), and the approvals of it. The request is
// a canonical, domain-separated byte string that the customer's API key signs with Ed25519; the API
// carries it in the body of `POST /v1/vaults/{id}/exports`, whose RFC 9421 signature by the same key
// puts it in the organization's trust log, so every signer node sees the very bytes the customer
// signed. Approvers sign a domain-separated hash of those bytes.
//
// Encoding, version 1 (integers big-endian, `str` a u16 length then UTF-8):
//   `custody-export\0` (15 bytes) ‖ version 0x01 ‖ kind 0x01 (request)
//   ‖ organization (str) ‖ vault id (str) ‖ recipient X25519 public key (32 bytes)
//   ‖ request id (str, 16 to 64 of [A-Za-z0-9_-]) ‖ not before (u64, Unix seconds)
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { CustodyError } from '../errors/custody-error.ts';
import { lengthPrefixed } from '../codec/transcript.ts';
import { Reader, Writer, type FormatErrors } from '../intents/canonical.ts';

export const EXPORT_DOMAIN = new TextEncoder().encode('custody-export\0');
export const EXPORT_VERSION = 1;
const KIND_REQUEST = 1;

const ORG = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const VAULT = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
export const EXPORT_REQUEST_ID = /^[A-Za-z0-9_-]{16,64}$/;

export class ExportRequestError extends CustodyError {
  constructor(message: string) {
    super('bad_export_request', message);
    this.name = 'ExportRequestError';
  }
}

const ERRORS: FormatErrors = { noun: 'export request', fail: (m) => new ExportRequestError(m) };

export interface ExportRequest {
  org: string;
  vaultId: string;
  /** The X25519 public key (32 bytes) the customer holds the private half of: every share is sealed to it. */
  recipientKey: Uint8Array;
  /** Fresh per request, chosen by the customer: names the export everywhere. */
  requestId: string;
  /** Unix seconds; the delay never starts before it. */
  notBefore: number;
}

export function encodeExportRequest(r: ExportRequest): Uint8Array {
  if (!(r.recipientKey instanceof Uint8Array) || r.recipientKey.length !== 32) throw new ExportRequestError('the recipient key is 32 bytes (X25519)');
  if (r.recipientKey.every((b) => b === 0)) throw new ExportRequestError('the recipient key is all zero');
  if (!Number.isSafeInteger(r.notBefore) || r.notBefore < 0) throw new ExportRequestError('not_before must be non-negative Unix seconds');
  return new Writer(ERRORS).raw(EXPORT_DOMAIN).u8(EXPORT_VERSION).u8(KIND_REQUEST)
    .str(r.org, 'organization', ORG, 128)
    .str(r.vaultId, 'vault id', VAULT, 128)
    .raw(r.recipientKey)
    .str(r.requestId, 'request id', EXPORT_REQUEST_ID, 64)
    .u64(BigInt(r.notBefore))
    .finish();
}

/** Parses exactly one canonical export request; throws ExportRequestError otherwise. */
export function decodeExportRequest(bytes: Uint8Array): ExportRequest {
  const r = new Reader(bytes, ERRORS);
  const domain = r.fixed(EXPORT_DOMAIN.length, 'domain');
  if (!domain.every((b, i) => b === EXPORT_DOMAIN[i])) throw new ExportRequestError('not an export request (domain)');
  const version = r.u8('version');
  if (version !== EXPORT_VERSION) throw new ExportRequestError(`export request version ${version} is not supported`);
  if (r.u8('kind') !== KIND_REQUEST) throw new ExportRequestError('not an export request (kind)');
  const org = r.str('organization', ORG, 128);
  const vaultId = r.str('vault id', VAULT, 128);
  const recipientKey = r.fixed(32, 'recipient key');
  const requestId = r.str('request id', EXPORT_REQUEST_ID, 64);
  const stamp = r.u64('not before');
  r.end();
  if (stamp > BigInt(Number.MAX_SAFE_INTEGER)) throw new ExportRequestError('not_before is out of range');
  const out = { org, vaultId, recipientKey, requestId, notBefore: Number(stamp) };
  encodeExportRequest(out); // the same checks as encoding (an all-zero key)
  return out;
}

/** SHA-256 over a domain tag and the request bytes: what approvers sign and every record names. */
export function exportRequestHash(bytes: Uint8Array): Uint8Array {
  return sha256(lengthPrefixed(['custody/export-request/v1', bytes]));
}

/** What the customer's API key signs: the request bytes under their own domain tag. */
export function exportRequestMessage(bytes: Uint8Array): Uint8Array {
  return lengthPrefixed(['custody/export-request-signature/v1', bytes]);
}

export function signExportRequest(bytes: Uint8Array, apiSecretKey: Uint8Array): Uint8Array {
  return ed25519.sign(exportRequestMessage(bytes), apiSecretKey);
}

/** An approval: an approver's Ed25519 key and its signature over the approval message of one request. */
export interface ExportApproval {
  approverKey: Uint8Array;
  signature: Uint8Array;
}

/** What an approver signs: the request's hash under the approval domain tag. */
export function exportApprovalMessage(requestHash: Uint8Array): Uint8Array {
  if (requestHash.length !== 32) throw new ExportRequestError('a request hash is 32 bytes');
  return lengthPrefixed(['custody/export-approval/v1', requestHash]);
}

export function signExportApproval(requestHash: Uint8Array, approverSecretKey: Uint8Array): ExportApproval {
  return { approverKey: ed25519.getPublicKey(approverSecretKey), signature: ed25519.sign(exportApprovalMessage(requestHash), approverSecretKey) };
}

/**
 * The approvers of `allowed` whose valid approval of `requestHash` is among `approvals`, each counted
 * once. Approvals by keys outside `allowed`, bad signatures and repeats count for nothing.
 */
export function countApprovals(
  requestHash: Uint8Array, approvals: readonly ExportApproval[], allowed: readonly Uint8Array[],
  verify: (sig: Uint8Array, msg: Uint8Array, pub: Uint8Array) => boolean,
): string[] {
  const allowedHex = new Set(allowed.map((k) => bytesToHex(k)));
  const message = exportApprovalMessage(requestHash);
  const good = new Set<string>();
  for (const a of approvals) {
    const k = bytesToHex(a.approverKey);
    if (!allowedHex.has(k) || good.has(k) || a.signature.length !== 64) continue;
    if (verify(a.signature, message, a.approverKey)) good.add(k);
  }
  return [...good].sort();
}
