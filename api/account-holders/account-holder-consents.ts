// Consents of an account holder to the workspace's current policies (docs/platform/account-holders.md
// "Consents"). The policies are the documents the workspace's branding theme links to, terms_url and
// privacy_url, which staff change with PUT /v1/branding (audited there); a policy's version is the first
// 16 hex digits of SHA-256 of its URL, so publishing a document at a new URL is a new version that needs
// a new acceptance. An acceptance is appended, never changed: which versions, when, by which member.
import { createHash } from 'node:crypto';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { Actor } from '../tenancy/audit-log.ts';
import type { BrandingService } from '../branding/branding-service.ts';
import type { DeliveryEngine } from '../webhooks/delivery-engine.ts';
import type { AccountHolderRecord } from './account-holder-records.ts';
import { ACCOUNT_HOLDER_CONSENTS } from './collections.ts';

export type PolicyName = 'terms' | 'privacy';
export interface Policy { policy: PolicyName; url: string; version: string }

export interface ConsentRecord {
  v: 1;
  id: string;
  account_holder_id: string;
  workspace: string;
  member_id: string;
  policies: Policy[];
  accepted_at: string;
}

export const policyVersion = (url: string) => createHash('sha256').update(url, 'utf8').digest('hex').slice(0, 16);

export class AccountHolderConsents {
  constructor(private readonly store: RecordRepository, private readonly branding: BrandingService, private readonly deliveries: DeliveryEngine, private readonly clock: () => number) {}

  /** The workspace's current policies: those its branding theme links to. */
  async current(scope: Scope): Promise<Policy[]> {
    const { resolved } = await this.branding.view(scope);
    const out: Policy[] = [];
    for (const [policy, url] of [['terms', resolved.terms_url], ['privacy', resolved.privacy_url]] as const) {
      if (typeof url === 'string' && url) out.push({ policy, url, version: policyVersion(url) });
    }
    return out;
  }

  async accepted(holder: AccountHolderRecord): Promise<ConsentRecord[]> {
    return ACCOUNT_HOLDER_CONSENTS.in(this.store).byIndex(`${holder.id}\x00`, 1000);
  }

  /** GET self/consents: each current policy, the version accepted last (or null) and whether it is current. */
  async view(scope: Scope, holder: AccountHolderRecord) {
    const policies = await this.current(scope);
    const acceptances = await this.accepted(holder);
    const last = (p: PolicyName) => acceptances.flatMap((c) => c.policies.filter((x) => x.policy === p).map((x) => ({ version: x.version, accepted_at: c.accepted_at }))).at(-1) ?? null;
    return {
      policies: policies.map((p) => {
        const l = last(p.policy);
        return { ...p, accepted_version: l?.version ?? null, accepted_at: l?.accepted_at ?? null, current: l?.version === p.version };
      }),
      all_current: policies.length > 0 && policies.every((p) => last(p.policy)?.version === p.version),
    };
  }

  /**
   * POST self/consents: the caller names each current policy's version; anything else (a stale version,
   * a missing or unknown policy) is 409 consent_version_mismatch and nothing is recorded.
   */
  async accept(scope: Scope, actor: Actor, holder: AccountHolderRecord, accepted: { policy: string; version: string }[]) {
    const policies = await this.current(scope);
    if (policies.length === 0) throw new CustodyError('consent_version_mismatch', 'this workspace publishes no policies (branding terms_url and privacy_url are unset)');
    const want = new Map(policies.map((p) => [p.policy as string, p.version]));
    const given = new Map(accepted.map((a) => [a.policy, a.version]));
    if (given.size !== accepted.length || given.size !== want.size || [...want].some(([p, v]) => given.get(p) !== v)) {
      throw new CustodyError('consent_version_mismatch', `accept exactly the current versions: ${policies.map((p) => `${p.policy}@${p.version}`).join(', ')}`);
    }
    const c: ConsentRecord = { v: 1, id: newId('cns', this.clock()), account_holder_id: holder.id, workspace: scope.workspace, member_id: holder.member_id ?? '', policies, accepted_at: new Date(this.clock()).toISOString() };
    await this.deliveries.emit(scope, 'account_holder.consent.accepted', { type: 'account_holder', id: holder.id }, actor,
      { account_holder_id: holder.id, consent_id: c.id }, [ACCOUNT_HOLDER_CONSENTS.putOp(c.id, c, { index: [`${holder.id}\x00${c.id}`] })]);
    const { v: _v, workspace: _w, ...view } = c;
    return view;
  }
}
