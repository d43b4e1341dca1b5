// The signing request's fields: the coordinator's sign input and the nodes' sign session parameters
// both extend them, so the two sides cannot drift apart.

export type SignScheme = 'ecdsa' | 'taproot' | 'bip340';

/** What a signing request carries for the nodes to check (coordinator input, session parameters). */
export interface SignFields {
  path: number[];
  scheme: SignScheme;
  digests: string[];
  intent: string;
  intentSignature: string;
  apiKeyId: string;
  template: string;
  endUserToken: string;
  /** The organization's trust log (encoded entries, hex), applied before anything is checked. */
  trustLog?: string[];
}
