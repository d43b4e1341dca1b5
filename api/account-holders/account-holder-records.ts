// Stored account holders, their change history and the member-binding claim that keeps one holder per
// member (docs/platform/account-holders.md). Every record starts with its format version.
import type { Actor } from '../tenancy/audit-log.ts';
import type { HolderStatus, VerificationStatus } from './account-holder-states.ts';

export type HolderType = 'individual' | 'business';
export type MemberKind = 'byo_oidc' | 'hosted';

export interface AccountHolderRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  type: HolderType;
  status: HolderStatus;
  verification_status: VerificationStatus;
  /** Individuals: given and family name; businesses: legal name. The other kind's fields are null. */
  given_name: string | null;
  family_name: string | null;
  legal_name: string | null;
  email: string | null;
  email_hash: string | null;
  phone: string | null;
  phone_hash: string | null;
  /** The customer's own identifier for the holder. */
  reference: string | null;
  /** A BYO OIDC member (`mem_…`) or a Hosted Auth member (`hsub_…`) of the same workspace. */
  member_id: string | null;
  member_kind: MemberKind | null;
  /** Optimistic concurrency: 1 at creation, +1 at every change; the ETag is `"<version>"`. */
  version: number;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
}

export interface HolderChange { from: unknown; to: unknown }

export interface HistoryEntryRecord {
  v: 1;
  id: string;
  account_holder_id: string;
  workspace: string;
  /** The holder's version this entry made. */
  version: number;
  action: 'created' | 'updated';
  actor: Actor;
  at: string;
  /** Field → from/to; email and phone appear as their hashes. */
  changes: Record<string, HolderChange>;
}

/** The one holder a member is linked to: key `<workspace> NUL <member id>`. */
export interface MemberClaimRecord { v: 1; account_holder_id: string }
