// A workspace's fee schedules (docs/platform/fees.md): immutable once created, so the fee a quote or a
// payment names can always be recomputed from the schedule it names. The schedule in force is the one
// created last; a tenant changes its fees by creating a new schedule, and the old ones stay readable.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { pageOf, type CursorCodec, type PageResult } from '../store/pagination.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import { FieldValidationError, type FieldError } from '../validation.ts';
import { chainInfo } from '../vaults/wallet-address.ts';
import { filteredWalk } from '../account-holders/filtered-walk.ts';
import { checkRules, ruleJson, type FeeRuleJson } from './fee-rule.ts';
import { parseAsset } from './base-units.ts';
import { FEE_SCHEDULES } from './collections.ts';

export const FEE_SCHEDULE_ID = /^fsc_[0-9a-f]{26}$/;

export interface FeeScheduleRecord {
  v: 1;
  id: string;
  tenant: string;
  workspace: string;
  name: string;
  status: 'active';
  /** As checked at creation: asset ids in lower case, amounts as digit strings. */
  rules: FeeRuleJson[];
  /** Where the tenant fee of a payment on each EVM chain goes: chain → lower-case 0x address. Absent in schedules made before. */
  collectors?: Record<string, string>;
  created_at: string;
}

export interface FeeScheduleInput { name: string; rules: FeeRuleJson[]; collectors?: Record<string, string> | undefined }

/** Most collectors one schedule names (one per chain). */
export const MAX_COLLECTORS = 20;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export const feeScheduleView = (s: FeeScheduleRecord, inForce: boolean) => ({ id: s.id, name: s.name, status: s.status, in_force: inForce, rules: s.rules, collectors: s.collectors ?? {}, created_at: s.created_at });

/** The tenant-fee collector `s` names on `chain`, lower case, if any. */
export const collectorOf = (s: Pick<FeeScheduleRecord, 'collectors'> | undefined, chain: string): string | undefined => s?.collectors?.[chain];

/** Rejected fields in the order of the body: name, then each rule's (a stable sort keeps a rule's fields in order). */
const fieldOrder = (f: string) => (f === 'name' ? -1 : f.startsWith('collectors') ? 1e6 : Number(/^rules\[(\d+)\]/.exec(f)?.[1] ?? 1e6));

export class FeeSchedules {
  constructor(private readonly o: { store: RecordRepository; audit: AuditLog; cursors: CursorCodec; clock: () => number }) {}

  async get(scope: Scope, id: string): Promise<FeeScheduleRecord> {
    const s = FEE_SCHEDULE_ID.test(id) ? await FEE_SCHEDULES.in(this.o.store).get(id) : undefined;
    if (!s || s.workspace !== scope.workspace || s.tenant !== scope.tenant) throw new CustodyError('not_found', `no fee schedule ${id}`);
    return s;
  }

  /** The schedule in force: the workspace's last created; undefined when it has none (the tenant fee is then 0). */
  async inForce(scope: Scope): Promise<FeeScheduleRecord | undefined> {
    const [last] = await FEE_SCHEDULES.in(this.o.store).byIndexEntries(`${scope.workspace}\x00`, undefined, 1, true);
    return last?.value;
  }

  async create(scope: Scope, actor: Actor, input: FeeScheduleInput): Promise<FeeScheduleRecord> {
    const errors: FieldError[] = [];
    const name = input.name.trim();
    if (!name) errors.push({ field: 'name', reason: 'required' });
    else if (/[\r\n<>]/.test(name)) errors.push({ field: 'name', reason: 'line breaks and angle brackets are not allowed' });
    const checked = checkRules(input.rules);
    errors.push(...checked.errors);
    input.rules.forEach((r, i) => {
      const asset = r.asset === '*' ? undefined : parseAsset(r.asset);
      if (!asset) return;
      const info = chainInfo(asset.chain);
      if (!info) errors.push({ field: `rules[${i}].asset`, reason: `${asset.chain} is not a chain this service knows` });
      else if (info.family === 'bitcoin' && asset.token !== 'native') errors.push({ field: `rules[${i}].asset`, reason: `${asset.chain} has only its native asset` });
    });
    const collectors = Object.entries(input.collectors ?? {});
    if (collectors.length > MAX_COLLECTORS) errors.push({ field: 'collectors', reason: `at most ${MAX_COLLECTORS} chains` });
    for (const [chain, address] of collectors) {
      const info = chainInfo(chain);
      if (!info || info.family !== 'evm') errors.push({ field: `collectors.${chain}`, reason: 'not an EVM chain this service knows' });
      else if (!ADDRESS.test(address) || /^0x0{40}$/.test(address)) errors.push({ field: `collectors.${chain}`, reason: 'not a non-zero 0x address of 20 bytes' });
    }
    if (errors.length) throw new FieldValidationError(errors.sort((a, b) => fieldOrder(a.field) - fieldOrder(b.field)));
    const s: FeeScheduleRecord = {
      v: 1, id: newId('fsc', this.o.clock()), tenant: scope.tenant, workspace: scope.workspace, name, status: 'active',
      rules: checked.rules.map(ruleJson), collectors: Object.fromEntries(collectors.map(([c, a]) => [c, a.toLowerCase()])), created_at: new Date(this.o.clock()).toISOString(),
    };
    await this.o.store.batch([
      FEE_SCHEDULES.putOp(s.id, s, { index: [`${s.workspace}\x00${s.id}`] }),
      // in_force is left out: it is true only until the next schedule.
      this.o.audit.op(scope, actor, 'fee_schedule.create', s.id, null, { id: s.id, name: s.name, status: s.status, rules: s.rules, collectors: s.collectors, created_at: s.created_at }),
    ]);
    return s;
  }

  /** GET /fee-schedules: oldest first; each says whether it is the one in force. */
  async list(scope: Scope, cursor: string | undefined, limit: number): Promise<PageResult<ReturnType<typeof feeScheduleView>>> {
    const after = this.o.cursors.decode(cursor, 'fee_schedules', scope.workspace, {});
    const items = await filteredWalk(this.o.store, FEE_SCHEDULES, `${scope.workspace}\x00`, after, limit, (s) => s.workspace === scope.workspace && s.tenant === scope.tenant);
    const page = pageOf(this.o.cursors, items, limit, 'fee_schedules', scope.workspace, {});
    const current = (await this.inForce(scope))?.id;
    return { ...page, data: page.data.map((s) => feeScheduleView(s, s.id === current)) };
  }
}
