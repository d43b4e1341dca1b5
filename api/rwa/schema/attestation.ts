// Attestations (docs/platform/rwa.md "Attested entries"): what an attester signs with its own key, and the
// check anyone can run again from a log entry's body alone. Two statements, each domain-separated:
//   - a field entry: this token (id, chain id, contract), this field path, the SHA-256 of this value's
//     canonical JSON, under this schema version (id, version, SHA-256), by this attester, at this nonce;
//   - a schema rebind: this rebind of this token, from one schema version to another, over this dry run.
// Two schemes: Ed25519 (RFC 8032, strict) over the statement's text, or EIP-712 by an address (an EOA,
// recovered with viem) over its typed data in the domain {name "RWA Attestation", version "1", the token's
// chain id, the token's contract}. Pure: no store, no clock.
import { ed25519 } from '@noble/curves/ed25519.js';
import { hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { getAddress, isAddress, verifyTypedData, type Hex } from 'viem';
import { valueSha256 } from './canonical-json.ts';
import { FIELD_PATH } from './asset-schema-compiler.ts';

export const ATTESTATION_TEXT_HEADER = 'rwa-attestation/v1';
export const ATTESTATION_DOMAIN_NAME = 'RWA Attestation';

/** An attester's key: an Ed25519 public key (32 bytes hex) or an EVM address that signs EIP-712. */
export type AttesterKey = { scheme: 'ed25519'; public_key: string } | { scheme: 'eip712'; address: string };

/** What a field attestation binds. */
export interface FieldStatement {
  token_id: string;
  chain_id: number;
  contract: string;
  field: string;
  value_sha256: string;
  schema_id: string;
  schema_version: number;
  schema_sha256: string;
  attester_id: string;
  /** Strictly greater than the attester's last accepted nonce on the token: a signature counts once. */
  nonce: number;
}

/** What a rebind attestation binds. */
export interface RebindStatement {
  rebind_id: string;
  token_id: string;
  chain_id: number;
  contract: string;
  schema_id: string;
  from_version: number;
  from_sha256: string;
  to_version: number;
  to_sha256: string;
  /** SHA-256 of the dry run's canonical JSON: the differences the attester saw. */
  dry_run_sha256: string;
  attester_id: string;
}

export type Statement = { kind: 'field'; statement: FieldStatement } | { kind: 'rebind'; statement: RebindStatement };

const ID = /^[a-z]{2,4}_[0-9a-f]{26}$/;
const SLUG = /^[a-z][a-z0-9-]{1,62}[a-z0-9]$/;
const HASH = /^[0-9a-f]{64}$/;
const ADDRESS = /^0x[0-9a-f]{40}$/;
const posInt = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;

/** Why a statement is malformed (a field that could break its text form or its typed data), or undefined. */
export function statementProblem(s: Statement): string | undefined {
  const x = s.statement as unknown as Record<string, unknown>;
  const str = (k: string, re: RegExp) => (typeof x[k] === 'string' && re.test(x[k]) ? undefined : `${k} is malformed`);
  const int = (k: string) => (posInt(x[k]) ? undefined : `${k} is not a non-negative integer`);
  const common = [str('token_id', ID), int('chain_id'), str('contract', ADDRESS), str('schema_id', SLUG), str('attester_id', ID)];
  const rest = s.kind === 'field'
    ? [str('field', FIELD_PATH), str('value_sha256', HASH), int('schema_version'), str('schema_sha256', HASH), int('nonce')]
    : [str('rebind_id', ID), int('from_version'), str('from_sha256', HASH), int('to_version'), str('to_sha256', HASH), str('dry_run_sha256', HASH)];
  return [...common, ...rest].find((p) => p !== undefined);
}

/** The exact bytes an Ed25519 attester signs: UTF-8 of these lines, each ending in a newline. */
export function statementText(s: Statement): string {
  const x = s.statement;
  const lines = s.kind === 'field'
    ? [ATTESTATION_TEXT_HEADER, 'kind: field', `token: ${x.token_id}`, `chain_id: ${x.chain_id}`, `contract: ${x.contract}`, `field: ${(x as FieldStatement).field}`,
        `value_sha256: ${(x as FieldStatement).value_sha256}`, `schema: ${x.schema_id}`, `schema_version: ${(x as FieldStatement).schema_version}`,
        `schema_sha256: ${(x as FieldStatement).schema_sha256}`, `attester: ${x.attester_id}`, `nonce: ${(x as FieldStatement).nonce}`]
    : [ATTESTATION_TEXT_HEADER, 'kind: rebind', `rebind: ${(x as RebindStatement).rebind_id}`, `token: ${x.token_id}`, `chain_id: ${x.chain_id}`, `contract: ${x.contract}`,
        `schema: ${x.schema_id}`, `from_version: ${(x as RebindStatement).from_version}`, `from_sha256: ${(x as RebindStatement).from_sha256}`,
        `to_version: ${(x as RebindStatement).to_version}`, `to_sha256: ${(x as RebindStatement).to_sha256}`, `dry_run_sha256: ${(x as RebindStatement).dry_run_sha256}`,
        `attester: ${x.attester_id}`];
  return `${lines.join('\n')}\n`;
}

const FIELD_TYPES = {
  FieldAttestation: [
    { name: 'token', type: 'string' }, { name: 'field', type: 'string' }, { name: 'valueHash', type: 'bytes32' }, { name: 'schema', type: 'string' },
    { name: 'schemaVersion', type: 'uint256' }, { name: 'schemaHash', type: 'bytes32' }, { name: 'attester', type: 'string' }, { name: 'nonce', type: 'uint256' },
  ],
} as const;
const REBIND_TYPES = {
  RebindAttestation: [
    { name: 'rebind', type: 'string' }, { name: 'token', type: 'string' }, { name: 'schema', type: 'string' }, { name: 'fromVersion', type: 'uint256' },
    { name: 'fromHash', type: 'bytes32' }, { name: 'toVersion', type: 'uint256' }, { name: 'toHash', type: 'bytes32' }, { name: 'dryRunHash', type: 'bytes32' },
    { name: 'attester', type: 'string' },
  ],
} as const;

const domainOf = (x: { chain_id: number; contract: string }) => ({ name: ATTESTATION_DOMAIN_NAME, version: '1', chainId: x.chain_id, verifyingContract: getAddress(x.contract) });

/** The EIP-712 typed data of a field statement (eth_signTypedData_v4). */
export function fieldTypedData(f: FieldStatement) {
  return {
    domain: domainOf(f), types: FIELD_TYPES, primaryType: 'FieldAttestation' as const,
    message: { token: f.token_id, field: f.field, valueHash: `0x${f.value_sha256}` as Hex, schema: f.schema_id, schemaVersion: BigInt(f.schema_version), schemaHash: `0x${f.schema_sha256}` as Hex, attester: f.attester_id, nonce: BigInt(f.nonce) },
  };
}

/** The EIP-712 typed data of a rebind statement. */
export function rebindTypedData(r: RebindStatement) {
  return {
    domain: domainOf(r), types: REBIND_TYPES, primaryType: 'RebindAttestation' as const,
    message: {
      rebind: r.rebind_id, token: r.token_id, schema: r.schema_id, fromVersion: BigInt(r.from_version), fromHash: `0x${r.from_sha256}` as Hex, toVersion: BigInt(r.to_version),
      toHash: `0x${r.to_sha256}` as Hex, dryRunHash: `0x${r.dry_run_sha256}` as Hex, attester: r.attester_id,
    },
  };
}

export function statementTypedData(s: Statement) {
  return s.kind === 'field' ? fieldTypedData(s.statement) : rebindTypedData(s.statement);
}

/** Why a key is malformed, or undefined. */
export function keyProblem(k: AttesterKey): string | undefined {
  if (k.scheme === 'ed25519') return typeof k.public_key === 'string' && /^[0-9a-f]{64}$/.test(k.public_key) ? undefined : 'public_key: 32 bytes as lower-case hex';
  if (k.scheme === 'eip712') return typeof k.address === 'string' && isAddress(k.address, { strict: false }) && BigInt(k.address) !== 0n ? undefined : 'address: a non-zero EVM address';
  return 'scheme: ed25519 or eip712';
}

/** Whether `signature` is `key`'s over the statement: Ed25519 over its text, or EIP-712 over its typed data. */
export async function verifyStatement(s: Statement, key: AttesterKey, signature: string): Promise<boolean> {
  if (statementProblem(s) || keyProblem(key)) return false;
  if (key.scheme === 'ed25519') {
    if (!/^[0-9a-f]{128}$/.test(signature)) return false;
    try {
      return ed25519.verify(hexToBytes(signature), utf8ToBytes(statementText(s)), hexToBytes(key.public_key), { zip215: false });
    } catch {
      return false;
    }
  }
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) return false;
  const params = { address: getAddress(key.address), ...statementTypedData(s), signature: signature as Hex } as unknown as Parameters<typeof verifyTypedData>[0];
  return verifyTypedData(params).catch(() => false);
}

