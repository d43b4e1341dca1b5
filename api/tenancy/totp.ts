// RFC 6238 TOTP, the second factor behind an MFA verification (docs/platform/tenancy.md#mfa). The code
// itself (HMAC, dynamic truncation) is the `otpauth` library's; this module adds the policy: 30-second
// steps, 6 digits, one step of clock skew either way, and never a step at or before the last one accepted.
import { Secret, TOTP } from 'otpauth';
import { timingSafeEqual } from 'node:crypto';

export const TOTP_PERIOD = 30;
export const TOTP_DIGITS = 6;

export type TotpAlgorithm = 'SHA1' | 'SHA256' | 'SHA512';

/** The code for `unixSeconds`. The factor of a bearer key uses the defaults (SHA-1, 6 digits, 30 s). */
export function totp(secret: Uint8Array, unixSeconds: number, digits = TOTP_DIGITS, algorithm: TotpAlgorithm = 'SHA1'): string {
  return TOTP.generate({ secret: new Secret({ buffer: Uint8Array.from(secret).buffer }), algorithm, digits, period: TOTP_PERIOD, timestamp: unixSeconds * 1000 });
}

/** The time step (counter) `unixSeconds` falls in. */
export function totpStep(unixSeconds: number): number {
  return Math.floor(unixSeconds / TOTP_PERIOD);
}

/**
 * The latest time step, among the current one and one either side (clock skew), whose code is `code`
 * and which is after `lastAcceptedStep`; undefined when there is none. Whoever accepts the code must
 * then remember the step, so that the same code, or a code of an earlier step, is never accepted again.
 */
export function matchTotp(secret: Uint8Array, code: string, unixSeconds: number, lastAcceptedStep = -1): number | undefined {
  if (!/^\d{6}$/.test(code)) return undefined;
  const now = totpStep(unixSeconds);
  let found: number | undefined;
  for (const step of [now - 1, now, now + 1]) {
    const same = timingSafeEqual(Buffer.from(totp(secret, step * TOTP_PERIOD)), Buffer.from(code));
    if (same && step > lastAcceptedStep) found = step;
  }
  return found;
}
