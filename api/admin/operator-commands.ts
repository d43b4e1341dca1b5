// The operator command's tasks through the running API's operator API (docs/operations.md), chosen
// when API_OPERATOR_API_URL is set: nothing opens the API's store, so the API keeps running. The
// operator secret (API_OPERATOR_TOKEN_FILE) authenticates; an organization's bootstrap is signed here,
// with the operator key file, and only the signed entry travels.
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import type { ApiConfig } from '../config.ts';
import { ConfigError } from '../../common/config.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { signBootstrap } from '../../core/trust/trust-entry.ts';
import { isErrorCode } from '../../core/errors/error-codes.ts';

type Command = (config: ApiConfig, rest: string[]) => Promise<Record<string, unknown>>;

function operatorSecretKey(config: ApiConfig): Uint8Array {
  if (!config.operatorKeyFile) throw new ConfigError(['API_OPERATOR_KEY_FILE (operatorKeyFile) is required: the signer nodes learn an organization only from its operator-signed bootstrap (docs/trust.md "Roots")']);
  const hex = readFileSync(config.operatorKeyFile, 'utf8').trim();
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new ConfigError([`API_OPERATOR_KEY_FILE (operatorKeyFile): ${config.operatorKeyFile} must hold a 32-byte Ed25519 secret key in hex`]);
  return hexToBytes(hex.toLowerCase());
}