/** The result of checking an attestation log entry again. */
export type EntryCheck = { ok: true } | { ok: false; reason: string };

/**
 * Checks an `attestation` log entry's signature from its body alone (the provenance check): the body holds
 * `subject` (`field` or `rebind`), the `statement`, the attester's `key` and the `signature`; a field entry
 * that also carries its `value` must hash to the statement's `value_sha256`.
 */
export async function verifyAttestationEntry(body: Record<string, unknown>): Promise<EntryCheck> {
  const subject = body.subject;
  if (subject !== 'field' && subject !== 'rebind') return { ok: false, reason: 'subject is neither field nor rebind' };
  const statement = body.statement;
  if (typeof statement !== 'object' || statement === null) return { ok: false, reason: 'no statement' };
  const s = { kind: subject, statement } as Statement;
  const bad = statementProblem(s);
  if (bad) return { ok: false, reason: `statement: ${bad}` };
  const key = body.key as AttesterKey | undefined;
  if (typeof key !== 'object' || key === null || keyProblem(key)) return { ok: false, reason: 'key is malformed' };
  if (typeof body.signature !== 'string') return { ok: false, reason: 'no signature' };
  if (subject === 'field' && 'value' in body && valueSha256(body.value) !== (statement as FieldStatement).value_sha256) return { ok: false, reason: 'value does not hash to the statement\'s value_sha256' };
  if (!(await verifyStatement(s, key, body.signature))) return { ok: false, reason: `the ${key.scheme} signature does not verify over the statement` };
  return { ok: true };
}
