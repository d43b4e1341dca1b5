// A vault's policy document, version 1 (docs/policies.md): the rules a customer signs into its trust log
// (`PUT /v1/vaults/{id}/policy`), which every signer node enforces itself and the API checks first for a
// fast answer. Parsing is strict (unknown fields, bad values and duplicates refused) and the document has
// one canonical encoding (sorted keys, no whitespace), whose hash approvals of a policy change sign.
// Pure: no clock, no I/O.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { lengthPrefixed } from '../codec/transcript.ts';
import { CustodyError } from '../errors/custody-error.ts';
import { isValidEd25519PublicKeyHex } from '../../common/ed25519.ts';

export const POLICY_FORMAT = 1;

/**
 * An asset the nodes can name from an intent alone: `eip155:<chain id>:native`,
 * `eip155:<chain id>:0x<token contract, lower case>`, or `bitcoin:<network>:native`.
 */
export const POLICY_ASSET = /^(eip155:[1-9][0-9]{0,19}:(native|0x[0-9a-f]{40})|bitcoin:(mainnet|testnet|signet|regtest):native)$/;
const AMOUNT = /^(0|[1-9][0-9]{0,77})$/;
const ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const APPROVER_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const SELECTOR = /^0x[0-9a-f]{8}$/;
const EVM_CHAIN = /^eip155:[1-9][0-9]{0,19}$/;
const HEX32 = /^[0-9a-f]{64}$/;

/** Longest delay a policy may put on loosening changes and exports: 30 days. */
export const MAX_DELAY_SECONDS = 30 * 24 * 3600;
/** A member's subject: printable ASCII, as an OpenID `sub` is in practice. */
const MEMBER_SUBJECT = /^[\x21-\x7e]{1,255}$/;

export type QuorumRule = 'any' | 'contract_call' | 'policy_change';

/**
 * An approver: exactly one of an Ed25519 key (a person's or a system's) or a member of the
 * organization's end-user auth, who approves with a passkey through a member credential (docs/policies.md
 * "Members' passkeys"). Members approve intents only: policy changes and exports need key approvers.
 */
export interface Approver {
  id: string;
  /** Ed25519 public key, 64 lower-case hex characters. */
  public_key?: string;
  /** The member's subject (`sub` of its member credential). */
  member?: string;
}

export interface Quorum {
  /** k distinct approvals ... */
  k: number;
  /** ... from these approver ids. */
  approvers: string[];
  /** When it applies: an intent moving more than `above[asset]` of an asset, or one of the rules. */
  when: { above: Record<string, string> } | { rule: QuorumRule };
}

export interface ContractCallRule {
  /** `eip155:<chain id>`. */
  chain: string;
  /** 0x address, lower case. */
  contract: string;
  /** 4-byte function selectors, 0x and lower-case hex. */
  selectors: string[];
}

/** Who may approve an export of the vault's key, and the delay before it runs (read by the export flow). */
export interface ExportSection {
  approvers_k: number;
  approvers: string[];
  delay_seconds: number;
}

export interface PolicyDocument {
  format: 1;
  /** Monotonic per vault, from 1. */
  version: number;
  vault_id: string;
  /** How long a loosening change (of this policy) waits before it takes effect; tightening applies at once. */
  change_delay_seconds: number;
  /** Refuse what no rule names: an asset without a cap or allow-list entry, a call without a contract rule. */
  default_deny: boolean;
  per_transaction_cap?: Record<string, string>;
  rolling_window?: { seconds: number; caps: Record<string, string> };
  recipient_allowlist?: string[];
  recipient_denylist?: string[];
  asset_allowlist?: string[];
  contract_calls?: ContractCallRule[];
  approvers?: Approver[];
  quorums?: Quorum[];
  export?: ExportSection;
}

export class PolicyFormatError extends CustodyError {
  constructor(message: string) {
    super('bad_policy', message);
    this.name = 'PolicyFormatError';
  }
}

const fail = (m: string): never => {
  throw new PolicyFormatError(m);
};

type Obj = Record<string, unknown>;

function object(v: unknown, what: string, required: string[], optional: string[]): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(`${what} must be an object`);
  const o = v as Obj;
  for (const k of Object.keys(o)) if (!required.includes(k) && !optional.includes(k)) fail(`${what}: unknown field ${k}`);
  for (const k of required) if (!Object.hasOwn(o, k)) fail(`${what}: ${k} is required`);
  return o;
}

function int(v: unknown, what: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) fail(`${what} must be an integer from ${min} to ${max}`);
  return v as number;
}

