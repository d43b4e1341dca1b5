// An anchor keeper's Ed25519 key: a 32-byte seed, as 64 hex characters in a file the keeper makes at its
// first start (mode 0600, in a directory of mode 0700) and reads at every later one. Its public key is
// what nodes pin (NODE_ROLLBACK_ANCHOR_KEEPER_KEYS); a keeper with another key is another keeper.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';

export interface KeeperKey {
  seed: Uint8Array;
  publicKey: Uint8Array;
  created: boolean;
}

export function loadOrCreateKeeperKey(path: string): KeeperKey {
  let created = false;
  if (!existsSync(path)) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const seed = randomBytes(32);
    writeFileSync(path, seed.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    seed.fill(0);
    created = true;
  }
  // The key signs what nodes take as the keeper's word: a file others can read is refused, as ssh does.
  const mode = statSync(path).mode & 0o777;
  if (mode & 0o077) throw new Error(`the keeper key file ${path} is readable by others (mode ${mode.toString(8)}): chmod 600 it`);
  const text = readFileSync(path, 'utf8').trim();
  if (!/^[0-9a-f]{64}$/i.test(text)) throw new Error(`the keeper key file ${path} must hold 64 hex characters`);
  const seed = new Uint8Array(Buffer.from(text, 'hex'));
  return { seed, publicKey: ed25519.getPublicKey(seed), created };
}
