// Normalized email addresses and phone numbers, and the search hashes of both (docs/platform/
// account-holders.md "Search hashes"). A hash is SHA-256 of the normalized value, lower-case hex, so a
// customer's server computes it from what it already knows and searches without putting an address
// in a URL or a log line. It is a lookup key, not a secret: the values themselves are stored.
import { createHash } from 'node:crypto';

const EMAIL = /^[^\s@<>()[\]\\,;:"]{1,64}@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;
const E164 = /^\+[1-9][0-9]{6,14}$/;
export const SEARCH_HASH = /^[0-9a-f]{64}$/;

/** Trimmed, Unicode NFC, lower-cased; undefined when it is not a plausible address (at most 254 characters). */
export function normalizeEmail(raw: string): string | undefined {
  const v = raw.trim().normalize('NFC').toLowerCase();
  return v.length <= 254 && EMAIL.test(v) ? v : undefined;
}

/** Strict E.164 (`+` and 7 to 15 digits, no spaces or punctuation); nothing is guessed. */
export function normalizePhone(raw: string): string | undefined {
  return E164.test(raw) ? raw : undefined;
}

/** SHA-256 of the UTF-8 bytes of a normalized value, lower-case hex. */
export function searchHash(normalized: string): string {
  return createHash('sha256').update(normalized, 'utf8').digest('hex');
}
