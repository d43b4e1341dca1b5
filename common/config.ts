// Configuration loading shared by the three programs. Each program declares one TypeBox schema whose
// properties name the environment variable they read (`env`); values come from an optional JSON file,
// then the environment (which wins), are converted, defaulted, validated once, and frozen.
// This file and the programs' own config.ts are the only places that read process.env.
import { readFileSync } from 'node:fs';
import { Kind, type TObject, type TSchema, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

export class ConfigError extends Error {
  readonly code = 'invalid_config';
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

export interface LoadOptions {
  /** Environment to read; defaults to process.env. */
  env?: Record<string, string | undefined>;
  /** Name of the variable holding an optional JSON config file path. */
  fileVar?: string;
}

/** `secret`: the setting may carry a credential (a URL with a password), so an error never echoes it. */
type EnvSchema = TSchema & { env?: string; secret?: boolean };

/** Loads, validates and freezes a program's configuration. Throws ConfigError listing every problem. */
export function loadConfig<T extends TObject>(schema: T, options: LoadOptions = {}): Readonly<Static<T>> {
  const env = options.env ?? process.env;
  const problems: string[] = [];
  let raw: Record<string, unknown> = {};
  const file = options.fileVar ? env[options.fileVar] : undefined;
  if (file) {
    try {
      const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) problems.push(`${options.fileVar}: ${file} must hold a JSON object`);
      else raw = { ...(parsed as Record<string, unknown>) };
    } catch (err) {
      problems.push(`${options.fileVar}: cannot read ${file}: ${(err as Error).message}`);
    }
  }
  const known = new Set(Object.keys(schema.properties));
  for (const key of Object.keys(raw)) if (!known.has(key)) problems.push(`${file}: unknown setting "${key}"`);

  for (const [key, prop] of Object.entries(schema.properties) as [string, EnvSchema][]) {
    const name = prop.env;
    const value = name ? env[name] : undefined;
    if (value !== undefined && value !== '') raw[key] = prop[Kind] === 'Array' ? value.split(',').map((s) => s.trim()).filter(Boolean) : value;
  }
  // Conversion would truncate a fraction (`80.5` to 80) or read `1e3` and `0x10` as numbers: an integer
  // setting must be written as one, in plain decimal digits.
  for (const [key, prop] of Object.entries(schema.properties) as [string, EnvSchema][]) {
    const v = raw[key];
    if (prop[Kind] !== 'Integer' || v === undefined) continue;
    if (typeof v === 'string' ? !/^-?(0|[1-9][0-9]*)$/.test(v) : typeof v !== 'number' || !Number.isInteger(v)) {
      const where = prop.env ? `${prop.env} (${key})` : key;
      problems.push(`${where}: must be a whole number in decimal digits; ${prop.secret ? 'got a value (not shown)' : `got ${JSON.stringify(v)}`}`);
      delete raw[key];
    }
  }
  const converted = Value.Default(schema, Value.Convert(schema, raw)) as Record<string, unknown>;
  // One problem per setting: the validator reports a missing value once as missing and again for its type.
  const reported = new Set<string>();
  for (const e of Value.Errors(schema, converted)) {
    const key = e.path.replace(/^\//, '').split('/')[0] ?? '';
    if (reported.has(key)) continue;
    reported.add(key);
    const prop = (schema.properties as Record<string, EnvSchema>)[key];
    const where = prop?.env ? `${prop.env} (${key})` : key || '(root)';
    if (e.value === undefined) {
      problems.push(`${where}: required, not set`);
      continue;
    }
    problems.push(`${where}: ${e.message}; ${prop?.secret ? 'got a value (not shown)' : `got ${JSON.stringify(e.value)}`}`);
  }
  if (problems.length) throw new ConfigError(problems);
  return deepFreeze(converted) as Readonly<Static<T>>;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** True for addresses that never leave the machine; plaintext transport is allowed only there. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** Splits `host:port` (IPv6 in brackets). */
export function splitHostPort(address: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(address);
  if (!m) throw new Error(`not a host:port address: ${address}`);
  return { host: m[1]!, port: Number(m[2]) };
}

/** True when the program was asked for its usage (`--help` or `-h` among its arguments). */
export function helpAsked(argv: readonly string[] = process.argv.slice(2)): boolean {
  return argv.includes('--help') || argv.includes('-h');
}

/**
 * The usage of a program configured by its environment: `intro`, then every setting of `schema` with its
 * variable, default and description, and the variable naming an optional JSON file of them.
 */
export function settingsUsage(intro: string, schema: TObject, fileVar?: string): string {
  const lines = [intro.trimEnd(), '', fileVar ? 'Settings (environment variables; the environment wins over the file):' : 'Settings (environment variables):'];
  if (fileVar) lines.push(`  ${fileVar}: a JSON file of the settings below, by their names in parentheses`);
  for (const [key, prop] of Object.entries(schema.properties) as [string, EnvSchema & { default?: unknown; description?: string }][]) {
    if (!prop.env) continue;
    const def = prop.default === undefined ? (schema.required?.includes(key) ? 'required' : 'optional') : prop.default === '' ? 'default: empty' : `default: ${Array.isArray(prop.default) ? prop.default.join(',') || 'empty' : String(prop.default)}`;
    lines.push(`  ${prop.env} (${key}), ${def}${prop.description ? `: ${prop.description}` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}
