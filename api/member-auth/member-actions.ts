// Member actions (platform-api.md "Fresh human authorization for member actions"; docs/platform/member-
// actions.md): a BFF freezes one exact operation for the member of its session (today: signing one intent
// from one wallet of a hosted vault with end-user auth), the member gives a fresh provider proof whose
// nonce commits to that operation, and the completed action yields a single-use signing session that
// POST /v1/transactions consumes.
//
// Why the nonce and not the API's word: the signer nodes trust nothing the API says. The nonce is
// SHA-256 over a domain tag, the action id, a fresh random salt and the SHA-256 of the intent bytes
// (core/auth/member-action.ts), and the identity provider signs it into the ID token. The API forwards
// the token with the action id and salt; each node recomputes the nonce from them and the intent it is
// asked to sign, and verifies the token under the organization's registered end-user-auth JWKS and
// audience, so a proof cannot be moved to another intent, action or salt.
import { randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { EndUserTokenError, intentSha256, verifyEndUserToken } from '../../core/auth/end-user-token.ts';
import { MEMBER_ACTION_ID, MEMBER_PROOF_MAX_AGE_S, memberActionBatchNonce, memberActionNonce, sameText } from '../../core/auth/member-action.ts';
import type { RecordRepository, Op } from '../store/record-repository.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { CustomerLinks } from '../customers/customer-links.ts';
import type { TransactionService, MemberSigning, MemberSigningClaim } from '../transactions/transaction-service.ts';
import { END_USER_AUTH } from '../vaults/collections.ts';
import type { ExchangeCipher } from './exchange-cipher.ts';
import type { ProofVerifier } from './proof-verifier.ts';
import { MAX_PROOF_AGE } from './member-auth-config.ts';
import { sameCaller, bindingOf, type MemberCaller, type MemberSessions } from './member-sessions.ts';
import { LIFETIMES, SESSION_COLLECTIONS as S, newSecret, proofKey, retireIndex, sameDigest, sha256hex, type AcceptedProofRecord } from './member-session-records.ts';
import {
  ACTION_COLLECTIONS as A, MEMBER_ACTION_LIMITS, PURPOSE_TYPES, SIGNING_SESSION_ID, pendingIndex,
  type BegunAction, type CompletedAction, type MemberActionRecord, type MemberActionStatus, type PasskeyProofSeal, type PurposeType, type SigningSessionRecord, type SigningSessionView,
} from './member-action-records.ts';
import { MEMBER_ACTION_BATCH_MAX, type MemberActionBinding, type PasskeyAssertion } from '../../core/session/member-action-binding.ts';
import { MEMBER_ID } from './hosted-records.ts';
import { hostedMemberActive } from './hosted-members.ts';

export interface MemberActionsOptions {
  store: RecordRepository;
  audit: AuditLog;
  sessions: MemberSessions;
  verifier: ProofVerifier;
  cipher: ExchangeCipher;
  links: CustomerLinks;
  transactions: TransactionService;
  clock: () => number;
  /** Origin the signing_url locator is written under (API_PUBLIC_URL); relative when absent. */
  publicOrigin?: string | undefined;
}

export type BeginInput =
  | { kind: 'transaction.sign'; wallet_id: string; intent: string }
  | { kind: 'transaction.sign_batch'; wallet_id: string; intents: string[]; purpose?: { type: PurposeType; id: string } | undefined };

/** What a purpose's authorizer is asked to check (a batch action with `purpose`). */
export interface PurposeCheck {
  tenant: string;
  workspace: string;
  org: string;
  purposeId: string;
  walletId: string;
  vaultId: string;
  /** The exact intent bytes, in the order the nonce commits to them; `intentSha256` the same order, hex. */
  intents: Uint8Array[];
  intentSha256: string[];
  actionId: string;
  /** The member of the session (a hosted member id, or the BYO member id) and its provider subject. */
  memberId: string;
  subject: string;
  now: number;
}

/**
 * The owner of a purpose (payments, escrows): `authorize` throws a CustodyError when the intents are not
 * exactly what the purpose needs from this wallet, or this member may not approve it; else it returns the
 * ops that record the action on the purpose, committed in the batch that stores the action. It runs
 * under `store.exclusive(purposeLock(type, id))`: every write of the purpose's state must hold that
 * lock too, so a cancel and a begin cannot interleave.
 */
export interface PurposeAuthorizer {
  authorize(c: PurposeCheck): Promise<Op[]>;
}

/** The lock a purpose's state changes hold (PurposeAuthorizer). */
export const purposeLock = (type: PurposeType, id: string) => `member-action-purpose:${type}:${id}`;

/** A batch action's intents and what became of them (MemberActions.batchTransactions). */
export interface BatchTransactions {
  status: MemberActionStatus;
  /** When the action (pending) or its signing session (completed) stops being usable. */
  expires_at: string;
  intents: { intent_sha256: string; transaction_id: string | null }[];
}

const notFound = () => new CustodyError('not_found', 'no such member action');

/** The SHA-256 of every intent an action approves, in order: one for transaction.sign. */
const digestsOf = (a: { batch?: { sha256: string[] } | undefined; intent_sha256: string }) => a.batch?.sha256 ?? [a.intent_sha256];
/** The nonce the proof of an action must carry (core/auth/member-action.ts). */
const nonceOf = (a: MemberActionRecord) => (a.batch ? memberActionBatchNonce(a.id, hexToBytes(a.salt), a.batch.sha256) : memberActionNonce(a.id, hexToBytes(a.salt), a.intent_sha256));
/** The binding the nodes get beside the proof (without a passkey assertion). */
const bindingOfAction = (a: Pick<MemberActionRecord, 'batch' | 'salt'> & { id: string }): MemberActionBinding => ({
  actionId: a.id, salt: hexToBytes(a.salt), ...(a.batch ? { batch: a.batch.sha256.map((d) => hexToBytes(d)) } : {}),
});
const sealLabel = (hash: string) => `member-signing-v1\x00${hash}`;

/** Canonical base64 of the intent bytes, or invalid_request. */
function intentBytesOf(b64: string): Uint8Array {
  const bytes = Buffer.from(b64, 'base64');
  if (bytes.length === 0 || bytes.toString('base64') !== b64) throw new CustodyError('invalid_request', 'intent: not canonical base64 of the intent bytes');
  return new Uint8Array(bytes);
}

/** The assertion's parts as bytes; each must be canonical base64url (validation_failed otherwise). */
function passkeyOf(a: PasskeyProofSeal['assertion']): PasskeyAssertion {
  const bytes = (v: string, what: string) => {
    const b = Buffer.from(v, 'base64url');
    if (b.length === 0 || b.toString('base64url') !== v) throw new CustodyError('validation_failed', `assertion.${what}: not canonical base64url`);
    return new Uint8Array(b);
  };
  return { credentialId: bytes(a.id, 'id'), authenticatorData: bytes(a.authenticator_data, 'authenticator_data'), clientDataJson: bytes(a.client_data_json, 'client_data_json'), signature: bytes(a.signature, 'signature') };
}

export class MemberActions {
  private readonly purposes = new Map<PurposeType, PurposeAuthorizer>();

  constructor(private readonly o: MemberActionsOptions) {}

  /** Serves batch actions with `purpose.type` `type` (payments, escrows): one authorizer per type. */
  registerPurpose(type: PurposeType, authorizer: PurposeAuthorizer): void {
    if (!PURPOSE_TYPES.includes(type)) throw new Error(`unknown member-action purpose ${type}`);
    if (this.purposes.has(type)) throw new Error(`member-action purpose ${type} is already served`);
    this.purposes.set(type, authorizer);
  }

  /**
   * A batch action's intents and the transaction made from each (a one-intent action answers its one);
   * undefined for an unknown action. `expires_at` is the action's while it waits for a proof, its signing
   * session's once completed.
   */
  async batchTransactions(actionId: string): Promise<BatchTransactions | undefined> {
    if (!MEMBER_ACTION_ID.test(actionId)) return undefined;
    const a = await A.actions.in(this.o.store).get(actionId);
    if (!a) return undefined;
    const signing = a.signing_session ? await A.signing.in(this.o.store).get(a.signing_session) : undefined;
    const ids = a.batch?.transaction_ids ?? [a.transaction_id];
    return {
      status: a.status, expires_at: signing?.expires_at ?? a.expires_at,
      intents: digestsOf(a).map((d, i) => ({ intent_sha256: d, transaction_id: ids[i] ?? null })),
    };
  }

  /**
   * Revokes an action nothing was signed from yet, with `extra`'s ops in the same batch: under the
   * organization's transaction lock, the one POST /v1/transactions uses a signing session under, so of a
   * revoke and a submission exactly one wins. With an intent already submitted nothing changes and
   * `usedAny` is true. An unknown action commits `extra` alone.
   */
  async revoke(org: string, actionId: string, extra: () => Promise<Op[]>): Promise<{ usedAny: boolean }> {
    const { store } = this.o;
    return this.o.transactions.exclusive(org, async () => {
      const a = MEMBER_ACTION_ID.test(actionId) ? await A.actions.in(store).get(actionId) : undefined;
      if (a && a.org !== org) throw new CustodyError('bug', 'a member action was revoked for another organization');
      if (a && (a.transaction_id !== null || a.batch?.transaction_ids.some((t) => t !== null))) return { usedAny: true };
      const ops: Op[] = [];
      const at = this.iso();
      if (a && a.status !== 'revoked') {
        ops.push(A.actions.putOp(a.id, { ...a, status: 'revoked', revoked_at: at }, a.status === 'pending_proof' ? { unindex: pendingIndex(a) } : {}));
        const signing = a.signing_session ? await A.signing.in(store).get(a.signing_session) : undefined;
        if (signing) ops.push(A.signing.putOp(a.signing_session!, { ...signing, status: 'revoked', sealed_proof: null }));
      }
      await store.batch([...ops, ...(await extra())]);
      return { usedAny: false };
    });
  }

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  /** POST /member-actions: freezes the operation for the session's member and returns what the proof must carry. */
  async begin(caller: MemberCaller, actor: Actor, sessionId: string | undefined, input: BeginInput): Promise<BegunAction> {
    const { store, clock } = this.o;
    const { session, family } = await this.o.sessions.validate(caller, sessionId);
    // A BYO member is its provider subject; a Hosted Auth member is its hosted subject id (hsub_…).
    const subject = caller.application.kind === 'hosted' ? session.member_id : (await S.bindings.in(store).get(session.binding))!.subject;
    const encoded = input.kind === 'transaction.sign' ? [input.intent] : input.intents;
    if (input.kind === 'transaction.sign_batch' && (encoded.length < 1 || encoded.length > MEMBER_ACTION_BATCH_MAX)) {
      throw new CustodyError('invalid_request', `intents: 1 to ${MEMBER_ACTION_BATCH_MAX} intents`);
    }
    const list = encoded.map((b64) => intentBytesOf(b64));
    const digests = list.map((b) => intentSha256(b));
    if (new Set(digests).size !== digests.length) throw new CustodyError('invalid_request', 'intents: the same intent appears twice');
    const purpose = input.kind === 'transaction.sign_batch' ? input.purpose : undefined;
    const authorizer = purpose ? this.purposes.get(purpose.type) : undefined;
    if (purpose && !authorizer) throw new CustodyError('invalid_request', `purpose.type: ${purpose.type} is not served here`);
    // The wallet of the organization linked to this workspace, and nothing else: another one is unknown.
    const org = await this.o.links.orgOfWorkspace(caller);
    if (!org) throw new CustodyError('not_found', 'no such wallet');
    // Every intent is checked as POST /v1/transactions checks it, for the one wallet.
    let checked: Awaited<ReturnType<TransactionService['checkIntentFor']>> | undefined;
    for (const bytes of list) checked = await this.o.transactions.checkIntentFor(org, input.wallet_id, bytes);
    const { wallet, vault } = checked!;
    if (vault.tier !== 'hosted' || !vault.end_user_auth) {
      throw new CustodyError('member_action_unsupported', 'the wallet\'s vault is not a hosted vault with end-user authentication: its transactions need no member action');
    }
    if (vault.end_user_subject !== null && vault.end_user_subject !== subject) {
      throw new CustodyError('member_subject_mismatch', 'the wallet\'s vault is bound to another end user than this member');
    }
    const byo = caller.application.byo_oidc;
    const now = clock();
    const action: MemberActionRecord = {
      v: 1, id: newSecret('mac_'), kind: input.kind, ...bindingOf(caller), family: family.id, member_id: session.member_id, binding: session.binding,
      subject, application_version: session.application_version, org, wallet_id: wallet.id, vault_id: vault.id,
      intent: bytesToHex(list[0]!), intent_sha256: digests[0]!, salt: bytesToHex(randomBytes(32)), status: 'pending_proof',
      ...(input.kind === 'transaction.sign_batch' ? { batch: { intents: list.map((b) => bytesToHex(b)), sha256: digests, transaction_ids: digests.map(() => null) } } : {}),
      ...(purpose ? { purpose: { type: purpose.type, id: purpose.id } } : {}),
      created_at: this.iso(now), expires_at: this.iso(now + MEMBER_ACTION_LIMITS.actionLifetime * 1000), completed_at: null, signing_session: null, used_at: null, transaction_id: null,
    };
    const commit = async (purposeOps: () => Promise<Op[]>) => store.exclusive(`member-actions:${caller.application.id}:${session.member_id}`, async () => {
      const indexed = await A.actions.in(store).byIndex(`${caller.application.id}\x00${session.member_id}\x00`, 100);
      const pending = indexed.filter((a) => a.status === 'pending_proof' && Date.parse(a.expires_at) > now);
      if (pending.length >= MEMBER_ACTION_LIMITS.pendingPerMember) {
        throw new CustodyError('member_action_limit', `the member has ${MEMBER_ACTION_LIMITS.pendingPerMember} pending member actions; complete them or let them expire`);
      }
      // Expired actions leave the pending index here, so it stays as short as the bound.
      const lapsed = indexed.filter((a) => !pending.includes(a));
      const extra = await purposeOps();
      await store.batch([
        ...lapsed.map((a) => A.actions.putOp(a.id, a, { unindex: pendingIndex(a) })),
        A.actions.putOp(action.id, action, { index: pendingIndex(action) }),
        ...extra,
        this.o.audit.op(caller, actor, 'member_action.begin', action.id, null, {
          kind: action.kind, member_id: action.member_id, wallet_id: action.wallet_id, intent_sha256: action.intent_sha256,
          ...(action.batch ? { intents_sha256: action.batch.sha256 } : {}), ...(purpose ? { purpose_type: purpose.type, purpose_id: purpose.id } : {}),
        }),
      ]);
    });
    if (purpose && authorizer) {
      // The purpose's lock around the authorizer's check and the commit: a cancel of the purpose waits.
      await store.exclusive(purposeLock(purpose.type, purpose.id), () => commit(() => authorizer.authorize({
        tenant: caller.tenant, workspace: caller.workspace, org, purposeId: purpose.id, walletId: wallet.id, vaultId: vault.id, intents: list, intentSha256: digests,
        actionId: action.id, memberId: session.member_id, subject, now,
      })));
    } else {
      await commit(async () => []);
    }
    return {
      id: action.id, status: 'pending_proof', kind: action.kind, wallet_id: action.wallet_id, intent_sha256: action.intent_sha256,
      ...(action.batch ? { intents_sha256: action.batch.sha256 } : {}), ...(action.purpose ? { purpose: action.purpose } : {}), expires_at: action.expires_at,
      proof: {
        nonce: nonceOf(action),
        // The nodes accept a proof at most MEMBER_PROOF_MAX_AGE_S old, whatever the application allows.
        ...(byo ? { max_age: Math.min(byo.max_proof_age_sec ?? MAX_PROOF_AGE.default, MEMBER_PROOF_MAX_AGE_S), prompt: 'login' as const } : {}),
        ...(byo?.required_acr.length ? { acr_values: byo.required_acr.join(' ') } : {}),
        ...(byo?.required_amr.length ? { required_amr: byo.required_amr } : {}),
      },
    };
  }

  /** The action `id` of this caller's sign-in; any other (another session, member, application, tenant) is unknown. */
  private async own(caller: MemberCaller, familyId: string, memberId: string, id: string): Promise<MemberActionRecord> {
    if (!MEMBER_ACTION_ID.test(id)) throw notFound();
    const a = await A.actions.in(this.o.store).get(id);
    if (!a || !sameCaller(a, caller) || a.family !== familyId || a.member_id !== memberId) throw notFound();
    return a;
  }

  /** POST /member-actions/external/complete: verifies the fresh proof for the action and opens a signing session. */
  async complete(caller: MemberCaller, actor: Actor, sessionId: string | undefined, actionId: string, token: string): Promise<CompletedAction> {
    const { store, clock } = this.o;
    const { session, family } = await this.o.sessions.validate(caller, sessionId);
    const action = await this.own(caller, family.id, session.member_id, actionId);
    const byo = caller.application.byo_oidc!;
    const pk = proofKey(byo.issuer, token);
    if (await S.acceptedProofs.in(store).get(pk)) throw new CustodyError('proof_replayed', 'this proof was already accepted');
    this.checkPending(caller, action);

    // Signature, issuer, audience, expiry, ACR and AMR as the exchange checks them; the age below, with its own code.
    const proof = await this.o.verifier.verify(token, { ...byo, max_proof_age_sec: MAX_PROOF_AGE.max });
    const claims = decodeJwt(token);
    const now = clock();
    const nowS = now / 1000;
    if (typeof claims.auth_time !== 'number') throw new CustodyError('proof_invalid', 'the provider proof was refused: auth_time is required for a member action (send max_age or prompt=login)');
    const maxAge = Math.min(byo.max_proof_age_sec, MEMBER_PROOF_MAX_AGE_S);
    for (const [what, at] of [['auth_time', claims.auth_time], ['iat', claims.iat!]] as const) {
      if (nowS - at > maxAge + LIFETIMES.clockTolerance) throw new CustodyError('member_proof_stale', `the proof's ${what} is more than ${maxAge} s old: the member must authenticate again`);
    }
    if (proof.subject !== action.subject) throw new CustodyError('member_subject_mismatch', 'the proof names another subject than the member of this action');
    if (!sameText(proof.nonce, nonceOf(action))) {
      throw new CustodyError('member_action_mismatch', 'the proof\'s nonce is not this action\'s: send the nonce POST /v1/member-actions returned');
    }
    await this.nodeCheck(action, token, nowS);

    const fresh = Math.min(claims.auth_time, claims.iat!);
    const expires = Math.min(now + MEMBER_ACTION_LIMITS.signingLifetime * 1000, (fresh + MEMBER_PROOF_MAX_AGE_S) * 1000, proof.expiresAt * 1000);
    const retire = this.iso(Math.max(now + LIFETIMES.replayWindow * 1000, (proof.expiresAt + LIFETIMES.clockTolerance) * 1000));
    const accepted: AcceptedProofRecord = { v: 1, id: pk, tenant: caller.tenant, workspace: caller.workspace, application: caller.application.id, family: family.id, accepted_at: this.iso(now), retire_after: retire };
    return this.openSigning(caller, actor, action, token, undefined, expires, async () => {
      if (await S.acceptedProofs.in(store).get(pk)) throw new CustodyError('proof_replayed', 'this proof was already accepted');
      return [S.acceptedProofs.putOp(pk, accepted, { index: retireIndex(retire) })];
    });
  }

  /**
   * POST /member-actions/passkey/complete: the member's WebAuthn assertion over the action's nonce, by a
   * passkey the customer vouched for with a member credential (core/auth/member-credential.ts). The API
   * runs the nodes' check and opens a signing session; each node checks it again.
   */
  async completePasskey(caller: MemberCaller, actor: Actor, sessionId: string | undefined, actionId: string, credential: string, assertion: PasskeyProofSeal['assertion']): Promise<CompletedAction> {
    const { clock } = this.o;
    const { session, family } = await this.o.sessions.validate(caller, sessionId);
    const action = await this.own(caller, family.id, session.member_id, actionId);
    this.checkPending(caller, action);
    const passkey = passkeyOf(assertion);
    const now = clock();
    await this.nodeCheck(action, credential, now / 1000, passkey);
    // The nodes hold the credential to the vault's bound subject; the API also to the member of the action.
    const claims = decodeJwt(credential);
    if (claims.sub !== action.subject) throw new CustodyError('member_subject_mismatch', 'the member credential names another subject than the member of this action');
    const expires = Math.min(now + MEMBER_ACTION_LIMITS.signingLifetime * 1000, claims.exp! * 1000);
    const seal: PasskeyProofSeal = { credential, assertion };
    return this.openSigning(caller, actor, action, JSON.stringify(seal), 'passkey', expires, async () => []);
  }

  private checkPending(caller: MemberCaller, action: MemberActionRecord): void {
    if (action.status !== 'pending_proof') throw new CustodyError('member_action_not_pending', `the member action is ${action.status}`);
    if (Date.parse(action.expires_at) <= this.o.clock()) throw new CustodyError('member_action_expired', 'the member action expired; begin a new one');
    if (action.application_version !== caller.application.version) throw new CustodyError('member_auth_changed', 'the member-auth application changed since the action began');
  }

  /** The action completed and its signing session stored, in one batch under the action's lock, with `extra` (checked there). */
  private async openSigning(caller: MemberCaller, actor: Actor, action: MemberActionRecord, proof: string, kind: 'passkey' | undefined, expires: number, extra: () => Promise<Op[]>): Promise<CompletedAction> {
    const { store } = this.o;
    const now = this.o.clock();
    const signingId = newSecret('mas_');
    const hash = sha256hex(signingId);
    return store.exclusive(`member-action:${action.id}`, async () => {
      const current = (await A.actions.in(store).get(action.id))!;
      const extraOps = await extra();
      if (current.status !== 'pending_proof') throw new CustodyError('member_action_not_pending', `the member action is ${current.status}`);
      const signing: SigningSessionRecord = {
        v: 1, ...bindingOf(caller), action_id: action.id, family: action.family, member_id: action.member_id, binding: action.binding, org: action.org,
        wallet_id: action.wallet_id, vault_id: action.vault_id, intent_sha256: action.intent_sha256, salt: action.salt, status: 'active',
        ...(action.batch ? { batch: { sha256: action.batch.sha256, transaction_ids: action.batch.transaction_ids } } : {}),
        sealed_proof: this.o.cipher.seal(proof, sealLabel(hash)), ...(kind ? { proof_kind: kind } : {}), created_at: this.iso(now), expires_at: this.iso(expires), used_at: null, transaction_id: null,
      };
      await store.batch([
        A.actions.putOp(action.id, { ...current, status: 'completed', completed_at: this.iso(now), signing_session: hash }, { unindex: pendingIndex(current) }),
        ...extraOps,
        A.signing.putOp(hash, signing),
        this.o.audit.op(caller, actor, 'member_action.complete', action.id, { status: 'pending_proof' }, { status: 'completed', member_id: action.member_id, wallet_id: action.wallet_id, ...(kind ? { proof: kind } : {}) }),
      ]);
      return {
        id: action.id, status: 'completed',
        signing_session: { id: signingId, signing_url: `${this.o.publicOrigin ?? ''}/v1/member-actions/signing-sessions/${signingId}`, expires_at: signing.expires_at },
      };
    });
  }

  /**
   * The nodes' own check (core/auth/end-user-token.ts) against the organization's end-user-auth
   * registration, run now: a configuration the nodes would refuse (another JWKS, an audience that is not
   * the OIDC client id) is reported at completion, not as a rejected transaction later.
   */
  private async nodeCheck(action: MemberActionRecord, token: string, nowS: number, passkey?: PasskeyAssertion): Promise<void> {
    const config = await END_USER_AUTH.in(this.o.store).get(action.org);
    if (!config) throw new CustodyError('member_proof_not_signable', 'the organization has no end-user-auth registration (PUT /v1/config/end-user-auth): the nodes would refuse every member action');
    try {
      // Each intent of a batch, as each node will check it when asked to sign that intent.
      for (const hex of action.batch?.intents ?? [action.intent]) {
        const vault = await this.o.transactions.checkIntentFor(action.org, action.wallet_id, hexToBytes(hex)).then((r) => r.vault);
        await verifyEndUserToken(config, token, hexToBytes(hex), vault.end_user_subject, Math.floor(nowS), { ...bindingOfAction(action), ...(passkey ? { passkey } : {}) });
      }
    } catch (err) {
      if (!(err instanceof EndUserTokenError)) throw err;
      throw new CustodyError('member_proof_not_signable', `the signer nodes would refuse this proof (${err.reason}) under the organization's end-user-auth registration, which must hold the identity provider's JWKS and the OIDC client id as audience (docs/end-user-auth.md): ${err.message}`);
    }
  }

  /** GET /member-actions/signing-sessions/{id}: the status and frozen operation, for the sign-in that made it. */
  async signingSession(caller: MemberCaller, sessionId: string | undefined, id: string): Promise<SigningSessionView> {
    const { family } = await this.o.sessions.validate(caller, sessionId);
    const r = SIGNING_SESSION_ID.test(id) ? await A.signing.in(this.o.store).get(sha256hex(id)) : undefined;
    if (!r || !sameCaller(r, caller) || r.family !== family.id) throw new CustodyError('not_found', 'no such signing session');
    const status = r.status !== 'active' ? r.status : Date.parse(r.expires_at) <= this.o.clock() ? 'expired' : 'active';
    return {
      status, expires_at: r.expires_at, action_id: r.action_id,
      operation: { kind: r.batch ? 'transaction.sign_batch' : 'transaction.sign', wallet_id: r.wallet_id, intent_sha256: r.intent_sha256, ...(r.batch ? { intents_sha256: r.batch.sha256 } : {}) },
      transaction_id: r.batch ? r.batch.transaction_ids[0]! : r.transaction_id, ...(r.batch ? { transaction_ids: r.batch.transaction_ids } : {}),
    };
  }

  /** Whether the member of a signing session is still active: its BYO binding, or its hosted membership. */
  private async memberActive(r: SigningSessionRecord): Promise<boolean> {
    if (MEMBER_ID.test(r.binding)) return hostedMemberActive(this.o.store, { tenant: r.tenant, workspace: r.workspace, application: r.application }, r.binding);
    const binding = await S.bindings.in(this.o.store).get(r.binding);
    return !!binding && binding.status === 'active';
  }

  /** What POST /v1/transactions calls (TransactionService.useMemberSigning). */
  readonly signing: MemberSigning = {
    claim: async (org, walletId, intentHash, id): Promise<MemberSigningClaim> => {
      const { store } = this.o;
      const hash = SIGNING_SESSION_ID.test(id) ? sha256hex(id) : undefined;
      const r = hash ? await A.signing.in(store).get(hash) : undefined;
      // Another organization's session is answered as an unknown one.
      if (!hash || !r || r.org !== org) throw new CustodyError('signing_session_invalid', 'unknown member signing session');
      if (r.status === 'revoked') throw new CustodyError('signing_session_invalid', 'the member signing session was revoked (what it approved was canceled)');
      if (r.status === 'used' || r.sealed_proof === null) throw new CustodyError('signing_session_used', 'this member signing session was already used');
      // Its times were written by this clock, and are read by it.
      if (Date.parse(r.expires_at) <= this.o.clock()) throw new CustodyError('signing_session_invalid', 'the member signing session expired; the member must approve again');
      const slot = digestsOf(r).findIndex((d) => sameDigest(d, intentHash));
      if (r.wallet_id !== walletId || slot < 0) {
        throw new CustodyError('signing_session_mismatch', 'the member signing session authorizes another wallet or other intent bytes');
      }
      if (r.batch && r.batch.transaction_ids[slot] !== null) throw new CustodyError('signing_session_used', 'this intent of the member\'s batch was already submitted');
      if (!(await this.memberActive(r))) throw new CustodyError('member_binding_inactive', 'the member\'s binding to the application is not active');
      const opened = this.o.cipher.open(r.sealed_proof, sealLabel(hash));
      if (opened === undefined) throw new CustodyError('bug', 'a sealed member proof does not open under the exchange key');
      const passkey = r.proof_kind === 'passkey' ? (JSON.parse(opened) as PasskeyProofSeal) : undefined;
      return {
        token: passkey ? passkey.credential : opened, actionId: r.action_id, salt: hexToBytes(r.salt), ...(passkey ? { passkey: passkeyOf(passkey.assertion) } : {}),
        ...(r.batch ? { batch: r.batch.sha256.map((d) => hexToBytes(d)) } : {}),
        consume: async (txId: string): Promise<Op[]> => {
          const now = await A.signing.in(store).get(hash);
          if (!now || now.status !== 'active') throw new CustodyError('signing_session_used', 'this member signing session was already used');
          if (now.batch && now.batch.transaction_ids[slot] !== null) throw new CustodyError('signing_session_used', 'this intent of the member\'s batch was already submitted');
          const action = await A.actions.in(store).get(r.action_id);
          const at = this.iso();
          // A batch session stays active, its proof sealed, until every intent of the batch was submitted.
          const ids = now.batch ? now.batch.transaction_ids.map((t, i) => (i === slot ? txId : t)) : undefined;
          const done = !ids || ids.every((t) => t !== null);
          const first = ids ? ids[0]! : txId;
          return [
            A.signing.putOp(hash, {
              ...now, ...(ids ? { batch: { ...now.batch!, transaction_ids: ids } } : {}),
              ...(done ? { status: 'used', sealed_proof: null, used_at: at } : {}), transaction_id: first,
            }),
            ...(action ? [A.actions.putOp(action.id, {
              ...action, ...(ids && action.batch ? { batch: { ...action.batch, transaction_ids: ids } } : {}),
              ...(done ? { status: 'used', used_at: at } : {}), transaction_id: first,
            })] : []),
          ];
        },
      };
    },
  };
}
