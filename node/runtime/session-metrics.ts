// The node's Prometheus metrics (docs/operations.md "Metrics and health"): the sessions it took part in
// by kind and outcome, their durations, and the sessions it refused by code. Refusals are the node
// saying no to the coordinator (an intent that does not verify, a committee it did not pin, a replayed
// request): the threat model's early warning that someone is trying. Every label is from a fixed set:
// kinds from core/link/protocol-name.ts, refusal codes from the registered error codes.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ProtocolName } from '../../core/link/protocol-name.ts';
import type { ErrorCode } from '../../core/errors/error-codes.ts';

/**
 * How a session ended here: `ok` (result sent), `aborted` (the protocol named culprits), `refused`
 * (declined before it ran), `relay_fault` (the relay tampered), `cancelled` (by the coordinator),
 * `timeout` (deadline passed), `abandoned` (link lost or node stopping), `internal` (a bug).
 */
export type NodeSessionOutcome = 'ok' | 'aborted' | 'refused' | 'relay_fault' | 'cancelled' | 'timeout' | 'abandoned' | 'internal';

const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export class NodeSessionMetrics {
  private readonly sessions: Counter<'kind' | 'outcome'>;
  private readonly duration: Histogram<'kind' | 'outcome'>;
  private readonly refusals: Counter<'kind' | 'code'>;

  /** `running` and `attached` (each configured coordinator's address, and whether its link is up) are read at each scrape. */
  constructor(registry: Registry, sources: { running?: () => number; attached?: () => Iterable<readonly [coordinator: string, attached: boolean]> } = {}) {
    this.sessions = new Counter({ name: 'node_sessions_total', help: 'Sessions this node took part in, by kind and outcome', labelNames: ['kind', 'outcome'], registers: [registry] });
    this.duration = new Histogram({ name: 'node_session_duration_seconds', help: 'Time from a session opening here to its end, by kind and outcome', labelNames: ['kind', 'outcome'], buckets: DURATION_BUCKETS, registers: [registry] });
    this.refusals = new Counter({ name: 'node_session_refusals_total', help: 'Sessions this node refused, by kind and error code', labelNames: ['kind', 'code'], registers: [registry] });
    const { running, attached } = sources;
    if (running) new Gauge({ name: 'node_sessions_running', help: 'Sessions running on this node now', registers: [registry], collect() { this.set(running()); } });
    // One series per configured coordinator: the label is its address from NODE_COORDINATOR, a fixed set.
    if (attached) new Gauge({ name: 'node_coordinator_attached', help: '1 while the node holds its link to the coordinator, by coordinator address', labelNames: ['coordinator'], registers: [registry], collect() { for (const [coordinator, up] of attached()) this.set({ coordinator }, up ? 1 : 0); } });
  }

  sessionEnded(kind: ProtocolName, outcome: NodeSessionOutcome, seconds: number): void {
    this.sessions.inc({ kind, outcome });
    this.duration.observe({ kind, outcome }, seconds);
  }

  sessionRefused(kind: ProtocolName, code: ErrorCode): void {
    this.refusals.inc({ kind, code });
  }
}
