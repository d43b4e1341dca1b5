// JSON bodies parsed from the exact bytes received, which are kept on the request: request signatures
// and content digests are checked over those bytes, never over a re-serialization. Parsing is strict
// (docs/security.md "Strict input"): UTF-8 only, and no prototype-poisoning keys.
import type { FastifyInstance } from 'fastify';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { ErrorCode } from '../../core/errors/error-codes.ts';

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: Buffer;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Thrown by the reviver: a key that could reach an object's prototype when the body is copied. */
class PoisonedKey extends Error {}

/**
 * Parses JSON strictly: the bytes must be UTF-8, and a `__proto__` key, or a `constructor` key holding
 * an object with a `prototype`, anywhere in the body is an error (secure-json-parse's 'error' action; by
 * default Fastify's own parser would do the same, which this parser replaces). The reviver sees every
 * key as parsed, whatever escapes spelled it (`"\u005f_proto__"`). `poisonCode` is the code answered
 * for such a key: the platform API names it (`forbidden_key`), the vault API keeps its spec's
 * `invalid_request`.
 */
export function parseStrictJson(body: Buffer, poisonCode: ErrorCode = 'invalid_request'): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new CustodyError('invalid_request', 'body is not valid UTF-8');
  }
  try {
    return JSON.parse(text, (key, value: unknown) => {
      if (key === '__proto__') throw new PoisonedKey('__proto__');
      if (key === 'constructor' && typeof value === 'object' && value !== null && Object.hasOwn(value, 'prototype')) throw new PoisonedKey('constructor.prototype');
      return value;
    });
  } catch (err) {
    if (err instanceof PoisonedKey) throw new CustodyError(poisonCode, `body: the key ${err.message} is not allowed in a JSON body`);
    throw new CustodyError('invalid_request', 'body is not valid JSON');
  }
}

export function parseJsonKeepingRawBody(app: FastifyInstance, poisonCode: ErrorCode = 'invalid_request'): void {
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body: Buffer, done) => {
    req.rawBody = body;
    if (body.length === 0) return done(null, undefined);
    try {
      done(null, parseStrictJson(body, poisonCode));
    } catch (err) {
      done(err as CustodyError, undefined);
    }
  });
}
