// The public results nodes report in SessionDone, carried as blobs of kind 'dkg-result',
// 'reshare-result', 'sign-result', 'ot-result' and 'epoch-result'; both sides encode and decode them
// with session-contract.ts.
import { readKeyPackage, type KeyPackage } from './key-package.ts';
import { PARAM_LIMITS, readPrecommitEntry, type PrecommittedNonce } from './session-params.ts';
import { InputError } from '../errors/protocol-errors.ts';
import { bytes, defined, hex, int, list, MAX_UINT32, oneOf, optional, record, text } from './shape.ts';

/** DKG and reshare: the public package of the new epoch, which every receiver reports the same. */
export interface PackageResult {
  pkg: KeyPackage;
  /**
   * A reshare receiver's signed receipt (core/session/epoch-receipt.ts): its identity key's Ed25519
   * signature that it holds this package's epoch durably. Absent from DKG results and from dealers.
   */
  receipt?: Uint8Array;
}

export interface SignResult {
  /** One per digest: 64-byte r||s (ECDSA, low-s) or BIP-340 signatures. */
  signatures: Uint8Array[];
  /** ECDSA only: the recovery id (0 to 3) of each signature. */
  recoveryIds?: number[];
  /** Compressed (ECDSA, 33 bytes) or x-only (Schnorr, 32 bytes) key the signatures verify under. */
  publicKey: Uint8Array;
}

/** The OT setup of a key epoch is stored on this node. */
export interface OtResult {
  keyId: string;
  epoch: number;
}

/** A presigning session's result: the entries this node sealed (docs/protocols/pools.md). */
export interface PresignResult {
  keyId: string;
  epoch: number;
  entryIds: string[];
}

/**
 * A precommit session's result: the nonce entries this node sealed, with their commitments, each signed
 * by the node's identity key over its statement (docs/protocols/pools.md "FROST").
 */
export interface PrecommitResult {
  keyId: string;
  epoch: number;
  entries: Omit<PrecommittedNonce, 'party'>[];
}

export const EPOCH_OUTCOMES = ['promoted', 'removed', 'already', 'abandoned', 'kept'] as const;

/** What a commit or abandon did on this node. */
export interface EpochResult {
  outcome: (typeof EPOCH_OUTCOMES)[number];
}

export function readPackageResult(v: unknown, what: string): PackageResult {
  const o = record(v, what, ['pkg'], ['receipt']);
  return { pkg: readKeyPackage(o.pkg, `${what}.pkg`), ...defined({ receipt: optional(o, 'receipt', (x) => bytes(x, `${what}.receipt`, 64)) }) };
}

export function readSignResult(v: unknown, what = 'sign-result'): SignResult {
  const o = record(v, what, ['signatures', 'publicKey'], ['recoveryIds']);
  const signatures = list(o.signatures, `${what}.signatures`, PARAM_LIMITS.digests, (x, w) => bytes(x, w, 64), 1);
  const recoveryIds = optional(o, 'recoveryIds', (x) => list(x, `${what}.recoveryIds`, signatures.length, (r, w) => int(r, w, 0, 3), signatures.length));
  return { signatures, ...defined({ recoveryIds }), publicKey: bytes(o.publicKey, `${what}.publicKey`, 32, 33) };
}

export function readOtResult(v: unknown, what = 'ot-result'): OtResult {
  const o = record(v, what, ['keyId', 'epoch']);
  return { keyId: text(o.keyId, `${what}.keyId`, PARAM_LIMITS.name, 1), epoch: int(o.epoch, `${what}.epoch`, 0, MAX_UINT32) };
}

export function readPresignResult(v: unknown, what = 'presign-result'): PresignResult {
  const o = record(v, what, ['keyId', 'epoch', 'entryIds']);
  return {
    keyId: text(o.keyId, `${what}.keyId`, PARAM_LIMITS.name, 1), epoch: int(o.epoch, `${what}.epoch`, 0, MAX_UINT32),
    entryIds: list(o.entryIds, `${what}.entryIds`, PARAM_LIMITS.presignEntries, (x, w) => hex(x, w, 16), 1),
  };
}

export function readEpochResult(v: unknown, what = 'epoch-result'): EpochResult {
  const o = record(v, what, ['outcome']);
  return { outcome: oneOf(o.outcome, `${what}.outcome`, EPOCH_OUTCOMES) };
}

export function readPrecommitResult(v: unknown, what = 'precommit-result'): PrecommitResult {
  const o = record(v, what, ['keyId', 'epoch', 'entries']);
  return {
    keyId: text(o.keyId, `${what}.keyId`, PARAM_LIMITS.name, 1), epoch: int(o.epoch, `${what}.epoch`, 0, MAX_UINT32),
    entries: list(o.entries, `${what}.entries`, PARAM_LIMITS.precommitEntries, readPrecommitEntry, 1),
  };
}

export const EXPORT_STATUSES = ['waiting', 'sealed'] as const;

/**
 * What a node reports for an export: `waiting` until its delay passed and the approvals suffice, with
 * when it will seal (its own clock); then `sealed`, with its share sealed by HPKE to the recipient key
 * of the customer's request (core/export/export-share.ts).
 */
export interface ExportResult {
  status: (typeof EXPORT_STATUSES)[number];
  /** Unix seconds. */
  readyAt: number;
  approvals: number;
  approvalsNeeded: number;
  /** sealed: the sealing node, its party index, the HPKE encapsulated key and the ciphertext. */
  nodeId?: string;
  party?: number;
  enc?: Uint8Array;
  ciphertext?: Uint8Array;
}

export function readExportResult(v: unknown, what = 'export-result'): ExportResult {
  const o = record(v, what, ['status', 'readyAt', 'approvals', 'approvalsNeeded'], ['nodeId', 'party', 'enc', 'ciphertext']);
  const status = oneOf(o.status, `${what}.status`, EXPORT_STATUSES);
  const sealed = {
    nodeId: optional(o, 'nodeId', (x) => text(x, `${what}.nodeId`, PARAM_LIMITS.name, 1)),
    party: optional(o, 'party', (x) => int(x, `${what}.party`, 1, MAX_UINT32)),
    enc: optional(o, 'enc', (x) => bytes(x, `${what}.enc`, 32)),
    ciphertext: optional(o, 'ciphertext', (x) => bytes(x, `${what}.ciphertext`, 16, 4096)),
  };
  const complete = sealed.nodeId !== undefined && sealed.party !== undefined && sealed.enc !== undefined && sealed.ciphertext !== undefined;
  if (status === 'sealed' ? !complete : Object.values(sealed).some((x) => x !== undefined)) {
    throw new InputError('bad_params', `${what}: a sealed result carries nodeId, party, enc and ciphertext, a waiting one none of them`);
  }
  return {
    status, readyAt: int(o.readyAt, `${what}.readyAt`, 0, Number.MAX_SAFE_INTEGER), approvals: int(o.approvals, `${what}.approvals`, 0, 64),
    approvalsNeeded: int(o.approvalsNeeded, `${what}.approvalsNeeded`, 0, 64), ...defined(sealed),
  };
}
