// The service's log key (docs/platform/transparency-log.md "The log key"): an Ed25519 seed from
// API_RWA_LOG_KEY_FILE (64 hex digits), or else one generated once and kept in the store's `meta` records,
// for development and tests. The seed is held only inside this object and never printed or logged.
import { readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import { META } from '../../store/meta.ts';
import { NoteSigner, SIG_ED25519, verifierOf, type NoteVerifier } from './signed-note.ts';

export class LogKey {
  readonly #seed: Uint8Array;
  readonly publicKey: Uint8Array;

  constructor(seed: Uint8Array) {
    if (seed.length !== 32) throw new CustodyError('bad_config', 'the log key is a 32-byte Ed25519 seed');
    this.#seed = seed.slice();
    this.publicKey = ed25519.getPublicKey(this.#seed);
  }

  /** The signer of one log: its key name is the log's origin (c2sp-tlog-checkpoint: "SHOULD match"). */
  signer(origin: string): NoteSigner {
    return new NoteSigner(origin, this.#seed);
  }

  verifier(origin: string): NoteVerifier {
    return verifierOf(origin, SIG_ED25519, this.publicKey);
  }

  toJSON(): string {
    return '<redacted>';
  }
}

export async function readLogKeyFile(path: string): Promise<LogKey> {
  const text = (await readFile(path, 'utf8')).trim();
  if (!/^[0-9a-fA-F]{64}$/.test(text)) throw new CustodyError('bad_config', `${path} must hold the log key (an Ed25519 seed) as 64 hex digits`);
  return new LogKey(Buffer.from(text, 'hex'));
}

/** The configured key, or the store's generated one (two instances starting on a new store end with one key). */
export async function loadLogKey(store: RecordRepository, file: string | undefined): Promise<LogKey> {
  if (file) return readLogKeyFile(file);
  const meta = META.in(store);
  await meta.insertIfAbsent('rwa_log_key', { seed: randomBytes(32).toString('hex') });
  const kept = (await meta.get('rwa_log_key')) as { seed: string };
  return new LogKey(Buffer.from(kept.seed, 'hex'));
}
