// Offline reconstruction of an exported key (docs/export.md): t opened shares, each checked against its
// verification share, combined by Lagrange interpolation at zero in secp256k1's scalar field
// (@noble/curves `Point.Fn`), the result checked against the vault's group key, and written as hex and
// as a BIP-32 extended private key at the root of the wallets' derivation (docs/derivation.md: depth 0,
// no parent fingerprint, child number 0, the joint chain code), whose public half is the vault's xpub.
import { HDKey } from '@scure/bip32';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { CustodyError } from '../errors/custody-error.ts';
import { Fn, G, Point } from '../keys/point.ts';
import type { ExportSharePlain } from './export-share.ts';

export class ReconstructError extends CustodyError {
  constructor(message: string) {
    super('bad_export_share', message);
    this.name = 'ReconstructError';
  }
}

/** BIP-32 version bytes: `xprv`/`xpub` for production vaults, `tprv`/`tpub` for sandbox ones. */
export const EXTENDED_KEY_VERSIONS = Object.freeze({
  production: { private: 0x0488ade4, public: 0x0488b21e },
  sandbox: { private: 0x04358394, public: 0x043587cf },
});

export interface ReconstructedKey {
  /** 32 bytes, big-endian hex. */
  privateKeyHex: string;
  /** Compressed group key, hex: equal to the vault's public key. */
  publicKeyHex: string;
  chainCodeHex: string;
  /** BIP-32 extended private key of the derivation root. */
  xprv: string;
  /** Its public half: the vault's xpub. */
  xpub: string;
  /** The parties whose shares were used. */
  parties: number[];
}

/** λ_i(0) for the set `xs` (distinct non-zero indices), in the scalar field. */
function lagrangeAtZero(i: bigint, xs: readonly bigint[]): bigint {
  let num = Fn.ONE;
  let den = Fn.ONE;
  for (const j of xs) {
    if (j === i) continue;
    num = Fn.mul(num, j);
    den = Fn.mul(den, Fn.sub(j, i));
  }
  return Fn.div(num, den);
}

/**
 * Reconstructs the vault's key from opened shares. Every share must name the same vault, export, epoch,
 * threshold, group key and chain code, and match its verification share; at least `threshold` distinct
 * parties are needed. When `expected` gives the vault's public key (and chain code), the result must
 * equal it. Throws ReconstructError.
 */
export function reconstructKey(shares: readonly ExportSharePlain[], opts: { expectedPublicKeyHex?: string; expectedChainCodeHex?: string; environment?: 'production' | 'sandbox' } = {}): ReconstructedKey {
  if (shares.length === 0) throw new ReconstructError('no shares');
  const first = shares[0]!;
  const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, k) => x === b[k]);
  const byParty = new Map<number, ExportSharePlain>();
  for (const s of shares) {
    if (s.vaultId !== first.vaultId || s.requestId !== first.requestId || s.org !== first.org) throw new ReconstructError('the shares come from different exports');
    if (s.epoch !== first.epoch || s.threshold !== first.threshold || !same(s.groupKey, first.groupKey) || !same(s.chainCode, first.chainCode)) {
      throw new ReconstructError(`the share of party ${s.party} names another epoch, threshold, group key or chain code`);
    }
    if (s.party < 1) throw new ReconstructError('a party index is at least 1');
    const x = Fn.fromBytes(s.share);
    if (x === 0n || !G.multiply(x).equals(Point.fromBytes(s.verificationShare))) throw new ReconstructError(`the share of party ${s.party} does not match its verification share`);
    if (!byParty.has(s.party)) byParty.set(s.party, s);
  }
  if (byParty.size < first.threshold) throw new ReconstructError(`${byParty.size} distinct shares; the key needs ${first.threshold}`);
  const used = [...byParty.values()].sort((a, b) => a.party - b.party).slice(0, first.threshold);
  const xs = used.map((s) => BigInt(s.party));
  let secret = Fn.ZERO;
  for (const s of used) secret = Fn.add(secret, Fn.mul(lagrangeAtZero(BigInt(s.party), xs), Fn.fromBytes(s.share)));
  const groupKey = Point.fromBytes(first.groupKey);
  if (secret === 0n || !G.multiply(secret).equals(groupKey)) throw new ReconstructError('the shares do not reconstruct the vault\'s group key');
  const publicKeyHex = bytesToHex(first.groupKey);
  const chainCodeHex = bytesToHex(first.chainCode);
  if (opts.expectedPublicKeyHex !== undefined && opts.expectedPublicKeyHex.toLowerCase() !== publicKeyHex) throw new ReconstructError('the reconstructed key is not the vault\'s public key');
  if (opts.expectedChainCodeHex !== undefined && opts.expectedChainCodeHex.toLowerCase() !== chainCodeHex) throw new ReconstructError('the shares carry another chain code than the vault\'s');
  const privateKey = Fn.toBytes(secret);
  const versions = EXTENDED_KEY_VERSIONS[opts.environment ?? 'production'];
  const hd = new HDKey({ versions, privateKey, chainCode: hexToBytes(chainCodeHex), depth: 0, index: 0, parentFingerprint: 0 });
  const out = { privateKeyHex: bytesToHex(privateKey), publicKeyHex, chainCodeHex, xprv: hd.privateExtendedKey, xpub: hd.publicExtendedKey, parties: used.map((s) => s.party) };
  privateKey.fill(0);
  return out;
}
