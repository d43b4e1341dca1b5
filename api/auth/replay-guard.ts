// Remembers (key id, nonce) pairs until their signature expires, so a captured request cannot be
// replayed. In memory for one API instance; several instances share the database store instead.
export class ReplayGuard {
  private readonly seen = new Map<string, number>();

  /** False when the pair was seen and has not expired yet; otherwise records it. */
  claim(keyId: string, nonce: string, expiresAt: number, now: number): boolean {
    if (this.seen.size > 10_000) for (const [k, exp] of this.seen) if (exp < now) this.seen.delete(k);
    const k = `${keyId}\x00${nonce}`;
    const exp = this.seen.get(k);
    if (exp !== undefined && exp >= now) return false;
    this.seen.set(k, expiresAt);
    return true;
  }
}
