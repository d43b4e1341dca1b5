// The account holder's two state machines (docs/platform/account-holders.md "States"): its status, which
// says whether it may be served, and its verification status, which records the decision of the
// tenant's identity-verification provider. Activation needs a verified holder; closed is terminal.
export const HOLDER_STATUSES = ['pending_verification', 'active', 'suspended', 'closed'] as const;
export type HolderStatus = (typeof HOLDER_STATUSES)[number];

export const VERIFICATION_STATUSES = ['unverified', 'pending', 'verified', 'rejected', 'expired'] as const;
export type VerificationStatus = (typeof VERIFICATION_STATUSES)[number];

const STATUS_NEXT: Readonly<Record<HolderStatus, readonly HolderStatus[]>> = {
  pending_verification: ['active', 'closed'],
  active: ['suspended', 'closed'],
  suspended: ['active', 'closed'],
  closed: [],
};

const VERIFICATION_NEXT: Readonly<Record<VerificationStatus, readonly VerificationStatus[]>> = {
  unverified: ['pending'],
  pending: ['verified', 'rejected'],
  verified: ['expired'],
  rejected: ['pending'],
  expired: ['pending'],
};

export const statusMayBecome = (from: HolderStatus, to: HolderStatus) => STATUS_NEXT[from].includes(to);
export const verificationMayBecome = (from: VerificationStatus, to: VerificationStatus) => VERIFICATION_NEXT[from].includes(to);

/** The spec's verification events, one per decision a provider reports (event-catalog.ts). */
export const VERIFICATION_EVENTS: Partial<Record<VerificationStatus, string>> = {
  verified: 'verification.holder.verified',
  rejected: 'verification.holder.rejected',
  expired: 'verification.holder.expired',
};
