// What the coordinator checks of every signer's result before it returns a signature (docs/sessions.md
// "Checked results"): each signature verifies over its digest under the key the request signs for,
// derived from the vault's group key and chain code alone (BIP-32 public derivation, then the BIP-341
// tweak for Taproot), and an ECDSA recovery id recovers that key. A signer whose result fails is named:
// the result is that node's own report, so the failure is evidence against it and nobody else.
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { equalBytes } from '@noble/curves/utils.js';
import { derive } from '../../core/keys/bip32.ts';
import { outputKey } from '../../core/keys/taproot.ts';
import { pointHex } from '../../core/keys/point.ts';
import type { SignResult } from '../../core/session/session-results.ts';

export type SignScheme = 'ecdsa' | 'taproot' | 'bip340';

/**
 * The key a signing of `path` verifies under: compressed (33 bytes) for ECDSA, x-only (32 bytes) for
 * BIP-340 (the derived key's even-y form) and Taproot (the BIP-341 output key of the derived key).
 */
export function expectedSigningKey(groupKey: string, chainCode: string, path: number[], scheme: SignScheme): Uint8Array {
  const derived = derive(groupKey, chainCode, path).publicKey;
  if (scheme === 'taproot') return outputKey(pointHex(derived));
  const compressed = derived.toBytes(true);
  return scheme === 'ecdsa' ? compressed : compressed.slice(1);
}

/** Why `result` is not a valid answer to a signing of `digests` under `key`; undefined when it is. */
export function signResultProblem(result: SignResult, digests: Uint8Array[], key: Uint8Array, scheme: SignScheme): string | undefined {
  if (result.signatures.length !== digests.length) return `${result.signatures.length} signatures for ${digests.length} digests`;
  if (!equalBytes(result.publicKey, key)) return 'the key it names is not the key of the requested path';
  for (let i = 0; i < digests.length; i++) {
    const sig = result.signatures[i]!;
    if (sig.length !== 64) return `signature ${i} is not 64 bytes`;
    if (scheme !== 'ecdsa') {
      if (!schnorr.verify(sig, digests[i]!, key)) return `signature ${i} does not verify (BIP-340) over its digest`;
      continue;
    }
    // High s is accepted here (the API normalizes it); a forged or misplaced signature is not.
    if (!secp256k1.verify(sig, digests[i]!, key, { prehash: false, lowS: false })) return `signature ${i} does not verify (ECDSA) over its digest`;
    const recovery = result.recoveryIds?.[i];
    if (recovery === undefined || !Number.isInteger(recovery) || recovery < 0 || recovery > 3) return `signature ${i} has no recovery id`;
    let recovered: Uint8Array | undefined;
    try {
      recovered = secp256k1.Signature.fromBytes(sig, 'compact').addRecoveryBit(recovery).recoverPublicKey(digests[i]!).toBytes(true);
    } catch {
      recovered = undefined;
    }
    if (!recovered || !equalBytes(recovered, key)) return `the recovery id of signature ${i} does not recover the key`;
  }
  return undefined;
}
