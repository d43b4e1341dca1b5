// POST /member-auth/proof/exchange (platform-api.md "Confidential exchange rules" 1, 4, 6, 9 and 11): a
// BYO OIDC ID token is verified against the application's pinned issuer, audience, JWKS, maximum age,
// ACR/AMR and a live challenge's nonce; accepted exactly once; resolved to the member's binding; and
// exchanged for a member session held by the BFF.
//
// Order, and why:
// 1. Under the exchange's own lock (workspace, application, exchange_id), a stored exchange with the same
//    proof is a retry after a lost acknowledgement: it gets the same session back, sealed in the record,
//    while its recovery window lasts and the session is still the current one. Another proof under the
//    same exchange_id is refused.
// 2. The proof is verified (network: the JWKS) outside any workspace lock.
// 3. Under the workspace's configuration lock, the one every configuration change holds
//    (member-auth-config.ts), the application is read again: a version other than the one the proof was
//    verified against means a concurrent trust change, and creation is refused (rule 6). The challenge,
//    the accepted-proof record and the binding are read there too, and everything (challenge used, proof
//    accepted, binding, family, session, refresh credential, sealed exchange record, audit entry) is
//    written in one batch: a refused exchange changes nothing, and a proof is accepted at most once.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { ExchangeCipher } from './exchange-cipher.ts';
import { configLock } from './member-auth-config.ts';
import { COLLECTIONS as C, type ApplicationRecord } from './member-auth-records.ts';
import type { MemberBindings } from './member-bindings.ts';
import { familyIndex, sameCaller, type MemberCaller, type MemberSessions } from './member-sessions.ts';
import {
  LIFETIMES, SESSION_COLLECTIONS as S, proofKey, retireIndex, sameDigest, sha256hex,
  type AcceptedProofRecord, type ChallengeRecord, type ExchangeRecord, type SessionFamilyRecord, type SessionGrant,
} from './member-session-records.ts';
import type { ProofVerifier } from './proof-verifier.ts';

export interface ProofExchangeOptions {
  store: RecordRepository;
  audit: AuditLog;
  cipher: ExchangeCipher;
  verifier: ProofVerifier;
  bindings: MemberBindings;
  sessions: MemberSessions;
  clock: () => number;
  /** Runs between verification and the commit: how tests put a configuration change exactly there. */
  afterVerify?: () => Promise<void>;
}

export interface ExchangeResult { grant: SessionGrant; recovered: boolean }

const invalid = (why: string) => new CustodyError('proof_invalid', `the provider proof was refused: ${why}`);

export class ProofExchange {
  constructor(private readonly o: ProofExchangeOptions) {}

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  async exchange(caller: MemberCaller, actor: Actor, exchangeId: string, token: string): Promise<ExchangeResult> {
    const app = caller.application;
    if (app.kind !== 'byo_oidc' || !app.byo_oidc) throw new CustodyError('forbidden', 'proof exchange is for the BYO OIDC application; a Hosted Auth application completes through /member-auth/hosted/authorizations/exchange');
    const recordId = `${caller.workspace}\x00${app.id}\x00${exchangeId}`;
    const pk = proofKey(app.byo_oidc.issuer, token);
    return this.o.store.exclusive(`member-auth-exchange:${recordId}`, async () => {
      const prior = await S.exchanges.in(this.o.store).get(recordId);
      if (prior) {
        const recovered = await this.recover(caller, prior, recordId, pk);
        if (recovered) return { grant: recovered, recovered: true };
      }
      const proof = await this.o.verifier.verify(token, app.byo_oidc!);
      await this.o.afterVerify?.();
      return this.o.store.exclusive(configLock(caller.workspace), () => this.commit(caller, actor, app, recordId, pk, proof, prior !== undefined));
    });
  }

  /** The stored result for a repeat of the same exchange, or undefined to process the request afresh. */
  private async recover(caller: MemberCaller, prior: ExchangeRecord, recordId: string, pk: string): Promise<SessionGrant | undefined> {
    if (!sameDigest(prior.proof_key, pk) || !sameCaller(prior, caller)) {
      throw new CustodyError('exchange_id_reused', 'this exchange_id was used with another proof or by another caller; use a new exchange_id for a new proof');
    }
    // Past the window, the request goes through as new, and is refused there: its proof was used.
    if (Date.parse(prior.recover_until) < this.o.clock()) return undefined;
    const plain = this.o.cipher.open(prior.sealed, `${recordId}\x00${pk}`);
    if (plain === undefined) throw new CustodyError('bug', 'a sealed exchange record does not open under the exchange key');
    const grant = JSON.parse(plain) as SessionGrant;
    const family = await S.families.in(this.o.store).get(prior.family);
    if (!family || family.status !== 'active' || !sameDigest(family.current_session, sha256hex(grant.session_id))) {
      throw new CustodyError('exchange_id_reused', 'the session this exchange created was already refreshed or ended: it was received; the member must sign in again for a new one');
    }
    return grant;
  }

