// Schema rebinds (docs/platform/rwa.md "Schema rebinds"): a token's binding moves to a newer published
// version of its schema in three steps. The dry run checks every current value against the new version and
// lists what differs; attesters of the token sign that dry run (its SHA-256) as the binding's policy requires
// (k distinct active attesters); commit then checks again, under the token's lock, that the binding has not
// moved and the dry run still comes out the same, and moves the binding and re-places the fields in one batch.
//
//   created -> dry_run_failed | attesting | ready      (dry-run; again at any time before commit)
//   attesting -> ready                                (the k-th attestation)
//   ready -> committed                                (commit)
//   any open state -> superseded                      (the binding moved under it)
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import { newId } from '../../store/ids.ts';
import type { Actor, AuditLog } from '../../tenancy/audit-log.ts';
import type { Scope } from '../../tenancy/scope.ts';
import type { TokenLog } from '../seams.ts';
import type { AssetSchemaService } from './asset-schema-service.ts';
import type { TokenFieldsService } from './token-fields-service.ts';
import { ATTESTER_ID } from './token-fields-service.ts';
import { ATTESTERS, REBINDS } from './collections.ts';
import type { RebindAttestation, RebindRecord, RebindState, SchemaBindingRecord } from './records.ts';
import { dryRun } from './rebind-dry-run.ts';
import { verifyStatement, type RebindStatement } from './attestation.ts';

export const REBIND_ID = /^rbd_[0-9a-f]{26}$/;
const OPEN: readonly RebindState[] = ['created', 'dry_run_failed', 'attesting', 'ready'];

export interface SchemaRebindServiceOptions {
  store: RecordRepository;
  audit: AuditLog;
  clock: () => number;
  schemas: AssetSchemaService;
  fields: TokenFieldsService;
  log: TokenLog;
}

export function rebindView(r: RebindRecord) {
  return {
    id: r.id, token_id: r.token_id, schema_id: r.schema_id, from_version: r.from_version, from_sha256: r.from_sha256, to_version: r.to_version, to_sha256: r.to_sha256,
    state: r.state, required_attestations: r.required_attestations, dry_run: r.dry_run,
    attestations: r.attestations.map((a) => ({ attester_id: a.attester_id, statement: a.statement, key: a.key, signature: a.signature, at: a.at, log_index: a.log_index })),
    created_at: r.created_at, updated_at: r.updated_at, committed_at: r.committed_at, log_index: r.log_index,
  };
}

const rebindIndex = (r: RebindRecord) => [`${r.token_id}\x00${r.id}`];

export class SchemaRebindService {
  constructor(private readonly o: SchemaRebindServiceOptions) {}

  async get(scope: Scope, id: string): Promise<RebindRecord> {
    const r = REBIND_ID.test(id) ? await REBINDS.in(this.o.store).get(id) : undefined;
    if (!r || r.tenant !== scope.tenant || r.workspace !== scope.workspace) throw new CustodyError('not_found', `no schema rebind ${id}`);
    return r;
  }

  async create(scope: Scope, actor: Actor, input: { token_id: string; schema_id?: string | undefined; version: number }): Promise<RebindRecord> {
    await this.o.fields.token(scope, input.token_id);
    const b = await this.o.fields.bindingOf(input.token_id);
    if (!b) throw new CustodyError('conflict', `token ${input.token_id} is bound to no asset schema: bind it first`);
    if (input.schema_id !== undefined && input.schema_id !== b.schema_id) throw new CustodyError('validation_failed', `schema_id: a rebind moves token ${input.token_id} to a newer version of ${b.schema_id}, not to ${input.schema_id}`);
    if (input.version <= b.version) throw new CustodyError('validation_failed', `version: ${input.version} is not newer than the bound version ${b.version}`);
    const { record: to } = await this.o.schemas.published(scope, b.schema_id, input.version);
    const now = this.o.fields.iso();
    const r: RebindRecord = {
      v: 1, id: newId('rbd', this.o.clock()), token_id: input.token_id, tenant: scope.tenant, workspace: scope.workspace, schema_id: b.schema_id,
      from_version: b.version, from_sha256: b.sha256, to_version: to.version, to_sha256: to.sha256, state: 'created', required_attestations: b.rebind_policy.attestations,
      dry_run: null, attestations: [], created_at: now, updated_at: now, committed_at: null, log_index: null,
    };
    await this.o.store.batch([REBINDS.putOp(r.id, r, { index: rebindIndex(r) }), this.o.audit.op(scope, actor, 'rwa.schema_rebind.create', r.id, null, rebindView(r))]);
    return r;
  }

