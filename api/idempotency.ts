// Idempotency-Key for the platform API's mutations that accept it (platform-api.md: PUT /branding,
// POST /webhook-endpoints; POST /webhook-endpoints/{id}/test keeps its own record of the last result).
// The first successful answer under a key is stored with a fingerprint of the request body; the same key
// with the same body gets that answer again without doing anything, and the same key with another body
// is 409 idempotency_key_reused: never a silent replay of a different request. Keys are per workspace
// and per operation. A request that fails stores nothing, so it can be retried under the same key.
// Requests with the same key run one after another, in this process or any other sharing the store (the
// store's `exclusive` lock per key), so a retry racing the original waits for it and replays its answer.
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { RecordRepository } from './store/record-repository.ts';
import { CustodyError } from '../core/errors/custody-error.ts';
import { collection } from './store/collection.ts';

/**
 * Answers stored under an Idempotency-Key, `<workspace> NUL <operation> NUL <key>`. Each operation keeps
 * its own shape (`Stored` here; the webhook endpoint test keeps its last result), so a reader says which.
 */
export const IDEMPOTENCY = collection<unknown>('idempotency');

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
  constructor(private readonly store: RecordRepository, private readonly clock: () => number = Date.now) {}

  /**
   * Runs `fn` once per (workspace, operation, key): stores its answer; replays it for the same body;
   * 409 idempotency_key_reused for another body. Without a key, just runs `fn`. `legacy` reads a record
   * stored before fingerprints were kept (it replays whatever the body).
   */
  async run<T>(workspace: string, operation: string, key: string | undefined, body: unknown, fn: () => Promise<T>, legacy?: (record: unknown) => T): Promise<T> {
    if (key === undefined) return fn();
    const id = `${workspace}\x00${operation}\x00${key}`;
    return this.store.exclusive(`idempotency:${id}`, () => this.once(id, body, fn, legacy));
  }

  private async once<T>(id: string, body: unknown, fn: () => Promise<T>, legacy?: (record: unknown) => T): Promise<T> {
    const fingerprint = bodyFingerprint(body);
    const prior = (await IDEMPOTENCY.in(this.store).get(id)) as Stored<T> | Record<string, unknown> | undefined;
    if (prior) {
      if (typeof prior.fingerprint !== 'string') {
        if (legacy) return legacy(prior);
      } else {
        if (prior.fingerprint !== fingerprint) throw new CustodyError('idempotency_key_reused', 'this Idempotency-Key was used with another request body; use a new key for a different request');
        return (prior as Stored<T>).response;
      }
    }
    const response = await fn();
    await IDEMPOTENCY.in(this.store).put(id, { fingerprint, response, created_at: new Date(this.clock()).toISOString() } satisfies Stored<T>);
    return response;
  }
}
