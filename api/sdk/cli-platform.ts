// The platform API from a shell (docs/sdk.md "Platform commands"): one command per operation of the
// table, named by the rule in platform-commands.ts, run through the SDK's PlatformClient.
//
//   <words> [path parameters] [--<field> <text> | --<field>:json <json>]... [--body-file <f>|-]
//           [--query k=v]... [--header k:v]... [--idempotency-key k] [--limit n] [--cursor c] [--all]
//
// A `--<field>` goes to the body of an operation that takes one (`a.b` nests: `--payer.wallet_id w`),
// and to the query of one that does not (a list's filters: `payments list --status settled`), where only
// the operation's own query parameters are accepted.
import { readFileSync } from 'node:fs';
import { platformCommands, type PlatformCommand } from './platform-commands.ts';
import type { PlatformClient, QueryValue } from './platform-client.ts';
import type { Page } from './client.ts';

export class PlatformUsageError extends Error {}

/** Options every command takes, read by cli.ts before the command's own. */
export const GLOBAL_FLAGS = ['json', 'table', 'help'] as const;
export const GLOBAL_VALUES = ['profile'] as const;

export interface PlatformInvocation {
  command: PlatformCommand;
  params: Record<string, string>;
  body: Record<string, unknown> | undefined;
  query: Record<string, QueryValue>;
  headers: Record<string, string>;
  idempotencyKey: string | undefined;
  all: boolean;
}

/** The command the leading words of `words` name (the longest), if any. */
export function findPlatformCommand(words: string[]): PlatformCommand | undefined {
  let best: PlatformCommand | undefined;
  for (const c of platformCommands()) {
    if (c.words.length <= words.length && c.words.every((w, i) => words[i] === w) && (!best || c.words.length > best.words.length)) best = c;
  }
  return best;
}

/** Whether any platform command starts with these words (to tell "unknown command" from "incomplete"). */
export function platformPrefix(words: string[]): string[] {
  const next = new Set<string>();
  for (const c of platformCommands()) if (c.words.length > words.length && words.every((w, i) => c.words[i] === w)) next.add(c.words[words.length]!);
  return [...next].sort();
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let at = target;
  for (const k of keys.slice(0, -1)) {
    const next = at[k];
    at = (at[k] = typeof next === 'object' && next !== null && !Array.isArray(next) ? next : {}) as Record<string, unknown>;
  }
  at[keys.at(-1)!] = value;
}

