// The vault API and the platform API from a shell, on the SDK (docs/sdk.md): `custody <command>`
// (the package's bin, deploy/cli/custody.mjs) or `npm run cli -- <command> [options]`. Settings come
// from CUSTODY_URL, CUSTODY_ORGANIZATION, CUSTODY_KEY_ID and CUSTODY_SECRET_KEY_FILE, and for the
// platform commands CUSTODY_API_KEY (api/sdk/config.ts; REGTEST_URL for the `regtest` commands), or
// from a profile (`--profile`), the environment winning. Each command prints one JSON value on stdout,
// or on a terminal a table (cli-output.ts; `--json` forces JSON); a failure prints {"error", "code",
// "status", "request_id"?, "fields"?, "hint"?} on stderr (code from the documented set, docs/sdk.md
// "Errors") and exits with the status of its class (EXIT below, docs/sdk.md "Exit status").
// What only some commands use (the clients, curves, intent and chain code, the webhook receiver) is
// imported where it is used: the launcher's bundle is split there, so a call compiles only its own code.
import { parseArgs } from 'node:util';
import { createServer } from 'node:http';
import type { WebhookEvent } from './webhook-receiver.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import type { Static } from '@sinclair/typebox';
import type { CustodyApiError, CustodyClient, NodeIdentityRef, PreparedTransaction, Tier, TransactionState, Vault } from './client.ts';
import { listProfiles, loadAnvilCliConfig, loadCliConfig, loadPlatformCliConfig, loadRegtestCliConfig, withProfile } from './config.ts';
import { findPlatformCommand, parsePlatform, platformPrefix, platformUsage, PlatformUsageError, runPlatform } from './cli-platform.ts';
import { outputMode, render, renderError, type ErrorReport, type OutputMode } from './cli-output.ts';
import { completionScript } from './cli-completion.ts';
import { platformCommands } from './platform-commands.ts';
import { ConfigError } from '../../common/config.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { SdkError } from './sdk-error.ts';
import type { BtcOutpoint } from '../../core/intents/intent.ts';
import { TIER_NAMES } from '../../core/tiers.ts';
import type { Policy } from '../../core/api-schemas/policy.ts';
import type { Approval } from '../../core/policy/policy-approval.ts';
import { KeyHexT, NodeIdT, type TeeMeasurementsBody } from '../../core/api-schemas/nodes.ts';
import { CHAIN_NAMES, VaultStateSchema } from '../../core/api-schemas/vaults.ts';
import { TransactionStateSchema } from '../../core/api-schemas/transactions.ts';
import { MAX_LIMIT, type PageResult } from '../../core/api-schemas/page.ts';

const USAGE = `usage: npm run cli -- <command>
  keygen --out <file>                                   new Ed25519 key pair; the secret (hex) goes to <file>
  keys list
  keys register --public-key <hex> [--label <text>]
  keys revoke <keyId>
  vault create --tier <hosted|self|customer_tee> [--name <text>] [--policy-file <json>] [--end-user-subject <sub>]
               [--customer-node <identity file>] [--idempotency-key <key>]  (customer node: self, customer_tee;
               the key makes running it again answer the same vault; without one, each run creates one)
  vault get <vaultId>
  vault wait <vaultId> [--state <state>] [--timeout <ms>]  (default state: active)
  vault reshare <vaultId> [--target-tier <tier>] [--customer-node <identity file>]
  vault retry <vaultId>                                 a failed vault: generate its key afresh
  vault delete <vaultId>                                a vault that never got a key
  vault list [--state <state>] [--tier <tier>] [--limit <n>] [--cursor <c>] [--all]
  wallet create <vaultId> --chain <chain> [--account <n>] [--address-type <p2wpkh|p2tr>]
  wallet get <walletId>
  wallet utxos <walletId>                               a Bitcoin wallet's unspent outputs with their amounts
  wallet list <vaultId> [--chain <chain>] [--limit <n>] [--cursor <c>] [--all]
  tx send-evm --wallet <walletId> --to <0x address> --amount <base units> --idempotency-key <key>
              [--asset <native|0x contract>] [--max-fee <wei>] [--not-after <unix s>] [--nonce <n>]
              [--end-user-token <jwt>] [--dry-run]
              (without --nonce, the API reserves the wallet's next free nonce for the idempotency key,
               a dry run too; the same key gets the same nonce again)
  tx prepare --wallet <walletId> --idempotency-key <key> [--not-after <unix s>]
              the nonce an EVM intent names, reserved for the key (what send-evm does first)
  tx send-bitcoin --wallet <walletId> (--to <address> --amount <sat> | --output <address>:<sat> ...)
              --max-fee-rate <sat/vB> --max-fee <sat> --idempotency-key <key> [--input <txid>:<vout>:<sat> ...]
              [--not-after <unix s>] [--end-user-token <jwt>] [--dry-run]
              (without --input, inputs and their amounts are chosen from the wallet's UTXOs;
               tx send-btc is the same command)
  (--not-after defaults to an hour from now; the nodes refuse more than 24 hours ahead)
  (--dry-run prints the canonical intent (hex, decoded), its SHA-256 (an end-user token's intent_sha256)
   and what will be signed, and sends nothing)
  tx get <txId>
  tx wait <txId> [--state <state>] [--timeout <ms>]      (default state: final, timeout: what the chain's finality takes;
                                                         exits 1 if it ends failed or rejected; on a terminal, prints each state to stderr)
  tx list [--vault <vaultId>] [--wallet <walletId>] [--state <state>] [--limit <n>] [--cursor <c>] [--all]
  (a list prints one page {data, next_cursor, has_more}, oldest first, --limit 1 to 100 items (default 25);
   --cursor <next_cursor> prints the next page; --all prints every page's items as one last page)
  end-user-auth set --jwks-file <json> --audience <aud>
  node-config                                           coordinator address, operator keys and organization for a node
  nodes enrol --kind <self|tee> --identity <file> [--label <text>] [--attestation-file <file>]
              (<file>: the JSON npm run node-identity printed; tee needs its attestation document, binary)
  nodes list
  nodes revoke <nodeId>
  tee measurements get
  tee measurements put --file <json>                    {"version": <n>, "allowed": [{"0": "<PCR0 hex>", ...}]}
  regtest fund <address> <sats> [--unconfirmed]         the local regtest faucet (npm start); mined at once unless --unconfirmed
  regtest mine [--blocks <n>]                           mine blocks on the local regtest chain now
  anvil fund <0x address> <wei>                         the local EVM chain's faucet (npm start's anvil; ANVIL_URL sets where)
  payment intents --payment-file <json>                 the intents of a payment's transfers (<json>: POST /v1/payments' answer),
                                                        built and signed with your key, as the body of POST /v1/member-actions
  payment send --payment-file <json> --member-signing-session <mas_…>
                                                        submits each transfer's intent (the same bytes) with the member's
                                                        signing session; prints the transactions (docs/quickstart-platform.md)
  policy get <vaultId>                                  the policy in force, changes waiting out their delay, the intent chain's head
  policy put <vaultId> --file <json> [--approvals-file <json>]
                                                        sign a new policy version into the vault's trust log (docs/policies.md)
  policy migrate <vaultId>                              sign the vault's legacy policy, as the API offers it, as version 1
  policy chain <vaultId> [--from-seq <n>] [--limit <n>]  the vault's intent chain, each link with its intent (to audit)
  policy approve-change --file <json> --from-version <n> --approver-id <id> --approver-key-file <file>
                                                        offline: an approver's approval of replacing version <n> by <json>
  approvals list <vaultId>                              the vault's transactions awaiting approvals
  tx approve <txId> --approver-id <id> --approver-key-file <file>
  tx reject <txId> --approver-id <id> --approver-key-file <file>
                                                        as an approver: decodes the intent, signs its hash (docs/policies.md)
  export recipient --out <file>                         new X25519 recipient key for a key export; the secret (hex) goes to <file>
  export request <vaultId> --recipient-key-file <file> [--not-before <unix s>]
                                                        ask for the vault's key, sealed to that recipient key (docs/export.md)
  export approve <vaultId> <exportId> --approver-key-file <file> [--recipient-key <hex>]
                                                        as an approver of the vault's export governance; refuses a request
                                                        that names another vault or export, or another recipient key
  export status <vaultId> <exportId>
  export collect <vaultId> <exportId> [--wait] [--timeout <ms>]
                                                        each node's answer; --wait collects until sealed (progress on stderr)
  export reconstruct --file <export json> --recipient-key-file <file> [--public-key <hex>] [--chain-code <hex>] [--sandbox]
                                                        offline: open the sealed shares and print the key (hex, xprv)
  webhook listen --port <n> --secret-file <file> [--type <event type>] [--timeout <ms>]
                                                        receive webhooks on 127.0.0.1:<n>, verify each (HMAC with the
                                                        endpoint's secret) and print the first of <type> (default: any)
  completion <bash|zsh>                                 a shell completion script: eval "$(custody completion bash)"
  profiles list                                         the profiles of the profiles file (names and which settings each sets)
platform API (a workspace bearer key): one command per operation, <area> ... <verb> [<path parameters>]
  [--<field> <value> | --<field>:json <json>]... [--body-file <f>|-] [--query k=v]... [--header k:v]...
  [--idempotency-key <k>] [--limit <n>] [--cursor <c>] [--all]; <command words> --help lists them, e.g.
  payments --help; help platform lists all
every command: --json (JSON even on a terminal), --table (a table even on a pipe), --profile <name>
settings: CUSTODY_URL, CUSTODY_ORGANIZATION, CUSTODY_KEY_ID, CUSTODY_SECRET_KEY_FILE; CUSTODY_API_KEY (or CUSTODY_API_KEY_FILE),
  CUSTODY_PUBLISHABLE_KEY for the platform commands; CUSTODY_PROFILE; REGTEST_URL (default http://127.0.0.1:3002)
exit status: 0 done, 1 failed (another refusal, a wait that ended elsewhere, a bug), 2 usage or settings,
  3 credential refused (401, 403 forbidden), 4 not found or conflict (404, 409, 412), 5 rate limited or unreachable
  (429, 502-504, network; try again later), 6 invalid request (400, 413, 415, 422: fix the fields)`;

