// Hosted tier: the end user's token that authorizes one signature (DESIGN.md "Trust", point 3). A JWT
// that verifies under the organization's registered JWKS, for its audience, short-lived, naming the
// bound end user when the vault has one and this exact intent by its SHA-256. The token itself is a
// bearer secret: it is never logged and no refusal message quotes it. Or a member-action proof: the end
// user's fresh OIDC ID token whose nonce commits to the action binding the request carries and to this
// intent (docs/platform/member-actions.md), under the same registered JWKS and audience.
import { EndUserTokenError, verifyEndUserToken } from '../../../core/auth/end-user-token.ts';
import type { MemberActionBinding } from '../../../core/auth/member-action.ts';
import { SessionRefused } from '../session-host.ts';
import type { EndUserAuthConfig } from './trust-state.ts';

export interface EndUserCheck {
  token: string;
  config: EndUserAuthConfig | undefined;
  /** The subject bound to the vault at creation, if any. */
  subject?: string | undefined;
  /** The exact intent bytes being signed. */
  intent: Uint8Array;
  nowMs: number;
  /** With a member-action proof as `token`: the binding its nonce must commit to (core/auth/member-action.ts). */
  memberAction?: MemberActionBinding | undefined;
}

/** The API's own check (core/auth/end-user-token.ts), run by the node on its own copy of the config. */
export async function checkEndUserToken(c: EndUserCheck): Promise<void> {
  if (!c.token) throw new SessionRefused('end_user_token_required', 'this hosted vault signs only with an end-user token');
  if (!c.config) throw new SessionRefused('end_user_token_required', 'the organization has no end-user auth config on this node');
  try {
    await verifyEndUserToken({ jwks: { keys: c.config.jwks.keys }, audience: c.config.audience, ...(c.config.accountCenter ? { accountCenter: c.config.accountCenter } : {}) }, c.token, c.intent, c.subject ?? null, Math.floor(c.nowMs / 1000), c.memberAction);
  } catch (err) {
    if (err instanceof EndUserTokenError) throw new SessionRefused(err.reason, err.message);
    throw err;
  }
}
