// The states of a distribution and of a corporate action (docs/platform/rwa.md "Distributions and corporate
// actions"). Every change runs under the record's lock against its stored state.

/**
 * A distribution, its plan made from the cap table when it is created:
 *   pending   -> executing   POST execute proposed its batches
 *   executing -> completed   every batch confirmed (found by POST execute)
 */
export const DISTRIBUTION_STATES = ['pending', 'executing', 'completed'] as const;
export type DistributionState = (typeof DISTRIBUTION_STATES)[number];

/**
 * A corporate action, moved by POST advance {to}:
 *   draft        -> approved      approved by a holder of tokenization.manage
 *   approved     -> record_taken  the chain has reached the record block: the cap table read, the plan made
 *   record_taken -> executing     its batches proposed as operations of the admin Safe
 *   executing    -> completed     every batch confirmed
 *   draft | approved | record_taken -> cancelled   nothing was proposed
 */
export const ACTION_STATES = ['draft', 'approved', 'record_taken', 'executing', 'completed', 'cancelled'] as const;
export type ActionState = (typeof ACTION_STATES)[number];

export const ACTION_TRANSITIONS: Readonly<Record<ActionState, readonly ActionState[]>> = {
  draft: ['approved', 'cancelled'],
  approved: ['record_taken', 'cancelled'],
  record_taken: ['executing', 'cancelled'],
  executing: ['completed'],
  completed: [],
  cancelled: [],
};

export function actionMayBecome(from: ActionState, to: ActionState): boolean {
  return ACTION_TRANSITIONS[from].includes(to);
}
