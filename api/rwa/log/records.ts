// The records of the token logs (docs/platform/transparency-log.md "Storage"): types only.

/** One leaf of a token's log, written once (a conditional insert at its index) and never changed. */
export interface LogEntryRecord {
  v: 1;
  token: string;
  tenant: string;
  workspace: string;
  index: number;
  /** The leaf's bytes as UTF-8: canonical JSON (api/rwa/log/entry-encoding.ts). */
  entry: string;
  /** SHA-256(0x00 || entry), lower-case hex. */
  leaf_hash: string;
  /** The right edge of the tree of `index + 1` leaves (base64 hashes): the next append needs nothing else. */
  edge: string[];
  /** The checkpoint of the tree of `index + 1` leaves, signed by the log key when this entry was appended. */
  checkpoint: string;
  created_at: string;
}

/** A witness registered for a token's log: a C2SP cosigner (Ed25519, type 0x04) and its submission prefix. */
export interface WitnessRecord {
  v: 1;
  id: string;
  token: string;
  tenant: string;
  workspace: string;
  name: string;
  vkey: string;
  /** The submission prefix; `<url>/add-checkpoint` is called. */
  url: string;
  created_at: string;
}

/** A cosignature a witness returned for the token's checkpoint of `size` leaves. */
export interface CosignatureRecord {
  v: 1;
  token: string;
  witness_id: string;
  size: number;
  /** The checkpoint text (no signatures) the witness cosigned. */
  checkpoint_text: string;
  /** The cosignature line, `— <name> <base64>\n`. */
  line: string;
  /** The cosignature's timestamp, seconds since the epoch. */
  timestamp: number;
  created_at: string;
}
