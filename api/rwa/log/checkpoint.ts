// Checkpoints (C2SP tlog-checkpoint v1.0.0) and their Ed25519 cosignatures (C2SP tlog-cosignature,
// type 0x04): the note text `<origin>\n<size>\n<base64 root>\n`, and a cosignature over
// `cosignature/v1\ntime <t>\n` followed by that text, its signature the 8-byte big-endian timestamp and
// the 64-byte Ed25519 signature. No extension lines are written; read ones are kept in the text. Pure.
import { ed25519 } from '@noble/curves/ed25519.js';
import { base64 } from '@scure/base';
import { HASH_SIZE } from './merkle.ts';
import { NoteError, SIG_COSIGNATURE_ED25519, type NoteSignature, type NoteVerifier } from './signed-note.ts';

export interface Checkpoint {
  origin: string;
  size: number;
  root: Uint8Array;
}

export function checkpointText(c: Checkpoint): string {
  if (c.origin.length === 0 || c.origin.includes('\n')) throw new NoteError('a checkpoint origin is one non-empty line');
  if (c.root.length !== HASH_SIZE) throw new NoteError('a checkpoint root is 32 bytes');
  return `${c.origin}\n${c.size}\n${base64.encode(c.root)}\n`;
}

/** The checkpoint a note text states; refuses a malformed one. */
export function parseCheckpointText(text: string): Checkpoint {
  const lines = text.split('\n');
  if (lines.length < 4 || lines[lines.length - 1] !== '') throw new NoteError('a checkpoint is at least three lines, each ending in a newline');
  const [origin, size, root] = lines as [string, string, string];
  if (origin === '') throw new NoteError('a checkpoint origin is non-empty');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(size) || !Number.isSafeInteger(Number(size))) throw new NoteError('a checkpoint size is a decimal without leading zeroes');
  if (lines.slice(3, -1).some((l) => l === '')) throw new NoteError('checkpoint extension lines are non-empty');
  let r: Uint8Array;
  try {
    r = base64.decode(root);
  } catch {
    throw new NoteError('a checkpoint root is base64');
  }
  if (r.length !== HASH_SIZE) throw new NoteError('a checkpoint root is 32 bytes');
  return { origin, size: Number(size), root: r };
}

const utf8 = new TextEncoder();

/** The message an Ed25519 cosignature signs. */
export function cosignedMessage(text: string, timestamp: bigint): Uint8Array {
  return utf8.encode(`cosignature/v1\ntime ${timestamp}\n${text}`);
}

/** A cosignature's timestamp, when it verifies under `v` (a type 0x04 key) over checkpoint `text`; else null. */
export function verifyCosignature(text: string, sig: NoteSignature, v: NoteVerifier): bigint | null {
  if (v.type !== SIG_COSIGNATURE_ED25519 || sig.name !== v.name || sig.signature.length !== 72) return null;
  if (!sig.keyId.every((x, i) => x === v.keyId[i])) return null;
  const timestamp = new DataView(sig.signature.buffer, sig.signature.byteOffset, 8).getBigUint64(0);
  if (timestamp > 2n ** 63n - 1n) return null;
  try {
    return ed25519.verify(sig.signature.slice(8), cosignedMessage(text, timestamp), v.publicKey) ? timestamp : null;
  } catch {
    return null;
  }
}
