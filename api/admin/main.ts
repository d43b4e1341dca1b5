// Operator command (docs/platform/tenancy.md):
//   npm run admin -- org create --name <name> --public-key <ed25519 hex> [--label <label>] [--external-id <id>]  (needs API_OPERATOR_KEY_FILE)
//     (a customer: organization, tenant with workspaces, and their link, docs/customers.md; idempotent by external id, else name)
//   npm run admin -- org repair --id <org>   (roots an organization made without the operator key)
//   npm run admin -- customer link --org <org> --tenant <tenant> [--external-id <id>]  (links an organization and a tenant made separately)
//   npm run admin -- vault freeze|unfreeze --id <vault id>  (a frozen vault signs nothing)
//   npm run admin -- vault move --id <vault id> --shard <name>  (to another coordinator shard, docs/operations.md "Moving a vault")
//   npm run admin -- coordinator rebuild --shard <name>  (its vaults' records from the nodes, docs/operations.md "Rebuilding a coordinator's records")
//   npm run admin -- tenant create --name <name>            (a tenant with sandbox and production workspaces)
//   npm run admin -- key create --workspace <id> --role <role> [--label <l>] [--public-key <hex>] [--mfa]
//   npm run admin -- roster sign --version <n> --identity <file>... [--out <file>] [--operator-key-file <file>]
//     (the service-node roster, docs/trust.md "Committees", from `npm run node-identity` outputs)
//   npm run admin -- store copy --from-data-dir <LevelDB dir> [--batch-size <n>]
//     (copies a stopped LevelDB deployment into the empty PostgreSQL of API_DATABASE_URL, docs/api-storage.md
//     "Moving from LevelDB to PostgreSQL"; prints a JSON summary)
// Organizations, tenants and their keys are a private management function; a bearer key is printed once. Without
// API_OPERATOR_API_URL it opens the API's store directly (API_DATA_DIR), so run it while the API process is stopped;
// with it, org create/list/add-key, customer link, tenant create, key create/revoke and vault freeze/unfreeze go to the
// running API's operator API (operator-commands.ts, docs/operations.md). `org repair` and `roster sign` stay offline.
import { parseArgs } from 'node:util';
import { readFileSync, writeFileSync } from 'node:fs';
import { hexToBytes } from '@noble/hashes/utils.js';
import { loadApiConfig } from '../config.ts';
import { openStore } from '../store/open-store.ts';
import { VaultService } from '../vaults/vault-service.ts';
import { ConfigError, helpAsked } from '../../common/config.ts';
import { TenancyService } from '../tenancy/tenancy-service.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { signRoster, type RosterNode } from '../../core/trust/roster.ts';
import { createCustomer } from '../customers/create-customer.ts';
import { CustomerLinks } from '../customers/customer-links.ts';
import { operatorCommand } from './operator-commands.ts';
import { copyStore } from '../store/store-copy.ts';

const USAGE = 'usage: npm run admin -- org create --name <name> --public-key <hex> [--label <label>] [--external-id <id>]\n'
  + '       npm run admin -- org repair --id <org>\n'
  + '       npm run admin -- customer link --org <org> --tenant <tenant> [--external-id <id>]\n'
  + '       with API_OPERATOR_API_URL and API_OPERATOR_TOKEN_FILE, through the running API, also:\n'
  + '       npm run admin -- org list [--after <org>] [--limit <n>] | org add-key --org <org> --public-key <hex> | key revoke --id <key id>\n'
  + '       npm run admin -- vault freeze|unfreeze --id <vault id> | vault move --id <vault id> --shard <name>\n'
  + '       npm run admin -- coordinator rebuild --shard <name>\n'
  + '       npm run admin -- ledger reconcile --workspace <id>   (the platform ledger against the chain)\n'
  + '       npm run admin -- tenant create --name <name>\n'
  + '       npm run admin -- key create --workspace <id> --role <owner|admin|developer|brand_manager|viewer|member_auth> [--label <l>] [--public-key <hex>] [--mfa]\n'
  + '       npm run admin -- roster sign --version <n> --identity <file>... [--created <unix seconds>] [--out <file>] [--operator-key-file <file>]\n'
  + '       npm run admin -- store copy --from-data-dir <LevelDB dir> [--batch-size <n>]   (into the PostgreSQL of API_DATABASE_URL)\n';

