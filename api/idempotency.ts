// Idempotency-Key for the platform API's mutations that accept it (platform-api.md: PUT /branding,
// POST /webhook-endpoints; POST /webhook-endpoints/{id}/test keeps its own record of the last result).
// The first successful answer under a key is stored with a fingerprint of the request body; the same key
// with the same body gets that answer again without doing anything, and the same key with another body
// is 409 idempotency_key_reused: never a silent replay of a different request. Keys are per workspace
// and per operation. A request that fails stores nothing, so it can be retried under the same key.
// Requests with the same key run one after another, in this process or any other sharing the store (the
// store's `exclusive` lock per key), so a retry racing the original waits for it and replays its answer.
// A record lasts a window (24 hours unless API_IDEMPOTENCY_WINDOW_S says otherwise): after it the key is
// new again, and `pruneIdempotency` deletes the record. A replayed answer carries `Idempotent-Replayed: true`.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Op, RecordRepository } from './store/record-repository.ts';
import { CustodyError } from '../core/errors/custody-error.ts';
import { collection } from './store/collection.ts';

/**
 * Answers stored under an Idempotency-Key, `<workspace> NUL <operation> NUL <key>`. Each operation keeps
 * its own shape (`Stored` here; the webhook endpoint test keeps its last result), so a reader says which.
 */
export const IDEMPOTENCY = collection<unknown>('idempotency');

/** How long a key's record answers for, by default: 24 hours (docs/operations.md "Idempotency"). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;

/** The response header saying that the answer is the one stored under the key, not a new one. */
export const REPLAYED_HEADER = 'idempotent-replayed';

/** Whether a record stored at `created_at` (ISO time; absent on records kept before the window) still answers. */
export function withinWindow(createdAt: unknown, now: number, windowMs: number): boolean {
  const t = typeof createdAt === 'string' ? Date.parse(createdAt) : NaN;
  return Number.isFinite(t) && now - t < windowMs;
}

// The request being answered, so that a replay deep in a handler can mark its response.
const replies = new AsyncLocalStorage<{ replayed: boolean }>();

/** Marks the current request's answer as a replay (Idempotent-Replayed: true); nothing outside a request. */
export function markReplayed(): void {
  const r = replies.getStore();
  if (r) r.replayed = true;
}

/** Installs the hooks that send `Idempotent-Replayed: true` on an answer a replay produced. */
export function installReplayHeader(app: FastifyInstance): void {
  app.addHook('onRequest', (_req, _reply, done) => replies.run({ replayed: false }, done));
  app.addHook('onSend', async (_req, reply, payload) => {
    if (replies.getStore()?.replayed) void reply.header(REPLAYED_HEADER, 'true');
    return payload;
  });
}

/** The Idempotency-Key header: undefined when absent; 400 invalid_request when malformed. */
export function idempotencyKeyOf(req: FastifyRequest): string | undefined {
  const k = req.headers['idempotency-key'];
  if (k === undefined) return undefined;
  if (typeof k !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(k)) throw new CustodyError('invalid_request', 'Idempotency-Key must be 1 to 255 visible ASCII characters');
  return k;
}

/**
 * The Idempotency-Key of a request that moves money or changes what money costs, required: a retry
 * without one could do it twice (`resource` names what a retry under the key answers).
 */
export function requiredIdempotencyKey(req: FastifyRequest, resource = 'request'): string {
  const key = idempotencyKeyOf(req);
  if (key === undefined) throw new CustodyError('invalid_request', `Idempotency-Key is required: a retry under the same key answers the same ${resource}`);
  return key;
}

/** JSON with object keys sorted at every level: the same body however its sender ordered or spaced it. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (typeof v === 'object' && v !== null) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

export function bodyFingerprint(body: unknown): string {
  return createHash('sha256').update(canonical(body ?? null)).digest('base64url');
}

interface Stored<T> { fingerprint: string; response: T; created_at: string }

export class IdempotentRequests {
  constructor(private readonly store: RecordRepository, private readonly clock: () => number = Date.now, private readonly windowMs: number = IDEMPOTENCY_WINDOW_MS) {}

  /**
   * Runs `fn` once per (workspace, operation, key) and window: stores its answer; replays it for the
   * same body; 409 idempotency_key_reused for another body. Without a key, just runs `fn`. A record past
   * the window (or kept before records had a time) answers nothing: `fn` runs and replaces it. `replay`,
   * when given, turns the stored answer into the replayed one (it may throw, e.g. when what the answer
   * showed once may not be shown again).
   */
  async run<T>(workspace: string, operation: string, key: string | undefined, body: unknown, fn: () => Promise<T>, replay?: (stored: T) => Promise<T>): Promise<T> {
    if (key === undefined) return fn();
    const id = `${workspace}\x00${operation}\x00${key}`;
    return this.store.exclusive(`idempotency:${id}`, () => this.once(id, body, fn, replay));
  }

  private async once<T>(id: string, body: unknown, fn: () => Promise<T>, replay?: (stored: T) => Promise<T>): Promise<T> {
    const fingerprint = bodyFingerprint(body);
    const prior = (await IDEMPOTENCY.in(this.store).get(id)) as Stored<T> | Record<string, unknown> | undefined;
    if (prior && typeof prior.fingerprint === 'string' && withinWindow(prior.created_at, this.clock(), this.windowMs)) {
      if (prior.fingerprint !== fingerprint) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
      const stored = (prior as Stored<T>).response;
      const answer = replay ? await replay(stored) : stored;
      markReplayed();
      return answer;
    }
    const response = await fn();
    await IDEMPOTENCY.in(this.store).put(id, { fingerprint, response, created_at: new Date(this.clock()).toISOString() } satisfies Stored<T>);
    return response;
  }
}

/**
 * Deletes the idempotency records past the window (and those kept before records had a time), in batches
 * of at most 500; one instance at a time. Returns how many were deleted.
 */
export async function pruneIdempotency(store: RecordRepository, now: number, windowMs: number = IDEMPOTENCY_WINDOW_MS): Promise<number> {
  const r = await store.tryExclusive('idempotency-prune', async () => {
    let ops: Op[] = [];
    let pruned = 0;
    for await (const { id, value } of IDEMPOTENCY.in(store).entries()) {
      if (withinWindow((value as { created_at?: unknown } | null)?.created_at, now, windowMs)) continue;
      ops.push(IDEMPOTENCY.delOp(id));
      pruned++;
      if (ops.length >= 500) {
        await store.batch(ops);
        ops = [];
      }
    }
    if (ops.length) await store.batch(ops);
    return pruned;
  });
  return r.ran ? r.value : 0;
}
