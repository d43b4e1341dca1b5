// Makes a customer (docs/customers.md): the vault API's organization with its first API key, rooted for
// the signer nodes by the operator's bootstrap, the platform API's tenant with its sandbox and production
// workspaces, and the link, all in one atomic batch. Idempotent by the external id (else the name): a
// second call returns the customer it made, `created: false`, and refuses another public key.
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { apiKeyId } from '../../core/trust/api-key-id.ts';
import type { VaultService } from '../vaults/vault-service.ts';
import type { Environment, TenancyService, TenantRecord, WorkspaceRecord } from '../tenancy/tenancy-service.ts';
import { customerKey, type CustomerLinks, type CustomerRecord } from './customer-links.ts';
import type { OrgRecord } from '../vaults/records.ts';
import { ORGS } from '../vaults/collections.ts';

export interface CreateCustomerParameters {
  name: string;
  /** The first API key's Ed25519 public key (hex). */
  publicKey: string;
  label?: string | undefined;
  /** The operator's own id for the customer; the idempotency key (else the name is). */
  externalId?: string | undefined;
  /** Signs the organization's bootstrap here (the offline operator command). */
  operatorSecretKey?: Uint8Array | undefined;
  /** A bootstrap signed elsewhere, for `orgId` (the operator API: the API process never holds the operator key). */
  bootstrap?: { orgId: string; entry: Uint8Array } | undefined;
  /** Writes that go with a new customer, in its batch (the operator API's audit entries). */
  extra?: ((customer: CustomerRecord) => Op[]) | undefined;
}

export interface CreateCustomerReturnType {
  customer: CustomerRecord;
  organization: OrgRecord;
  apiKeyId: string;
  tenant: TenantRecord;
  sandbox: WorkspaceRecord;
  production: WorkspaceRecord;
  created: boolean;
}

export interface CustomerServices {
  store: RecordRepository;
  vaults: VaultService;
  tenancy: TenancyService;
  links: CustomerLinks;
  /** This deployment's environment (API_ENVIRONMENT): the workspace the organization's events go to. */
  environment: Environment;
}

const EXTERNAL_ID = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

export async function createCustomer(s: CustomerServices, p: CreateCustomerParameters): Promise<CreateCustomerReturnType> {
  if (p.externalId !== undefined && !EXTERNAL_ID.test(p.externalId)) throw new CustodyError('invalid_request', 'external id must be 1 to 128 letters, digits or ._:@- (starting with a letter or digit)');
  if (!p.name || p.name.length > 120 || /[\r\n<>]/.test(p.name)) throw new CustodyError('invalid_request', 'name must be 1 to 120 characters, without newlines or angle brackets');
  if (!p.operatorSecretKey && !p.bootstrap) throw new CustodyError('invalid_request', 'an organization needs the operator bootstrap: the signer nodes learn it from nothing else (docs/trust.md "Roots")');
  const key = customerKey(p.externalId, p.name);
  const publicKey = p.publicKey.toLowerCase();
  // One creation per customer key at a time, for every caller on every instance (the admin command, the operator API).
  return s.store.exclusive(`customer-create:${key}`, async () => {
    const existing = await s.links.byKey(key);
    if (existing) {
      if (existing.first_public_key !== null && existing.first_public_key !== publicKey) {
        throw new CustodyError('conflict', `customer ${p.externalId ?? p.name} exists with another first API key; register further keys with POST /v1/api-keys or the operator API, not by creating the customer again`);
      }
      return { ...(await describe(s, existing)), created: false };
    }
    const { org, key: apiKey, ops: orgOps } = s.vaults.orgOps(p.name, publicKey, p.label ?? 'bootstrap', p.bootstrap ? { bootstrap: p.bootstrap.entry, orgId: p.bootstrap.orgId } : { operatorSecretKey: p.operatorSecretKey! });
    if (p.bootstrap && (await ORGS.in(s.store).get(org.id))) throw new CustodyError('conflict', `organization ${org.id} exists`);
    const { tenant, sandbox, production, ops: tenantOps } = s.tenancy.tenantOps(p.name);
    const { customer, ops: linkOps } = s.links.linkOps({
      key, externalId: p.externalId ?? null, name: p.name, org: org.id, tenant: tenant.id, workspace: s.environment === 'production' ? production : sandbox, firstPublicKey: apiKey.public_key,
    });
    await s.store.batch([...orgOps, ...tenantOps, ...linkOps, ...(p.extra?.(customer) ?? [])]);
    return { customer, organization: org, apiKeyId: apiKey.id, tenant, sandbox, production, created: true };
  });
}

/** The records a stored customer names. */
export async function describe(s: Pick<CustomerServices, 'store' | 'tenancy'>, c: CustomerRecord): Promise<Omit<CreateCustomerReturnType, 'created'>> {
  const organization = await ORGS.in(s.store).get(c.org);
  const tenant = await s.tenancy.tenant(c.tenant);
  const workspaces = await s.tenancy.workspaces(c.tenant);
  const sandbox = workspaces.find((w) => w.environment === 'sandbox');
  const production = workspaces.find((w) => w.environment === 'production');
  if (!organization || !tenant || !sandbox || !production) throw new CustodyError('bug', `customer ${c.id} names records that are missing`);
  return { customer: c, organization, apiKeyId: c.first_public_key ? apiKeyId(c.org, c.first_public_key) : '', tenant, sandbox, production };
}