async function platformCommand(verb: string, rest: string[]): Promise<number> {
  const { values } = parseArgs({ args: rest, options: { name: { type: 'string' }, workspace: { type: 'string' }, role: { type: 'string' }, label: { type: 'string' }, 'public-key': { type: 'string' }, mfa: { type: 'boolean' } } });
  const config = loadApiConfig();
  const store = await openStore(config);
  try {
    const tenancy = new TenancyService(store);
    if (verb === 'tenant') {
      if (!values.name) throw new CustodyError('usage', 'tenant create needs --name');
      const { tenant, sandbox, production } = await tenancy.createTenant(values.name);
      process.stdout.write(JSON.stringify({ tenant: tenant.id, sandbox_workspace: sandbox.id, production_workspace: production.id }) + '\n');
      return 0;
    }
    if (!values.workspace || !values.role) throw new CustodyError('usage', 'key create needs --workspace and --role');
    const { key, token, totpSecret } = await tenancy.createKey(values.workspace, values.role, {
      ...(values.label ? { label: values.label } : {}), ...(values['public-key'] ? { signingPublicKey: values['public-key'] } : {}), ...(values.mfa ? { mfa: true } : {}),
    });
    process.stdout.write(JSON.stringify({ key_id: key.id, role: key.role, environment: key.environment, bearer_token: token, ...(totpSecret ? { totp_secret_hex: totpSecret } : {}), note: 'shown once; only a hash is stored' }) + '\n');
    return 0;
  } finally {
    await store.close();
  }
}

/** The operator's secret key, required: an organization the nodes cannot learn is never made. */
function operatorKey(file: string | undefined): Uint8Array {
  if (!file) {
    throw new ConfigError(['API_OPERATOR_KEY_FILE (operatorKeyFile) is required: the signer nodes learn an organization only from its operator-signed bootstrap (docs/trust.md "Roots")']);
  }
  return readOperatorKey(file);
}

/** `org repair --id <org>`: an organization made without the operator key gets its bootstrap, first in its log. */
async function orgRepair(rest: string[]): Promise<number> {
  const { values } = parseArgs({ args: rest, options: { id: { type: 'string' } } });
  if (!values.id) throw new CustodyError('usage', 'org repair needs --id');
  const config = loadApiConfig();
  const operator = operatorKey(config.operatorKeyFile);
  const store = await openStore(config);
  try {
    const vaults = new VaultService({ store, environment: config.environment, limits: { apiKeysPerOrg: config.maxApiKeysPerOrg, vaultsPerOrg: config.maxVaultsPerOrg } });
    const repaired = await vaults.repairBootstrap(values.id, operator);
    process.stdout.write(JSON.stringify({ organization: values.id, repaired, note: repaired ? 'the bootstrap is first in the trust log; nodes learn the organization at its next session' : 'the trust log already starts with a bootstrap' }) + '\n');
    return 0;
  } finally {
    await store.close();
  }
}

function readOperatorKey(path: string): Uint8Array {
  const hex = readFileSync(path, 'utf8').trim();
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new ConfigError([`API_OPERATOR_KEY_FILE (operatorKeyFile): ${path} must hold a 32-byte Ed25519 secret key in hex`]);
  return hexToBytes(hex.toLowerCase());
}

/** `vault freeze|unfreeze --id <vaultId>`: a frozen vault signs nothing until unfrozen (docs/vault-api.md). */
async function vaultCommand(verb: string, rest: string[]): Promise<number> {
  const { values } = parseArgs({ args: rest, options: { id: { type: 'string' } } });
  if (!values.id) throw new CustodyError('usage', `vault ${verb} needs --id`);
  const config = loadApiConfig();
  const store = await openStore(config);
  try {
    const vaults = new VaultService({ store, environment: config.environment, limits: { apiKeysPerOrg: config.maxApiKeysPerOrg, vaultsPerOrg: config.maxVaultsPerOrg } });
    const v = await vaults.freeze(values.id, verb === 'freeze');
    process.stdout.write(JSON.stringify({ vault: v.id, state: v.state }) + '\n');
    return 0;
  } finally {
    await store.close();
  }
}

