// The states of a token's deployment (docs/platform/tokenization.md "Deploying"). Every change runs under the
// token's lock against the stored state.
export const TOKEN_STATUSES = ['deploying', 'deployed', 'failed_resumable'] as const;
export type TokenStatus = (typeof TOKEN_STATUSES)[number];

/**
 *   deploying        -> deployed          every step of the plan is on chain
 *   deploying        -> failed_resumable  a step failed (revert or engine error); nothing after it was sent
 *   failed_resumable -> deploying         POST /tokenization/tokens/{id}/deploy/resume
 */
export const TOKEN_TRANSITIONS: Readonly<Record<TokenStatus, readonly TokenStatus[]>> = {
  deploying: ['deployed', 'failed_resumable'],
  failed_resumable: ['deploying'],
  deployed: [],
};

export function tokenMayBecome(from: TokenStatus, to: TokenStatus): boolean {
  return TOKEN_TRANSITIONS[from].includes(to);
}
