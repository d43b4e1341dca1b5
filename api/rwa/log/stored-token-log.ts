// A token's transparency log kept in the platform store (docs/platform/transparency-log.md): the
// `TokenLog` of api/rwa/seams.ts. Each append runs under the store's lock for the token (a PostgreSQL
// advisory lock across API replicas, in-process on LevelDB) and writes its entry with a conditional insert
// at its index, so two appends never share an index even if the lock were lost. Each entry carries the
// tree's right edge and a checkpoint signed by the log key, so an append reads one record and signs in
// O(log n), and provenance can name the first entry that no longer re-hashes to what was signed.
import { base64 } from '@scure/base';
import { bytesToHex } from '@noble/hashes/utils.js';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import type { AppendedEntry, LogEntryInput, RwaScope, TokenLog } from '../seams.ts';
import { LOG_ENTRIES, entryId, entryIndex } from './collections.ts';
import { checkpointText, parseCheckpointText, type Checkpoint } from './checkpoint.ts';
import { encodeEntry, EntryEncodingError, ENTRY_VERSION } from './entry-encoding.ts';
import type { LogKey } from './log-key.ts';
import { appendToEdge, consistencyProof, EMPTY_ROOT, equalBytes, inclusionProof, leafHash, rootOfEdge } from './merkle.ts';
import type { LogEntryRecord } from './records.ts';
import { openNote, NoteError, encodeVkey } from './signed-note.ts';

const utf8 = new TextEncoder();

export interface StoredTokenLogOptions {
  store: RecordRepository;
  key: LogKey;
  /** The host part of every token log's origin: `<originHost>/rwa/<token id>`. */
  originHost: string;
  /** Milliseconds since the epoch. */
  clock: () => number;
}

/** A signed tree head: the checkpoint and what it states. */
export interface TreeHead extends Checkpoint {
  /** The signed note (log signature only). */
  note: string;
}

export class StoredTokenLog implements TokenLog {
  constructor(private readonly o: StoredTokenLogOptions) {}

  /** The origin line of a token's log; pinned by its first checkpoint once it has one. */
  originOf(token: string): string {
    return `${this.o.originHost}/rwa/${token}`;
  }

  /** The log key's verifier key for a token's log (`<origin>+<key id>+<base64 0x01 || key>`). */
  vkeyOf(origin: string): string {
    return encodeVkey(this.o.key.verifier(origin));
  }

  async append(scope: RwaScope, tokenId: string, input: LogEntryInput): Promise<AppendedEntry> {
    return this.o.store.exclusive(`rwa-log:${tokenId}`, async () => {
      const last = await this.last(tokenId);
      const head = last ? this.checkedHead(last) : undefined;
      const index = last ? last.index + 1 : 0;
      let text: string;
      try {
        text = encodeEntry({ v: ENTRY_VERSION, token: tokenId, index, kind: input.kind, time: new Date(this.o.clock()).toISOString(), body: input.body });
      } catch (err) {
        if (err instanceof EntryEncodingError) throw new CustodyError('validation_failed', `log entry: ${err.message}`);
        throw err;
      }
      const leaf = leafHash(utf8.encode(text));
      const edge = appendToEdge(last ? last.edge.map((h) => base64.decode(h)) : [], index, leaf);
      const origin = head?.origin ?? this.originOf(tokenId);
      const checkpoint = this.o.key.signer(origin).sign(checkpointText({ origin, size: index + 1, root: rootOfEdge(edge) }));
      const r: LogEntryRecord = {
        v: 1, token: tokenId, tenant: scope.tenant, workspace: scope.workspace, index, entry: text, leaf_hash: bytesToHex(leaf),
        edge: edge.map((h) => base64.encode(h)), checkpoint, created_at: new Date(this.o.clock()).toISOString(),
      };
      if (!(await LOG_ENTRIES.in(this.o.store).insertIfAbsent(entryId(tokenId, index), r, [entryIndex(tokenId, index)]))) {
        throw new CustodyError('conflict', `log entry ${index} of ${tokenId} was written by another append; retry`);
      }
      return { index, leaf_hash: r.leaf_hash };
    });
  }

