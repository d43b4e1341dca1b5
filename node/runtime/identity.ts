// A node's identity: an Ed25519 key that signs (attach challenges, node-to-node payloads) and an
// X25519 key that peers encrypt to. Created at first start and stored sealed under the storage key;
// the node id is derived from the signing key, so it is stable across restarts and cannot be claimed
// by another key.
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { randomBytes } from 'node:crypto';
import { toHex } from '../../common/bytes.ts';
import { nodeIdFor } from '../../core/trust/node-id.ts';
import type { SealedStore } from '../storage/sealed-store.ts';
import { BoundedMemo } from '../../common/memo.ts';
import { Ed25519Signer } from '../../common/ed25519.ts';

const IDENTITY_KEY = 'identity/v1';
const IDENTITY_VERSION = 1;

export interface PublicIdentity {
  nodeId: string;
  signingKey: Uint8Array;
  encryptionKey: Uint8Array;
}

export class NodeIdentity implements PublicIdentity {
  readonly nodeId: string;
  readonly signingKey: Uint8Array;
  readonly encryptionKey: Uint8Array;
  readonly #signingSecret: Uint8Array;
  readonly #encryptionSecret: Uint8Array;
  readonly #agreed = new BoundedMemo<Uint8Array>(4096);
  readonly #signer: Ed25519Signer;

  constructor(signingSecret: Uint8Array, encryptionSecret: Uint8Array) {
    this.#signingSecret = signingSecret;
    this.#encryptionSecret = encryptionSecret;
    this.signingKey = ed25519.getPublicKey(signingSecret);
    this.#signer = new Ed25519Signer(signingSecret);
    this.encryptionKey = x25519.getPublicKey(encryptionSecret);
    this.nodeId = nodeIdFor(this.signingKey);
  }

  sign(message: Uint8Array): Uint8Array {
    return this.#signer.sign(message);
  }

  /**
   * X25519 shared secret with a peer's encryption key, computed once per peer and kept for the life of
   * the process (like the identity secret itself). Callers must not modify or zero the result.
   */
  agree(peerEncryptionKey: Uint8Array): Uint8Array {
    return this.#agreed.get(toHex(peerEncryptionKey), () => x25519.getSharedSecret(this.#encryptionSecret, peerEncryptionKey));
  }

  toPublic(): PublicIdentity {
    return { nodeId: this.nodeId, signingKey: this.signingKey, encryptionKey: this.encryptionKey };
  }

  toJSON(): PublicIdentity {
    return this.toPublic();
  }

  serializeSecret(): Uint8Array {
    const out = new Uint8Array(65);
    out[0] = IDENTITY_VERSION;
    out.set(this.#signingSecret, 1);
    out.set(this.#encryptionSecret, 33);
    return out;
  }

  static deserializeSecret(blob: Uint8Array): NodeIdentity {
    if (blob.length !== 65 || blob[0] !== IDENTITY_VERSION) throw new Error('unknown identity record format');
    return new NodeIdentity(blob.slice(1, 33), blob.slice(33, 65));
  }

  /** Loads the stored identity, or creates and stores one on first start. */
  static async loadOrCreate(store: SealedStore): Promise<{ identity: NodeIdentity; created: boolean }> {
    const existing = await store.getSecret(IDENTITY_KEY);
    if (existing) return { identity: NodeIdentity.deserializeSecret(existing), created: false };
    const identity = new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)));
    const blob = identity.serializeSecret();
    await store.putSecret(IDENTITY_KEY, blob);
    blob.fill(0);
    return { identity, created: true };
  }
}
