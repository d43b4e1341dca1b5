// The link between the vault API's organization and the platform API's tenant (docs/customers.md): one
// customer is one organization and one tenant, and the organization's vault and transaction events go to
// exactly one of the tenant's workspaces, the one of this deployment's environment. A link record and its
// look-up entries are written in one batch, with the organization and tenant when they are made together
// (create-customer.ts), or later by the operator for an organization and a tenant that already exist.
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { Environment, WorkspaceRecord } from '../tenancy/tenancy-service.ts';
import { ORGS, OUTBOX } from '../vaults/collections.ts';
import { CUSTOMERS, CUSTOMER_REFS, OUTBOX_PARKED } from './collections.ts';
import { TENANTS, WORKSPACES } from '../tenancy/collections.ts';

export interface CustomerRecord {
  /** Version of the stored record (docs/customers.md); 1. */
  v: 1;
  id: string;
  /** The operator's idempotency key: the caller's external id, else `name:<name>`. */
  key: string;
  external_id: string | null;
  name: string;
  org: string;
  tenant: string;
  /** The workspace the organization's events are emitted into: the tenant's workspace of `environment`. */
  workspace: string;
  environment: Environment;
  /** The first API key's public key (hex), when the customer was made with one: a repeated create must name the same. */
  first_public_key: string | null;
  created_at: string;
}

export const customerKey = (externalId: string | undefined, name: string) => (externalId !== undefined ? `ext:${externalId}` : `name:${name}`);

export class CustomerLinks {
  constructor(private readonly store: RecordRepository, private readonly clock: () => number = Date.now) {}

  private async byRef(ref: string): Promise<CustomerRecord | undefined> {
    const id = await CUSTOMER_REFS.in(this.store).get(ref);
    return id === undefined ? undefined : CUSTOMERS.in(this.store).get(id);
  }

  byOrg(org: string): Promise<CustomerRecord | undefined> {
    return this.byRef(`org/${org}`);
  }

  byTenant(tenant: string): Promise<CustomerRecord | undefined> {
    return this.byRef(`tenant/${tenant}`);
  }

  byKey(key: string): Promise<CustomerRecord | undefined> {
    return this.byRef(`key/${key}`);
  }

  get(id: string): Promise<CustomerRecord | undefined> {
    return CUSTOMERS.in(this.store).get(id);
  }

  /** The customer that owns `workspace`'s events, if that workspace is a linked one. */
  async byWorkspace(workspace: WorkspaceRecord): Promise<CustomerRecord | undefined> {
    const c = await this.byTenant(workspace.tenant);
    return c && c.workspace === workspace.id ? c : undefined;
  }

  /**
   * The organization a workspace's bearer keys act for on the vault API's resources (wallets): the
   * linked organization, from the linked workspace only; none from the tenant's other workspace or an
   * unlinked tenant (docs/customers.md "Wallets: one resource, one path").
   */
  async orgOfWorkspace(scope: { tenant: string; workspace: string }): Promise<string | undefined> {
    const c = await this.byTenant(scope.tenant);
    return c && c.workspace === scope.workspace ? c.org : undefined;
  }

  /** The record and its look-up entries, to commit in the batch that makes (or finds) the org and tenant. */
  linkOps(input: { key: string; externalId: string | null; name: string; org: string; tenant: string; workspace: WorkspaceRecord; firstPublicKey: string | null }): { customer: CustomerRecord; ops: Op[] } {
    const customer: CustomerRecord = {
      v: 1, id: newId('cus', this.clock()), key: input.key, external_id: input.externalId, name: input.name, org: input.org, tenant: input.tenant,
      workspace: input.workspace.id, environment: input.workspace.environment, first_public_key: input.firstPublicKey, created_at: new Date(this.clock()).toISOString(),
    };
    const ref = (r: string): Op => CUSTOMER_REFS.putOp(r, customer.id);
    return { customer, ops: [CUSTOMERS.putOp(customer.id, customer), ref(`key/${customer.key}`), ref(`org/${customer.org}`), ref(`tenant/${customer.tenant}`)] };
  }

  /**
   * Operator: links an organization and a tenant made separately (before customers existed). Both must
   * exist and neither be linked already; the events the organization's activity queued while unlinked
   * are released to the relay, which delivers them to the workspace of `environment`.
   */
  async linkExisting(org: string, tenant: string, environment: Environment, opts: { externalId?: string } = {}): Promise<CustomerRecord> {
    const o = await ORGS.in(this.store).get(org);
    if (!o) throw new CustodyError('not_found', `no organization ${org}`);
    const t = await TENANTS.in(this.store).get(tenant);
    if (!t) throw new CustodyError('not_found', `no tenant ${tenant}`);
    if (await this.byOrg(org)) throw new CustodyError('conflict', `organization ${org} is already linked to a customer`);
    if (await this.byTenant(tenant)) throw new CustodyError('conflict', `tenant ${tenant} is already linked to a customer`);
    const key = customerKey(opts.externalId, o.name);
    if (await this.byKey(key)) throw new CustodyError('conflict', `a customer with ${opts.externalId !== undefined ? 'external id' : 'name'} ${opts.externalId ?? o.name} exists`);
    const workspaces = await WORKSPACES.in(this.store).byIndex(`${tenant}\x00`, 10);
    const ws = workspaces.find((w) => w.environment === environment);
    if (!ws) throw new CustodyError('conflict', `tenant ${tenant} has no ${environment} workspace`);
    const { customer, ops } = this.linkOps({ key, externalId: opts.externalId ?? null, name: o.name, org, tenant, workspace: ws, firstPublicKey: null });
    await this.store.batch(ops);
    await this.releaseParked(org);
    return customer;
  }

  /**
   * Puts an organization's parked events back in the outbox, under their own ids (so in their original
   * order), 500 per atomic batch. A crash half-way leaves the rest parked; the relay releases the parked
   * events of linked organizations when it starts.
   */
  async releaseParked(org: string): Promise<number> {
    let n = 0;
    for (;;) {
      const ops: Op[] = [];
      for await (const { id, value } of OUTBOX_PARKED.in(this.store).entries({ after: `${org}/`, lt: `${org}/\xff`, limit: 500 })) {
        ops.push(OUTBOX_PARKED.delOp(id), OUTBOX.putOp(id.slice(org.length + 1), value));
      }
      if (!ops.length) return n;
      await this.store.batch(ops);
      n += ops.length / 2;
    }
  }

  /** Organizations with parked events (the relay's start-up sweep). */
  async parkedOrgs(): Promise<string[]> {
    const orgs: string[] = [];
    let after: string | undefined;
    for (;;) {
      let next: string | undefined;
      for await (const { id } of OUTBOX_PARKED.in(this.store).entries({ ...(after !== undefined ? { after } : {}), limit: 1 })) next = id.slice(0, id.indexOf('/'));
      if (next === undefined) return orgs;
      orgs.push(next);
      after = `${next}/\xff`;
    }
  }
}
