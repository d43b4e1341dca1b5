// A vault's intent chain (docs/policies.md "Windows under any signer subset"): every intent of a vault
// under a policy comes with a link the customer's API key signs, naming the vault, its position, the
// previous link's hash and the intent's hash. A node signs link s only after verifying the chain back
// from s to where no earlier spend can still count (and past its own last signed link while that one
// counts), so a coordinator that rotates signer subsets can withhold links, which stops signing, but
// cannot hide a spend from any node it asks.
//
// Encoding (integers big-endian, `str` a u16 length then UTF-8): domain `custody-chain` then 0x00
// (14 bytes), version 0x01, organization (str), vault id (str), seq (u64, from 1), prev (32 bytes: the
// previous link's hash, zero for seq 1), intent hash (32 bytes: SHA-256 of the intent bytes), until
// (u64, Unix seconds: the largest not_after of this intent and every one before it, so it never
// decreases along the chain), then the 64-byte Ed25519 signature over every byte before it.
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { lengthPrefixed } from '../codec/transcript.ts';
import { CustodyError } from '../errors/custody-error.ts';
import { Reader, Writer, type FormatErrors } from '../intents/canonical.ts';
import { verifyEd25519 } from '../../common/ed25519.ts';

export const CHAIN_DOMAIN = new TextEncoder().encode('custody-chain\0');
export const CHAIN_VERSION = 1;
/** The most links a node accepts relayed with one signing request. */
export const MAX_RELAYED_LINKS = 4096;
export const ZERO_HASH = '00'.repeat(32);

const ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

export class ChainLinkError extends CustodyError {
  constructor(message: string) {
    super('bad_chain', message);
    this.name = 'ChainLinkError';
  }
}

const ERRORS: FormatErrors = { noun: 'chain link', fail: (m) => new ChainLinkError(m) };

export interface ChainLink {
  organization: string;
  vaultId: string;
  seq: bigint;
  /** Hex, 32 bytes. */
  prev: string;
  /** SHA-256 of the intent bytes, hex. */
  intentHash: string;
  /** Unix seconds: max(not_after of this intent, until of the previous link). */
  until: bigint;
}

export interface SignedChainLink extends ChainLink {
  signature: Uint8Array;
  /** The signed bytes (everything before the signature). */
  body: Uint8Array;
}

/** The bytes a link's signature covers. */
export function chainLinkBody(l: ChainLink): Uint8Array {
  if (l.seq < 1n) throw new ChainLinkError('seq starts at 1');
  if ((l.seq === 1n) !== (l.prev === ZERO_HASH)) throw new ChainLinkError('the first link, and only it, has a zero prev');
  return new Writer(ERRORS).raw(CHAIN_DOMAIN).u8(CHAIN_VERSION)
    .str(l.organization, 'organization', ID, 128).str(l.vaultId, 'vault id', ID, 128)
    .u64(l.seq).fixed(hexToBytes(l.prev), 32, 'prev').fixed(hexToBytes(l.intentHash), 32, 'intent hash').u64(l.until)
    .finish();
}

/** A link signed with the customer's API key (the SDK's job). */
export function signChainLink(l: ChainLink, secretKey: Uint8Array): Uint8Array {
  const body = chainLinkBody(l);
  return new Writer(ERRORS).raw(body).raw(ed25519.sign(body, secretKey)).finish();
}

/** Parses one encoded link; throws ChainLinkError (bad_chain) unless the bytes are exactly one canonical link. */
export function decodeChainLink(bytes: Uint8Array): SignedChainLink {
  const r = new Reader(bytes, ERRORS);
  const domain = r.fixed(CHAIN_DOMAIN.length, 'domain');
  if (!domain.every((b, i) => b === CHAIN_DOMAIN[i])) throw new ChainLinkError('not a chain link (domain)');
  const version = r.u8('version');
  if (version !== CHAIN_VERSION) throw new ChainLinkError(`chain link version ${version} is not supported`);
  const link: ChainLink = {
    organization: r.str('organization', ID, 128), vaultId: r.str('vault id', ID, 128), seq: r.u64('seq'),
    prev: bytesToHex(r.fixed(32, 'prev')), intentHash: bytesToHex(r.fixed(32, 'intent hash')), until: r.u64('until'),
  };
  const body = bytes.slice(0, bytes.length - 64);
  const signature = r.fixed(64, 'signature');
  r.end();
  const again = chainLinkBody(link);
  if (again.length !== body.length || !again.every((b, i) => b === body[i])) throw new ChainLinkError('chain link is not in canonical form');
  return { ...link, signature, body };
}

/** Identifies a link: SHA-256 over a domain tag and its signed bytes, hex (the signature is not part of it). */
export function chainLinkHash(l: SignedChainLink | ChainLink): string {
  return bytesToHex(sha256(lengthPrefixed(['custody/intent-chain/v1', 'body' in l ? l.body : chainLinkBody(l)])));
}

export function verifyChainLinkSignature(l: SignedChainLink, publicKey: Uint8Array): boolean {
  return verifyEd25519(l.signature, l.body, publicKey);
}

/** The next link after `prev` (undefined: the vault's first) for an intent. */
export function nextChainLink(o: { organization: string; vaultId: string; prev?: ChainLink | undefined; intentHash: string; notAfter: bigint }): ChainLink {
  const p = o.prev;
  return {
    organization: o.organization, vaultId: o.vaultId, seq: p ? p.seq + 1n : 1n, prev: p ? chainLinkHash(p) : ZERO_HASH,
    intentHash: o.intentHash, until: p && p.until > o.notAfter ? p.until : o.notAfter,
  };
}