function readBodyFile(path: string, stdin: () => string): Record<string, unknown> {
  let text: string;
  try {
    text = path === '-' ? stdin() : readFileSync(path, 'utf8');
  } catch (err) {
    throw new PlatformUsageError(`--body-file: cannot read ${path}: ${(err as Error).message}`);
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new PlatformUsageError(`--body-file: ${path} is not JSON: ${(err as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new PlatformUsageError(`--body-file: ${path} must hold a JSON object`);
  return v as Record<string, unknown>;
}

/**
 * Parses a platform command's arguments (after the global options were taken out): its path
 * parameters, then its options. Throws PlatformUsageError naming what is wrong.
 */
export function parsePlatform(command: PlatformCommand, rest: string[], stdin: () => string = () => readFileSync(0, 'utf8')): PlatformInvocation {
  const { op } = command;
  const name = command.words.join(' ');
  const positionals: string[] = [];
  const fields: [string, string, boolean][] = [];
  const query: Record<string, QueryValue> = {};
  const headers: Record<string, string> = {};
  let bodyFile: string | undefined;
  let idempotencyKey: string | undefined;
  let all = false;
  for (let i = 0; i < rest.length; i++) {
    const tok = rest[i]!;
    if (!tok.startsWith('--')) {
      positionals.push(tok);
      continue;
    }
    const eq = tok.indexOf('=');
    const key = eq > 0 ? tok.slice(2, eq) : tok.slice(2);
    if (key === 'all') {
      all = true;
      continue;
    }
    const value = eq > 0 ? tok.slice(eq + 1) : rest[++i];
    if (value === undefined) throw new PlatformUsageError(`${name}: --${key} needs a value`);
    if (key === 'body-file') bodyFile = value;
    else if (key === 'idempotency-key') idempotencyKey = value;
    else if (key === 'query') {
      const at = value.indexOf('=');
      if (at <= 0) throw new PlatformUsageError(`--query ${value}: expected <name>=<value>`);
      query[value.slice(0, at)] = value.slice(at + 1);
    } else if (key === 'header') {
      const at = value.indexOf(':');
      if (at <= 0) throw new PlatformUsageError(`--header ${value}: expected <name>:<value>`);
      headers[value.slice(0, at).trim().toLowerCase()] = value.slice(at + 1).trim();
    } else if (key === 'limit' || key === 'cursor') query[key] = value;
    else if (!/^[A-Za-z_][\w.-]*(:json)?$/.test(key)) throw new PlatformUsageError(`${name}: --${key} is not a field name`);
    else fields.push(key.endsWith(':json') ? [key.slice(0, -5), value, true] : [key, value, false]);
  }
  if (positionals.length !== command.args.length) {
    throw new PlatformUsageError(`${name} takes ${command.args.length ? command.args.map((a) => `<${a}>`).join(' ') : 'no arguments'}${positionals.length ? `; got ${positionals.join(' ')}` : ''}`);
  }
  const params = Object.fromEntries(command.args.map((a, i) => [a, positionals[i]!]));
  let body: Record<string, unknown> | undefined;
  if (op.body) {
    body = bodyFile !== undefined ? readBodyFile(bodyFile, stdin) : {};
    for (const [k, v, json] of fields) {
      let value: unknown = v;
      if (json) {
        try {
          value = JSON.parse(v);
        } catch {
          throw new PlatformUsageError(`--${k}:json: not JSON: ${v}`);
        }
      }
      setPath(body, k, value);
    }
  } else {
    if (bodyFile !== undefined) throw new PlatformUsageError(`${name} takes no body (${op.method} ${op.path})`);
    for (const [k, v] of fields) query[k] = v;
  }
  const allowed = new Set<string>([...(op.query ?? []), ...(op.list === 'query' ? ['cursor', 'limit'] : [])]);
  const unknown = Object.keys(query).filter((k) => !allowed.has(k));
  if (unknown.length) throw new PlatformUsageError(`${name} does not take ${unknown.map((k) => `--${k}`).join(', ')}${allowed.size ? ` (its query: ${[...allowed].map((k) => `--${k}`).join(', ')})` : ''}`);
  if (all && !op.list) throw new PlatformUsageError(`${name} is not a list: --all does not apply`);
  if (idempotencyKey !== undefined && !op.idempotent) throw new PlatformUsageError(`${name} does not take an Idempotency-Key`);
  if (op.list === 'body' && body) {
    // A search takes its page in the body.
    for (const k of ['cursor', 'limit'] as const) if (query[k] !== undefined) body[k] = k === 'limit' ? Number(query[k]) : query[k];
    delete query.cursor;
    delete query.limit;
  }
  return { command, params, body, query, headers, idempotencyKey, all };
}

/** Runs a parsed platform command; `--all` walks every page from the given cursor and prints them as one. */
export async function runPlatform(inv: PlatformInvocation, client: PlatformClient): Promise<unknown> {
  const { op } = inv.command;
  const args = {
    ...inv.params, query: inv.query, headers: inv.headers,
    ...(inv.body !== undefined ? { body: inv.body } : {}), ...(inv.idempotencyKey !== undefined ? { idempotencyKey: inv.idempotencyKey } : {}),
  };
  if (!inv.all) {
    const result = await client.call(op.id, args);
    return op.empty ? { done: true, operation: op.id, ...inv.params } : result;
  }
  const data: unknown[] = [];
  for await (const item of client.each(op.id as Parameters<PlatformClient['each']>[0], args as never)) data.push(item);
  return { data, next_cursor: null, has_more: false } satisfies Page<unknown>;
}

/** The usage lines of every platform command, for --help. */
export function platformUsage(): string {
  return platformCommands().map((c) => {
    const o = c.op;
    const opts = [
      ...c.args.map((a) => `<${a}>`),
      ...(o.body ? ['[--<field> <value>]… [--body-file <f>]'] : []),
      ...(!o.body && o.query?.length ? [o.query.map((q) => `[--${q}]`).join(' ')] : []),
      ...(o.list === 'query' ? ['[--limit] [--cursor] [--all]'] : []),
    ];
    return `  ${[...c.words, ...opts].join(' ')}\n      ${o.summary} (${o.method} ${o.path})`;
  }).join('\n');
}