class UsageError extends Error {}

/** What the payment commands read of a payment (docs/platform/payments.md): its payer's wallet and transfers. */
interface PaymentTransfers { id: string; payer: { wallet_id: string }; transfers: { role: string; to: string; amount: string; asset: string; idempotency_key: string }[] }

function paymentFile(path: string): PaymentTransfers {
  let p: PaymentTransfers;
  try {
    p = JSON.parse(readFileSync(path, 'utf8')) as PaymentTransfers;
  } catch (err) {
    throw new UsageError(`--payment-file: ${path}: ${(err as Error).message}`);
  }
  if (typeof p?.id !== 'string' || typeof p.payer?.wallet_id !== 'string' || !Array.isArray(p.transfers) || p.transfers.length === 0) {
    throw new UsageError(`--payment-file: ${path} is not a payment (POST /v1/payments' answer, with id, payer and transfers)`);
  }
  return p;
}

/** A transfer of a payment as an EVM transfer from the payer's wallet; its asset `<chain>:0x<token>` names the token. */
function transferParameters(wallet: { id: string; chain: string; address: string }, t: PaymentTransfers['transfers'][number]) {
  const [chain, token] = t.asset.split(':');
  if (chain !== wallet.chain || !token) throw new UsageError(`transfer ${t.role}: asset ${t.asset} is not a token on the payer's chain ${wallet.chain}`);
  return { wallet, to: t.to, amount: t.amount, asset: token, idempotencyKey: t.idempotency_key };
}
/** Returned by --help: the usage text goes to stdout as is. */
const HELP = Symbol('help');

const OPTIONS = {
  out: { type: 'string' }, 'public-key': { type: 'string' }, label: { type: 'string' },
  tier: { type: 'string' }, name: { type: 'string' }, 'policy-file': { type: 'string' }, 'end-user-subject': { type: 'string' }, 'target-tier': { type: 'string' },
  chain: { type: 'string' }, account: { type: 'string' }, 'address-type': { type: 'string' },
  wallet: { type: 'string' }, to: { type: 'string' }, amount: { type: 'string' }, asset: { type: 'string' }, 'max-fee': { type: 'string' },
  'idempotency-key': { type: 'string' }, 'end-user-token': { type: 'string' }, 'not-after': { type: 'string' }, nonce: { type: 'string' }, 'max-fee-rate': { type: 'string' },
  'jwks-file': { type: 'string' }, audience: { type: 'string' }, 'customer-node': { type: 'string' },
  kind: { type: 'string' }, identity: { type: 'string' }, 'attestation-file': { type: 'string' }, file: { type: 'string' },
  state: { type: 'string' }, timeout: { type: 'string' }, help: { type: 'boolean', short: 'h' },
  vault: { type: 'string' }, limit: { type: 'string' }, cursor: { type: 'string' }, all: { type: 'boolean' },
  output: { type: 'string', multiple: true }, input: { type: 'string', multiple: true }, 'dry-run': { type: 'boolean' },
  unconfirmed: { type: 'boolean' }, blocks: { type: 'string' },
  port: { type: 'string' }, 'secret-file': { type: 'string' }, type: { type: 'string' }, 'payment-file': { type: 'string' }, 'member-signing-session': { type: 'string' },
  'recipient-key-file': { type: 'string' }, 'recipient-key': { type: 'string' }, 'chain-code': { type: 'string' }, sandbox: { type: 'boolean' },
  wait: { type: 'boolean' }, 'not-before': { type: 'string' }, 'from-seq': { type: 'string' },
  'approvals-file': { type: 'string' }, 'approver-id': { type: 'string' }, 'approver-key-file': { type: 'string' }, 'from-version': { type: 'string' },
} as const;
type Option = keyof typeof OPTIONS;
type Flag = 'all' | 'dry-run' | 'unconfirmed' | 'sandbox' | 'wait';
type Values = Partial<Record<Exclude<Option, Flag | 'output' | 'input'>, string>> & Partial<Record<Flag, boolean>> & { output?: string[]; input?: string[] };

interface Command {
  /** Names of the positional arguments after the command words. */
  args: string[];
  required?: Option[];
  optional?: Option[];
  /** Runs with the settings' client; `keygen` alone needs none. */
  run(a: Record<string, string>, o: Values, client: () => Promise<CustodyClient>): Promise<unknown>;
}

