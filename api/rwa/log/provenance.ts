// GET /rwa/tokens/{id}/provenance/verify (docs/platform/transparency-log.md "Provenance"): a report of named
// checks over a token's whole history. The log's own checks are here; other parts register theirs
// (`ProvenanceVerifier.register`), each given the log's decoded entries, so an attester signature or a
// chain state is checked against what the log says. A check names what fails: an entry by index and kind,
// a cosignature by witness and size.
import { base64 } from '@scure/base';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { RwaScope } from '../seams.ts';
import { checkpointText, parseCheckpointText, verifyCosignature, type Checkpoint } from './checkpoint.ts';
import { decodeEntry, type LogEntry } from './entry-encoding.ts';
import type { LogKey } from './log-key.ts';
import { appendToEdge, consistencyProof, equalBytes, leafHash, rootOfEdge, verifyConsistency } from './merkle.ts';
import type { CosignatureRecord, LogEntryRecord, WitnessRecord } from './records.ts';
import { openNote, parseSignatureLine, parseVkey } from './signed-note.ts';
import { parseNoteOrigin } from './stored-token-log.ts';

export interface ProvenanceProblem {
  /** The log entry concerned, when one is. */
  index?: number;
  kind?: string;
  witness_id?: string;
  detail: string;
}

export interface ProvenanceCheckResult {
  name: string;
  ok: boolean;
  /** How many things the check looked at (entries, signatures, cosignatures). */
  checked: number;
  problems: ProvenanceProblem[];
}

/** What a checker is given: the token and its log as stored, each entry decoded where it still decodes. */
export interface ProvenanceContext {
  scope: RwaScope;
  tokenId: string;
  records: readonly LogEntryRecord[];
  /** `records[i]` decoded; undefined where the stored text is no longer a canonical entry. */
  entries: readonly (LogEntry | undefined)[];
  witnesses: readonly WitnessRecord[];
  cosignatures: readonly CosignatureRecord[];
}

/** A named check another part registers (attestation signatures, chain state against the log, ...). */
export interface ProvenanceChecker {
  name: string;
  check(ctx: ProvenanceContext): Promise<{ checked: number; problems: ProvenanceProblem[] }>;
}

export interface ProvenanceReport {
  token_id: string;
  ok: boolean;
  tree_size: number;
  checks: ProvenanceCheckResult[];
}

const utf8 = new TextEncoder();

/** A stored entry's kind, read as far as it still reads. */
function kindOf(r: LogEntryRecord, e: LogEntry | undefined): string | undefined {
  if (e) return e.kind;
  try {
    const k = (JSON.parse(r.entry) as { kind?: unknown }).kind;
    return typeof k === 'string' ? k : undefined;
  } catch {
    return undefined;
  }
}