function list<T>(v: unknown, what: string, max: number, item: (x: unknown, w: string) => T, key: (t: T) => string = String): T[] {
  if (!Array.isArray(v) || v.length > max) fail(`${what} must be a list of at most ${max}`);
  const out = (v as unknown[]).map((x, i) => item(x, `${what}[${i}]`));
  const seen = new Set<string>();
  for (const t of out) {
    if (seen.has(key(t))) fail(`${what} names ${key(t)} twice`);
    seen.add(key(t));
  }
  return out;
}

function str(v: unknown, what: string, pattern: RegExp): string {
  if (typeof v !== 'string' || !pattern.test(v)) fail(`${what} is not valid`);
  return v as string;
}

function caps(v: unknown, what: string): Record<string, string> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(`${what} must be an object of asset -> amount`);
  const entries = Object.entries(v as Obj);
  if (entries.length > 100) fail(`${what} names at most 100 assets`);
  return Object.fromEntries(entries.map(([a, n]) => [str(a, `${what} asset ${a}`, POLICY_ASSET), str(n, `${what}[${a}]`, AMOUNT)]));
}

/** EVM addresses compare in lower case; Bitcoin addresses as given (bech32 is lower case). */
export const normalizeRecipient = (r: string) => (EVM_ADDRESS.test(r) ? r.toLowerCase() : r);

const recipient = (x: unknown, w: string) => {
  if (typeof x !== 'string' || x.length < 1 || x.length > 90 || !/^[\x21-\x7e]+$/.test(x)) fail(`${w} is not a valid address`);
  return normalizeRecipient(x as string);
};

/**
 * Parses and validates a policy document (JSON value). Throws PolicyFormatError (code bad_policy) naming
 * the first problem. Addresses come back lower case; everything else as given.
 */
