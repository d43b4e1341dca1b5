// Relays the vault API's outbox (VaultService.event: every vault and transaction change writes its event
// in the batch that makes the change) to the webhook delivery engine, into the workspace the customer
// link names (docs/customers.md "Events"). Each outbox row is deleted in the very batch that stores the
// webhook event and its deliveries (DeliveryEngine.emit's `extra`), so a crash before that batch leaves
// the row to relay again and a crash after it leaves nothing to relay twice. One relay at a time per
// store: each pass holds the store's `event-relay` lock (every API instance sharing a PostgreSQL store
// runs a relay, and a pass finds the lock free only when no other instance's pass runs), and takes rows
// one at a time, in the outbox's order.
import type { Logger } from '../../common/logger.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import type { DeliveryEngine } from '../webhooks/delivery-engine.ts';
import { eventType } from '../webhooks/event-catalog.ts';
import type { EventRecord } from '../vaults/records.ts';
import type { AuditLog } from '../tenancy/audit-log.ts';
import type { CustomerLinks } from './customer-links.ts';
import { OUTBOX } from '../vaults/collections.ts';
import { OUTBOX_PARKED } from './collections.ts';
import { WEBHOOK_EVENTS } from '../webhooks/collections.ts';

/**
 * The webhook event an outbox event is delivered as; undefined for one the catalog has no name for
 * (api_key.*, node.*, transaction.checks, vault.reshare.pending, ...), which the relay
 * consumes without delivering. A rejected transaction is the catalog's transaction.failed with state
 * `rejected` (the catalog's failure event names its reason's code, e.g. rejected_by_approver).
 */
export function webhookTypeOf(outboxType: string): string | undefined {
  if (outboxType === 'transaction.rejected') return 'transaction.failed';
  return eventType(outboxType) ? outboxType : undefined;
}

/**
 * A failure's enumerated code: the code that leads the vault API's reason (`dropped: nonce 3 was used by
 * ...` is `dropped`, `signers refused: bad_template: ...` is `signers_refused`); the words after it stay
 * in the transaction (GET /v1/transactions/{id}), not in the event.
 */
export function failureCode(reason: string): string {
  const head = reason.split(':')[0]!.trim().replaceAll(' ', '_');
  return /^[a-z_]{1,40}$/.test(head) ? head : 'failed';
}

/**
 * The envelope's data: the vault API's fields as written, with `status` (the catalog's word) beside
 * `state`, and a transaction failure's reason as its code.
 */
function dataOf(e: EventRecord, type: string): Record<string, unknown> {
  const state = e.data.state;
  const data = typeof state === 'string' && e.data.status === undefined ? { ...e.data, status: state } : e.data;
  return type === 'transaction.failed' && typeof data.reason === 'string' ? { ...data, reason: failureCode(data.reason) } : data;
}

/** Vault API events that change a vault's governance: each is also an entry of the linked workspace's audit log. */
export const AUDITED_VAULT_EVENTS: ReadonlySet<string> = new Set(['vault.policy.changed', 'vault.export.requested', 'vault.exported']);

export interface EventRelayOptions {
  store: RecordRepository;
  links: CustomerLinks;
  deliveries: DeliveryEngine;
  log: Logger;
  /** The platform's audit log: AUDITED_VAULT_EVENTS are written to it in the batch that emits them. */
  audit?: AuditLog;
  /** Rows read per pass (default 100). */
  batch?: number;
}

export interface RelayPass { relayed: number; parked: number; dropped: number }

export class EventRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = true;
  private released: Promise<void> | undefined;

  constructor(private readonly o: EventRelayOptions) {}

  /**
   * Relays every outbox row present, oldest first: a row of a linked organization becomes a webhook
   * event in its workspace, a row of an unlinked one is parked until an operator links it, a row without
   * a catalog name is dropped. Stops at the first failure (the row stays for the next pass).
   */
  async runOnce(): Promise<RelayPass> {
    const r = await this.o.store.tryExclusive('event-relay', () => this.relay());
    return r.ran ? r.value : { relayed: 0, parked: 0, dropped: 0 };
  }

  private async relay(): Promise<RelayPass> {
    await (this.released ??= this.releaseLinked());
    const pass: RelayPass = { relayed: 0, parked: 0, dropped: 0 };
    const limit = this.o.batch ?? 100;
    for (;;) {
      const rows: { id: string; value: EventRecord }[] = [];
      for await (const r of OUTBOX.in(this.o.store).entries({ limit })) rows.push(r);
      for (const { id, value: e } of rows) {
        const done: Op = OUTBOX.delOp(id);
        const type = webhookTypeOf(e.type);
        if (!type) {
          await this.o.store.batch([done]);
          pass.dropped++;
          this.o.log.debug({ event: e.id, type: e.type }, 'outbox event has no webhook event type; not relayed');
          continue;
        }
        const link = await this.o.links.byOrg(e.org);
        if (!link) {
          await this.o.store.batch([done, OUTBOX_PARKED.putOp(`${e.org}/${id}`, e)]);
          pass.parked++;
          // Linked between the look-up and the park: the link's own release may have run before it.
          if (await this.o.links.byOrg(e.org)) await this.o.links.releaseParked(e.org);
          this.o.log.info({ event: e.id, type: e.type, organization: e.org }, 'organization is linked to no customer: event parked until an operator links it (docs/customers.md)');
          continue;
        }
        // Emitted before, by a relay that was stopped between its batch and this read? Never: the row
        // goes in that batch. Checked anyway, so a row restored from a backup is not delivered twice.
        if (await WEBHOOK_EVENTS.in(this.o.store).get(e.id)) {
          await this.o.store.batch([done]);
          continue;
        }
        const scope = { tenant: link.tenant, workspace: link.workspace };
        const audited = this.o.audit && AUDITED_VAULT_EVENTS.has(e.type) ? [this.o.audit.op(scope, { type: 'system', id: 'vault-api' }, e.type, e.resource_id, null, e.data)] : [];
        await this.o.deliveries.emit(scope, type, { type: e.resource_type, id: e.resource_id }, { type: 'system', id: 'vault-api' },
          dataOf(e, type), [done, ...audited], [], { id: e.id, created_at: e.created_at });
        pass.relayed++;
      }
      if (rows.length < limit) return pass;
    }
  }

  /** Events parked for organizations linked since (a link interrupted before it released them). */
  private async releaseLinked(): Promise<void> {
    for (const org of await this.o.links.parkedOrgs()) {
      if (await this.o.links.byOrg(org)) await this.o.links.releaseParked(org);
    }
  }

  /** Relays every `intervalMs` until stopped. */
  start(intervalMs = 250): void {
    this.stopped = false;
    const tick = () => {
      this.timer = undefined;
      if (this.stopped) return;
      this.running = this.runOnce().then((p) => {
        if (p.relayed || p.parked) this.o.log.debug(p, 'outbox relayed');
      }, (err: unknown) => {
        this.released = undefined;
        this.o.log.warn({ err }, 'outbox relay pass failed; retrying');
      }).finally(() => {
        this.running = undefined;
        if (!this.stopped) this.timer = setTimeout(tick, intervalMs);
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  /** Stops after the pass in progress; a row is relayed whole or not at all. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
