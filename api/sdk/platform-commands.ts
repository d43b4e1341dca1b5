// The CLI's platform commands, made from the operation table (platform-operations.ts) by one rule
// (docs/sdk.md "Platform commands"), so that every operation has a command and none is written by hand:
//
// - the words are the path's literal segments after /v1, its parameters becoming positional arguments
//   in their order (`/v1/payments/{id}/cancel` is `payments cancel <id>`);
// - then a verb from the method: GET `list` (an operation answering a page) or `get`, POST `create`,
//   PUT `set`, PATCH `update`, DELETE `delete`;
// - except a POST that is the only operation of its path: its path already names the action and takes
//   no verb (`payments quote`, `webhook-deliveries replay <id>`, `webhook-endpoints rotate <id>`).
//
// A few operations the rule would give the same words as another are named in COMMAND_OVERRIDES; the
// test (test/api/sdk/platform-operations.unit.ts) checks that no two commands are the same.
import { PLATFORM_OPERATIONS, pathParams, type PlatformOperation } from './platform-operations.ts';

export interface PlatformCommand {
  /** The command words, e.g. `['payments', 'cancel']`. */
  words: string[];
  /** The path parameters, taken as positional arguments in this order. */
  args: string[];
  op: PlatformOperation;
}

const VERB: Record<PlatformOperation['method'], string> = { GET: 'get', POST: 'create', PUT: 'set', PATCH: 'update', DELETE: 'delete' };

/** Commands the rule would make the same as another's, by `METHOD /path`. */
export const COMMAND_OVERRIDES: Readonly<Record<string, readonly string[]>> = {
  // Beside `rwa tokens metadata get <id>` (the token's): one instance's, by its token id.
  'GET /v1/rwa/tokens/{id}/metadata/{tokenId}': ['rwa', 'tokens', 'metadata', 'instance', 'get'],
};

export function commandWords(op: PlatformOperation, all: readonly PlatformOperation[] = PLATFORM_OPERATIONS): string[] {
  const override = COMMAND_OVERRIDES[`${op.method} ${op.path}`];
  if (override) return [...override];
  const words = op.path.replace(/^\/v1\//, '').split('/').filter((s) => !/^\{.+\}$/.test(s));
  const alone = op.method === 'POST' && !all.some((o) => o !== op && o.path === op.path);
  if (alone) return words;
  return [...words, op.method === 'GET' && op.list ? 'list' : VERB[op.method]];
}

let cached: PlatformCommand[] | undefined;

/** Every platform command, in the table's order. */
export function platformCommands(): PlatformCommand[] {
  cached ??= PLATFORM_OPERATIONS.map((op) => ({ words: commandWords(op), args: pathParams(op.path), op }));
  return cached;
}
