// Hosted tier: the end user's token that authorizes one signature (DESIGN.md "Trust", point 3). A JWT
// that verifies under the organization's registered JWKS, for its audience, short-lived, naming the
// bound end user when the vault has one and this exact intent by its SHA-256. The token itself is a
// bearer secret: it is never logged and no refusal message quotes it.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { createLocalJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { SessionRefused } from '../session-host.ts';
import type { EndUserAuthConfig } from './trust-state.ts';

export const END_USER_ALGORITHMS = ['ES256', 'EdDSA', 'RS256', 'PS256'];
export const END_USER_SKEW_SECONDS = 30;
export const END_USER_MAX_LIFETIME_SECONDS = 900;
const MAX_TOKEN_CHARS = 16 * 1024;

export interface EndUserCheck {
  token: string;
  config: EndUserAuthConfig | undefined;
  /** The subject bound to the vault at creation, if any. */
  subject?: string | undefined;
  /** The exact intent bytes being signed. */
  intent: Uint8Array;
  nowMs: number;
}

const refuse = (code: string, message: string): never => {
  throw new SessionRefused(code, message);
};

export async function checkEndUserToken(c: EndUserCheck): Promise<void> {
  if (!c.token) refuse('end_user_token_required', 'this hosted vault signs only with an end-user token');
  if (!c.config) return refuse('end_user_token_required', 'the organization has no end-user auth config on this node');
  if (c.token.length > MAX_TOKEN_CHARS) refuse('bad_end_user_token', 'the end-user token is too large');
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(c.token, createLocalJWKSet(c.config.jwks), {
      audience: c.config.audience,
      algorithms: END_USER_ALGORITHMS,
      clockTolerance: END_USER_SKEW_SECONDS,
      currentDate: new Date(c.nowMs),
      requiredClaims: ['exp', 'iat'],
    }));
  } catch {
    return refuse('bad_end_user_token', 'the end-user token does not verify under the organization\'s JWKS and audience, or has expired');
  }
  const now = Math.floor(c.nowMs / 1000);
  const { exp, iat } = payload as { exp: number; iat: number };
  if (iat > now + END_USER_SKEW_SECONDS) refuse('bad_end_user_token', 'the end-user token was issued in the future');
  if (exp - iat > END_USER_MAX_LIFETIME_SECONDS) refuse('bad_end_user_token', `an end-user token may live ${END_USER_MAX_LIFETIME_SECONDS} s at most`);
  if (c.subject !== undefined && payload.sub !== c.subject) refuse('wrong_end_user', 'the end-user token names another end user than the vault\'s');
  if (payload['intent_sha256'] !== bytesToHex(sha256(c.intent))) refuse('token_intent_mismatch', 'the end-user token authorizes another intent');
}