const TIERS: readonly string[] = TIER_NAMES;
const BASE10 = /^(0|[1-9][0-9]*)$/;

function tier(value: string | undefined, flag: string): Tier | undefined {
  if (value !== undefined && !TIERS.includes(value)) throw new UsageError(`${flag} must be one of ${TIERS.join(', ')}`);
  return value as Tier | undefined;
}

function integer(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!BASE10.test(value) || !Number.isSafeInteger(Number(value))) throw new UsageError(`${flag} must be a non-negative base-10 integer`);
  return Number(value);
}

function jsonFile(path: string, flag: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new UsageError(`${flag}: cannot read JSON from ${path}: ${(err as Error).message}`);
  }
}

/**
 * On a terminal, a wait prints each state it sees to stderr as it changes (with the seconds since it
 * began), so a long wait for finality is visibly alive; piped output stays the final JSON alone.
 */
function stateProgress(what: string): ((x: { state: string; confirmations?: number | null }) => void) | undefined {
  if (!process.stderr.isTTY) return undefined;
  const started = Date.now();
  let last = '';
  return (x) => {
    const now = `${x.state}${x.confirmations !== undefined && x.confirmations !== null ? ` (${x.confirmations} confirmations)` : ''}`;
    if (now === last) return;
    last = now;
    process.stderr.write(`${what} ${now} after ${Math.round((Date.now() - started) / 1000)} s\n`);
  };
}

// The patterns POST /v1/nodes and the vault bodies validate with.
const NODE_ID = new RegExp(NodeIdT.pattern!);
const KEY_HEX = new RegExp(KeyHexT.pattern!);

/**
 * A node's public identity from the JSON `npm run node-identity` printed on that node, with the kind the
 * node was configured as when it printed it.
 */
/** An Ed25519 secret key, hex, from a file (what keygen writes). */
function hexBytes(value: string, flag: string, length: number): Uint8Array {
  if (!new RegExp(`^[0-9a-fA-F]{${length * 2}}$`).test(value)) throw new UsageError(`${flag} must be ${length} bytes in hex`);
  return hexToBytes(value.toLowerCase());
}

function secretKeyFile(path: string, flag: string): Uint8Array {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw new UsageError(`${flag}: ${(err as Error).message}`);
  }
  if (!/^[0-9a-f]{64}$/i.test(text)) throw new UsageError(`${flag}: ${path} does not hold a 32-byte secret key in hex`);
  return hexToBytes(text.toLowerCase());
}

/** An approver approves or rejects a waiting transaction (the SDK decodes the intent and signs its hash). */
async function approverAnswer(txId: string, o: Values, client: () => Promise<CustodyClient>, reject: boolean): Promise<unknown> {
  const secretKey = secretKeyFile(o['approver-key-file']!, '--approver-key-file');
  try {
    return await (await client()).approveTransaction(txId, { id: o['approver-id']!, secretKey }, { reject });
  } finally {
    secretKey.fill(0);
  }
}

function identityFile(path: string, flag: string): { node: NodeIdentityRef; kind: unknown } {
  const j = jsonFile(path, flag) as Partial<Record<keyof NodeIdentityRef | 'kind', unknown>> | null;
  const { node_id: id, signing_key: sk, encryption_key: ek, kind } = j ?? {};
  if (typeof id !== 'string' || !NODE_ID.test(id) || typeof sk !== 'string' || !KEY_HEX.test(sk) || typeof ek !== 'string' || !KEY_HEX.test(ek)) {
    throw new UsageError(`${flag}: ${path} is not a node identity as npm run node-identity prints it (node_id, signing_key, encryption_key)`);
  }
  return { node: { node_id: id, signing_key: sk, encryption_key: ek }, kind };
}

/** A customer node to seat, only where a tier has one. */
function customerNode(path: string | undefined, t: Tier | undefined, flag: string): { customer_node?: NodeIdentityRef } {
  if (path === undefined) return {};
  if (t === undefined || t === 'hosted') throw new UsageError(`--customer-node goes with ${flag} self or customer_tee`);
  return { customer_node: identityFile(path, '--customer-node').node };
}

/** The attestation document, sent as base64 (the file holds its bytes as the enclave returned them). */
function attestationFile(path: string): string {
  let doc: Buffer;
  try {
    doc = readFileSync(path);
  } catch (err) {
    throw new UsageError(`--attestation-file: cannot read ${path}: ${(err as Error).message}`);
  }
  if (doc.length === 0) throw new UsageError(`--attestation-file: ${path} is empty`);
  return doc.toString('base64');
}

/** The fields that are set: the SDK's parameters are optional, never undefined. */
function defined<T extends Record<string, unknown>>(fields: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}

/** `value` when it is one of `choices` (a list filter's values, as the API's schema has them). */
function oneOf<T extends string>(value: string | undefined, choices: readonly T[], flag: string): T | undefined {
  if (value !== undefined && !(choices as readonly string[]).includes(value)) throw new UsageError(`${flag} must be one of ${choices.join(', ')}`);
  return value as T | undefined;
}

const VAULT_STATES = VaultStateSchema.anyOf.map((s) => s.const);
const TX_STATES = TransactionStateSchema.anyOf.map((s) => s.const);

/**
 * A list command: one page (`--limit`, `--cursor`), or with `--all` every page from `--cursor` on, printed
 * as one last page. The options are checked before `client` is asked for, so a usage error sends nothing.
 */
async function list<T>(o: Values, client: () => Promise<CustodyClient>, page: (c: CustodyClient, p: { cursor?: string; limit?: number }) => Promise<PageResult<T>>): Promise<PageResult<T>> {
  const limit = integer(o.limit, '--limit');
  if (limit !== undefined && (limit < 1 || limit > MAX_LIMIT)) throw new UsageError(`--limit must be 1 to ${MAX_LIMIT}`);
  const at = (cursor: string | undefined) => ({ ...(cursor !== undefined ? { cursor } : {}), ...(limit !== undefined ? { limit } : {}) });
  const c = await client();
  if (!o.all) return page(c, at(o.cursor));
  const { allPages } = await import('./client.ts');
  const data: T[] = [];
  for await (const item of allPages((cursor) => page(c, at(cursor ?? o.cursor)))) data.push(item);
  return { data, next_cursor: null, has_more: false };
}

/** `<address>:<sat>` of --output (or --to with --amount). */
function outputs(o: Values): { address: string; amount: bigint }[] {
  if ((o.to === undefined) !== (o.amount === undefined)) throw new UsageError('--to and --amount go together');
  const list = [...(o.to !== undefined ? [`${o.to}:${o.amount!}`] : []), ...(o.output ?? [])];
  if (list.length === 0) throw new UsageError('give the recipient: --to <address> --amount <sat>, or --output <address>:<sat> (repeatable)');
  return list.map((spec) => {
    const at = spec.lastIndexOf(':');
    const address = spec.slice(0, at);
    const amount = spec.slice(at + 1);
    if (at <= 0 || !BASE10.test(amount) || BigInt(amount) === 0n) throw new UsageError(`--output ${spec}: expected <address>:<positive sat>`);
    return { address, amount: BigInt(amount) };
  });
}