  /**
   * The last entry's checkpoint, verified: signed by the log key, of the entry's size, and the fold of the
   * stored edge. A store altered under the log is refused here rather than signed over (a fork).
   */
  private checkedHead(last: LogEntryRecord): TreeHead {
    let cp: Checkpoint;
    try {
      const text = parseNoteOrigin(last.checkpoint);
      cp = parseCheckpointText(openNote(last.checkpoint, this.o.key.verifier(text)).text);
    } catch (err) {
      if (err instanceof NoteError) throw new CustodyError('log_integrity_failed', `the checkpoint of entry ${last.index} of ${last.token} does not verify: ${err.message}`);
      throw err;
    }
    if (cp.size !== last.index + 1 || !equalBytes(cp.root, rootOfEdge(last.edge.map((h) => base64.decode(h))))) {
      throw new CustodyError('log_integrity_failed', `entry ${last.index} of ${last.token} does not fold to its signed checkpoint`);
    }
    return { ...cp, note: last.checkpoint };
  }

  /** The last entry of a token's log, if any. */
  async last(tokenId: string): Promise<LogEntryRecord | undefined> {
    const [e] = await LOG_ENTRIES.in(this.o.store).byIndexEntries(`${tokenId}\x00`, undefined, 1, true);
    return e?.value;
  }

  /** How many entries the token's log holds. */
  async size(tokenId: string): Promise<number> {
    const last = await this.last(tokenId);
    return last ? last.index + 1 : 0;
  }

  /** The stored entries of `[0, size)` in index order (all when `size` is omitted). */
  async entries(tokenId: string, size?: number): Promise<LogEntryRecord[]> {
    const out: LogEntryRecord[] = [];
    const lt = size === undefined ? `${tokenId}0` : entryId(tokenId, size);
    for await (const { value } of LOG_ENTRIES.in(this.o.store).entries({ after: `${tokenId}/`, lt })) out.push(value);
    return out;
  }

  /** The signed tree head of size `size` (the latest when omitted); size 0 is signed when asked. */
  async treeHead(tokenId: string, size?: number): Promise<TreeHead> {
    const n = size ?? (await this.size(tokenId));
    if (n === 0) {
      const origin = (await this.pinnedOrigin(tokenId)) ?? this.originOf(tokenId);
      const cp = { origin, size: 0, root: EMPTY_ROOT };
      return { ...cp, note: this.o.key.signer(origin).sign(checkpointText(cp)) };
    }
    const e = await LOG_ENTRIES.in(this.o.store).get(entryId(tokenId, n - 1));
    if (!e) throw new CustodyError('validation_failed', `tree_size ${n} is larger than the log (${await this.size(tokenId)} entries)`);
    return this.checkedHead(e);
  }

  private async pinnedOrigin(tokenId: string): Promise<string | undefined> {
    const first = await LOG_ENTRIES.in(this.o.store).get(entryId(tokenId, 0));
    return first ? parseNoteOrigin(first.checkpoint) : undefined;
  }

  /** The leaf hashes of `[0, size)`, each re-hashed from its stored entry. */
  async leafHashes(tokenId: string, size: number): Promise<Uint8Array[]> {
    return (await this.entries(tokenId, size)).map((e) => leafHash(utf8.encode(e.entry)));
  }

  /** The inclusion proof of entry `index` in the tree of `size` leaves, with the entry and the tree head. */
  async inclusion(tokenId: string, index: number, size?: number): Promise<{ entry: LogEntryRecord; leaf: Uint8Array; proof: Uint8Array[]; head: TreeHead }> {
    const head = await this.treeHead(tokenId, size);
    if (index >= head.size) throw new CustodyError('validation_failed', `index ${index} is not below tree_size ${head.size}`);
    const leaves = await this.leafHashes(tokenId, head.size);
    const entry = (await LOG_ENTRIES.in(this.o.store).get(entryId(tokenId, index)))!;
    return { entry, leaf: leaves[index]!, proof: inclusionProof(leaves, index, head.size), head };
  }

  /** The consistency proof from the tree of `first` leaves to that of `second`. */
  async consistency(tokenId: string, first: number, second?: number): Promise<{ proof: Uint8Array[]; first: TreeHead; second: TreeHead }> {
    const to = await this.treeHead(tokenId, second);
    if (first > to.size) throw new CustodyError('validation_failed', `first ${first} is larger than second ${to.size}`);
    const from = await this.treeHead(tokenId, first);
    const leaves = await this.leafHashes(tokenId, to.size);
    return { proof: consistencyProof(leaves, first, to.size), first: from, second: to };
  }
}

/** The origin line of a signed checkpoint note (its first line), unverified. */
export function parseNoteOrigin(note: string): string {
  const nl = note.indexOf('\n');
  if (nl <= 0) throw new NoteError('a checkpoint starts with its origin line');
  return note.slice(0, nl);
}

