// A token log for tests (api/rwa/seams.ts `TokenLog`): it keeps what was appended, in order, per token.
import type { AppendedEntry, LogEntryInput, RwaScope, TokenLog } from '../../../api/rwa/seams.ts';

export interface LoggedEntry extends LogEntryInput { scope: RwaScope; tokenId: string; index: number }

export class MemoryTokenLog implements TokenLog {
  readonly entries: LoggedEntry[] = [];

  async append(scope: RwaScope, tokenId: string, entry: LogEntryInput): Promise<AppendedEntry> {
    const index = this.entries.filter((e) => e.tokenId === tokenId).length;
    // Stored as JSON, as a real log would: what does not survive it must not be appended.
    this.entries.push({ ...(JSON.parse(JSON.stringify(entry)) as LogEntryInput), scope: { ...scope }, tokenId, index });
    return { index, leaf_hash: index.toString(16).padStart(64, '0') };
  }

  of(tokenId: string, kind?: LogEntryInput['kind']): LoggedEntry[] {
    return this.entries.filter((e) => e.tokenId === tokenId && (!kind || e.kind === kind));
  }
}