/** `<txid>:<vout>[:<sat>]` of --input: the outpoints a P2WPKH spend names with their amounts. */
function inputs(o: Values): BtcOutpoint[] | undefined {
  if (!o.input?.length) return undefined;
  return o.input.map((spec) => {
    const m = /^([0-9a-fA-F]{64}):(\d{1,10})(?::(\d{1,16}))?$/.exec(spec);
    if (!m || Number(m[2]) > 0xffffffff || (m[3] !== undefined && !BASE10.test(m[3]))) throw new UsageError(`--input ${spec}: expected <txid>:<vout>:<sat>`);
    return { txid: Uint8Array.from(Buffer.from(m[1]!, 'hex')), vout: Number(m[2]), ...(m[3] !== undefined ? { amount: BigInt(m[3]) } : {}) };
  });
}

/**
 * What --dry-run prints: the intent (hex, SHA-256, decoded), what is signed, and the request that would
 * be sent, with the flags that make a later send build the very same bytes (the default not_after and
 * selected inputs are chosen per run).
 */
async function dryRun(prepared: PreparedTransaction, o: Values, chosen: BtcOutpoint[]): Promise<unknown> {
  const { previewIntent } = await import('./intent-preview.ts');
  const preview = previewIntent(prepared.intent);
  const same = [
    ...(o['not-after'] === undefined ? [`--not-after ${String(preview.decoded.not_after)}`] : []),
    ...(o.input?.length ? [] : chosen.map((i) => `--input ${Buffer.from(i.txid).toString('hex')}:${i.vout}:${String(i.amount)}`)),
  ];
  return {
    dry_run: true,
    intent: { hex: preview.hex, sha256: preview.sha256, decoded: preview.decoded },
    end_user_token: { intent_sha256: preview.sha256 },
    signing: preview.signing,
    request: { method: 'POST', path: '/v1/transactions', body: prepared.body },
    ...(same.length ? { send_same_intent_with: same.join(' ') } : {}),
  };
}

function sendBitcoin(): Command {
  return {
    args: [], required: ['wallet', 'max-fee-rate', 'max-fee', 'idempotency-key'],
    optional: ['to', 'amount', 'output', 'input', 'not-after', 'end-user-token', 'dry-run'],
    async run(_a, o, c) {
      for (const k of ['max-fee-rate', 'max-fee'] as const) if (!BASE10.test(o[k]!)) throw new UsageError(`--${k} must be a base-10 integer`);
      const outs = outputs(o);
      const named = inputs(o);
      const notAfter = integer(o['not-after'], '--not-after');
      const client = await c();
      const wallet = await client.getWallet(o.wallet!);
      const prepared = await client.prepareBitcoin({
        wallet, outputs: outs, maxFeeRate: BigInt(o['max-fee-rate']!), maxFee: BigInt(o['max-fee']!), idempotencyKey: o['idempotency-key']!,
        ...(named ? { inputs: named } : {}), ...(notAfter !== undefined ? { notAfter: BigInt(notAfter) } : {}),
        ...(o['end-user-token'] !== undefined ? { endUserToken: o['end-user-token'] } : {}),
      });
      if (!o['dry-run']) return client.submitTransaction(prepared.body);
      const { decodeIntent } = await import('../../core/intents/intent.ts');
      const intent = decodeIntent(prepared.intent);
      return dryRun(prepared, o, intent.kind === 'btc.transfer' ? intent.inputs : []);
    },
  };
}

/**
 * A local webhook receiver: answers 200 to a delivery that verifies (and 401 to one that does not, which
 * the service retries), and resolves with the first verified event of `type`.
 */
async function listenForWebhook(port: number, secret: string, type: string | undefined, timeoutMs: number): Promise<WebhookEvent> {
  const { EventDeduper, verifyWebhook } = await import('./webhook-receiver.ts');
  return new Promise((resolve, reject) => {
    const seen = new EventDeduper();
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        const v = verifyWebhook(req.headers, raw, { secrets: [secret] });
        res.writeHead(v.ok ? 200 : 401).end();
        if (!v.ok) return process.stderr.write(JSON.stringify({ refused: v.reason }) + '\n');
        if (!seen.firstTime(v.event.id) || (type !== undefined && v.event.type !== type)) return;
        clearTimeout(timer);
        server.close();
        resolve(v.event);
      });
    });
    const timer = setTimeout(() => {
      server.close();
      reject(new SdkError('timeout', `no ${type ?? 'webhook'} event within ${timeoutMs} ms`));
    }, timeoutMs);
    server.on('error', (err) => {
      clearTimeout(timer);
      reject(new UsageError(`--port ${port}: ${(err as Error).message}`));
    });
    server.listen(port, '127.0.0.1');
  });
}

/** A POST to the local regtest service (docs/bitcoin-regtest.md); its refusal is `regtest_refused`. */
async function regtest(path: string, body: unknown): Promise<unknown> {
  const { url } = loadRegtestCliConfig();
  let res: Response;
  try {
    res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  } catch (err) {
    throw new SdkError('network', `cannot reach the regtest service at ${url} (is npm start or npm run regtest running? REGTEST_URL sets where): ${(err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message}`, { cause: err });
  }
  const text = await res.text();
  if (!res.ok) throw new SdkError('regtest_refused', text.trim() || `HTTP ${res.status}`, { status: res.status });
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new SdkError('bad_response', `${url}${path}: the answer is not JSON: ${text.slice(0, 120)}`);
  }
}

