// The audit log of configuration changes: actor, time, action, resource, before and after
// (docs/platform/audit-log.md). Entries are written in the same atomic batch as the change.
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { AUDIT_LOG } from './collections.ts';

/**
 * Who made a change: a key, an operator, a hosted member on its own factors (Account Center, recovery), or
 * `system` for what the service does by itself (a rejection proposed at a freed Safe nonce).
 */
export interface Actor { type: 'api_key' | 'operator' | 'hosted_member' | 'system'; id: string }

export interface AuditEntry {
  id: string;
  tenant: string;
  workspace: string;
  actor: Actor;
  at: string;
  action: string;
  resource_id: string;
  before: unknown;
  after: unknown;
}

export class AuditLog {
  constructor(private readonly store: RecordRepository, private readonly clock: () => number = Date.now) {}

  op(scope: { tenant: string; workspace: string }, actor: Actor, action: string, resourceId: string, before: unknown, after: unknown): Op {
    const e: AuditEntry = { id: newId('aud', this.clock()), tenant: scope.tenant, workspace: scope.workspace, actor, at: new Date(this.clock()).toISOString(), action, resource_id: resourceId, before, after };
    return AUDIT_LOG.putOp(e.id, e, { index: [`${scope.workspace}\x00${e.id}`] });
  }

  list(workspace: string, limit = 1000): Promise<AuditEntry[]> {
    return AUDIT_LOG.in(this.store).byIndex(`${workspace}\x00`, limit);
  }
}
