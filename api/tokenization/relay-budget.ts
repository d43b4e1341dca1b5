// The relayer's spend per tenant and chain (docs/platform/tokenization.md "Gasless transfers"): every relay sent
// within the rolling period counts, a relay still `sent` by its reservation (gas limit × max fee per gas, the
// most it can cost) and a finished one by what it cost (gas used × effective gas price; 0 when nothing went out).
// A new relay passes only if its own worst case fits in what remains of the cap. The service decides under one
// lock per chain's relayer, so relays racing each other are counted one after the other. Pure.
import type { RelayRecord } from './records.ts';

export interface RelayBudget {
  cap: bigint;
  /** Spent and reserved within the period. */
  used: bigint;
  remaining: bigint;
}

/** What one relay counts against the cap now. */
export function relayCharge(r: Pick<RelayRecord, 'state' | 'reserved_wei' | 'cost_wei'>): bigint {
  return r.state === 'sent' ? BigInt(r.reserved_wei) : BigInt(r.cost_wei ?? '0');
}

/** The budget given the relays of the period. */
export function relayBudget(relays: Iterable<Pick<RelayRecord, 'state' | 'reserved_wei' | 'cost_wei'>>, cap: bigint): RelayBudget {
  let used = 0n;
  for (const r of relays) used += relayCharge(r);
  return { cap, used, remaining: used >= cap ? 0n : cap - used };
}

/** Whether a relay whose worst case is `worst` fits. */
export function budgetAllows(b: RelayBudget, worst: bigint): boolean {
  return worst <= b.remaining;
}

/** The start of the rolling period ending at `nowMs`, as the ISO time relays record (their index compares these). */
export function periodStart(nowMs: number, windowSec: number): string {
  return new Date(nowMs - windowSec * 1000).toISOString();
}