/** One call to the operator API; an error answer becomes the CustodyError it names. */
async function call(config: ApiConfig, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Record<string, unknown>> {
  if (!config.operatorTokenFile) throw new ConfigError(['API_OPERATOR_TOKEN_FILE (operatorTokenFile) is required with API_OPERATOR_API_URL: the operator API\'s secret']);
  const token = readFileSync(config.operatorTokenFile, 'utf8').trim();
  let res: Response;
  try {
    res = await fetch(`${config.operatorApiUrl}/operator/v1${path}`, {
      method, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch (err) {
    throw new CustodyError('unavailable', `the API at ${config.operatorApiUrl} did not answer (${(err as Error).message})`);
  }
  const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    const code = typeof json.code === 'string' && isErrorCode(json.code) ? json.code : 'unavailable';
    throw new CustodyError(code, `operator API ${res.status}: ${typeof json.error === 'string' ? json.error : 'no error message'}`);
  }
  return json;
}

const need = (what: string, v: string | undefined): string => {
  if (!v) throw new CustodyError('usage', what);
  return v;
};

const COMMANDS: Record<string, Command> = {
  'org create': async (config, rest) => {
    const { values } = parseArgs({ args: rest, options: { name: { type: 'string' }, 'public-key': { type: 'string' }, label: { type: 'string' }, 'external-id': { type: 'string' } } });
    const name = need('org create needs --name and --public-key', values.name);
    const publicKey = need('org create needs --name and --public-key', values['public-key']).toLowerCase();
    // The organization id is chosen here, because the bootstrap binds it; a repeat of an existing
    // customer returns that customer and this id is never used.
    const organization = `org_${randomBytes(12).toString('hex')}`;
    const bootstrap = bytesToHex(signBootstrap(organization, publicKey, Math.floor(Date.now() / 1000), operatorSecretKey(config)));
    return call(config, 'POST', '/customers', { name, public_key: publicKey, organization, bootstrap, ...(values.label ? { label: values.label } : {}), ...(values['external-id'] ? { external_id: values['external-id'] } : {}) });
  },
  'org list': async (config, rest) => {
    const { values } = parseArgs({ args: rest, options: { after: { type: 'string' }, limit: { type: 'string' } } });
    const q = new URLSearchParams({ ...(values.after ? { after: values.after } : {}), ...(values.limit ? { limit: values.limit } : {}) }).toString();
    return call(config, 'GET', `/organizations${q ? `?${q}` : ''}`);
  },
  'org add-key': async (config, rest) => {
    const { values } = parseArgs({ args: rest, options: { org: { type: 'string' }, 'public-key': { type: 'string' }, label: { type: 'string' } } });
    const org = need('org add-key needs --org and --public-key', values.org);
    const publicKey = need('org add-key needs --org and --public-key', values['public-key']).toLowerCase();
    const bootstrap = bytesToHex(signBootstrap(org, publicKey, Math.floor(Date.now() / 1000), operatorSecretKey(config)));
    return call(config, 'POST', `/organizations/${encodeURIComponent(org)}/api-keys`, { public_key: publicKey, bootstrap, ...(values.label ? { label: values.label } : {}) });
  },
  'customer link': async (config, rest) => {
    const { values } = parseArgs({ args: rest, options: { org: { type: 'string' }, tenant: { type: 'string' }, 'external-id': { type: 'string' } } });
    return call(config, 'POST', '/customers/link', {
      organization: need('customer link needs --org and --tenant', values.org), tenant: need('customer link needs --org and --tenant', values.tenant),
      ...(values['external-id'] ? { external_id: values['external-id'] } : {}),
    });
  },
  'tenant create': async (config, rest) => {
    const { values } = parseArgs({ args: rest, options: { name: { type: 'string' } } });
    return call(config, 'POST', '/tenants', { name: need('tenant create needs --name', values.name) });
  },
  'key create': async (config, rest) => {
    const { values } = parseArgs({ args: rest, options: { workspace: { type: 'string' }, role: { type: 'string' }, label: { type: 'string' }, 'public-key': { type: 'string' }, mfa: { type: 'boolean' } } });
    const workspace = need('key create needs --workspace and --role', values.workspace);
    return call(config, 'POST', `/workspaces/${encodeURIComponent(workspace)}/keys`, {
      role: need('key create needs --workspace and --role', values.role), ...(values.label ? { label: values.label } : {}),
      ...(values['public-key'] ? { public_key: values['public-key'] } : {}), ...(values.mfa ? { mfa: true } : {}),
    });
  },
  'key revoke': async (config, rest) => {
    const { values } = parseArgs({ args: rest, options: { id: { type: 'string' } } });
    return call(config, 'POST', `/platform-keys/${encodeURIComponent(need('key revoke needs --id', values.id))}/revoke`);
  },
  'ledger reconcile': async (config, rest) => {
    const { values } = parseArgs({ args: rest, options: { workspace: { type: 'string' } } });
    return call(config, 'GET', `/workspaces/${encodeURIComponent(need('ledger reconcile needs --workspace', values.workspace))}/reconciliation`);
  },
  'vault freeze': async (config, rest) => {
    const { values } = parseArgs({ args: rest, options: { id: { type: 'string' } } });
    return call(config, 'POST', `/vaults/${encodeURIComponent(need('vault freeze needs --id', values.id))}/freeze`);
  },
  'vault unfreeze': async (config, rest) => {
    const { values } = parseArgs({ args: rest, options: { id: { type: 'string' } } });
    return call(config, 'POST', `/vaults/${encodeURIComponent(need('vault unfreeze needs --id', values.id))}/unfreeze`);
  },
  'vault move': async (config, rest) => {
    const { values } = parseArgs({ args: rest, options: { id: { type: 'string' }, shard: { type: 'string' } } });
    const what = 'vault move needs --id and --shard';
    return call(config, 'POST', `/vaults/${encodeURIComponent(need(what, values.id))}/move`, { shard: need(what, values.shard) });
  },
  'coordinator rebuild': async (config, rest) => {
    const { values } = parseArgs({ args: rest, options: { shard: { type: 'string' } } });
    return call(config, 'POST', `/coordinators/${encodeURIComponent(need('coordinator rebuild needs --shard', values.shard))}/rebuild`);
  },
};

/** The command's remote form, when it has one. */
export function operatorCommand(area: string | undefined, verb: string | undefined): Command | undefined {
  return COMMANDS[`${area ?? ''} ${verb ?? ''}`];
}