/** One node's public identity as `npm run node-identity` prints it. */
function readIdentity(path: string): RosterNode {
  let j: { node_id?: unknown; signing_key?: unknown; encryption_key?: unknown; kind?: unknown };
  try {
    j = JSON.parse(readFileSync(path, 'utf8')) as typeof j;
  } catch (err) {
    throw new CustodyError('usage', `--identity ${path}: not a JSON identity (${(err as Error).message})`);
  }
  if (typeof j.node_id !== 'string' || typeof j.signing_key !== 'string' || typeof j.encryption_key !== 'string') {
    throw new CustodyError('usage', `--identity ${path}: needs node_id, signing_key and encryption_key (npm run node-identity)`);
  }
  if (j.kind !== undefined && j.kind !== 'service') throw new CustodyError('usage', `--identity ${path}: a ${String(j.kind)} node is not a service node`);
  return { nodeId: j.node_id, signingKey: j.signing_key, encryptionKey: j.encryption_key };
}

/**
 * `roster sign`: the operator's signed list of service nodes, written as hex (COORDINATOR_ROSTER_FILE).
 * Each node verifies it under NODE_OPERATOR_KEYS and refuses a version older than one it accepted, so
 * every change of the node set takes a higher version.
 */
async function rosterCommand(rest: string[]): Promise<number> {
  const { values } = parseArgs({ args: rest, options: { version: { type: 'string' }, identity: { type: 'string', multiple: true }, created: { type: 'string' }, out: { type: 'string' }, 'operator-key-file': { type: 'string' } } });
  if (!values.version || !/^\d{1,15}$/.test(values.version)) throw new CustodyError('usage', 'roster sign needs --version <non-negative integer>');
  if (!values.identity?.length) throw new CustodyError('usage', 'roster sign needs at least one --identity <file>');
  if (values.created !== undefined && !/^\d{1,15}$/.test(values.created)) throw new CustodyError('usage', '--created is Unix seconds');
  const keyFile = values['operator-key-file'] ?? loadApiConfig().operatorKeyFile;
  if (!keyFile) throw new CustodyError('usage', 'roster sign needs --operator-key-file (or API_OPERATOR_KEY_FILE)');
  const nodes = values.identity.map(readIdentity);
  // A RosterError is a CustodyError (bad_roster): it reaches the command's error output as it is.
  const roster = signRoster({ version: Number(values.version), created: values.created !== undefined ? Number(values.created) : Math.floor(Date.now() / 1000), nodes }, readOperatorKey(keyFile));
  const hex = Buffer.from(roster).toString('hex');
  if (values.out) writeFileSync(values.out, hex + '\n');
  process.stdout.write(JSON.stringify({ roster_version: Number(values.version), nodes: nodes.map((n) => n.nodeId).sort(), ...(values.out ? { out: values.out } : { roster: hex }) }) + '\n');
  return 0;
}

/** `customer link --org <org> --tenant <tenant> [--external-id <id>]`: links an organization and a tenant made separately. */
async function customerLink(rest: string[]): Promise<number> {
  const { values } = parseArgs({ args: rest, options: { org: { type: 'string' }, tenant: { type: 'string' }, 'external-id': { type: 'string' } } });
  if (!values.org || !values.tenant) throw new CustodyError('usage', 'customer link needs --org and --tenant');
  const config = loadApiConfig();
  const store = await openStore(config);
  try {
    const c = await new CustomerLinks(store).linkExisting(values.org, values.tenant, config.environment, values['external-id'] !== undefined ? { externalId: values['external-id'] } : {});
    process.stdout.write(JSON.stringify({ customer: c.id, organization: c.org, tenant: c.tenant, events_workspace: c.workspace }) + '\n');
    return 0;
  } finally {
    await store.close();
  }
}

/**
 * `store copy --from-data-dir <dir>`: the LevelDB store under `dir` into the empty PostgreSQL database the
 * API settings name (api/store/store-copy.ts). The summary names counts only, never the database URL.
 */
async function storeCopy(rest: string[]): Promise<number> {
  const { values } = parseArgs({ args: rest, options: { 'from-data-dir': { type: 'string' }, 'batch-size': { type: 'string' } } });
  if (!values['from-data-dir']) throw new CustodyError('usage', 'store copy needs --from-data-dir <LevelDB directory>');
  if (values['batch-size'] !== undefined && !/^[1-9]\d{0,4}$/.test(values['batch-size'])) throw new CustodyError('usage', '--batch-size is a number of rows, 1 to 99999');
  const config = loadApiConfig();
  if (!config.databaseUrl) throw new CustodyError('usage', 'store copy writes into the PostgreSQL database of API_DATABASE_URL (and API_DATABASE_PASSWORD_FILE): set it');
  const summary = await copyStore({
    fromDataDir: values['from-data-dir'], databaseUrl: config.databaseUrl, databasePasswordFile: config.databasePasswordFile,
    ...(values['batch-size'] !== undefined ? { batchSize: Number(values['batch-size']) } : {}),
  });
  process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  return 0;
}

