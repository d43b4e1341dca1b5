// The proof-exchange store's encryption (platform-api.md "Confidential exchange rules" 9): an exchange
// record keeps the session result it returned (session id and refresh credential), so that a repeat of
// the same exchange_id with the same proof after a lost acknowledgement gets the same session. Those are
// bearer secrets, so the result is sealed with AES-256-GCM under a server key, with the record's id and
// the proof's key as associated data: a sealed blob moved to another record, or read with another
// proof, does not open.
//
// Blob: `v1.<iv base64url>.<ciphertext base64url>.<tag base64url>` (STYLE habit 6: versioned).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import { META } from '../store/meta.ts';

const VERSION = 'v1';

export class ExchangeCipher {
  readonly #key: Buffer;
  constructor(key: Uint8Array) {
    if (key.length !== 32) throw new CustodyError('bad_config', 'the member-auth exchange key must be 32 bytes (AES-256)');
    this.#key = Buffer.from(key);
  }

  seal(plaintext: string, aad: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.#key, iv);
    c.setAAD(Buffer.from(aad, 'utf8'));
    const ct = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
    return [VERSION, iv.toString('base64url'), ct.toString('base64url'), c.getAuthTag().toString('base64url')].join('.');
  }

  /** The plaintext, or undefined when the blob is malformed, of another version, or does not authenticate. */
  open(blob: string, aad: string): string | undefined {
    const [v, iv, ct, tag] = blob.split('.');
    if (v !== VERSION || !iv || ct === undefined || !tag) return undefined;
    try {
      const d = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
      d.setAAD(Buffer.from(aad, 'utf8'));
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }

  /** Never printed. */
  toJSON(): string {
    return '<redacted>';
  }
}

/** Reads a 32-byte key kept hex-encoded (64 hex digits, surrounding whitespace ignored) in a secret file. */
export async function readExchangeKeyFile(path: string): Promise<Uint8Array> {
  const text = (await readFile(path, 'utf8')).trim();
  if (!/^[0-9a-fA-F]{64}$/.test(text)) throw new CustodyError('bad_config', `${path} must hold the member-auth exchange key as 64 hex digits`);
  return Buffer.from(text, 'hex');
}

/**
 * The exchange key: the one given (from a secret file in production), or else a development default
 * generated once and kept in the store beside the other server keys (api/store/server-keys.ts). The
 * default keeps the sealed records unreadable to anyone who reads only those records, not to whoever
 * reads the whole store: a deployment gives its own key.
 */
export async function loadExchangeCipher(store: RecordRepository, key?: Uint8Array): Promise<ExchangeCipher> {
  if (key) return new ExchangeCipher(key);
  const meta = META.in(store);
  const stored = (await meta.get('member_auth_exchange_key')) as { key: string } | undefined;
  if (stored) return new ExchangeCipher(Buffer.from(stored.key, 'hex'));
  const fresh = randomBytes(32).toString('hex');
  // Two instances starting together on one new store must end with one key.
  await meta.insertIfAbsent('member_auth_exchange_key', { key: fresh });
  const kept = (await meta.get('member_auth_exchange_key')) as { key: string } | undefined;
  return new ExchangeCipher(Buffer.from(kept!.key, 'hex'));
}
