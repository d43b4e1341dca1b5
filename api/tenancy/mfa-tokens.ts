// Proof of a recent MFA verification (docs/platform/tenancy.md#mfa). The owner of a bearer key that
// has a TOTP factor posts a current code and the action it is for to POST /v1/mfa/verifications and
// receives a token bound to that key and that action (`rotate_secret:<endpoint id>`), valid for five
// minutes and good for one use: the route that needs it (SVC-MFA-Token header) consumes it before it
// acts. Format: base64url(JSON {k, a, j, v, e}) "." base64url(HMAC-SHA256); `j` is a random token id.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RecordRepository } from '../store/record-repository.ts';
import { MFA_TOKEN_USES } from './collections.ts';

export const MFA_TTL_SECONDS = 300;

/** The operations that need an MFA proof; a proof names one of them and the resource it acts on. */
export const MFA_ACTIONS = ['rotate_secret'] as const;
export type MfaAction = (typeof MFA_ACTIONS)[number];
/** `<action>:<resource id>`, e.g. `rotate_secret:whe_...`. */
export const MFA_ACTION_PATTERN = `^(${MFA_ACTIONS.join('|')}):[A-Za-z0-9_]{1,64}$`;

interface Payload { k: string; a: string; j: string; v: number; e: number }

/** A used token's marker (collection `mfa_token_uses`); the id starts with the expiry, for pruning. */
export interface UseMarker { id: string; key: string; action: string; used_at: number; expires_at: number }

/** Markers are kept this long past the token's expiry, so a clock stepping back cannot revive a token. */
const KEEP_AFTER_EXPIRY_SECONDS = 3600;

const pad = (n: number) => String(Math.max(0, Math.floor(n))).padStart(12, '0');

export class MfaTokens {
  constructor(private readonly key: Uint8Array, private readonly store: RecordRepository) {}

  private mac(p: string): Buffer {
    return createHmac('sha256', this.key).update(`mfa.${p}`).digest();
  }

  issue(keyId: string, action: string, nowSeconds: number): { token: string; action: string; verified_at: string; expires_at: string } {
    const payload: Payload = { k: keyId, a: action, j: randomBytes(16).toString('base64url'), v: nowSeconds, e: nowSeconds + MFA_TTL_SECONDS };
    const p = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return { token: `${p}.${this.mac(p).toString('base64url')}`, action, verified_at: new Date(nowSeconds * 1000).toISOString(), expires_at: new Date(payload.e * 1000).toISOString() };
  }

  /** The payload of an untampered, unexpired token of this key for this action; else undefined. */
  private read(token: string | undefined, keyId: string, action: string, nowSeconds: number): Payload | undefined {
    if (!token || token.length > 1024) return undefined;
    const [p, s, extra] = token.split('.');
    if (!p || !s || extra !== undefined) return undefined;
    const given = Buffer.from(s, 'base64url');
    const want = this.mac(p);
    if (given.length !== want.length || !timingSafeEqual(given, want)) return undefined;
    try {
      const v = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Partial<Payload>;
      const ok = v.k === keyId && v.a === action && typeof v.j === 'string' && typeof v.e === 'number' && typeof v.v === 'number' && v.v <= nowSeconds + 30 && nowSeconds < v.e;
      return ok ? (v as Payload) : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * True exactly once for an untampered, unexpired token of this key issued for this action: the first
   * use writes the token's marker (a conditional insert, so of concurrent uses exactly one wins); any
   * later use, or a use for another action or key, is false.
   */
  async consume(token: string | undefined, keyId: string, action: string, nowSeconds: number): Promise<boolean> {
    const p = this.read(token, keyId, action, nowSeconds);
    if (!p) return false;
    const id = `${pad(p.e)}\x00${p.j}`;
    const marker: UseMarker = { id, key: keyId, action, used_at: nowSeconds, expires_at: p.e };
    const first = await MFA_TOKEN_USES.in(this.store).insertIfAbsent(id, marker);
    if (first) await this.prune(nowSeconds);
    return first;
  }

  /** Forgets the markers of tokens that expired more than an hour ago (at most `limit` per call). */
  async prune(nowSeconds: number, limit = 100): Promise<number> {
    const ids: string[] = [];
    for await (const m of MFA_TOKEN_USES.in(this.store).range({ lt: pad(nowSeconds - KEEP_AFTER_EXPIRY_SECONDS) })) {
      ids.push(m.id);
      if (ids.length >= limit) break;
    }
    if (ids.length) await this.store.batch(ids.map((id) => MFA_TOKEN_USES.delOp(id)));
    return ids.length;
  }
}