async function main(): Promise<number> {
  const [area, verb, ...rest] = process.argv.slice(2);
  // With API_OPERATOR_API_URL, the tasks the operator API serves go to the running API (docs/operations.md).
  const remote = operatorCommand(area, verb);
  if (remote) {
    const config = loadApiConfig();
    if (config.operatorApiUrl) {
      process.stdout.write(JSON.stringify(await remote(config, rest)) + '\n');
      return 0;
    }
    if ((area === 'org' && (verb === 'list' || verb === 'add-key')) || (area === 'key' && verb === 'revoke')) throw new CustodyError('usage', `${area} ${verb} runs through the operator API: set API_OPERATOR_API_URL and API_OPERATOR_TOKEN_FILE`);
  }
  if (area === 'customer' && verb === 'link') return customerLink(rest);
  if (area === 'roster' && verb === 'sign') return rosterCommand(rest);
  if (area === 'store' && verb === 'copy') return storeCopy(rest);
  if ((area === 'tenant' || area === 'key') && verb === 'create') return platformCommand(area, rest);
  if (area === 'vault' && (verb === 'freeze' || verb === 'unfreeze')) return vaultCommand(verb, rest);
  if (area === 'org' && verb === 'repair') return orgRepair(rest);
  if (area !== 'org' || verb !== 'create') {
    process.stderr.write(USAGE);
    return 64;
  }
  const { values } = parseArgs({ args: rest, options: { name: { type: 'string' }, 'public-key': { type: 'string' }, label: { type: 'string' }, 'external-id': { type: 'string' } } });
  if (!values.name || !values['public-key']) {
    process.stderr.write('org create needs --name and --public-key\n');
    return 64;
  }
  const config = loadApiConfig();
  const store = await openStore(config);
  try {
    const vaults = new VaultService({ store, environment: config.environment, limits: { apiKeysPerOrg: config.maxApiKeysPerOrg, vaultsPerOrg: config.maxVaultsPerOrg } });
    // A customer: the organization, its first key rooted for the signer nodes by the operator's bootstrap
    // entry (docs/trust.md: without it the nodes could never learn the organization), the platform tenant
    // with its workspaces, and the link that sends the organization's events to one of them (docs/customers.md).
    const made = await createCustomer({ store, vaults, tenancy: new TenancyService(store), links: new CustomerLinks(store), environment: config.environment }, {
      name: values.name, publicKey: values['public-key'], label: values.label, externalId: values['external-id'], operatorSecretKey: operatorKey(config.operatorKeyFile),
    });
    process.stdout.write(JSON.stringify(customerOutput(made)) + '\n');
    return 0;
  } finally {
    await store.close();
  }
}

/** What `org create` prints, offline or through the operator API: the organization, its first key, the tenant and workspaces. */
function customerOutput(made: { customer: { id: string; workspace: string }; organization: { id: string }; apiKeyId: string; tenant: { id: string }; sandbox: { id: string }; production: { id: string }; created: boolean }): Record<string, unknown> {
  return {
    organization: made.organization.id, api_key_id: made.apiKeyId, customer: made.customer.id, tenant: made.tenant.id,
    sandbox_workspace: made.sandbox.id, production_workspace: made.production.id, events_workspace: made.customer.workspace, created: made.created,
  };
}

/** Whether `err` (or what caused it) is LevelDB refusing a database another process holds open. */
function heldByAnotherProcess(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === 'LEVEL_LOCKED') return true;
  }
  return false;
}

if (helpAsked()) {
  process.stdout.write(USAGE);
  process.exit(0);
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (heldByAnotherProcess(err)) {
      // The store is open in the running API (npm start): offline commands need it stopped; the others go through it.
      process.stderr.write('admin: the API\'s database is in use by a running API (npm start?). Either send the command through the running API\'s '
        + 'operator API (API_OPERATOR_API_URL=http://127.0.0.1:8080 API_OPERATOR_TOKEN_FILE=data/operator-api.token; npm start prints both; docs/operations.md "Through the running API"), '
        + 'or stop the API first for the commands that run only offline (org repair, roster sign, store copy).\n');
      process.exit(1);
    }
    process.stderr.write(`admin: ${err instanceof ConfigError ? err.message : (err as Error).message}\n`);
    process.exit(1);
  },
);
