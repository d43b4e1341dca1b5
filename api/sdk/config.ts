// Settings of the command-line client (api/sdk/cli.ts, docs/sdk.md), read once from the environment
// and validated: which API, which organization, and the API key that signs.
import { readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import { ConfigError, isLoopbackHost, loadConfig } from '../../common/config.ts';

export const CliConfigSchema = Type.Object({
  url: Type.String({ env: 'CUSTODY_URL', pattern: '^https?://[^/?#]+/?$', description: 'origin of the API, e.g. https://api.example.com' }),
  organization: Type.String({ env: 'CUSTODY_ORGANIZATION', minLength: 1, maxLength: 128 }),
  keyId: Type.String({ env: 'CUSTODY_KEY_ID', minLength: 1, maxLength: 128 }),
  secretKeyFile: Type.String({ env: 'CUSTODY_SECRET_KEY_FILE', minLength: 1, description: 'file holding the hex of the 32-byte Ed25519 secret key' }),
});

export type CliConfig = Static<typeof CliConfigSchema> & { secretKey: Uint8Array };

/** Loads the settings and the secret key; throws ConfigError naming every problem. */
export function loadCliConfig(env: Record<string, string | undefined> = process.env): CliConfig {
  const c = loadConfig(CliConfigSchema, { env });
  const url = new URL(c.url);
  // Signatures protect integrity, not confidentiality: plain http only to this machine.
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) throw new ConfigError([`CUSTODY_URL (url): plain http only to a loopback address; got ${c.url}`]);
  let hex: string;
  try {
    hex = readFileSync(c.secretKeyFile, 'utf8').trim();
  } catch (err) {
    throw new ConfigError([`CUSTODY_SECRET_KEY_FILE (secretKeyFile): cannot read ${c.secretKeyFile}: ${(err as Error).message}`]);
  }
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new ConfigError([`CUSTODY_SECRET_KEY_FILE (secretKeyFile): ${c.secretKeyFile} must hold 64 hex characters (a 32-byte Ed25519 secret key)`]);
  return { ...c, url: url.origin, secretKey: new Uint8Array(Buffer.from(hex, 'hex')) };
}

export const RegtestCliConfigSchema = Type.Object({
  url: Type.String({ env: 'REGTEST_URL', default: 'http://127.0.0.1:3002', pattern: '^https?://[^/?#]+/?$', description: 'origin of the local regtest service (npm start runs it on port 3002)' }),
});

/** The `regtest` commands' one setting: where the local regtest service listens (docs/bitcoin-regtest.md). */
export function loadRegtestCliConfig(env: Record<string, string | undefined> = process.env): { url: string } {
  const c = loadConfig(RegtestCliConfigSchema, { env });
  return { url: new URL(c.url).origin };
}

export const AnvilCliConfigSchema = Type.Object({
  url: Type.String({ env: 'ANVIL_URL', default: 'http://127.0.0.1:8545', pattern: '^https?://[^/?#]+/?$', description: 'JSON-RPC origin of the local EVM chain (npm start runs anvil on port 8545)' }),
});

/** The `anvil fund` command's one setting: where the local EVM chain listens. */
export function loadAnvilCliConfig(env: Record<string, string | undefined> = process.env): { url: string } {
  const c = loadConfig(AnvilCliConfigSchema, { env });
  return { url: new URL(c.url).origin };
}
