// The credentials of the member self calls (docs/platform/account-holders.md "Member self calls";
// platform-api.md "Confidential exchange rules" 5), shared by every route under /account-holders/self:
// the BFF's bearer key (checked by the bearer hook and the route's permission), X-SVC-Publishable-Key
// and X-Member-Session-Id, validated as GET /member-auth/session validates them. The caller never names
// the member or the holder: such headers, body fields and query parameters are refused before validation.
import type { FastifyRequest } from 'fastify';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { principalOf, scopeOf } from '../../auth/bearer-auth.ts';
import { resolvePublishableKey } from '../../member-auth/publishable-keys.ts';
import type { MemberSessions } from '../../member-auth/member-sessions.ts';
import type { MemberSessionRecord } from '../../member-auth/member-session-records.ts';
import type { AccountHolderService } from '../../account-holders/account-holder-service.ts';
import type { AccountHolderRecord } from '../../account-holders/account-holder-records.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import { REFUSED_FIELDS, REFUSED_HEADERS } from './member-auth.ts';

/** Rule 5 for headers, known before the session is read: a caller naming the member or holder in a header. */
function refuseIdentityHeaders(req: FastifyRequest): void {
  const named = REFUSED_HEADERS.filter((h) => req.headers[h] !== undefined);
  if (named.length) throw new CustodyError('caller_identity_refused', `member calls take the member only from the server-held session (X-Member-Session-Id); refused: ${named.join(', ')}`);
}

const single = (v: string | string[] | undefined) => (Array.isArray(v) ? undefined : v);

export interface MemberSelfCalls {
  /**
   * An onRequest hook, after the bearer key's: the member session (X-SVC-Publishable-Key and
   * X-Member-Session-Id) is authentication, so it is checked before the body is read, the
   * Idempotency-Key looked at or the input validated (docs/platform/errors.md "Order of checks").
   */
  authenticateMember(req: FastifyRequest): Promise<void>;
  /** A preValidation hook: 400 caller_identity_refused when the caller names a member or holder. */
  refuseCallerIdentity(req: FastifyRequest): Promise<void>;
  /** The session (validated) and the open holder linked to its member; 404 account_holder_not_linked when none. */
  memberOfSession(req: FastifyRequest): Promise<{ holder: AccountHolderRecord; session: MemberSessionRecord }>;
}

export function memberSelfCalls(store: RecordRepository, holders: Pick<AccountHolderService, 'byMember'>, sessions: Pick<MemberSessions, 'validate'>): MemberSelfCalls {
  const authenticated = new WeakMap<FastifyRequest, MemberSessionRecord>();
  const validSession = async (req: FastifyRequest): Promise<MemberSessionRecord> => {
    const p = principalOf(req);
    const key = single(req.headers['x-svc-publishable-key']);
    const application = await resolvePublishableKey(store, p, key);
    return (await sessions.validate({ tenant: p.tenant, workspace: p.workspace, environment: p.environment, principal: p.keyId, publishable_key: key!, application }, single(req.headers['x-member-session-id']))).session;
  };
  return {
    // Rule 5: after the bearer key and permission, before validation: a caller naming the member or the holder is refused.
    refuseCallerIdentity: async (req) => {
      refuseIdentityHeaders(req);
      const named: string[] = [];
      const body = req.body;
      if (body && typeof body === 'object' && !Array.isArray(body)) named.push(...REFUSED_FIELDS.filter((f) => Object.hasOwn(body, f)));
      const query = req.query as Record<string, unknown> | undefined;
      if (query) named.push(...REFUSED_FIELDS.filter((f) => Object.hasOwn(query, f)));
      if (named.length) throw new CustodyError('caller_identity_refused', `member calls take the member only from the server-held session (X-Member-Session-Id); refused: ${named.join(', ')}`);
    },
    authenticateMember: async (req) => {
      refuseIdentityHeaders(req);
      authenticated.set(req, await validSession(req));
    },
    memberOfSession: async (req) => {
      const session = authenticated.get(req) ?? await validSession(req);
      const h = await holders.byMember(scopeOf(req), session.member_id);
      if (!h) throw new CustodyError('account_holder_not_linked', 'the session\'s member is linked to no open account holder; staff link one with member_id');
      return { holder: h, session };
    },
  };
}
