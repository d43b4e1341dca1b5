// Settings of the command-line client (api/sdk/cli.ts, docs/sdk.md), read once from the environment
// and validated: which API, which organization, and the API key that signs; for the platform commands,
// the workspace bearer key. A profile (docs/sdk.md "Profiles") supplies the same settings from a file;
// a variable set in the environment wins over it.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
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

export const PlatformCliConfigSchema = Type.Object({
  url: Type.String({ env: 'CUSTODY_URL', pattern: '^https?://[^/?#]+/?$', description: 'origin of the API, e.g. https://api.example.com' }),
  apiKey: Type.Optional(Type.String({ env: 'CUSTODY_API_KEY', pattern: '^svc_(test|live)_\\S+$', secret: true, description: 'the workspace bearer key, svc_test_… or svc_live_…' })),
  apiKeyFile: Type.Optional(Type.String({ env: 'CUSTODY_API_KEY_FILE', minLength: 1, description: 'instead of CUSTODY_API_KEY: a file holding it' })),
  publishableKey: Type.Optional(Type.String({ env: 'CUSTODY_PUBLISHABLE_KEY', minLength: 1, maxLength: 256, description: 'sent as X-SVC-Publishable-Key (the member-auth operations)' })),
  keyId: Type.Optional(Type.String({ env: 'CUSTODY_KEY_ID', minLength: 1, maxLength: 128, description: 'with a svc_live_ key: the id its writes are signed under' })),
  secretKeyFile: Type.Optional(Type.String({ env: 'CUSTODY_SECRET_KEY_FILE', minLength: 1, description: 'with a svc_live_ key: the hex of its Ed25519 signing key' })),
});

export interface PlatformCliConfig {
  url: string;
  apiKey: string;
  publishableKey?: string;
  signing?: { keyId: string; secretKey: Uint8Array };
}

/** The platform commands' settings: the API's origin and the workspace bearer key (and its signing key for svc_live_). */
export function loadPlatformCliConfig(env: Record<string, string | undefined> = process.env): PlatformCliConfig {
  const c = loadConfig(PlatformCliConfigSchema, { env });
  const url = new URL(c.url);
  // A bearer key is a secret in every request: plain http only to this machine.
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) throw new ConfigError([`CUSTODY_URL (url): plain http only to a loopback address; got ${c.url}`]);
  let apiKey = c.apiKey;
  if (apiKey === undefined && c.apiKeyFile !== undefined) {
    try {
      apiKey = readFileSync(c.apiKeyFile, 'utf8').trim();
    } catch (err) {
      throw new ConfigError([`CUSTODY_API_KEY_FILE (apiKeyFile): cannot read ${c.apiKeyFile}: ${(err as Error).message}`]);
    }
  }
  if (apiKey === undefined || !/^svc_(test|live)_\S+$/.test(apiKey)) throw new ConfigError(['CUSTODY_API_KEY (apiKey): the workspace key, svc_test_… or svc_live_…, is required (or CUSTODY_API_KEY_FILE, or a profile that sets api_key)']);
  let signing: PlatformCliConfig['signing'];
  if (apiKey.startsWith('svc_live_') && c.keyId !== undefined && c.secretKeyFile !== undefined) {
    let hex: string;
    try {
      hex = readFileSync(c.secretKeyFile, 'utf8').trim();
    } catch (err) {
      throw new ConfigError([`CUSTODY_SECRET_KEY_FILE (secretKeyFile): cannot read ${c.secretKeyFile}: ${(err as Error).message}`]);
    }
    if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new ConfigError([`CUSTODY_SECRET_KEY_FILE (secretKeyFile): ${c.secretKeyFile} must hold 64 hex characters`]);
    signing = { keyId: c.keyId, secretKey: new Uint8Array(Buffer.from(hex, 'hex')) };
  }
  return { url: url.origin, apiKey, ...(c.publishableKey !== undefined ? { publishableKey: c.publishableKey } : {}), ...(signing ? { signing } : {}) };
}

/** The settings a profile may set, by their name in the file: `api_key` is CUSTODY_API_KEY. */
export const PROFILE_SETTINGS = ['url', 'organization', 'key_id', 'secret_key_file', 'api_key', 'api_key_file', 'publishable_key'] as const;

/** Where the profiles are kept: $XDG_CONFIG_HOME/threshold-custody/profiles.json, else ~/.config/…; CUSTODY_PROFILES_FILE overrides. */
export function profilesFile(env: Record<string, string | undefined> = process.env): string {
  if (env.CUSTODY_PROFILES_FILE) return env.CUSTODY_PROFILES_FILE;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'threshold-custody', 'profiles.json');
}

interface ProfilesDocument { default?: string; profiles?: Record<string, Record<string, string>> }

function readProfiles(file: string, required: boolean): ProfilesDocument {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (!required && (err as { code?: string }).code === 'ENOENT') return {};
    throw new ConfigError([`profiles: cannot read ${file}: ${(err as Error).message}`]);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`profiles: ${file} is not JSON: ${(err as Error).message}`]);
  }
  const d = doc as ProfilesDocument;
  if (typeof d !== 'object' || d === null || (d.profiles !== undefined && (typeof d.profiles !== 'object' || d.profiles === null))) throw new ConfigError([`profiles: ${file} must hold {"default"?: name, "profiles": {name: {settings}}}`]);
  return d;
}

/**
 * The environment the client's settings are read from, with a profile under it: `--profile <name>`, else
 * CUSTODY_PROFILE, else the file's `default`. A variable set in the environment wins over the profile's
 * value; a profile named but absent is an error, no file and no name is no profile.
 */
export function withProfile(name: string | undefined, env: Record<string, string | undefined> = process.env): { env: Record<string, string | undefined>; profile: string | null } {
  const chosen = name ?? (env.CUSTODY_PROFILE || undefined);
  const file = profilesFile(env);
  const doc = readProfiles(file, chosen !== undefined);
  const pick = chosen ?? doc.default;
  if (pick === undefined) return { env, profile: null };
  const p = doc.profiles?.[pick];
  if (p === undefined) throw new ConfigError([`profile ${pick}: not in ${file} (it has ${Object.keys(doc.profiles ?? {}).join(', ') || 'none'})`]);
  const settings: Record<string, string> = {};
  for (const [k, v] of Object.entries(p)) {
    if (!(PROFILE_SETTINGS as readonly string[]).includes(k)) throw new ConfigError([`profile ${pick}: unknown setting "${k}" (known: ${PROFILE_SETTINGS.join(', ')})`]);
    if (typeof v !== 'string') throw new ConfigError([`profile ${pick}: ${k} must be a string`]);
    settings[`CUSTODY_${k.toUpperCase()}`] = v;
  }
  const merged: Record<string, string | undefined> = { ...settings };
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') merged[k] = v;
  return { env: merged, profile: pick };
}

/** The profiles of the file, by name, with the settings each sets (never their values: a key is a secret). */
export function listProfiles(env: Record<string, string | undefined> = process.env): { file: string; default: string | null; profiles: { name: string; settings: string[] }[] } {
  const file = profilesFile(env);
  const doc = readProfiles(file, false);
  return { file, default: doc.default ?? null, profiles: Object.entries(doc.profiles ?? {}).map(([name, p]) => ({ name, settings: Object.keys(p) })) };
}
