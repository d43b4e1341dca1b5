// Server-held keys of the platform API, created once and kept in the store: the cursor MAC key, the
// MFA-token MAC key and the Ed25519 seed that signs webhooks (its public key is published).
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import type { RecordRepository } from './record-repository.ts';
import { META } from './meta.ts';

export interface ServerKeys {
  cursorKey: Uint8Array;
  mfaKey: Uint8Array;
  webhookSeed: Uint8Array;
  webhookPublicKey: Uint8Array;
}

interface Stored { cursor: string; mfa: string; webhook: string }

export async function loadServerKeys(store: RecordRepository): Promise<ServerKeys> {
  let s = (await META.in(store).get('server_keys')) as Stored | undefined;
  if (!s) {
    s = { cursor: randomBytes(32).toString('hex'), mfa: randomBytes(32).toString('hex'), webhook: randomBytes(32).toString('hex') };
    await META.in(store).put('server_keys', s);
  }
  const webhookSeed = Buffer.from(s.webhook, 'hex');
  return { cursorKey: Buffer.from(s.cursor, 'hex'), mfaKey: Buffer.from(s.mfa, 'hex'), webhookSeed, webhookPublicKey: ed25519.getPublicKey(webhookSeed) };
}
