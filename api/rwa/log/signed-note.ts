// Signed notes (C2SP signed-note v1.0.0): a text ending in a newline, a blank line, and signature lines
// `— <key name> base64(4-byte key ID || signature)`. Key IDs are SHA-256(name || 0x0A || type || public
// key)[:4]; verifier keys are `<name>+<hex key ID>+base64(type || public key)`. Ed25519 only (type 0x01
// for a log's own signature, 0x04 for a cosignature, c2sp-tlog-cosignature). Pure: no I/O.
import { sha256 } from '@noble/hashes/sha2.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { base64 } from '@scure/base';

export const SIG_ED25519 = 0x01;
export const SIG_COSIGNATURE_ED25519 = 0x04;
const EM_DASH = '\u2014';
/** Verifiers must accept at least 16 signatures; more than this many is refused as malformed. */
export const MAX_SIGNATURES = 64;

export class NoteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NoteError';
  }
}

const utf8 = new TextEncoder();

/** Any character below U+0020. */
function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) < 0x20) return true;
  return false;
}

/** A key name: non-empty, no Unicode spaces, no plus. */
export function validKeyName(name: string): boolean {
  return name.length > 0 && !/[\s+]/u.test(name) && !hasControl(name);
}

export function keyIdOf(name: string, type: number, publicKey: Uint8Array): Uint8Array {
  const n = utf8.encode(name);
  const b = new Uint8Array(n.length + 2 + publicKey.length);
  b.set(n, 0);
  b[n.length] = 0x0a;
  b[n.length + 1] = type;
  b.set(publicKey, n.length + 2);
  return sha256(b).slice(0, 4);
}

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

/** A verifier key: who signs, under which key ID, with which type and public key. */
export interface NoteVerifier {
  name: string;
  keyId: Uint8Array;
  type: number;
  publicKey: Uint8Array;
}

export function verifierOf(name: string, type: number, publicKey: Uint8Array): NoteVerifier {
  if (!validKeyName(name)) throw new NoteError('a key name must be non-empty, without spaces or +');
  return { name, keyId: keyIdOf(name, type, publicKey), type, publicKey };
}

export function encodeVkey(v: NoteVerifier): string {
  const material = new Uint8Array(1 + v.publicKey.length);
  material[0] = v.type;
  material.set(v.publicKey, 1);
  return `${v.name}+${hex(v.keyId)}+${base64.encode(material)}`;
}

/** Parses a vkey and checks that its key ID is the one its name, type and key give. */
export function parseVkey(vkey: string): NoteVerifier {
  // The name holds no plus and the ID is hex; the base64 key material may hold pluses of its own.
  const m = /^([^+]*)\+([^+]*)\+(.*)$/s.exec(vkey);
  if (!m) throw new NoteError('a verifier key is <name>+<hex key ID>+<base64 key>');
  const [, name, id, material] = m as unknown as [string, string, string, string];
  if (!validKeyName(name)) throw new NoteError('the verifier key\'s name is empty or holds a space');
  if (!/^[0-9a-f]{8}$/.test(id)) throw new NoteError('the verifier key\'s ID must be 8 lower-case hex digits');
  let bytes: Uint8Array;
  try {
    bytes = base64.decode(material);
  } catch {
    throw new NoteError('the verifier key\'s key material is not base64');
  }
  if (bytes.length !== 33) throw new NoteError('only Ed25519 verifier keys (type byte and 32-byte key) are supported');
  const v = verifierOf(name, bytes[0]!, bytes.slice(1));
  if (hex(v.keyId) !== id) throw new NoteError('the verifier key\'s ID does not match its name, type and key');
  return v;
}

export interface NoteSignature {
  name: string;
  keyId: Uint8Array;
  /** The signature bytes after the key ID. */
  signature: Uint8Array;
  /** The line as it appears in the note, with its newline. */
  line: string;
}

export interface Note {
  /** The note text, its final newline included. */
  text: string;
  signatures: NoteSignature[];
}

