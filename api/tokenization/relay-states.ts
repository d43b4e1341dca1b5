// The states of a gasless relay (docs/platform/tokenization.md "Gasless transfers"). A relay is recorded only
// once every check passed and its worst-case cost is reserved: a refusal leaves no record.
export const RELAY_STATES = ['sent', 'confirmed', 'failed'] as const;
export type RelayState = (typeof RELAY_STATES)[number];

/**
 *   sent -> confirmed   the receipt shows the forwarder's ExecutedForwardRequest for the holder's nonce, success
 *   sent -> failed      the execution reverted on chain (revert; its gas is spent), or the transaction never went
 *                       out (engine; nothing spent, the reservation released)
 */
export const RELAY_TRANSITIONS: Readonly<Record<RelayState, readonly RelayState[]>> = {
  sent: ['confirmed', 'failed'],
  confirmed: [],
  failed: [],
};

export function relayMayBecome(from: RelayState, to: RelayState): boolean {
  return RELAY_TRANSITIONS[from].includes(to);
}
