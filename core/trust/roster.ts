// The service-node roster, version 1 (docs/trust.md "Committees"): the operator's signed list of the
// service nodes a key's committee may seat. The coordinator carries it unchanged in every DKG and
// reshare; each node verifies it under its own operator keys (NODE_OPERATOR_KEYS), refuses one older
// than the newest it accepted, and checks every service member of the session against it.
//
// Encoding (integers big-endian, `str` a u16 length then UTF-8, as the trust entries): the domain
// `custody-roster\0`, the format version, the roster version (u64, monotonic), created (u64, Unix
// seconds), a u16 count and the nodes sorted by node id (node id, Ed25519 key, X25519 key), then the
// operator's Ed25519 public key and its signature over every byte before that key.
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { lengthPrefixed } from '../codec/transcript.ts';
import { CustodyError } from '../errors/custody-error.ts';
import { isValidEd25519PublicKeyHex, verifyEd25519 } from '../../common/ed25519.ts';
import { nodeIdFor } from './node-id.ts';
import { Reader, Writer, type FormatErrors } from '../intents/canonical.ts';

export const ROSTER_DOMAIN = new TextEncoder().encode('custody-roster\0');
export const ROSTER_FORMAT = 1;
export const MAX_ROSTER_NODES = 256;
const NODE_ID = /^n[0-9a-f]{20}$/;
const HEX32 = /^[0-9a-f]{64}$/;

export class RosterError extends CustodyError {
  constructor(message: string) {
    super('bad_roster', message);
    this.name = 'RosterError';
  }
}

export interface RosterNode {
  nodeId: string;
  /** Ed25519 public key, 64 lower-case hex characters; the node id is derived from it. */
  signingKey: string;
  /** X25519 public key, 64 lower-case hex characters. */
  encryptionKey: string;
}

export interface RosterBody {
  /** Monotonic: a node refuses a roster older than the newest it accepted. */
  version: number;
  /** Unix seconds. */
  created: number;
  nodes: RosterNode[];
}

export interface SignedRoster extends RosterBody {
  /** The operator key that signed, 64 lower-case hex characters. */
  operatorKey: string;
  signature: Uint8Array;
}

const ERRORS: FormatErrors = { noun: 'roster', fail: (m) => new RosterError(m) };

function checkNumber(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RosterError(`${what} must be a non-negative integer`);
}

/** The canonical bytes an operator signs; nodes are sorted by id, so one set has one encoding. */
export function rosterMessage(body: RosterBody): Uint8Array {
  checkNumber(body.version, 'the roster version');
  checkNumber(body.created, 'created');
  if (body.nodes.length < 1 || body.nodes.length > MAX_ROSTER_NODES) throw new RosterError(`a roster lists 1 to ${MAX_ROSTER_NODES} nodes`);
  const nodes = body.nodes.map((n) => ({ nodeId: n.nodeId, signingKey: n.signingKey.toLowerCase(), encryptionKey: n.encryptionKey.toLowerCase() }))
    .sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  const w = new Writer(ERRORS).raw(ROSTER_DOMAIN).u8(ROSTER_FORMAT).u64(BigInt(body.version)).u64(BigInt(body.created)).u16(nodes.length);
  nodes.forEach((n, i) => {
    if (!HEX32.test(n.signingKey) || !HEX32.test(n.encryptionKey)) throw new RosterError(`node ${n.nodeId}: keys are 32 bytes of hex`);
    if (n.nodeId !== nodeIdFor(hexToBytes(n.signingKey))) throw new RosterError(`node ${n.nodeId}: the id is not the one derived from its signing key`);
    if (i > 0 && nodes[i - 1]!.nodeId === n.nodeId) throw new RosterError(`node ${n.nodeId} is listed twice`);
    w.str(n.nodeId, 'node id', NODE_ID, 21).raw(hexToBytes(n.signingKey)).raw(hexToBytes(n.encryptionKey));
  });
  return w.finish();
}

/** An operator's signed roster (encoded). */
export function signRoster(body: RosterBody, operatorSecretKey: Uint8Array): Uint8Array {
  // Seating a node is registering its key: only a key someone can sign under (decoding skips this cost).
  for (const n of body.nodes) if (!isValidEd25519PublicKeyHex(n.signingKey)) throw new RosterError(`node ${n.nodeId}: the signing key is not a valid Ed25519 public key (off the curve, of small order, or not canonically encoded)`);
  const message = rosterMessage(body);
  return new Writer(ERRORS).raw(message).raw(ed25519.getPublicKey(operatorSecretKey)).raw(ed25519.sign(message, operatorSecretKey)).finish();
}

/** Parses one encoded roster; throws RosterError unless the bytes are exactly one canonical roster. */
export function decodeRoster(bytes: Uint8Array): SignedRoster {
  const r = new Reader(bytes, ERRORS);
  const domain = r.fixed(ROSTER_DOMAIN.length, 'domain');
  if (!domain.every((b, i) => b === ROSTER_DOMAIN[i])) throw new RosterError('not a roster (domain)');
  const format = r.u8('format version');
  if (format !== ROSTER_FORMAT) throw new RosterError(`roster format ${format} is not supported`);
  const version = r.u64('version');
  const created = r.u64('created');
  if (version > BigInt(Number.MAX_SAFE_INTEGER) || created > BigInt(Number.MAX_SAFE_INTEGER)) throw new RosterError('version or created is out of range');
  const count = r.u16('node count');
  const nodes: RosterNode[] = [];
  for (let i = 0; i < count; i++) {
    nodes.push({ nodeId: r.str('node id', NODE_ID, 21), signingKey: bytesToHex(r.fixed(32, 'signing key')), encryptionKey: bytesToHex(r.fixed(32, 'encryption key')) });
  }
  const operatorKey = bytesToHex(r.fixed(32, 'operator key'));
  const signature = r.fixed(64, 'signature');
  r.end();
  const body = { version: Number(version), created: Number(created), nodes };
  // Re-encoding checks order, uniqueness, derived ids and the count's bounds in one place.
  const canonical = rosterMessage(body);
  if (canonical.length !== bytes.length - 96 || !canonical.every((b, i) => b === bytes[i])) throw new RosterError('the roster is not in canonical form (nodes sorted by id)');
  return { ...body, operatorKey, signature };
}

/** Decodes and verifies a roster under one of `operatorKeys` (hex); throws RosterError. */
export function verifyRoster(bytes: Uint8Array, operatorKeys: readonly string[]): SignedRoster {
  const roster = decodeRoster(bytes);
  if (!operatorKeys.some((k) => k.toLowerCase() === roster.operatorKey)) throw new RosterError('the roster is not signed by an operator key of this node');
  if (!verifyEd25519(roster.signature, bytes.subarray(0, bytes.length - 96), hexToBytes(roster.operatorKey))) throw new RosterError('the roster signature does not verify');
  return roster;
}

/** Identifies a roster: SHA-256 over a domain tag and its encoding, hex. */
export function rosterHash(bytes: Uint8Array): string {
  return bytesToHex(sha256(lengthPrefixed(['custody/roster/v1', bytes])));
}
