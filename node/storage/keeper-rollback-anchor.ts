// A rollback anchor kept by m anchor keepers (node/anchor-keeper/), parties other than the node's host
// (docs/storage.md "Anchor keepers"). Quorums, as in a replicated register (ABD: Attiya, Bar-Noy,
// Dolev 1995) with self-verifying data: a write completes when w keepers acknowledged holding a version
// at least the one written, a read takes the highest of q valid answers, and q + w > m makes every read
// quorum meet every write quorum, so a read sees every completed write.
//
// What makes an answer valid: the keeper's signature, under the key pinned for it, over the node's
// fresh challenge (no replay of an old answer by whoever carries the traffic), and the node's own
// signature in the statement the keeper holds (a keeper cannot invent a version, only answer an older
// one, which the other answers outvote). The node's anchor-client key comes from its storage key (HKDF,
// its own label), not from its identity: the identity is read from the store, after the anchor.
//
// Fail closed: fewer than q valid answers is an error naming each keeper and why, never "nothing held".
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { Value } from '@sinclair/typebox/value';
import { Ed25519Signer, verifyEd25519 } from '../../common/ed25519.ts';
import { fromHex, toHex } from '../../common/bytes.ts';
import { RollbackAnchorError, type RollbackAnchor } from './rollback-anchor.ts';
import {
  MAX_BODY_BYTES, ReadAnswerWire, WriteAnswerWire, readAnswerMessage, statementMessage, writeAckMessage, writeRequestHash,
  type ReadRequestWire, type WriteRequestWire,
} from '../anchor-keeper/keeper-messages.ts';

/** One keeper as the node pins it. */
export interface AnchorKeeperEndpoint {
  /** Origin of its HTTP(S) API, e.g. https://keeper-a.example:7480; also its name in logs and errors. */
  url: string;
  /** Its Ed25519 public key (32 bytes). */
  publicKey: Uint8Array;
}

/** Sends one request to one keeper and answers the parsed JSON body; throws on any failure. */
export type KeeperTransport = (keeper: AnchorKeeperEndpoint, path: '/v1/read' | '/v1/write', body: ReadRequestWire | WriteRequestWire, timeoutMs: number) => Promise<unknown>;

/** Where the anchor reports keepers that fail or answer badly (pino's signature); never a secret. */
export interface AnchorLog {
  warn(fields: Record<string, unknown>, msg: string): void;
  info(fields: Record<string, unknown>, msg: string): void;
}

export interface KeeperRollbackAnchorOptions {
  keepers: readonly AnchorKeeperEndpoint[];
  storageKey: Uint8Array;
  /** Valid answers a read needs; default a majority. */
  readQuorum?: number;
  /** Acknowledgements a write needs; default a majority. */
  writeQuorum?: number;
  /** Per request, connection to last byte; default 5 s. */
  timeoutMs?: number;
  transport?: KeeperTransport;
  log?: AnchorLog;
  random?: (n: number) => Uint8Array;
}

/** A majority of m: the default read and write quorum. */
export const majority = (m: number): number => Math.floor(m / 2) + 1;

/** What is wrong with quorums q (read) and w (write) over m keepers, if anything. */
export function quorumProblem(m: number, q: number, w: number): string | undefined {
  if (!Number.isInteger(m) || m < 1) return 'at least one keeper is needed';
  if (!Number.isInteger(q) || q < 1 || q > m) return `the read quorum must be from 1 to ${m} (the keepers); got ${q}`;
  if (!Number.isInteger(w) || w < 1 || w > m) return `the write quorum must be from 1 to ${m} (the keepers); got ${w}`;
  if (q + w <= m) return `read quorum ${q} + write quorum ${w} must exceed the ${m} keepers, or a read may miss every keeper a write reached`;
  return undefined;
}

/** The label the anchor-client key is derived under, apart from every other key made from the storage key. */
const CLIENT_KEY_LABEL = 'custody/store/rollback-anchor-keeper/client/v1';

/** The Ed25519 public key a node with this storage key writes to keepers under (public; a keeper operator may want it). */
export function anchorClientPublicKey(storageKey: Uint8Array): Uint8Array {
  const seed = hkdf(sha256, storageKey, undefined, new TextEncoder().encode(CLIENT_KEY_LABEL), 32);
  const pub = ed25519.getPublicKey(seed);
  seed.fill(0);
  return pub;
}

interface Statement {
  version: bigint;
  signature: Uint8Array;
}

/** One keeper's write side: one request in flight at most, the newest waiting statement next. */
interface Channel {
  keeper: AnchorKeeperEndpoint;
  /** Highest version this keeper acknowledged holding (-1: none yet). */
  acked: bigint;
  /** Highest version of a request to it that failed (-1: none). */
  failedAt: bigint;
  failure: string | undefined;
  sending: boolean;
  next: Statement | undefined;
  /** Whether its last request failed: a change either way is logged once, not every write. */
  down: boolean;
}