/** The log's checks, in the order the report gives them. */
export function logCheckers(key: LogKey): ProvenanceChecker[] {
  /** Each entry's checkpoint, verified under the log key for its origin: the signed roots. */
  const signedRoots = (ctx: ProvenanceContext): (Checkpoint | undefined)[] => ctx.records.map((r) => {
    try {
      const cp = parseCheckpointText(openNote(r.checkpoint, key.verifier(parseNoteOrigin(r.checkpoint))).text);
      return cp.size === r.index + 1 ? cp : undefined;
    } catch {
      return undefined;
    }
  });

  return [
    {
      name: 'log.checkpoint_signatures',
      async check(ctx) {
        const problems: ProvenanceProblem[] = [];
        const origin = ctx.records[0] ? parseNoteOrigin(ctx.records[0].checkpoint) : undefined;
        signedRoots(ctx).forEach((cp, i) => {
          const r = ctx.records[i]!;
          if (!cp) problems.push({ index: r.index, ...opt('kind', kindOf(r, ctx.entries[i])), detail: 'the checkpoint signed at this entry does not verify under the log key, or is not of its size' });
          else if (cp.origin !== origin) problems.push({ index: r.index, ...opt('kind', kindOf(r, ctx.entries[i])), detail: `the checkpoint names another origin (${cp.origin})` });
        });
        return { checked: ctx.records.length, problems };
      },
    },
    {
      // Every stored entry re-hashes to the tree its checkpoint signed. The tree before entry i is the
      // stored edge of entry i-1 when that folds to its own signed root (a collision otherwise), so an
      // altered entry is named alone, not with every entry after it.
      name: 'log.entries_rehash',
      async check(ctx) {
        const problems: ProvenanceProblem[] = [];
        const roots = signedRoots(ctx);
        let edge: Uint8Array[] = [];
        ctx.records.forEach((r, i) => {
          const e = ctx.entries[i];
          const kind = opt('kind', kindOf(r, e));
          if (r.index !== i) problems.push({ index: i, ...kind, detail: `the entry stored at position ${i} says index ${r.index}: an entry is missing or moved` });
          if (!e) problems.push({ index: i, ...kind, detail: 'the stored entry is not a canonical entry any more' });
          else if (e.index !== i || e.token !== ctx.tokenId) problems.push({ index: i, ...kind, detail: 'the entry names another index or token' });
          const leaf = leafHash(utf8.encode(r.entry));
          if (bytesToHex(leaf) !== r.leaf_hash) problems.push({ index: i, ...kind, detail: 'the entry does not re-hash to its stored leaf hash' });
          const next = appendToEdge(edge, i, leaf);
          const signed = roots[i];
          if (signed && !equalBytes(rootOfEdge(next), signed.root)) problems.push({ index: i, ...kind, detail: 'the entry does not re-hash to the root signed when it was appended' });
          const stored = r.edge.map((h) => base64.decode(h));
          edge = signed && equalBytes(rootOfEdge(stored), signed.root) ? stored : next;
        });
        return { checked: ctx.records.length, problems: dedupe(problems) };
      },
    },
    {
      name: 'log.cosignatures',
      async check(ctx) {
        const problems: ProvenanceProblem[] = [];
        const roots = signedRoots(ctx);
        for (const c of ctx.cosignatures) {
          const w = ctx.witnesses.find((x) => x.id === c.witness_id);
          const p = (detail: string) => problems.push({ witness_id: c.witness_id, index: c.size - 1, detail: `cosignature of size ${c.size}: ${detail}` });
          if (!w) {
            p('its witness is not registered');
            continue;
          }
          let ts: bigint | null = null;
          try {
            ts = verifyCosignature(c.checkpoint_text, parseSignatureLine(c.line), parseVkey(w.vkey));
          } catch {
            ts = null;
          }
          if (ts === null) p(`does not verify under ${w.name}'s registered key`);
          const signed = roots[c.size - 1];
          let cp: Checkpoint | undefined;
          try {
            cp = parseCheckpointText(c.checkpoint_text);
          } catch {
            cp = undefined;
          }
          if (!signed || !cp || cp.size !== c.size || checkpointText(cp) !== checkpointText(signed)) p('the cosigned checkpoint is not the one the log signed at that size');
        }
        return { checked: ctx.cosignatures.length, problems };
      },
    },
    {
      // The cosigned checkpoints and the latest are one append-only history: a consistency proof from each
      // checkpoint a witness cosigned to the latest signed one, made from the stored entries, verifies
      // between their roots. A log forked after a witness saw it fails here.
      name: 'log.checkpoint_consistency',
      async check(ctx) {
        const problems: ProvenanceProblem[] = [];
        const roots = signedRoots(ctx);
        const latest = roots[roots.length - 1];
        const leaves = ctx.records.map((r) => leafHash(utf8.encode(r.entry)));
        const texts = [...new Set(ctx.cosignatures.map((c) => c.checkpoint_text))];
        for (const text of texts) {
          let cp: Checkpoint;
          try {
            cp = parseCheckpointText(text);
          } catch {
            problems.push({ detail: 'a cosigned checkpoint does not parse' });
            continue;
          }
          if (!latest || cp.size > latest.size || cp.size === 0) {
            problems.push({ index: cp.size - 1, detail: `the cosigned checkpoint of size ${cp.size} is beyond the latest signed one` });
            continue;
          }
          if (!verifyConsistency(cp.size, latest.size, cp.root, latest.root, consistencyProof(leaves, cp.size, latest.size))) {
            problems.push({ index: cp.size - 1, detail: `the log is not consistent from the cosigned checkpoint of size ${cp.size} to the latest ${latest.size}: a fork or an altered entry` });
          }
        }
        return { checked: texts.length, problems };
      },
    },
  ];
}

const opt = <K extends string>(k: K, v: string | undefined) => (v === undefined ? {} : { [k]: v }) as Partial<Record<K, string>>;

function dedupe(ps: ProvenanceProblem[]): ProvenanceProblem[] {
  const seen = new Set<string>();
  return ps.filter((p) => {
    const k = JSON.stringify(p);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** Runs every registered check over one token's log; a checker that throws is a failed check, not a 500. */
export class ProvenanceVerifier {
  private readonly checkers: ProvenanceChecker[] = [];

  constructor(private readonly load: (scope: RwaScope, tokenId: string) => Promise<Omit<ProvenanceContext, 'entries'>>, initial: ProvenanceChecker[] = []) {
    for (const c of initial) this.register(c);
  }

  register(checker: ProvenanceChecker): void {
    if (this.checkers.some((c) => c.name === checker.name)) throw new Error(`a provenance check named ${checker.name} is registered already`);
    this.checkers.push(checker);
  }

  names(): string[] {
    return this.checkers.map((c) => c.name);
  }

  async verify(scope: RwaScope, tokenId: string): Promise<ProvenanceReport> {
    const loaded = await this.load(scope, tokenId);
    const ctx: ProvenanceContext = {
      ...loaded,
      entries: loaded.records.map((r) => {
        try {
          return decodeEntry(r.entry);
        } catch {
          return undefined;
        }
      }),
    };
    const checks: ProvenanceCheckResult[] = [];
    for (const c of this.checkers) {
      try {
        const r = await c.check(ctx);
        checks.push({ name: c.name, ok: r.problems.length === 0, checked: r.checked, problems: r.problems });
      } catch (err) {
        checks.push({ name: c.name, ok: false, checked: 0, problems: [{ detail: `the check failed to run: ${(err as Error).message}` }] });
      }
    }
    return { token_id: tokenId, ok: checks.every((c) => c.ok), tree_size: ctx.records.length, checks };
  }
}
