// One node's share of an exported key, sealed to the customer's recipient key with HPKE (RFC 9180, base
// mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305) through @hpke/core. What the
// coordinator and the API relay is the encapsulated key and the ciphertext; neither can open it.
//
// `info` binds the organization, vault, export request id and the sealing node's id; the AEAD's `aad`
// is the export request's hash. A ciphertext moved to another export, vault or node label fails to open.
//
// Plaintext, version 1 (integers big-endian, `str` a u16 length then UTF-8):
//   `custody-export-share\0` ‖ 0x01 ‖ organization (str) ‖ vault id (str) ‖ request id (str)
//   ‖ node id (str) ‖ epoch (u32) ‖ threshold (u16) ‖ party index (u32) ‖ group key (33, compressed)
//   ‖ chain code (32) ‖ the party's verification share (33, compressed) ‖ the share x_i (32)
import { CipherSuite, HkdfSha256 } from '@hpke/core';
import { x25519 } from '@noble/curves/ed25519.js';
import { DhkemX25519HkdfSha256 } from '@hpke/dhkem-x25519';
import { Chacha20Poly1305 } from '@hpke/chacha20poly1305';
import { CustodyError } from '../errors/custody-error.ts';
import { lengthPrefixed } from '../codec/transcript.ts';
import { Reader, Writer, type FormatErrors } from '../intents/canonical.ts';
import { EXPORT_REQUEST_ID } from './export-request.ts';

const DOMAIN = new TextEncoder().encode('custody-export-share\0');
const VERSION = 1;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

export class ExportShareError extends CustodyError {
  constructor(message: string) {
    super('bad_export_share', message);
    this.name = 'ExportShareError';
  }
}

const ERRORS: FormatErrors = { noun: 'export share', fail: (m) => new ExportShareError(m) };

/** What a recipient learns from one node: enough to check the share and to reconstruct with t of them. */
export interface ExportSharePlain {
  org: string;
  vaultId: string;
  requestId: string;
  nodeId: string;
  epoch: number;
  threshold: number;
  /** The party's index (its Shamir x-coordinate). */
  party: number;
  /** 33 bytes, compressed. */
  groupKey: Uint8Array;
  chainCode: Uint8Array;
  /** 33 bytes, compressed: x_i·G as the key's package states it. */
  verificationShare: Uint8Array;
  /** 32 bytes, big-endian: the secret share x_i. */
  share: Uint8Array;
}

/** What a node reports and the API hands out: public, useless without the recipient's private key. */
export interface SealedExportShare {
  nodeId: string;
  party: number;
  /** The HPKE encapsulated key (32 bytes). */
  enc: Uint8Array;
  ciphertext: Uint8Array;
}

/** The binding of a sealed share: who sealed it, for which export. */
export interface ExportShareContext {
  org: string;
  vaultId: string;
  requestId: string;
  nodeId: string;
  /** exportRequestHash of the customer's signed request. */
  requestHash: Uint8Array;
}

export function encodeExportSharePlain(p: ExportSharePlain): Uint8Array {
  const fixed = (b: Uint8Array, n: number, what: string) => {
    if (b.length !== n) throw new ExportShareError(`${what} is ${n} bytes`);
    return b;
  };
  return new Writer(ERRORS).raw(DOMAIN).u8(VERSION)
    .str(p.org, 'organization', NAME, 128).str(p.vaultId, 'vault id', NAME, 128).str(p.requestId, 'request id', EXPORT_REQUEST_ID, 64)
    .str(p.nodeId, 'node id', NAME, 128)
    .u32(p.epoch).u16(p.threshold).u32(p.party)
    .raw(fixed(p.groupKey, 33, 'group key')).raw(fixed(p.chainCode, 32, 'chain code'))
    .raw(fixed(p.verificationShare, 33, 'verification share')).raw(fixed(p.share, 32, 'share'))
    .finish();
}

