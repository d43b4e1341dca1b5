// A token log for tests of the real-world-asset parts: keeps what was appended, in order, per token, so a test
// asserts on exactly what a change appended (docs/platform/rwa.md).
import type { AppendedEntry, LogEntryInput, RwaScope, TokenLog } from '../../../api/rwa/seams.ts';

export class MemoryTokenLog implements TokenLog {
  readonly entries: { scope: RwaScope; tokenId: string; entry: LogEntryInput }[] = [];

  async append(scope: RwaScope, tokenId: string, entry: LogEntryInput): Promise<AppendedEntry> {
    const index = this.entries.filter((e) => e.tokenId === tokenId).length;
    this.entries.push({ scope, tokenId, entry: structuredClone(entry) });
    return { index, leaf_hash: index.toString(16).padStart(64, '0') };
  }

  of(tokenId: string): LogEntryInput[] {
    return this.entries.filter((e) => e.tokenId === tokenId).map((e) => e.entry);
  }
}
