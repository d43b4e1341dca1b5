// A hosted member's factors (platform-api.md "Confidential exchange rules" 12, 13; docs/platform/
// account-center.md): one TOTP factor (RFC 6238: SHA-1, 6 digits, 30 s, as api/tenancy/totp.ts) and a
// set of ten recovery codes. The codes are stored only as HMAC-SHA-256 digests under a server key bound
// to the member (hosted-records.ts `HostedKeys.recoveryDigest`), each usable once; a new set replaces
// the old one. The Account Center and lost-all-factor recovery both use these functions; neither keeps
// a secret anywhere else.
import { randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { hexToBytes } from '@noble/hashes/utils.js';
import { matchTotp } from '../tenancy/totp.ts';
import {
  RECOVERY_CODES_PER_SET, newRecoveryCode, normalizeRecoveryCode, sameSecret,
  type HostedKeys, type HostedMemberRecord, type RecoveryCodeDigest,
} from './hosted-records.ts';

/** What a BFF may learn of a member's factors: no secret, no code, no digest. */
export interface FactorSummary {
  factors: ({ type: 'totp'; enrolled_at: string | null } | { type: 'passkey'; credential_id: string; enrolled_at: string })[];
  recovery_codes_remaining: number;
  restricted_until: string | null;
}

export function factorSummary(m: HostedMemberRecord): FactorSummary {
  return {
    factors: [
      ...(m.totp_secret ? [{ type: 'totp' as const, enrolled_at: m.totp_enrolled_at ?? null }] : []),
      ...(m.passkeys ?? []).map((p) => ({ type: 'passkey' as const, credential_id: p.credential_id, enrolled_at: p.created_at })),
    ],
    recovery_codes_remaining: recoveryCodesRemaining(m),
    restricted_until: m.restricted_until ?? null,
  };
}

export const recoveryCodesRemaining = (m: Pick<HostedMemberRecord, 'recovery_codes'>): number => (m.recovery_codes ?? []).filter((c) => c.used_at === null).length;

/** A new TOTP secret (160 bits, RFC 4226 §4's recommended length), hex. */
export const newTotpSecret = (): string => randomBytes(20).toString('hex');

/** The secret as an authenticator app takes it: base32 text and an otpauth:// URI. */
export function totpProvisioning(secretHex: string, issuer: string, account: string): { base32: string; uri: string } {
  const secret = Secret.fromHex(secretHex);
  const uri = new TOTP({ issuer, label: account, secret, algorithm: 'SHA1', digits: 6, period: 30 }).toString();
  return { base32: secret.base32, uri };
}

/** The time step a code of `secretHex` matches now (one step either side), after `lastStep`; undefined otherwise. */
export const totpStepOf = (secretHex: string, code: string | undefined, nowMs: number, lastStep: number | null): number | undefined =>
  matchTotp(hexToBytes(secretHex), (code ?? '').trim(), Math.floor(nowMs / 1000), lastStep ?? -1);

/** A new set: the codes to show once, and the digests to store. */
export function newRecoverySet(keys: HostedKeys, memberId: string): { codes: string[]; digests: RecoveryCodeDigest[] } {
  const codes = Array.from({ length: RECOVERY_CODES_PER_SET }, newRecoveryCode);
  return { codes, digests: codes.map((c) => ({ digest: keys.recoveryDigest(memberId, normalizeRecoveryCode(c)!), used_at: null })) };
}

/**
 * The index of the unused stored code `text` matches, or undefined. Every stored digest is compared, in
 * constant time, whatever matched first.
 */
export function matchRecoveryCode(keys: HostedKeys, m: HostedMemberRecord, text: string | undefined): number | undefined {
  const code = normalizeRecoveryCode(text);
  const given = keys.recoveryDigest(m.id, code ?? '');
  let found: number | undefined;
  (m.recovery_codes ?? []).forEach((c, i) => {
    if (sameSecret(c.digest, given) && c.used_at === null && code !== undefined) found = i;
  });
  return found;
}
