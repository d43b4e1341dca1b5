// The states of a token operation (docs/platform/tokenization.md "Operations", "module-signature" and "Calls by
// a vault wallet"). Every change of a Safe operation runs under the admin Safe's lock, of a vault call under its
// own, against the stored state.
export const OPERATION_STATES = ['proposed', 'collecting_signatures', 'ready', 'submitted', 'executed', 'confirmed', 'failed'] as const;
export type OperationState = (typeof OPERATION_STATES)[number];

/**
 * A Safe operation:
 *   proposed              -> collecting_signatures  a first owner signature, below the threshold
 *   proposed | collecting -> ready                  the signatures reach the Safe's threshold
 *   ready                 -> executed               execTransaction mined with ExecutionSuccess
 *   executed              -> confirmed              the Safe's nonce moved past it, the receipt on chain
 *   ready                 -> failed                 the chain refused it (revert) or could not run it (engine)
 *   collecting | ready    -> proposed               an earlier operation failed or went through the roles
 *                                                    module: moved to the freed nonce, its signatures dropped
 *                                                    (they sign another SafeTx)
 *   proposed | collecting -> submitted              a role member's call through the roles module was submitted
 *                                                    (the vault transaction path); its Safe nonce is freed
 *   submitted             -> confirmed              the member's transaction mined with the Safe's
 *                                                    ExecutionFromModuleSuccess for the module
 *   submitted             -> failed                 that transaction ended failed, rejected or reverted
 */
export const OPERATION_TRANSITIONS: Readonly<Record<OperationState, readonly OperationState[]>> = {
  proposed: ['collecting_signatures', 'ready', 'proposed', 'submitted'],
  collecting_signatures: ['collecting_signatures', 'ready', 'proposed', 'submitted'],
  ready: ['executed', 'failed', 'proposed'],
  submitted: ['confirmed', 'failed'],
  executed: ['confirmed'],
  confirmed: [],
  failed: [],
};

/**
 * A vault call (policy_mint, nft_transfer), created `submitted` and following its vault transaction; it never
 * holds a Safe nonce, so nothing of the Safe's moves it:
 *   submitted             -> executed               included with a successful receipt
 *   submitted | executed  -> confirmed              final (the chain's finality depth)
 *   submitted             -> failed                 reverted, or failed or rejected before inclusion
 */
export const VAULT_CALL_TRANSITIONS: Readonly<Record<OperationState, readonly OperationState[]>> = {
  proposed: [],
  collecting_signatures: [],
  ready: [],
  submitted: ['executed', 'confirmed', 'failed'],
  executed: ['confirmed'],
  confirmed: [],
  failed: [],
};

/** States that hold a Safe nonce (a `submitted` operation runs through the module, never at its nonce). */
export const OPEN_OPERATION_STATES: readonly OperationState[] = ['proposed', 'collecting_signatures', 'ready'];

/** States of a vault call still following its vault transaction. */
export const FOLLOWED_CALL_STATES: readonly OperationState[] = ['submitted', 'executed'];

/** A Safe operation's change. */
export function operationMayBecome(from: OperationState, to: OperationState): boolean {
  return OPERATION_TRANSITIONS[from].includes(to);
}

/** A vault call's change. */
export function vaultCallMayBecome(from: OperationState, to: OperationState): boolean {
  return VAULT_CALL_TRANSITIONS[from].includes(to);
}