  private async commit(caller: MemberCaller, actor: Actor, verifiedWith: ApplicationRecord, recordId: string, pk: string, proof: Awaited<ReturnType<ProofVerifier['verify']>>, hadRecord: boolean): Promise<ExchangeResult> {
    const { store, clock } = this.o;
    const current = await C.applications.in(store).get(verifiedWith.id);
    if (!current || current.version !== verifiedWith.version || current.publishable_key !== caller.publishable_key) {
      throw new CustodyError('member_auth_changed', 'the member-auth application changed while the proof was verified; no session was created: ask for a new challenge and a new proof');
    }
    const byo = current.byo_oidc!;
    const nonceHash = sha256hex(proof.nonce);
    const challenge = await S.challenges.in(store).get(nonceHash);
    // A challenge of another tenant, workspace or application is answered as an unknown one.
    if (!challenge || !sameDigest(challenge.nonce_sha256, nonceHash) || challenge.tenant !== caller.tenant || challenge.workspace !== caller.workspace || challenge.application !== current.id) {
      throw invalid('its nonce is not a challenge of this application (POST /v1/member-auth/proof/challenges)');
    }
    if (challenge.consumed_at !== null) throw new CustodyError('proof_replayed', 'the challenge this proof answers was already used: a proof is accepted once');
    const now = clock();
    if (Date.parse(challenge.expires_at) <= now) throw invalid('its challenge expired; ask for a new one');
    if (await S.acceptedProofs.in(store).get(pk)) throw new CustodyError('proof_replayed', 'this proof was already accepted');
    // The exchange record is written with the session; one left by an earlier window means a repeat.
    if (hadRecord) throw new CustodyError('bug', 'an exchange record exists for an unused proof');

    const { binding, create } = await this.o.bindings.resolve(caller, byo.provider_namespace, proof.issuer, proof.subject);
    const family: SessionFamilyRecord = {
      v: 1, id: newId('msf', now), tenant: caller.tenant, workspace: caller.workspace, application: current.id, publishable_key: caller.publishable_key,
      principal: caller.principal, member_id: binding.member_id, binding: binding.key, status: 'active', current_session: '',
      created_at: this.iso(now), expires_at: this.iso(now + LIFETIMES.family * 1000), revoked_at: null, revoked_reason: null,
      authenticated_at: this.iso(proof.authenticatedAt * 1000), acr: proof.acr, amr: proof.amr,
    };
    const minted = this.o.sessions.mint({ ...caller, application: current }, family);
    family.current_session = minted.sessionHash;
    const grant: SessionGrant = { ...minted.grant, member: { id: binding.member_id, created: create !== undefined } };
    const challengeRetire = challenge.retire_after;
    const proofRetire = new Date(Math.max(Date.parse(challengeRetire), (proof.expiresAt + LIFETIMES.clockTolerance) * 1000)).toISOString();
    const accepted: AcceptedProofRecord = { v: 1, id: pk, tenant: caller.tenant, workspace: caller.workspace, application: current.id, family: family.id, accepted_at: this.iso(now), retire_after: proofRetire };
    const exchangeRetire = this.iso(now + LIFETIMES.exchangeRecovery * 1000);
    const record: ExchangeRecord = {
      v: 1, id: recordId, tenant: caller.tenant, workspace: caller.workspace, application: current.id, principal: caller.principal, publishable_key: caller.publishable_key,
      proof_key: pk, family: family.id, created_at: this.iso(now), recover_until: exchangeRetire, retire_after: exchangeRetire,
      sealed: this.o.cipher.seal(JSON.stringify(grant), `${recordId}\x00${pk}`),
    };
    await store.batch([
      S.challenges.putOp(nonceHash, { ...challenge, consumed_at: this.iso(now) } satisfies ChallengeRecord, { index: retireIndex(challengeRetire) }),
      S.acceptedProofs.putOp(pk, accepted, { index: retireIndex(proofRetire) }),
      ...(create ? [create] : []),
      S.families.putOp(family.id, family, { index: familyIndex(family) }),
      ...minted.ops,
      S.exchanges.putOp(recordId, record, { index: retireIndex(exchangeRetire) }),
      this.o.audit.op(caller, actor, 'member_auth.session.create', family.id, null, {
        member_id: binding.member_id, application: current.id, application_version: current.version, binding_created: create !== undefined,
      }),
    ]);
    return { grant, recovered: false };
  }
}