  /** Runs `fn` on the open rebind under its token's lock; a rebind whose binding moved is superseded first. */
  private async open(scope: Scope, id: string, fn: (r: RebindRecord, b: SchemaBindingRecord) => Promise<RebindRecord>): Promise<RebindRecord> {
    const r0 = await this.get(scope, id);
    return this.o.fields.lock(r0.token_id, async () => {
      const r = await this.get(scope, id);
      if (!OPEN.includes(r.state)) throw new CustodyError('conflict', `schema rebind ${id} is ${r.state}`);
      const b = await this.o.fields.bindingOf(r.token_id);
      if (!b || b.version !== r.from_version || b.sha256 !== r.from_sha256) {
        const gone: RebindRecord = { ...r, state: 'superseded', updated_at: this.o.fields.iso() };
        await this.o.store.batch([REBINDS.putOp(gone.id, gone, { index: rebindIndex(gone) })]);
        throw new CustodyError('conflict', `schema rebind ${id} is superseded: token ${r.token_id} is no longer bound to version ${r.from_version}`);
      }
      return fn(r, b);
    });
  }

  private async runDry(scope: Scope, r: RebindRecord) {
    const from = await this.o.schemas.published(scope, r.schema_id, r.from_version);
    const to = await this.o.schemas.published(scope, r.schema_id, r.to_version);
    const fields = await this.o.fields.fieldRecords(r.token_id);
    const subject = { token_id: r.token_id, schema_id: r.schema_id, from: { version: r.from_version, sha256: r.from_sha256 }, to: { version: r.to_version, sha256: r.to_sha256 } };
    return { run: dryRun(subject, from.compiled, to.compiled, fields, this.o.fields.iso()), to, fields };
  }

  private stateAfter(passed: boolean, attestations: number, required: number): RebindState {
    if (!passed) return 'dry_run_failed';
    return attestations >= required ? 'ready' : 'attesting';
  }

  async dryRun(scope: Scope, id: string): Promise<RebindRecord> {
    return this.open(scope, id, async (r) => {
      const { run } = await this.runDry(scope, r);
      // Attestations are over a dry run's hash: another outcome (a field changed since) starts them again.
      const attestations = r.dry_run?.sha256 === run.sha256 ? r.attestations : [];
      const next: RebindRecord = { ...r, dry_run: run, attestations, state: this.stateAfter(run.passed, attestations.length, r.required_attestations), updated_at: run.ran_at };
      await this.o.store.batch([REBINDS.putOp(next.id, next, { index: rebindIndex(next) })]);
      return next;
    });
  }

  /** The statement an attester of the token signs for this rebind (its dry run must have passed). */
  statementOf(r: RebindRecord, token: { chain_id: number; address: string }, attesterId: string): RebindStatement {
    return {
      rebind_id: r.id, token_id: r.token_id, chain_id: token.chain_id, contract: token.address, schema_id: r.schema_id, from_version: r.from_version, from_sha256: r.from_sha256,
      to_version: r.to_version, to_sha256: r.to_sha256, dry_run_sha256: r.dry_run!.sha256, attester_id: attesterId,
    };
  }