const COMMANDS: Record<string, Command> = {
  keygen: {
    args: [], required: ['out'],
    async run(_a, o) {
      const { ed25519 } = await import('@noble/curves/ed25519.js');
      const secret = ed25519.utils.randomSecretKey();
      // wx: never overwrite a key file that may hold a key in use.
      try {
        writeFileSync(o.out!, bytesToHex(secret) + '\n', { mode: 0o600, flag: 'wx' });
      } catch (err) {
        throw new UsageError(`--out: cannot create ${o.out}: ${(err as Error).message}`);
      }
      return { public_key: bytesToHex(ed25519.getPublicKey(secret)), secret_key_file: o.out };
    },
  },
  'export recipient': {
    args: [], required: ['out'],
    async run(_a, o) {
      const { newExportRecipient } = await import('./key-export.ts');
      const r = await newExportRecipient();
      try {
        writeFileSync(o.out!, bytesToHex(r.secretKey) + '\n', { mode: 0o600, flag: 'wx' });
      } catch (err) {
        throw new UsageError(`--out: cannot create ${o.out}: ${(err as Error).message}`);
      } finally {
        r.secretKey.fill(0);
      }
      return { recipient_key: bytesToHex(r.publicKey), secret_key_file: o.out };
    },
  },
  // Offline: opens the sealed shares of an export (the JSON GET /v1/vaults/{id}/exports/{id} answers)
  // with the recipient's private key and reconstructs the vault's key (docs/export.md).
  'export reconstruct': {
    args: [], required: ['file', 'recipient-key-file'], optional: ['public-key', 'chain-code', 'sandbox'],
    async run(_a, o) {
      const { reconstructExport } = await import('./key-export.ts');
      const { decodeExportRequest } = await import('../../core/export/export-request.ts');
      const exp = jsonFile(o.file!, '--file') as { id?: unknown; vault_id?: unknown; request?: unknown; shares?: { node_id: string; party: number; enc: string; ciphertext: string }[] };
      if (typeof exp.request !== 'string' || typeof exp.id !== 'string' || typeof exp.vault_id !== 'string' || !Array.isArray(exp.shares)) throw new UsageError('--file: not an export (GET /v1/vaults/{id}/exports/{id})');
      const request = decodeExportRequest(hexToBytes(exp.request));
      let secret: Uint8Array;
      try {
        secret = hexToBytes(readFileSync(o['recipient-key-file']!, 'utf8').trim());
      } catch (err) {
        throw new UsageError(`--recipient-key-file: ${(err as Error).message}`);
      }
      const key = await reconstructExport({
        org: request.org, vaultId: exp.vault_id, requestHex: exp.request, requestId: exp.id, recipientSecretKey: secret,
        sealed: exp.shares.map((x) => ({ nodeId: x.node_id, party: x.party, enc: hexToBytes(x.enc), ciphertext: hexToBytes(x.ciphertext) })),
        ...(o['public-key'] ? { expectedPublicKeyHex: o['public-key'] } : {}), ...(o['chain-code'] ? { expectedChainCodeHex: o['chain-code'] } : {}),
        environment: o.sandbox ? 'sandbox' : 'production',
      });
      secret.fill(0);
      return { private_key: key.privateKeyHex, public_key: key.publicKeyHex, xprv: key.xprv, xpub: key.xpub, parties: key.parties };
    },
  },
  'export request': {
    args: ['vaultId'], required: ['recipient-key-file'], optional: ['not-before'],
    async run(a, o, c) {
      const { exportRecipientPublicKey } = await import('./key-export.ts');
      const secret = secretKeyFile(o['recipient-key-file']!, '--recipient-key-file');
      const publicKey = exportRecipientPublicKey(secret);
      secret.fill(0);
      return (await c()).requestExport(a.vaultId!, { recipientPublicKey: publicKey, ...(o['not-before'] !== undefined ? { notBefore: integer(o['not-before'], '--not-before')! } : {}) });
    },
  },
  'export approve': {
    args: ['vaultId', 'exportId'], required: ['approver-key-file'], optional: ['recipient-key'],
    async run(a, o, c) {
      const recipientKey = o['recipient-key'] === undefined ? undefined : hexBytes(o['recipient-key'], '--recipient-key', 32);
      const secret = secretKeyFile(o['approver-key-file']!, '--approver-key-file');
      try {
        return await (await c()).approveExportRequest(a.vaultId!, a.exportId!, secret, recipientKey ? { recipientKey } : {});
      } finally {
        secret.fill(0);
      }
    },
  },
  'export status': { args: ['vaultId', 'exportId'], run: async (a, _o, c) => (await c()).getExport(a.vaultId!, a.exportId!) },
  'export collect': {
    args: ['vaultId', 'exportId'], optional: ['wait', 'timeout'],
    async run(a, o, c) {
      const client = await c();
      if (!o.wait) return client.collectExport(a.vaultId!, a.exportId!);
      // Progress to stderr while it waits: each node's answer, and when it seals.
      return client.waitForExport(a.vaultId!, a.exportId!, {
        timeoutMs: integer(o.timeout, '--timeout') ?? 48 * 3600_000,
        progress: (e) => process.stderr.write(`${JSON.stringify({ state: e.state, nodes: e.nodes.map((n) => ({ node_id: n.node_id, status: n.status, ready_at: n.ready_at })) })}\n`),
      });
    },
  },
  'keys list': { args: [], run: async (_a, _o, c) => ({ api_keys: await (await c()).listApiKeys() }) },
  'keys register': {
    args: [], required: ['public-key'], optional: ['label'],
    run: async (_a, o, c) => (await c()).registerApiKey({ public_key: o['public-key']!, ...(o.label !== undefined ? { label: o.label } : {}) }),
  },
  'keys revoke': { args: ['keyId'], run: async (a, _o, c) => (await c()).revokeApiKey(a.keyId!) },
  'vault create': {
    args: [], required: ['tier'], optional: ['name', 'policy-file', 'end-user-subject', 'customer-node', 'idempotency-key'],
    run: async (_a, o, c) => {
      const t = tier(o.tier, '--tier')!;
      return (await c()).createVault({
        tier: t,
        ...(o.name !== undefined ? { name: o.name } : {}),
        ...(o['policy-file'] !== undefined ? { policy: jsonFile(o['policy-file'], '--policy-file') as Policy } : {}),
        ...(o['end-user-subject'] !== undefined ? { end_user_subject: o['end-user-subject'] } : {}),
        ...customerNode(o['customer-node'], t, '--tier'),
      }, o['idempotency-key'] !== undefined ? { idempotencyKey: o['idempotency-key'] } : {});
    },
  },
  'vault get': { args: ['vaultId'], run: async (a, _o, c) => (await c()).getVault(a.vaultId!) },
  'vault wait': {
    args: ['vaultId'], optional: ['state', 'timeout'],
    // A vault that ends `failed` ends the wait too, with exit status 1 (its `problem` says why).
    async run(a, o, c) {
      const want = o.state ?? 'active';
      const v = await (await c()).waitForVault(a.vaultId!, (x: Vault) => x.state === want || x.state === 'failed', { timeoutMs: integer(o.timeout, '--timeout') ?? 120_000, progress: stateProgress('vault') });
      if (v.state !== want) process.exitCode = 1;
      return v;
    },
  },
  'vault reshare': {
    args: ['vaultId'], optional: ['target-tier', 'customer-node'],
    run: async (a, o, c) => {
      const target = tier(o['target-tier'], '--target-tier');
      const node = customerNode(o['customer-node'], target, '--target-tier');
      return (await c()).reshareVault(a.vaultId!, target ? { target_tier: target, ...node } : {});
    },
  },
  'vault retry': { args: ['vaultId'], run: async (a, _o, c) => (await c()).retryVault(a.vaultId!) },
  'vault delete': {
    args: ['vaultId'],
    run: async (a, _o, c) => {
      await (await c()).deleteVault(a.vaultId!);
      return { id: a.vaultId!, deleted: true };
    },
  },
  'vault list': {
    args: [], optional: ['state', 'tier', 'limit', 'cursor', 'all'],
    run: async (_a, o, c) => {
      const filters = { state: oneOf(o.state, VAULT_STATES, '--state'), tier: tier(o.tier, '--tier') };
      return list(o, c, (client, p) => client.listVaults({ ...p, ...defined(filters) }));
    },
  },
  'wallet create': {
    args: ['vaultId'], required: ['chain'], optional: ['account', 'address-type'],
    run: async (a, o, c) => {
      const type = o['address-type'];
      if (type !== undefined && type !== 'p2wpkh' && type !== 'p2tr') throw new UsageError('--address-type must be p2wpkh or p2tr');
      const account = integer(o.account, '--account');
      return (await c()).createWallet(a.vaultId!, { chain: o.chain!, ...(account !== undefined ? { account_index: account } : {}), ...(type ? { address_type: type } : {}) });
    },
  },
  'wallet get': { args: ['walletId'], run: async (a, _o, c) => (await c()).getWallet(a.walletId!) },
  'wallet list': {
    args: ['vaultId'], optional: ['chain', 'limit', 'cursor', 'all'],
    run: async (a, o, c) => {
      const chain = oneOf(o.chain, CHAIN_NAMES, '--chain');
      return list(o, c, (client, p) => client.listWallets(a.vaultId!, { ...p, ...defined({ chain }) }));
    },
  },
  'wallet utxos': { args: ['walletId'], run: async (a, _o, c) => ({ utxos: await (await c()).listUtxos(a.walletId!) }) },
  'tx send-evm': {
    args: [], required: ['wallet', 'to', 'amount', 'idempotency-key'], optional: ['asset', 'max-fee', 'not-after', 'nonce', 'end-user-token', 'dry-run'],
    async run(_a, o, c) {
      if (!BASE10.test(o.amount!)) throw new UsageError('--amount must be base units as a base-10 integer');
      const nonce = integer(o.nonce, '--nonce');
      if (o['max-fee'] !== undefined && !BASE10.test(o['max-fee'])) throw new UsageError('--max-fee must be wei as a base-10 integer');
      const notAfter = integer(o['not-after'], '--not-after');
      const client = await c();
      // The intent names the wallet's chain and address, so the wallet is read first.
      const wallet = await client.getWallet(o.wallet!);
      // Without --nonce, the API reserves one for the idempotency key (a dry run too: the same key sends at it later).
      const prepared = await client.prepareEvm({
        wallet, to: o.to!, amount: o.amount!, idempotencyKey: o['idempotency-key']!,
        ...(o.asset !== undefined ? { asset: o.asset } : {}), ...(o['max-fee'] !== undefined ? { maxFee: o['max-fee'] } : {}),
        ...(notAfter !== undefined ? { notAfter: BigInt(notAfter) } : {}), ...(nonce !== undefined ? { nonce: BigInt(nonce) } : {}),
        ...(o['end-user-token'] !== undefined ? { endUserToken: o['end-user-token'] } : {}),
      });
      return o['dry-run'] ? dryRun(prepared, o, []) : client.submitTransaction(prepared.body);
    },
  },
  'tx prepare': {
    args: [], required: ['wallet', 'idempotency-key'], optional: ['not-after'],
    async run(_a, o, c) {
      const notAfter = integer(o['not-after'], '--not-after');
      return (await c()).prepareNonce(o.wallet!, o['idempotency-key']!, notAfter === undefined ? undefined : BigInt(notAfter));
    },
  },
  'tx send-bitcoin': sendBitcoin(),
  // The first name of the command, kept for scripts that use it.
  'tx send-btc': sendBitcoin(),
  'tx get': { args: ['txId'], run: async (a, _o, c) => (await c()).getTransaction(a.txId!) },
  // Vault policies (docs/policies.md): the customer's key signs the change; an approver's key signs only
  // what it decoded and hashed itself.
  'policy get': { args: ['vaultId'], run: async (a, _o, c) => (await c()).getPolicy(a.vaultId!) },
  'policy put': {
    args: ['vaultId'], required: ['file'], optional: ['approvals-file'],
    run: async (a, o, c) => {
      const approvals = o['approvals-file'] !== undefined ? jsonFile(o['approvals-file'], '--approvals-file') : [];
      if (!Array.isArray(approvals)) throw new UsageError('--approvals-file: a JSON list of {approver_id, signature}');
      return (await c()).putPolicy(a.vaultId!, jsonFile(o.file!, '--file'), approvals as Approval[]);
    },
  },
  'policy migrate': { args: ['vaultId'], run: async (a, _o, c) => (await c()).migratePolicy(a.vaultId!) },
  'policy chain': {
    args: ['vaultId'], optional: ['from-seq', 'limit'],
    run: async (a, o, c) => ({ data: await (await c()).getChain(a.vaultId!, { fromSeq: integer(o['from-seq'], '--from-seq'), limit: integer(o.limit, '--limit') }) }),
  },
  'policy approve-change': {
    args: [], required: ['file', 'from-version', 'approver-id', 'approver-key-file'],
    async run(_a, o) {
      const { approvePolicyChange } = await import('./policy.ts');
      const secret = secretKeyFile(o['approver-key-file']!, '--approver-key-file');
      try {
        return approvePolicyChange({ fromVersion: integer(o['from-version'], '--from-version')!, next: jsonFile(o.file!, '--file'), approverId: o['approver-id']!, secretKey: secret });
      } finally {
        secret.fill(0);
      }
    },
  },
  'approvals list': { args: ['vaultId'], run: async (a, _o, c) => ({ data: await (await c()).pendingApprovals(a.vaultId!) }) },
  'tx approve': { args: ['txId'], required: ['approver-id', 'approver-key-file'], run: (a, o, c) => approverAnswer(a.txId!, o, c, false) },
  'tx reject': { args: ['txId'], required: ['approver-id', 'approver-key-file'], run: (a, o, c) => approverAnswer(a.txId!, o, c, true) },
  'tx wait': {
    args: ['txId'], optional: ['state', 'timeout'],
    async run(a, o, c) {
      const want = (o.state ?? 'final') as TransactionState;
      const client = await c();
      // Without --timeout, a wait for `final` allows for the chain's finality (finalityWaitMs).
      let timeoutMs = integer(o.timeout, '--timeout');
      if (timeoutMs === undefined) timeoutMs = want === 'final' ? (await import('./client.ts')).finalityWaitMs((await client.getTransaction(a.txId!)).chain) : 120_000;
      const tx = await client.waitForTransaction(a.txId!, [want], { timeoutMs, progress: stateProgress('transaction') });
      if (tx.state !== want) process.exitCode = 1;
      return tx;
    },
  },
  'tx list': {
    args: [], optional: ['vault', 'wallet', 'state', 'limit', 'cursor', 'all'],
    run: async (_a, o, c) => {
      const filters = { vault_id: o.vault, wallet_id: o.wallet, state: oneOf(o.state, TX_STATES, '--state') };
      return list(o, c, (client, p) => client.listTransactions({ ...p, ...defined(filters) }));
    },
  },
  'end-user-auth set': {
    args: [], required: ['jwks-file', 'audience'],
    run: async (_a, o, c) => (await c()).setEndUserAuth({ jwks: jsonFile(o['jwks-file']!, '--jwks-file') as { keys: Record<string, unknown>[] }, audience: o.audience! }),
  },
  'node-config': { args: [], run: async (_a, _o, c) => (await c()).nodeConfig() },
  'nodes enrol': {
    args: [], required: ['kind', 'identity'], optional: ['label', 'attestation-file'],
    async run(_a, o, c) {
      if (o.kind !== 'self' && o.kind !== 'tee') throw new UsageError('--kind must be self or tee');
      if (o.kind === 'self' && o['attestation-file'] !== undefined) throw new UsageError('--attestation-file goes with --kind tee');
      if (o.kind === 'tee' && o['attestation-file'] === undefined) throw new UsageError('--kind tee needs --attestation-file');
      const { node, kind } = identityFile(o.identity!, '--identity');
      // A node that attaches as another kind than it is enrolled as is never seated.
      if (kind !== undefined && kind !== o.kind) {
        throw new UsageError(`--identity: ${o.identity} was printed by a node configured as ${String(kind)}: set its kind (NODE_KIND) to ${o.kind} and print it again`);
      }
      return (await c()).enrolNode({
        kind: o.kind, ...node,
        ...(o.label !== undefined ? { label: o.label } : {}),
        ...(o['attestation-file'] !== undefined ? { attestation: attestationFile(o['attestation-file']) } : {}),
      });
    },
  },
  'nodes list': { args: [], run: async (_a, _o, c) => ({ nodes: await (await c()).listNodes() }) },
  'nodes revoke': { args: ['nodeId'], run: async (a, _o, c) => (await c()).revokeNode(a.nodeId!) },
  'regtest fund': {
    args: ['address', 'sats'], optional: ['unconfirmed'],
    async run(a, o) {
      if (!BASE10.test(a.sats!) || BigInt(a.sats!) === 0n) throw new UsageError('<sats> must be a positive base-10 integer');
      return regtest('/regtest/fund', { address: a.address, sats: a.sats, confirm: !o.unconfirmed });
    },
  },
  'regtest mine': {
    args: [], optional: ['blocks'],
    async run(_a, o) {
      const blocks = integer(o.blocks, '--blocks') ?? 1;
      if (blocks < 1 || blocks > 1000) throw new UsageError('--blocks must be 1 to 1000');
      return regtest('/regtest/mine', { blocks });
    },
  },
  'anvil fund': {
    args: ['address', 'wei'],
    async run(a) {
      if (!/^0x[0-9a-fA-F]{40}$/.test(a.address!)) throw new UsageError('<0x address> must be 20 bytes of hex');
      if (!BASE10.test(a.wei!)) throw new UsageError('<wei> must be a base-10 integer');
      const { url } = loadAnvilCliConfig();
      const rpc = async (method: string, params: unknown[]) => {
        let res: Response;
        try {
          res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
        } catch (err) {
          throw new SdkError('network', `cannot reach the local chain at ${url} (is npm start running? ANVIL_URL sets where): ${(err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message}`, { cause: err });
        }
        const body = (await res.json().catch(() => ({}))) as { result?: unknown; error?: { message?: string } };
        if (!res.ok || body.error) throw new SdkError('bad_response', `${method}: ${body.error?.message ?? `HTTP ${res.status}`}`);
        return body.result;
      };
      // anvil's own method: a development chain only, which is what this command is for.
      await rpc('anvil_setBalance', [a.address, '0x' + BigInt(a.wei!).toString(16)]);
      return { address: a.address, balance_wei: BigInt(String(await rpc('eth_getBalance', [a.address, 'latest']))).toString() };
    },
  },
  'payment intents': {
    args: [], required: ['payment-file'],
    async run(_a, o, c) {
      const p = paymentFile(o['payment-file']!);
      const client = await c();
      const wallet = await client.getWallet(p.payer.wallet_id);
      // Each transfer's idempotency key reserves its nonce and not_after, so `payment send` builds the same bytes.
      const intents = [];
      for (const t of p.transfers) intents.push(Buffer.from(await client.evmIntent(transferParameters(wallet, t))).toString('base64'));
      return { kind: 'transaction.sign_batch', wallet_id: wallet.id, intents, purpose: { type: 'payment', id: p.id } };
    },
  },
  'payment send': {
    args: [], required: ['payment-file', 'member-signing-session'],
    async run(_a, o, c) {
      const p = paymentFile(o['payment-file']!);
      const client = await c();
      const wallet = await client.getWallet(p.payer.wallet_id);
      const transactions = [];
      for (const t of p.transfers) {
        const prepared = await client.prepareEvm({ ...transferParameters(wallet, t), memberSigningSession: o['member-signing-session']! });
        const tx = await client.submitTransaction(prepared.body);
        transactions.push({ role: t.role, id: tx.id, state: tx.state });
      }
      return { payment: p.id, transactions };
    },
  },
  'webhook listen': {
    args: [], required: ['port', 'secret-file'], optional: ['type', 'timeout'],
    async run(_a, o) {
      const port = integer(o.port, '--port')!;
      if (port < 1 || port > 65535) throw new UsageError('--port must be 1 to 65535');
      let secret: string;
      try {
        secret = readFileSync(o['secret-file']!, 'utf8').trim();
      } catch (err) {
        throw new UsageError(`--secret-file: cannot read ${o['secret-file']}: ${(err as Error).message}`);
      }
      return listenForWebhook(port, secret, o.type, integer(o.timeout, '--timeout') ?? 600_000);
    },
  },
  'tee measurements get': { args: [], run: async (_a, _o, c) => (await c()).getTeeMeasurements() },
  'tee measurements put': {
    args: [], required: ['file'],
    run: async (_a, o, c) => (await c()).putTeeMeasurements(jsonFile(o.file!, '--file') as Static<typeof TeeMeasurementsBody>),
  },
};

