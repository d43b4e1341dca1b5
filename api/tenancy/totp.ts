// RFC 6238 TOTP (HMAC-SHA-1, 30-second steps, 6 digits): the second factor behind an MFA verification.
import { hmac } from '@noble/hashes/hmac.js';
import { sha1 } from '@noble/hashes/legacy.js';
import { timingSafeEqual } from 'node:crypto';

export function totp(secret: Uint8Array, unixSeconds: number, digits = 6, step = 30): string {
  const counter = Math.floor(unixSeconds / step);
  const msg = new Uint8Array(8);
  new DataView(msg.buffer).setBigUint64(0, BigInt(counter));
  const mac = hmac(sha1, secret, msg);
  const off = mac[19]! & 0x0f;
  const bin = ((mac[off]! & 0x7f) << 24) | (mac[off + 1]! << 16) | (mac[off + 2]! << 8) | mac[off + 3]!;
  return (bin % 10 ** digits).toString().padStart(digits, '0');
}

/** Accepts the current step and one step either side (clock skew). */
export function verifyTotp(secret: Uint8Array, code: string, unixSeconds: number): boolean {
  if (!/^\d{6}$/.test(code)) return false;
  let ok = false;
  for (const d of [-30, 0, 30]) {
    ok = timingSafeEqual(Buffer.from(totp(secret, unixSeconds + d)), Buffer.from(code)) || ok;
  }
  return ok;
}
