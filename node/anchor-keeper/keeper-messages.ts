// What a node and a rollback anchor keeper say to each other (docs/storage.md "Anchor keepers"), and the
// bytes each of them signs. Three signed messages, each a domain-separated transcript
// (core/codec/transcript.ts: a tag, then length-prefixed parts), so no signature made for one can be
// taken for another, nor for anything else either key signs:
//   - the statement, by the node's anchor-client key: "the store of this key reached version v";
//   - a write acknowledgement, by the keeper: "I hold, for this client, version s ≥ the one of the
//     request whose hash is h";
//   - a read answer, by the keeper: "for this client I hold this statement (or nothing), in answer to
//     challenge c".
// The node checks its own signature in a statement (a keeper cannot invent a version) and the keeper's
// over the challenge it chose (an old answer, replayed by whoever carries the traffic, is refused).
// On the wire: JSON over HTTP(S), bytes as lowercase hex, versions as decimal strings (u64).
import { Type, type Static } from '@sinclair/typebox';
import { sha256 } from '@noble/hashes/sha2.js';
import { transcript } from '../../core/codec/transcript.ts';

export const STATEMENT_TAG = 'custody/rollback-anchor-keeper/statement/v1';
export const WRITE_REQUEST_TAG = 'custody/rollback-anchor-keeper/write-request/v1';
export const WRITE_ACK_TAG = 'custody/rollback-anchor-keeper/write-ack/v1';
export const READ_ANSWER_TAG = 'custody/rollback-anchor-keeper/read-answer/v1';

/** The largest version a statement carries: the store's head version is a u64. */
export const MAX_VERSION = 2n ** 64n - 1n;
/** Bodies both ways are a few hundred bytes; anything much larger is refused unread. */
export const MAX_BODY_BYTES = 1024;

const hex = (bytes: number) => Type.String({ pattern: `^[0-9a-f]{${bytes * 2}}$` });
const version = Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$' });

/** A version the client signed: what a keeper stores and answers. */
export const StatementWire = Type.Object({ version, signature: hex(64) }, { additionalProperties: false });
export type StatementWire = Static<typeof StatementWire>;

export const WriteRequestWire = Type.Object({ client: hex(32), version, signature: hex(64), nonce: hex(32) }, { additionalProperties: false });
export type WriteRequestWire = Static<typeof WriteRequestWire>;
export const WriteAnswerWire = Type.Object({ stored: version, signature: hex(64) }, { additionalProperties: false });
export type WriteAnswerWire = Static<typeof WriteAnswerWire>;

export const ReadRequestWire = Type.Object({ client: hex(32), challenge: hex(32) }, { additionalProperties: false });
export type ReadRequestWire = Static<typeof ReadRequestWire>;
export const ReadAnswerWire = Type.Object({ statement: Type.Union([StatementWire, Type.Null()]), signature: hex(64) }, { additionalProperties: false });
export type ReadAnswerWire = Static<typeof ReadAnswerWire>;

export const KeeperErrorWire = Type.Object({ error: Type.String(), code: Type.String() });

/** What the client key signs: its store reached `version`. */
export function statementMessage(client: Uint8Array, v: bigint): Uint8Array {
  return transcript(STATEMENT_TAG, [client, v]);
}

/** The hash a write acknowledgement names: the whole request, its fresh nonce included. */
export function writeRequestHash(client: Uint8Array, v: bigint, signature: Uint8Array, nonce: Uint8Array): Uint8Array {
  return sha256(transcript(WRITE_REQUEST_TAG, [client, v, signature, nonce]));
}

/** What a keeper signs when it holds `stored` (at least the requested version) after a write. */
export function writeAckMessage(client: Uint8Array, stored: bigint, requestHash: Uint8Array): Uint8Array {
  return transcript(WRITE_ACK_TAG, [client, stored, requestHash]);
}

/** What a keeper signs to answer a read: the statement it holds (or none) under the reader's challenge. */
export function readAnswerMessage(client: Uint8Array, statement: { version: bigint; signature: Uint8Array } | undefined, challenge: Uint8Array): Uint8Array {
  return statement
    ? transcript(READ_ANSWER_TAG, [client, challenge, 'held', statement.version, statement.signature])
    : transcript(READ_ANSWER_TAG, [client, challenge, 'none']);
}