/** The options every command takes, taken out of argv before the command's own are read. */
interface Globals { json: boolean; table: boolean; profile: string | undefined }

function takeGlobals(argv: string[]): { globals: Globals; rest: string[] } {
  const globals: Globals = { json: false, table: false, profile: undefined };
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--json') globals.json = true;
    else if (a === '--table') globals.table = true;
    else if (a === '--profile' || a.startsWith('--profile=')) {
      const v = a === '--profile' ? argv[++i] : a.slice('--profile='.length);
      if (!v) throw new UsageError('--profile needs a name');
      globals.profile = v;
    } else rest.push(a);
  }
  return { globals, rest };
}

/** Every command line, for completion and `help platform`. */
function commandLines(): string[] {
  return [...Object.keys(COMMANDS), 'completion bash', 'completion zsh', 'profiles list', 'help platform', ...platformCommands().map((c) => c.words.join(' '))];
}

/** Text printed as it is (a completion script, a list of commands), not as JSON. */
class Text {
  constructor(readonly text: string) {}
}

async function run(argv: string[], globals: Globals): Promise<unknown> {
  // A profile is read only when a command needs settings, so --help and usage errors answer without it.
  const settings = () => withProfile(globals.profile).env;
  const words: string[] = [];
  for (const a of argv) {
    if (a.startsWith('-')) break;
    words.push(a);
  }
  const help = argv.includes('--help') || argv.includes('-h');
  if (words[0] === 'completion') {
    const shell = words[1];
    if ((shell !== 'bash' && shell !== 'zsh') || words.length !== 2) throw new UsageError('completion takes bash or zsh');
    return new Text(completionScript(shell, commandLines()));
  }
  if (words.join(' ') === 'help platform') return new Text(platformUsage());
  if (words.join(' ') === 'profiles list' && !help) return listProfiles(settings());
  const platform = findPlatformCommand(words);
  if (platform || (words.length > 0 && platformPrefix(words).length > 0 && !Object.keys(COMMANDS).some((c) => c.startsWith(words.join(' '))))) {
    if (help || !platform) {
      const lines = platformUsage().split('\n');
      const want = `  ${words.join(' ')}`;
      const shown = lines.flatMap((l, i) => (l.startsWith(want + ' ') || l === want ? [l, lines[i + 1]!] : []));
      if (help) return new Text(shown.join('\n'));
      throw new UsageError(`${words.join(' ')} needs more words: ${platformPrefix(words).join(', ')}`);
    }
    let inv;
    try {
      inv = parsePlatform(platform, argv.slice(platform.words.length));
    } catch (err) {
      if (err instanceof PlatformUsageError) throw new UsageError(err.message);
      throw err;
    }
    const s = loadPlatformCliConfig(settings());
    const { PlatformClient } = await import('./platform-client.ts');
    const client = new PlatformClient({ baseUrl: s.url, apiKey: s.apiKey, ...(s.signing ? { signing: s.signing } : {}), ...(s.publishableKey ? { headers: { 'x-svc-publishable-key': s.publishableKey } } : {}) });
    return runPlatform(inv, client);
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return HELP;
  if (positionals.length === 0) throw new UsageError('no command given');
  // A command is one to three words (`keygen`, `keys list`, `tee measurements get`): the longest that matches.
  const n = [3, 2, 1].find((k) => k <= positionals.length && Object.hasOwn(COMMANDS, positionals.slice(0, k).join(' ')));
  if (n === undefined) throw new UsageError(`unknown command: ${positionals.slice(0, 2).join(' ')}`);
  const name = positionals.slice(0, n).join(' ');
  const cmd = COMMANDS[name]!;
  const rest = positionals.slice(n);
  if (rest.length !== cmd.args.length) throw new UsageError(`${name} takes ${cmd.args.length ? cmd.args.map((x) => `<${x}>`).join(' ') : 'no arguments'}`);
  const o = values as Values & { help?: boolean };
  const allowed = new Set<string>([...(cmd.required ?? []), ...(cmd.optional ?? []), 'help']);
  for (const k of Object.keys(o)) if (!allowed.has(k)) throw new UsageError(`${name} does not take --${k}`);
  for (const k of cmd.required ?? []) if (o[k] === undefined || o[k] === '') throw new UsageError(`${name} needs --${k}`);
  const args = Object.fromEntries(cmd.args.map((k, i) => [k, rest[i]!]));
  // The client (and the chain code it pulls in) loads only for a command that calls the API, so usage
  // and settings errors answer at once.
  const lazyClient = async () => {
    const s = loadCliConfig(settings());
    const { CustodyClient } = await import('./client.ts');
    return new CustodyClient({ baseUrl: s.url, organization: s.organization, keyId: s.keyId, secretKey: s.secretKey });
  };
  return cmd.run(args, o, lazyClient);
}

/**
 * The exit status of each class of failure (docs/sdk.md "Exit status"). 0, 1 and 2 keep their first
 * meanings (done; failed; usage or settings, before any request); 3 to 6 tell a script which failures to
 * fix where: the credential, the record named, later (the same request may then succeed), the request.
 */
export const EXIT = Object.freeze({ ok: 0, failed: 1, usage: 2, auth: 3, not_found_or_conflict: 4, unavailable: 5, invalid: 6 });

function exitOfStatus(status: number, code: string): number {
  // A 403 with another code (cap_exceeded, a policy's refusal) refuses the request, not the credential.
  if (status === 401 || (status === 403 && (code === 'forbidden' || code.startsWith('mfa_')))) return EXIT.auth;
  if (status === 404 || status === 409 || status === 410 || status === 412 || status === 428) return EXIT.not_found_or_conflict;
  if (status === 429 || status === 502 || status === 503 || status === 504) return EXIT.unavailable;
  if (status === 400 || status === 413 || status === 415 || status === 422) return EXIT.invalid;
  return EXIT.failed;
}

/** What to do about a failure of each class. */
function hintOf(exit: number, e: { status: number | null; retryAfterMs?: number | null }): string | undefined {
  switch (exit) {
    case EXIT.auth: return e.status === 401
      ? 'check the key: CUSTODY_API_KEY (platform) or CUSTODY_KEY_ID and CUSTODY_SECRET_KEY_FILE (vault), or the profile chosen with --profile'
      : 'the key may not do this: use a key whose role allows it, or give the proof it asks for (--header svc-mfa-token:…)';
    case EXIT.not_found_or_conflict: return e.status === 404 ? 'check the id, and that the key is of the workspace or organization that owns it' : 'read the record again and retry with what it says now (an Idempotency-Key reused with another body is a conflict)';
    case EXIT.unavailable: return e.retryAfterMs ? `try again in ${Math.ceil(e.retryAfterMs / 1000)} s` : 'try again later; check CUSTODY_URL if it keeps failing';
    case EXIT.invalid: return 'fix the request: the fields listed say which value and why';
    default: return undefined;
  }
}

/**
 * The error line: what failed, a code from the documented set (docs/sdk.md "Errors": the API's codes,
 * and SDK_ERROR_CODES for what fails on this side), the HTTP status when a service answered, the
 * request id the API logged it under, a 400's or 422's fields, and what to do; and the exit status.
 */
function describe(err: unknown): { body: ErrorReport; exit: number } {
  // By name: the client module is loaded lazily, so its classes are not at hand here.
  const named = (name: string) => err instanceof Error && err.name === name;
  if (named('CustodyApiError')) {
    const e = err as CustodyApiError;
    const exit = exitOfStatus(e.status, e.code);
    const hint = hintOf(exit, e);
    return {
      body: { error: e.message, code: e.code, status: e.status, ...(e.requestId ? { request_id: e.requestId } : {}), ...(e.fields?.length ? { fields: e.fields } : {}), ...(hint ? { hint } : {}) },
      exit,
    };
  }
  if (err instanceof UsageError) return { body: { error: `${err.message} (custody --help lists the commands)`, code: 'usage', status: null }, exit: EXIT.usage };
  if (err instanceof ConfigError) return { body: { error: err.problems.join('; '), code: err.code, status: null }, exit: EXIT.usage };
  if (err instanceof SdkError) {
    if (err.code === 'usage' || err.code === 'invalid_config') return { body: { error: err.message, code: err.code, status: null }, exit: EXIT.usage };
    const exit = err.code === 'network' ? EXIT.unavailable : EXIT.failed;
    const hint = hintOf(exit, { status: err.status });
    return { body: { error: err.message, code: err.code, status: err.status, ...(hint ? { hint } : {}) }, exit };
  }
  // The intent codec's refusals (bad_intent) and the other registered codes of core/errors/error-codes.ts.
  if (err instanceof CustodyError) return { body: { error: err.message, code: err.code, status: null }, exit: EXIT.failed };
  const e = err as Error & { cause?: { message?: string } };
  if (e instanceof TypeError && e.message === 'fetch failed') return { body: { error: `cannot reach the API: ${e.cause?.message ?? e.message}`, code: 'network', status: null, hint: hintOf(EXIT.unavailable, { status: null })! }, exit: EXIT.unavailable };
  return { body: { error: e?.message ?? String(err), code: 'internal', status: null }, exit: EXIT.failed };
}

let mode: OutputMode = { json: !process.stdout.isTTY };
try {
  const { globals, rest } = takeGlobals(process.argv.slice(2));
  mode = outputMode(globals, process.stdout.isTTY === true);
  const result = await run(rest, globals);
  const text = result === HELP ? USAGE : result instanceof Text ? result.text : render(result, mode);
  process.stdout.write(text + '\n');
  process.exit(process.exitCode ?? 0);
} catch (err) {
  const { body, exit } = describe(err);
  // A person at a terminal reads lines; a script reads the JSON line (and --json always gets it).
  process.stderr.write(renderError(body, process.stderr.isTTY === true && !mode.json && !process.argv.includes('--json')) + '\n');
  process.exit(exit);
}
