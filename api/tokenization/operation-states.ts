// The states of a token operation (docs/platform/tokenization.md "Operations"). Every change runs under the
// admin Safe's lock against the stored state.
export const OPERATION_STATES = ['proposed', 'collecting_signatures', 'ready', 'submitted', 'executed', 'confirmed', 'failed'] as const;
export type OperationState = (typeof OPERATION_STATES)[number];

/**
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

/** States that hold a Safe nonce (a `submitted` operation runs through the module, never at its nonce). */
export const OPEN_OPERATION_STATES: readonly OperationState[] = ['proposed', 'collecting_signatures', 'ready'];

export function operationMayBecome(from: OperationState, to: OperationState): boolean {
  return OPERATION_TRANSITIONS[from].includes(to);
}
