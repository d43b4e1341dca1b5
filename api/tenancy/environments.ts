// Sandbox and production are separate environments (docs/security.md#sandbox-and-production): every
// record a bearer key can write belongs to one workspace, i.e. to one tenant in one environment, and is
// read only through that workspace. Branding and sending domains were once kept per tenant, so a sandbox
// key changed what production served; `migrateToPerEnvironment` moves those records, once, to the
// tenant's production workspace (they were production's: it served them).
import type { Op, RecordRepository } from '../store/record-repository.ts';
import type { WorkspaceRecord } from './tenancy-service.ts';
import { BRANDING, EMAIL_DOMAINS, EMAIL_DOMAIN_NAMES } from '../branding/collections.ts';
import { MIGRATIONS, WORKSPACES } from './collections.ts';

/** The production workspace of a tenant; undefined for an unknown tenant. */
export async function productionWorkspaceOf(store: RecordRepository, tenant: string): Promise<WorkspaceRecord | undefined> {
  const all = await WORKSPACES.in(store).byIndex(`${tenant}\x00`, 10);
  return all.find((w) => w.environment === 'production');
}

const MIGRATION = 'per_environment_records';

/**
 * Moves tenant-wide records to the tenant's production workspace, in one atomic batch with the marker
 * that says it is done (so it runs once and never half):
 * - `branding/<tenant id>` becomes `branding/<production workspace id>`;
 * - every sending domain is re-owned by production (its index moves from tenant to workspace), whichever
 *   key registered it: production sent mail from it, and keeps it;
 * - the domain-name registry `email_domain_names/<domain>` becomes `<domain> NUL <workspace id>`.
 * Logo upload grants (15 minutes) are not moved: one issued before the move must be requested again.
 * Records of a tenant without a production workspace are left as they are (never served).
 */
export async function migrateToPerEnvironment(store: RecordRepository, clock: () => number = Date.now): Promise<{ branding: number; email_domains: number } | undefined> {
  if (await MIGRATIONS.in(store).get(MIGRATION)) return undefined;
  const production = new Map<string, string>();
  for await (const w of WORKSPACES.in(store).all()) if (w.environment === 'production') production.set(w.tenant, w.id);
  const ops: Op[] = [];
  const moved = { branding: 0, email_domains: 0 };

  for await (const r of BRANDING.in(store).all()) {
    // A record kept per tenant has no workspace.
    if (r.workspace) continue;
    const ws = production.get(r.tenant);
    if (!ws || (await BRANDING.in(store).get(ws))) continue;
    ops.push(BRANDING.delOp(r.tenant), BRANDING.putOp(ws, { ...r, workspace: ws }));
    moved.branding++;
  }

  for await (const d of EMAIL_DOMAINS.in(store).all()) {
    const ws = production.get(d.tenant);
    if (!ws) continue;
    ops.push(
      EMAIL_DOMAINS.delOp(d.id, [`${d.tenant}\x00${d.id}`]),
      EMAIL_DOMAINS.putOp(d.id, { ...d, workspace: ws }, { index: [`${ws}\x00${d.id}`] }),
      EMAIL_DOMAIN_NAMES.delOp(d.domain),
      EMAIL_DOMAIN_NAMES.putOp(`${d.domain}\x00${ws}`, { id: d.id, tenant: d.tenant, workspace: ws }),
    );
    moved.email_domains++;
  }

  ops.push(MIGRATIONS.putOp(MIGRATION, { at: new Date(clock()).toISOString(), ...moved }));
  await store.batch(ops);
  return moved;
}