interface Waiter {
  version: bigint;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class KeeperRollbackAnchor implements RollbackAnchor {
  readonly clientKey: Uint8Array;
  readonly readQuorum: number;
  readonly writeQuorum: number;
  readonly #signer: Ed25519Signer;
  private readonly clientHex: string;
  private readonly timeoutMs: number;
  private readonly transport: KeeperTransport;
  private readonly random: (n: number) => Uint8Array;
  private readonly channels: Channel[];
  private readonly waiters = new Set<Waiter>();
  /** Highest version a write quorum acknowledged in this process. */
  private quorumHeld: bigint | undefined;

  constructor(private readonly o: KeeperRollbackAnchorOptions) {
    const m = o.keepers.length;
    this.readQuorum = o.readQuorum ?? majority(m);
    this.writeQuorum = o.writeQuorum ?? majority(m);
    const problem = quorumProblem(m, this.readQuorum, this.writeQuorum);
    if (problem) throw new RollbackAnchorError(`rollback anchor keepers: ${problem}`);
    if (new Set(o.keepers.map((k) => k.url)).size !== m) throw new RollbackAnchorError('rollback anchor keepers: a keeper is listed twice');
    for (const k of o.keepers) if (k.publicKey.length !== 32) throw new RollbackAnchorError(`rollback anchor keeper ${k.url}: its pinned key is not 32 bytes`);
    const seed = hkdf(sha256, o.storageKey, undefined, new TextEncoder().encode(CLIENT_KEY_LABEL), 32);
    this.clientKey = ed25519.getPublicKey(seed);
    this.#signer = new Ed25519Signer(seed);
    seed.fill(0);
    this.clientHex = toHex(this.clientKey);
    this.timeoutMs = o.timeoutMs ?? 5000;
    this.transport = o.transport ?? httpTransport;
    this.random = o.random ?? ((n) => new Uint8Array(randomBytes(n)));
    this.channels = o.keepers.map((keeper) => ({ keeper, acked: -1n, failedAt: -1n, failure: undefined, sending: false, next: undefined, down: false }));
  }

  /** One keeper's answer to a fresh challenge: the version it holds for this node, checked; throws why not. */
  private async readOne(keeper: AnchorKeeperEndpoint): Promise<bigint | undefined> {
    const challenge = this.random(32);
    const body = await this.transport(keeper, '/v1/read', { client: this.clientHex, challenge: toHex(challenge) }, this.timeoutMs);
    if (!Value.Check(ReadAnswerWire, body)) throw new Error('its answer is not a read answer');
    const statement = body.statement ? { version: BigInt(body.statement.version), signature: fromHex(body.statement.signature) } : undefined;
    if (!verifyEd25519(fromHex(body.signature), readAnswerMessage(this.clientKey, statement, challenge), keeper.publicKey)) {
      throw new Error('its answer is not signed by its pinned key over this read\'s challenge (a replayed or forged answer)');
    }
    if (statement && !verifyEd25519(statement.signature, statementMessage(this.clientKey, statement.version), this.clientKey)) {
      throw new Error(`it answers version ${statement.version}, which this node never signed`);
    }
    return statement?.version;
  }

  async read(): Promise<bigint | undefined> {
    const results = await Promise.all(this.channels.map(({ keeper }) => this.readOne(keeper).then(
      (version) => ({ keeper, ok: true as const, version }),
      (err: unknown) => ({ keeper, ok: false as const, why: reason(err) }),
    )));
    const failed = results.filter((r) => !r.ok);
    for (const f of failed) this.o.log?.warn({ keeper: f.keeper.url, why: f.why }, 'rollback anchor keeper: no valid answer to the read');
    const valid = results.filter((r) => r.ok);
    if (valid.length < this.readQuorum) {
      throw new RollbackAnchorError(`${valid.length} of ${this.channels.length} rollback anchor keepers gave a valid answer and ${this.readQuorum} are needed: ${failed.map((f) => `${f.keeper.url}: ${f.why}`).join('; ')}. A keeper that does not answer is never taken for one that holds nothing`, 'anchor_unavailable');
    }
    let max: bigint | undefined;
    for (const r of valid) if (r.version !== undefined && (max === undefined || r.version > max)) max = r.version;
    this.o.log?.info({ keepers: valid.length, version: max?.toString() ?? null }, 'rollback anchor read from its keepers');
    return max;
  }

  write(version: bigint): Promise<void> {
    if (this.quorumHeld !== undefined && version <= this.quorumHeld) return Promise.resolve();
    const statement = { version, signature: this.#signer.sign(statementMessage(this.clientKey, version)) };
    return new Promise<void>((resolve, reject) => {
      this.waiters.add({ version, resolve, reject });
      for (const ch of this.channels) {
        if (ch.acked >= version) continue;
        if (ch.sending) {
          if (!ch.next || ch.next.version < version) ch.next = statement;
        } else void this.send(ch, statement);
      }
      this.settle();
    });
  }

  private async send(ch: Channel, s: Statement): Promise<void> {
    ch.sending = true;
    const nonce = this.random(32);
    try {
      const body = await this.transport(ch.keeper, '/v1/write', { client: this.clientHex, version: s.version.toString(), signature: toHex(s.signature), nonce: toHex(nonce) }, this.timeoutMs);
      if (!Value.Check(WriteAnswerWire, body)) throw new Error('its answer is not a write answer');
      const stored = BigInt(body.stored);
      const hash = writeRequestHash(this.clientKey, s.version, s.signature, nonce);
      if (!verifyEd25519(fromHex(body.signature), writeAckMessage(this.clientKey, stored, hash), ch.keeper.publicKey)) {
        throw new Error('its acknowledgement is not signed by its pinned key over this write (a replayed or forged answer)');
      }
      if (stored < s.version) throw new Error(`it acknowledges version ${stored}, below the ${s.version} written`);
      // What this write is known to have achieved is its own version: a keeper's word for more counts for
      // no later write. More is worth saying: a store that opens below a version it once wrote is an
      // older copy, opened while this keeper was not among those read.
      if (stored > s.version) this.o.log?.warn({ keeper: ch.keeper.url, stored: stored.toString(), written: s.version.toString() }, 'rollback anchor keeper holds a version above the one written: was an older copy of the store opened while it was unreachable?');
      if (s.version > ch.acked) ch.acked = s.version;
      if (ch.down) this.o.log?.info({ keeper: ch.keeper.url }, 'rollback anchor keeper answers again');
      ch.down = false;
    } catch (err) {
      if (s.version > ch.failedAt) ch.failedAt = s.version;
      ch.failure = reason(err);
      if (!ch.down) this.o.log?.warn({ keeper: ch.keeper.url, why: ch.failure }, 'rollback anchor keeper: a write failed');
      ch.down = true;
    } finally {
      ch.sending = false;
    }
    const next = ch.next;
    ch.next = undefined;
    if (next && next.version > ch.acked) void this.send(ch, next);
    this.settle();
  }

  /** Ends every write that has its quorum, or can no longer have it. */
  private settle(): void {
    const m = this.channels.length;
    for (const w of this.waiters) {
      const acked = this.channels.filter((ch) => ch.acked >= w.version).length;
      const failed = this.channels.filter((ch) => ch.acked < w.version && ch.failedAt >= w.version);
      if (acked >= this.writeQuorum) {
        this.waiters.delete(w);
        if (this.quorumHeld === undefined || w.version > this.quorumHeld) this.quorumHeld = w.version;
        w.resolve();
      } else if (failed.length > m - this.writeQuorum) {
        this.waiters.delete(w);
        w.reject(new RollbackAnchorError(`version ${w.version} cannot reach the ${this.writeQuorum} of ${m} rollback anchor keepers a write needs (${acked} acknowledged it): ${failed.map((ch) => `${ch.keeper.url}: ${ch.failure}`).join('; ')}`, 'anchor_unavailable'));
      }
    }
  }
}

function reason(err: unknown): string {
  const e = err as Error;
  const cause = e?.cause as Error | undefined;
  return (cause?.message ? `${e.message}: ${cause.message}` : e?.message ?? String(err)).slice(0, 300);
}

/** The answer's body, at most `limit` bytes: a keeper that sends more is cut off, not read to the end. */
async function boundedText(res: Response, limit: number): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > limit) {
    await res.body?.cancel();
    throw new Error(`its answer is ${declared} bytes, over ${limit}`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (res.body) {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.length;
      if (size > limit) throw new Error(`its answer is over ${limit} bytes`);
      chunks.push(chunk);
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** POST as JSON over fetch: no redirects, a deadline on the whole exchange, a bounded answer. */
export const httpTransport: KeeperTransport = async (keeper, path, body, timeoutMs) => {
  let res: Response;
  let text: string;
  try {
    res = await fetch(new URL(path, keeper.url), {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), redirect: 'manual', signal: AbortSignal.timeout(timeoutMs),
    });
    text = await boundedText(res, 4 * MAX_BODY_BYTES);
  } catch (err) {
    const e = err as Error;
    if (e.message.startsWith('its answer')) throw e;
    if (e.name === 'TimeoutError') throw new Error(`no answer within ${timeoutMs} ms`);
    throw new Error(`unreachable: ${(e.cause as Error | undefined)?.message ?? e.message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`it answered ${res.status} with a body that is not JSON`);
  }
  if (!res.ok) {
    const p = parsed as { code?: unknown; error?: unknown };
    throw new Error(`it refused (${res.status}${typeof p.code === 'string' ? ` ${p.code.slice(0, 40)}` : ''})${typeof p.error === 'string' ? `: ${p.error.slice(0, 200)}` : ''}`);
  }
  return parsed;
};
