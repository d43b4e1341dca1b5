// The service's Account Center credential keys (docs/end-user-auth.md "Account Center passkeys"): one
// Ed25519 key per organization, derived from the server key, that signs the member credentials of
// passkeys enrolled on the Account Center. The nodes accept it only for an organization whose
// customer-signed end-user-auth registration names it (`account_center`, core/auth/member-credential.ts),
// so holding it gives the API nothing for a tenant that did not opt in. Per organization, so one
// tenant's opt-in names a key that counts for no other.
import { createHmac, createHash } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import type { AccountCenterOptIn } from '../../core/auth/member-credential.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';

export class AccountCenterKeys {
  /** `origin`: the service's public origin, where the Account Center page is served; undefined: none configured. */
  constructor(private readonly serverKey: Uint8Array, private readonly origin: string | undefined) {}

  /** The organization's Ed25519 seed (secret: it signs credentials). */
  seed(org: string): Uint8Array {
    return createHmac('sha256', this.serverKey).update('account-center-credential-v1\x00').update(org).digest();
  }

  /** The `account_center` member a customer puts in its end-user-auth registration to opt in. */
  optIn(org: string): AccountCenterOptIn {
    if (!this.origin) throw new CustodyError('unavailable', 'this service has no public URL (API_PUBLIC_URL): it serves no Account Center to enrol passkeys on');
    const pub = ed25519.getPublicKey(this.seed(org));
    const kid = `account-center-${createHash('sha256').update(pub).digest('hex').slice(0, 16)}`;
    return { jwk: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(pub).toString('base64url'), kid, alg: 'EdDSA' }, origin: new URL(this.origin).origin };
  }

  /** Whether a registration's opt-in names exactly this service's key for the organization and its origin. */
  registered(org: string, accountCenter: AccountCenterOptIn | undefined): boolean {
    if (!accountCenter || !this.origin) return false;
    const mine = this.optIn(org);
    return accountCenter.origin === mine.origin && accountCenter.jwk.kid === mine.jwk.kid && accountCenter.jwk.kty === 'OKP' && accountCenter.jwk.x === mine.jwk.x;
  }
}
