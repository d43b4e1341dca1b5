// The coordinator's Prometheus metrics (docs/operations.md "Metrics and health"): sessions by kind and
// outcome, their durations, the nodes sessions named as culprits, and the attached nodes. Labels come
// from fixed sets (core/link/protocol-name.ts, the hub's outcome codes, node kinds) or are node ids of
// a session's parties, never what a node wrote into a report.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ProtocolName } from '../../core/link/protocol-name.ts';
import type { NodeKindName } from '../../core/link/node-kind.ts';
import type { SessionOutcome } from './session-hub.ts';

/** `ok`, or the code a failed session settled with. */
export type SessionOutcomeLabel = 'ok' | Extract<SessionOutcome, { ok: false }>['code'];

/** Key generation and reshares run for up to a minute; a signature in well under a second. */
const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export class SessionMetrics {
  private readonly started: Counter<'kind'>;
  private readonly finished: Counter<'kind' | 'outcome'>;
  private readonly duration: Histogram<'kind' | 'outcome'>;
  private readonly culprits: Counter<'node'>;
  private attached: () => readonly { kind: NodeKindName }[] = () => [];

  constructor(registry: Registry) {
    this.started = new Counter({ name: 'sessions_started_total', help: 'Sessions the coordinator opened, by kind', labelNames: ['kind'], registers: [registry] });
    this.finished = new Counter({ name: 'sessions_finished_total', help: 'Sessions settled, by kind and outcome (ok or the failure code)', labelNames: ['kind', 'outcome'], registers: [registry] });
    this.duration = new Histogram({ name: 'session_duration_seconds', help: 'Time from opening a session to its settling, by kind and outcome', labelNames: ['kind', 'outcome'], buckets: DURATION_BUCKETS, registers: [registry] });
    this.culprits = new Counter({ name: 'session_culprits_total', help: 'Times a failed session named a party as culprit, by node id', labelNames: ['node'], registers: [registry] });
    const attached = () => this.attached();
    new Gauge({
      name: 'attached_nodes', help: 'Nodes attached to the coordinator now, by kind', labelNames: ['kind'], registers: [registry],
      collect() {
        const by: Record<NodeKindName, number> = { service: 0, self: 0, tee: 0 };
        for (const n of attached()) by[n.kind]++;
        for (const [kind, n] of Object.entries(by)) this.set({ kind }, n);
      },
    });
  }

  /** Where the attached-nodes gauge reads from at each scrape. */
  countAttached(list: () => readonly { kind: NodeKindName }[]): void {
    this.attached = list;
  }

  sessionStarted(kind: ProtocolName): void {
    this.started.inc({ kind });
  }

  /** `culprits`: the outcome's culprits that are parties of the session (the caller filters). */
  sessionFinished(kind: ProtocolName, outcome: SessionOutcomeLabel, seconds: number, culprits: Iterable<string>): void {
    this.finished.inc({ kind, outcome });
    this.duration.observe({ kind, outcome }, seconds);
    for (const node of culprits) this.culprits.inc({ node });
  }
}