export function parsePolicyDocument(v: unknown): PolicyDocument {
  const o = object(v, 'policy', ['format', 'version', 'vault_id'], [
    'change_delay_seconds', 'default_deny', 'per_transaction_cap', 'rolling_window', 'recipient_allowlist', 'recipient_denylist',
    'asset_allowlist', 'contract_calls', 'approvers', 'quorums', 'export',
  ]);
  if (o.format !== POLICY_FORMAT) fail(`policy format ${String(o.format)} is not supported (1 is)`);
  const doc: PolicyDocument = {
    format: 1,
    version: int(o.version, 'version', 1, 2 ** 32 - 1),
    vault_id: str(o.vault_id, 'vault_id', ID),
    change_delay_seconds: o.change_delay_seconds === undefined ? 0 : int(o.change_delay_seconds, 'change_delay_seconds', 0, MAX_DELAY_SECONDS),
    default_deny: o.default_deny === undefined ? false : (typeof o.default_deny === 'boolean' ? o.default_deny : fail('default_deny must be true or false')),
  };
  if (o.per_transaction_cap !== undefined) doc.per_transaction_cap = caps(o.per_transaction_cap, 'per_transaction_cap');
  if (o.rolling_window !== undefined) {
    const w = object(o.rolling_window, 'rolling_window', ['seconds', 'caps'], []);
    doc.rolling_window = { seconds: int(w.seconds, 'rolling_window.seconds', 60, 31_536_000), caps: caps(w.caps, 'rolling_window.caps') };
  }
  if (o.recipient_allowlist !== undefined) doc.recipient_allowlist = list(o.recipient_allowlist, 'recipient_allowlist', 1000, recipient);
  if (o.recipient_denylist !== undefined) doc.recipient_denylist = list(o.recipient_denylist, 'recipient_denylist', 1000, recipient);
  if (o.asset_allowlist !== undefined) doc.asset_allowlist = list(o.asset_allowlist, 'asset_allowlist', 100, (x, w) => str(x, w, POLICY_ASSET));
  if (o.contract_calls !== undefined) {
    doc.contract_calls = list(o.contract_calls, 'contract_calls', 256, (x, w) => {
      const c = object(x, w, ['chain', 'contract', 'selectors'], []);
      return {
        chain: str(c.chain, `${w}.chain`, EVM_CHAIN),
        contract: str(c.contract, `${w}.contract`, EVM_ADDRESS).toLowerCase(),
        selectors: list(c.selectors, `${w}.selectors`, 64, (s, ws) => str(s, ws, SELECTOR)),
      };
    }, (c) => `${c.chain}/${c.contract}`);
  }
  if (o.approvers !== undefined) {
    doc.approvers = list(o.approvers, 'approvers', 64, (x, w) => {
      const a = object(x, w, ['id'], ['public_key', 'member']);
      const id = str(a.id, `${w}.id`, APPROVER_ID);
      if ((a.public_key === undefined) === (a.member === undefined)) fail(`${w} names exactly one of public_key or member`);
      if (a.member !== undefined) return { id, member: str(a.member, `${w}.member`, MEMBER_SUBJECT) };
      const key = str(a.public_key, `${w}.public_key`, HEX32);
      if (!isValidEd25519PublicKeyHex(key)) fail(`${w}.public_key is not a valid Ed25519 public key`);
      return { id, public_key: key };
    }, (a) => a.id);
    const keys = doc.approvers.filter((a) => a.public_key !== undefined).map((a) => a.public_key);
    if (new Set(keys).size !== keys.length) fail('approvers: one key is named under two ids');
    const members = doc.approvers.filter((a) => a.member !== undefined).map((a) => a.member);
    if (new Set(members).size !== members.length) fail('approvers: one member is named under two ids');
  }
  const known = new Set((doc.approvers ?? []).map((a) => a.id));
  const keyed = new Set((doc.approvers ?? []).filter((a) => a.public_key !== undefined).map((a) => a.id));
  const approverSet = (v: unknown, w: string, keysOnly = false) => list(v, w, 64, (x, wi) => {
    const id = str(x, wi, APPROVER_ID);
    if (!known.has(id)) fail(`${wi}: ${id} is not one of the policy's approvers`);
    if (keysOnly && !keyed.has(id)) fail(`${wi}: ${id} is a member approver; policy changes and exports are approved with Ed25519 keys`);
    return id;
  });
  if (o.quorums !== undefined) {
    doc.quorums = list(o.quorums, 'quorums', 32, (x, w) => {
      const q = object(x, w, ['k', 'approvers', 'when'], []);
      const changes = typeof q.when === 'object' && q.when !== null && (q.when as Obj).rule === 'policy_change';
      const approvers = approverSet(q.approvers, `${w}.approvers`, changes);
      if (approvers.length < 1) fail(`${w}.approvers names at least one approver`);
      const k = int(q.k, `${w}.k`, 1, approvers.length);
      const when = object(q.when, `${w}.when`, [], ['above', 'rule']);
      if (Object.keys(when).length !== 1) fail(`${w}.when is exactly one of above or rule`);
      if (when.above !== undefined) {
        const above = caps(when.above, `${w}.when.above`);
        if (!Object.keys(above).length) fail(`${w}.when.above names at least one asset`);
        return { k, approvers, when: { above } };
      }
      const rule = when.rule;
      if (rule !== 'any' && rule !== 'contract_call' && rule !== 'policy_change') return fail(`${w}.when.rule is any, contract_call or policy_change`);
      return { k, approvers, when: { rule } };
    }, (q) => JSON.stringify(q));
  }
  if (o.export !== undefined) {
    const e = object(o.export, 'export', ['approvers_k', 'approvers', 'delay_seconds'], []);
    const approvers = approverSet(e.approvers, 'export.approvers', true);
    if (approvers.length < 1) fail('export.approvers names at least one approver');
    doc.export = { approvers_k: int(e.approvers_k, 'export.approvers_k', 1, approvers.length), approvers, delay_seconds: int(e.delay_seconds, 'export.delay_seconds', 0, MAX_DELAY_SECONDS) };
  }
  return doc;
}

/** JSON with object keys sorted at every level and no whitespace: one encoding per document. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Obj)[k])}`).join(',')}}`;
  }
  if (typeof v === 'number' && !Number.isSafeInteger(v)) throw new PolicyFormatError('only integers appear in a policy');
  return JSON.stringify(v);
}

/** The canonical bytes of a parsed policy (defaults filled in, addresses lower case). */
export function encodePolicy(doc: PolicyDocument): Uint8Array {
  return new TextEncoder().encode(canonicalJson(doc));
}

/** SHA-256 over a domain tag and the canonical bytes, hex: what approvals of a policy change sign. */
export function policyHash(doc: PolicyDocument): string {
  return bytesToHex(sha256(lengthPrefixed(['custody/policy/v1', encodePolicy(doc)])));
}

/** The Ed25519 key of the approver named `id`, if the policy has such a key approver. */
export function approverKey(doc: PolicyDocument, id: string): string | undefined {
  return doc.approvers?.find((a) => a.id === id)?.public_key;
}

export interface ExportGovernance {
  k: number;
  approverKeys: { id: string; publicKey: string }[];
  delaySeconds: number;
}

/** What the policy says of exporting the vault's key, or null when it names nothing (docs/policies.md "Export"). */
export function exportGovernance(doc: PolicyDocument | null | undefined): ExportGovernance | null {
  const e = doc?.export;
  if (!doc || !e) return null;
  return { k: e.approvers_k, approverKeys: e.approvers.map((id) => ({ id, publicKey: approverKey(doc, id)! })), delaySeconds: e.delay_seconds };
}
