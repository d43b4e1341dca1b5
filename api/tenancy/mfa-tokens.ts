// Proof of a recent MFA verification (docs/platform/tenancy.md#mfa). The owner of a bearer key that
// has a TOTP factor posts a current code to POST /v1/mfa/verifications and receives a token bound to
// that key, valid for five minutes; sensitive operations (secret rotation) require it in the
// SVC-MFA-Token header. Format: base64url(JSON {k, v, e}) "." base64url(HMAC-SHA256).
import { createHmac, timingSafeEqual } from 'node:crypto';

export const MFA_TTL_SECONDS = 300;

export class MfaTokens {
  constructor(private readonly key: Uint8Array) {}

  private mac(p: string): Buffer {
    return createHmac('sha256', this.key).update(`mfa.${p}`).digest();
  }

  issue(keyId: string, nowSeconds: number): { token: string; verified_at: string; expires_at: string } {
    const p = Buffer.from(JSON.stringify({ k: keyId, v: nowSeconds, e: nowSeconds + MFA_TTL_SECONDS })).toString('base64url');
    return { token: `${p}.${this.mac(p).toString('base64url')}`, verified_at: new Date(nowSeconds * 1000).toISOString(), expires_at: new Date((nowSeconds + MFA_TTL_SECONDS) * 1000).toISOString() };
  }

  /** True for an untampered token of this key that has not expired. */
  check(token: string | undefined, keyId: string, nowSeconds: number): boolean {
    if (!token) return false;
    const [p, s, extra] = token.split('.');
    if (!p || !s || extra !== undefined) return false;
    const given = Buffer.from(s, 'base64url');
    const want = this.mac(p);
    if (given.length !== want.length || !timingSafeEqual(given, want)) return false;
    try {
      const v = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as { k?: unknown; v?: unknown; e?: unknown };
      return v.k === keyId && typeof v.e === 'number' && typeof v.v === 'number' && v.v <= nowSeconds + 30 && nowSeconds < v.e;
    } catch {
      return false;
    }
  }
}
