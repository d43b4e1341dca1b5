// Operator command: `npm run admin -- org create --name <name> --public-key <ed25519 hex> [--label <label>]`.
// Organizations and their first API key are a private management function. It opens the API's store
// directly (API_DATA_DIR), so run it while the API process is stopped.
import { parseArgs } from 'node:util';
import { loadApiConfig } from '../config.ts';
import { RecordStore } from '../store/record-store.ts';
import { VaultService } from '../vaults/vault-service.ts';
import { ConfigError } from '../../common/config.ts';

async function main(): Promise<number> {
  const [area, verb, ...rest] = process.argv.slice(2);
  if (area !== 'org' || verb !== 'create') {
    process.stderr.write('usage: npm run admin -- org create --name <name> --public-key <hex> [--label <label>]\n');
    return 64;
  }
  const { values } = parseArgs({ args: rest, options: { name: { type: 'string' }, 'public-key': { type: 'string' }, label: { type: 'string' } } });
  if (!values.name || !values['public-key']) {
    process.stderr.write('org create needs --name and --public-key\n');
    return 64;
  }
  const config = loadApiConfig();
  const store = await RecordStore.open(config.dataDir);
  try {
    const vaults = new VaultService({ store, environment: config.environment, limits: { apiKeysPerOrg: config.maxApiKeysPerOrg, vaultsPerOrg: config.maxVaultsPerOrg } });
    const { org, key } = await vaults.createOrg(values.name, values['public-key'], values.label ?? 'bootstrap');
    process.stdout.write(JSON.stringify({ organization: org.id, api_key_id: key.id }) + '\n');
    return 0;
  } finally {
    await store.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`admin: ${err instanceof ConfigError ? err.message : (err as Error).message}\n`);
    process.exit(1);
  },
);