/** One signature line, `— name base64\n`. */
export function parseSignatureLine(line: string): NoteSignature {
  const m = /^\u2014 (\S+) ([A-Za-z0-9+/=]+)\n$/u.exec(line);
  if (!m || !validKeyName(m[1]!)) throw new NoteError('a signature line is "— <key name> <base64>"');
  let raw: Uint8Array;
  try {
    raw = base64.decode(m[2]!);
  } catch {
    throw new NoteError('a signature is not base64');
  }
  if (raw.length < 5) throw new NoteError('a signature is shorter than its key ID');
  return { name: m[1]!, keyId: raw.slice(0, 4), signature: raw.slice(4), line };
}

/** Splits a note into its text and signature lines; structure only, nothing verified. */
export function parseNote(note: string): Note {
  // No ASCII control character other than newline.
  if (hasControl(note.replaceAll('\n', ''))) throw new NoteError('a note holds a control character');
  if (!note.endsWith('\n')) throw new NoteError('a note ends with a newline');
  const cut = note.lastIndexOf('\n\n');
  if (cut < 0) throw new NoteError('a note has no blank line before its signatures');
  const text = note.slice(0, cut + 1);
  const lines = note.slice(cut + 2).split(/(?<=\n)/);
  if (lines.length === 0 || lines[0] === '') throw new NoteError('a note has no signature');
  if (lines.length > MAX_SIGNATURES) throw new NoteError(`a note has more than ${MAX_SIGNATURES} signatures`);
  return { text, signatures: lines.map(parseSignatureLine) };
}

const sameId = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/** The signatures of `note` made by `v` (same name and key ID); others are ignored as the spec says. */
export function signaturesBy(note: Note, v: NoteVerifier): NoteSignature[] {
  return note.signatures.filter((s) => s.name === v.name && sameId(s.keyId, v.keyId));
}

/** An Ed25519 signer of notes under `name` (type 0x01). The seed never leaves this object. */
export class NoteSigner {
  readonly verifier: NoteVerifier;
  readonly #seed: Uint8Array;

  constructor(name: string, seed: Uint8Array) {
    if (seed.length !== 32) throw new NoteError('an Ed25519 seed is 32 bytes');
    this.#seed = seed.slice();
    this.verifier = verifierOf(name, SIG_ED25519, ed25519.getPublicKey(this.#seed));
  }

  /** The signature line over `text` (which ends in a newline). */
  signatureLine(text: string): string {
    const sig = ed25519.sign(utf8.encode(text), this.#seed);
    const raw = new Uint8Array(4 + sig.length);
    raw.set(this.verifier.keyId, 0);
    raw.set(sig, 4);
    return `${EM_DASH} ${this.verifier.name} ${base64.encode(raw)}\n`;
  }

  /** The note: text, blank line, signature. */
  sign(text: string): string {
    if (!text.endsWith('\n')) throw new NoteError('a note text ends with a newline');
    return `${text}\n${this.signatureLine(text)}`;
  }

  toJSON(): string {
    return '<redacted>';
  }
}

/** Does `sig` verify as an Ed25519 (type 0x01) signature by `v` over `text`? */
export function verifyEd25519(text: string, sig: NoteSignature, v: NoteVerifier): boolean {
  if (v.type !== SIG_ED25519 || sig.name !== v.name || !sameId(sig.keyId, v.keyId) || sig.signature.length !== 64) return false;
  try {
    return ed25519.verify(sig.signature, utf8.encode(text), v.publicKey);
  } catch {
    return false;
  }
}

/** `note` verified under `v`: its text when a signature by `v` verifies and none by `v` fails. */
export function openNote(note: string, v: NoteVerifier): Note {
  const n = parseNote(note);
  const mine = signaturesBy(n, v);
  if (mine.length === 0) throw new NoteError(`the note has no signature by ${v.name}`);
  if (!mine.every((s) => verifyEd25519(n.text, s, v))) throw new NoteError(`a signature by ${v.name} does not verify`);
  return n;
}