  async attest(scope: Scope, actor: Actor, id: string, input: { attester_id: string; signature: string }): Promise<RebindRecord> {
    return this.open(scope, id, async (r) => {
      if (r.state !== 'attesting' && r.state !== 'ready') throw new CustodyError('conflict', `schema rebind ${id} is ${r.state}: its dry run must pass first`);
      const a = ATTESTER_ID.test(input.attester_id) ? await ATTESTERS.in(this.o.store).get(input.attester_id) : undefined;
      if (!a || a.token_id !== r.token_id) throw new CustodyError('not_found', `token ${r.token_id} has no attester ${input.attester_id}`);
      if (a.status !== 'active') throw new CustodyError('attester_out_of_scope', `attester ${a.id} was removed from token ${r.token_id}`);
      if (r.attestations.some((x) => x.attester_id === a.id)) throw new CustodyError('attestation_replayed', `attester ${a.id} already attested schema rebind ${id}`);
      const token = await this.o.fields.token(scope, r.token_id);
      const statement = this.statementOf(r, token, a.id);
      if (!(await verifyStatement({ kind: 'rebind', statement }, a.key, input.signature))) {
        throw new CustodyError('attestation_signature_invalid', `the ${a.key.scheme} signature does not verify for attester ${a.id} over schema rebind ${id} and its dry run ${r.dry_run!.sha256}`);
      }
      const now = this.o.fields.iso();
      const at = await this.o.log.append(scope, r.token_id, { kind: 'attestation', body: { subject: 'rebind', statement, key: a.key, signature: input.signature, actor: actor.id } });
      const kept: RebindAttestation = { attester_id: a.id, statement, key: a.key, signature: input.signature, at: now, log_index: at.index };
      const attestations = [...r.attestations, kept];
      const next: RebindRecord = { ...r, attestations, state: this.stateAfter(true, attestations.length, r.required_attestations), updated_at: now };
      await this.o.store.batch([REBINDS.putOp(next.id, next, { index: rebindIndex(next) })]);
      return next;
    });
  }

  async commit(scope: Scope, actor: Actor, id: string): Promise<RebindRecord> {
    return this.open(scope, id, async (r, b) => {
      if (r.state === 'created' || r.state === 'dry_run_failed' || !r.dry_run) throw new CustodyError('conflict', `schema rebind ${id} is ${r.state}: its dry run must pass first`);
      const { run, to, fields } = await this.runDry(scope, r);
      if (run.sha256 !== r.dry_run.sha256) throw new CustodyError('conflict', `the token's fields changed since the dry run of schema rebind ${id}: dry-run again (its attestations then start again)`);
      const active = new Set((await this.o.fields.attesterRecords(r.token_id)).filter((a) => a.status === 'active').map((a) => a.id));
      const counted = r.attestations.filter((a) => active.has(a.attester_id));
      if (counted.length < r.required_attestations) throw new CustodyError('conflict', `schema rebind ${id} has ${counted.length} attestations of active attesters; the token's policy requires ${r.required_attestations}`);
      const now = this.o.fields.iso();
      const at = await this.o.log.append(scope, r.token_id, {
        kind: 'schema_binding',
        body: {
          action: 'rebind', rebind_id: r.id, token_id: r.token_id, schema_id: r.schema_id, from_version: r.from_version, from_sha256: r.from_sha256, to_version: r.to_version,
          to_sha256: r.to_sha256, dry_run_sha256: run.sha256, attestations: counted.map((a) => ({ attester_id: a.attester_id, log_index: a.log_index })), actor: actor.id,
        },
      });
      const binding: SchemaBindingRecord = { ...b, version: r.to_version, sha256: r.to_sha256, rebind_id: r.id, bound_at: now, log_index: at.index };
      const next: RebindRecord = { ...r, state: 'committed', committed_at: now, updated_at: now, log_index: at.index };
      await this.o.store.batch([
        ...this.o.fields.rebindOps(binding, to.compiled, fields),
        REBINDS.putOp(next.id, next, { index: rebindIndex(next) }),
        this.o.audit.op(scope, actor, 'rwa.schema_rebind.commit', r.id, { version: r.from_version }, { version: r.to_version, log_index: at.index }),
      ]);
      return next;
    });
  }
}
