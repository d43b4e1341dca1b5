// A DKLs23 presignature: the output of the message-independent rounds. It is a single-use secret:
// signing two messages with one presignature reveals the key share. The object hands its secret out
// once (`take`), and encodes for sealed storage only while untaken; the caller records `id` as used
// durably before the online message leaves the node (DKLs23 §3.6, "presigning").
import { hexToBytes } from '@noble/hashes/utils.js';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { REDACTED, SecretBytes } from '../../../core/codec/secret.ts';
import { InputError, ProtocolBug } from '../../../core/errors/protocol-errors.ts';
import { exposeScalar, parseScalar } from '../math/curve.ts';
import { noblePrimitives, type Primitives } from '../math/primitives.ts';

/** A signer's public images from presigning: U_j = u_j·G, V_j = v_j·G, Φ_j = φ_j·G. */
export interface SignerImages {
  U: string;
  V: string;
  Phi: string;
}

export interface PresignatureData {
  id: string;
  sessionId: string;
  context: string;
  signers: number[];
  me: number;
  publicKey: string;
  R: string;
  /** Secret shares of r·φ and sk·φ, and the mask φ_i (32-byte scalars). */
  u: SecretBytes;
  v: SecretBytes;
  phi: SecretBytes;
  /** Every signer's images (public, echo-checked in the online round), by party. */
  images: Record<string, SignerImages>;
  /** Per signer, the digest of its round-3 broadcast as this party received it (for the online echo). */
  echo: Record<string, string>;
}

export class Presignature {
  #data: PresignatureData | undefined;
  readonly id: string;
  readonly R: string;
  readonly publicKey: string;
  readonly signers: number[];
  constructor(data: PresignatureData) {
    this.#data = { ...data, signers: [...data.signers], images: { ...data.images }, echo: { ...data.echo } };
    this.id = data.id;
    this.R = data.R;
    this.publicKey = data.publicKey;
    this.signers = [...data.signers];
  }
  get used(): boolean {
    return this.#data === undefined;
  }
  /** Hands the secret out once; a second call is a bug of the caller. */
  take(): PresignatureData {
    const d = this.#data;
    if (!d) throw new ProtocolBug(`presignature ${this.id} was already used`);
    this.#data = undefined;
    return d;
  }
  /** Sealed-storage bytes while unused; the stored copy is as single-use as this object. */
  encode(): Uint8Array {
    if (!this.#data) throw new ProtocolBug(`presignature ${this.id} was already used`);
    return encodeBlob('ecdsa-presignature', this.#data, { secrets: true });
  }
  toJSON(): string {
    return REDACTED;
  }
  toString(): string {
    return REDACTED;
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `Presignature(${this.id}, ${REDACTED})`;
  }
}

/** Sealed-storage form of an unused presignature (secret). */
export function encodePresignature(p: Presignature): Uint8Array {
  return p.encode();
}

/** A stored scalar: SecretBytes, or hex in a presignature stored before secrets had their own sections. */
function storedScalar(v: unknown): SecretBytes {
  if (v instanceof SecretBytes) {
    exposeScalar(v, 'presignature scalar');
    return v;
  }
  parseScalar(v, 'presignature scalar');
  return new SecretBytes(hexToBytes(v as string));
}

/**
 * A stored presignature, every point checked on the curve by `primitives` (the node's store passes its
 * native ones: eight decompressions for 2-of-3, over a millisecond in JavaScript at each signing).
 */
export function decodePresignature(bytes: Uint8Array, primitives: Pick<Primitives, 'point'> = noblePrimitives): Presignature {
  const d = decodeBlob<PresignatureData>('ecdsa-presignature', bytes, { secrets: true });
  if (!d || typeof d.id !== 'string' || !Array.isArray(d.signers)) throw new InputError('bad_encoding', 'not a presignature');
  primitives.point(d.R, 'R');
  primitives.point(d.publicKey, 'public key');
  d.u = storedScalar(d.u);
  d.v = storedScalar(d.v);
  d.phi = storedScalar(d.phi);
  if (typeof d.images !== 'object' || d.images === null || typeof d.echo !== 'object' || d.echo === null) throw new InputError('bad_encoding', 'presignature without signer images');
  for (const j of d.signers) {
    const im = d.images[String(j)];
    if (!im || typeof d.echo[String(j)] !== 'string') throw new InputError('bad_encoding', `presignature without images of signer ${j}`);
    for (const x of [im.U, im.V, im.Phi]) primitives.point(x, 'signer image');
  }
  return new Presignature(d);
}