export function decodeExportSharePlain(bytes: Uint8Array): ExportSharePlain {
  const r = new Reader(bytes, ERRORS);
  const domain = r.fixed(DOMAIN.length, 'domain');
  if (!domain.every((b, i) => b === DOMAIN[i])) throw new ExportShareError('not an export share (domain)');
  if (r.u8('version') !== VERSION) throw new ExportShareError('unsupported export share version');
  const out: ExportSharePlain = {
    org: r.str('organization', NAME, 128), vaultId: r.str('vault id', NAME, 128), requestId: r.str('request id', EXPORT_REQUEST_ID, 64),
    nodeId: r.str('node id', NAME, 128), epoch: r.u32('epoch'), threshold: r.u16('threshold'), party: r.u32('party'),
    groupKey: r.fixed(33, 'group key'), chainCode: r.fixed(32, 'chain code'), verificationShare: r.fixed(33, 'verification share'), share: r.fixed(32, 'share'),
  };
  r.end();
  return out;
}

let suiteMemo: CipherSuite | undefined;
/** RFC 9180 base mode: DHKEM(X25519, HKDF-SHA256) 0x0020, HKDF-SHA256 0x0001, ChaCha20-Poly1305 0x0003. */
export function exportSuite(): CipherSuite {
  return (suiteMemo ??= new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Chacha20Poly1305() }));
}

/** HPKE `info`: the organization, vault, request id and sealing node, under a domain tag. */
export function exportShareInfo(c: ExportShareContext): Uint8Array {
  return lengthPrefixed(['custody/export-share/v1', c.org, c.vaultId, c.requestId, c.nodeId]);
}

const ab = (b: Uint8Array): ArrayBuffer => b.slice().buffer;

/** Seals a node's share to the recipient key named in the customer's request. */
export async function sealExportShare(recipientKey: Uint8Array, c: ExportShareContext, plain: ExportSharePlain): Promise<SealedExportShare> {
  if (plain.org !== c.org || plain.vaultId !== c.vaultId || plain.requestId !== c.requestId || plain.nodeId !== c.nodeId) throw new ExportShareError('the share names another export');
  const suite = exportSuite();
  const pt = encodeExportSharePlain(plain);
  try {
    const pk = await suite.kem.deserializePublicKey(ab(recipientKey));
    const sealed = await suite.seal({ recipientPublicKey: pk, info: ab(exportShareInfo(c)) }, ab(pt), ab(c.requestHash));
    return { nodeId: c.nodeId, party: plain.party, enc: new Uint8Array(sealed.enc), ciphertext: new Uint8Array(sealed.ct) };
  } finally {
    pt.fill(0);
  }
}

/**
 * Opens one sealed share with the recipient's X25519 private key (32 bytes) and checks that it names
 * the export, vault and node it was handed out for. Throws ExportShareError.
 */
export async function openExportShare(recipientSecretKey: Uint8Array, c: Omit<ExportShareContext, 'nodeId'>, sealed: SealedExportShare): Promise<ExportSharePlain> {
  const suite = exportSuite();
  const ctx = { ...c, nodeId: sealed.nodeId };
  let pt: Uint8Array;
  try {
    const sk = await suite.kem.deserializePrivateKey(ab(recipientSecretKey));
    pt = new Uint8Array(await suite.open({ recipientKey: sk, enc: ab(sealed.enc), info: ab(exportShareInfo(ctx)) }, ab(sealed.ciphertext), ab(c.requestHash)));
  } catch (err) {
    throw new ExportShareError(`the share of ${sealed.nodeId} does not open with this key for this export: ${err instanceof Error ? err.message : String(err)}`);
  }
  const plain = decodeExportSharePlain(pt);
  pt.fill(0);
  if (plain.org !== c.org || plain.vaultId !== c.vaultId || plain.requestId !== c.requestId || plain.nodeId !== sealed.nodeId || plain.party !== sealed.party) {
    throw new ExportShareError(`the share of ${sealed.nodeId} names another export, vault, node or party`);
  }
  return plain;
}

/** A fresh X25519 recipient key pair for an export (the private half never leaves the customer). */
export async function newExportRecipient(): Promise<{ publicKey: Uint8Array; secretKey: Uint8Array }> {
  const suite = exportSuite();
  const kp = await suite.kem.generateKeyPair();
  return { publicKey: new Uint8Array(await suite.kem.serializePublicKey(kp.publicKey)), secretKey: new Uint8Array(await suite.kem.serializePrivateKey(kp.privateKey)) };
}

/** The X25519 public key of a recipient private key (RFC 7748, noble's). */
export function exportRecipientPublicKey(secretKey: Uint8Array): Uint8Array {
  return x25519.getPublicKey(secretKey);
}
