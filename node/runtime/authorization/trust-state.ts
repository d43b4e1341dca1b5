// What a signer node trusts of one organization, and the rules by which a trust log changes it
// (docs/trust.md). Pure: no storage, no clock. The registry (trust-registry.ts) persists the result.
//
// Rules, in log order, each entry verified against the state as the entries before it left it:
// - a bootstrap entry signed by an operator key adds the organization's first key; an organization
//   takes one bootstrap only;
// - POST /v1/api-keys adds apiKeyId(org, public_key); a key id once revoked stays revoked, so a replayed
//   registration changes nothing;
// - POST /v1/api-keys/{id}/revoke revokes that id for good;
// - PUT /v1/config/end-user-auth replaces the end-user auth config only when the entry is newer (by its
//   signature's created time) than the config in force, so a replayed older config changes nothing; its
//   optional `account_center` is the tenant's opt-in to Account Center passkeys, and a newer config
//   without it ends the opt-in;
// - POST /v1/vaults is a vault's creation proof, POST /v1/vaults/{id}/reshare a reshare's: verified,
//   never change the registry;
// - POST /v1/nodes enrols a customer node (self, or tee with an attestation binding its keys), unless
//   its id is known; POST /v1/nodes/{id}/revoke revokes it for good;
// - PUT /v1/tee/measurements replaces the allowed enclave measurements only with a higher version;
// - POST /v1/vaults/{id}/exports records the customer's signed export request (docs/export.md) by its
//   request id, unless that id is known: a replay changes nothing.
// - PUT /v1/vaults/{id}/policy is a new version of the vault's policy, governed by the policy in force
//   (its quorum for policy changes; a loosening waits its delay): core/policy/policy-log.ts.
// An entry already applied (same hash) is skipped; anything else refuses the whole log.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { apiKeyId } from '../../../core/trust/api-key-id.ts';
import { nodeIdFor } from '../../../core/trust/node-id.ts';
import { TIER_NAMES, type TierName } from '../../../core/tiers.ts';
import { teeNodeBinding } from '../../../core/trust/tee-binding.ts';
import { measurementSetProblem, normalizeMeasurementSet, pcrsAllowed } from '../../../core/trust/tee-measurements.ts';
import { isValidEd25519PublicKeyHex, verifyEd25519 } from '../../../common/ed25519.ts';
import { decodeExportRequest, exportRequestHash, exportRequestMessage, ExportRequestError, type ExportRequest } from '../../../core/export/export-request.ts';
import { accountCenterOptInProblem, type AccountCenterOptIn } from '../../../core/auth/member-credential.ts';
import type { TeeAttestationVerifier } from '../../../tee/attestation/enrolment-verifier.ts';
import { applyPolicyChange, parsePolicyChange, policyInForce, type PolicyChange, type PolicyVersion, type VaultPolicyRecord } from '../../../core/policy/policy-log.ts';
import {
  decodeTrustEntry, trustEntryHash, TrustEntryError, verifyBootstrap, verifyRequestEntry,
  type RequestEntry, type TrustEntry,
} from '../../../core/trust/trust-entry.ts';

export { TrustEntryError };

export interface TrustKey {
  /** Ed25519 public key hex; empty for an id revoked before this node saw it registered. */
  publicKey: string;
  revoked: boolean;
  label?: string;
}

export interface EndUserAuthConfig {
  jwks: JSONWebKeySet;
  audience: string;
  /** The customer's opt-in to Account Center passkeys (core/auth/member-credential.ts), when its registration names one. */
  accountCenter?: AccountCenterOptIn;
  /** The created time (Unix seconds) of the request that set it. */
  created: number;
}

/** A node the organization enrolled (docs/trust.md "Enrolled nodes"). */
export interface EnrolledNode {
  kind: 'self' | 'tee';
  /** Ed25519 and X25519 public keys, lower-case hex. */
  signingKey: string;
  encryptionKey: string;
  revoked: boolean;
  /** tee: the PCRs its verified attestation showed, index -> lower-case hex. */
  pcrs?: Record<string, string>;
}

/** A customer-signed export request as the trust log carried it (docs/export.md). */
export interface RecordedExport {
  vaultId: string;
  /** X25519 public key, lower-case hex: the only key a share of this export is sealed to. */
  recipientKey: string;
  /** Unix seconds, as the customer signed it. */
  notBefore: number;
  /** exportRequestHash of the canonical request, hex: what approvers sign. */
  requestHash: string;
  /** The canonical request bytes, hex. */
  request: string;
  /** The API key that signed it. */
  keyId: string;
  /** The request signature's created time (Unix seconds). */
  created: number;
}

/** The enclave builds the organization allows: each set names PCR index -> value, all must match. */
export interface TeeMeasurements {
  version: number;
  allowed: Record<string, string>[];
}

export type { TeeAttestationVerifier };

export interface OrgTrust {
  org: string;
  /** Hash of the operator bootstrap entry this organization was rooted with. */
  bootstrap?: string;
  keys: Record<string, TrustKey>;
  endUser?: EndUserAuthConfig;
  /** Enrolled customer nodes by node id (absent in records written before enrolment existed). */
  nodes?: Record<string, EnrolledNode>;
  teeMeasurements?: TeeMeasurements;
  /** Export requests the customer signed (docs/export.md), by request id (absent in older records). */
  exports?: Record<string, RecordedExport>;
  /** Vault policies by vault id (docs/policies.md), as the customer's signed changes left them. */
  policies?: Record<string, VaultPolicyRecord>;
  /** Hashes of every entry applied, in order. */
  applied: string[];
}

/** Keys the operator installed from NODE_API_KEYS_FILE: key id -> public key hex. */
export type FileKeys = Readonly<Record<string, string>>;

export interface TrustContext {
  /** Operator Ed25519 public keys (hex) that may sign bootstrap entries. */
  operatorKeys: readonly string[];
  /** This organization's keys from the bootstrap file, if any. */
  fileKeys?: FileKeys;
  /** Verifies a tee node's attestation at enrolment; without it, tee enrolments are refused. */
  verifyTee?: TeeAttestationVerifier | undefined;
  /**
   * Unix seconds now: when a policy change is first seen, from which a loosening's delay runs (never
   * before the change's own signature time). Without it, the signature time alone.
   */
  now?: number | undefined;
}

export function emptyTrust(org: string): OrgTrust {
  return { org, keys: {}, applied: [] };
}

const fail = (message: string): never => {
  throw new TrustEntryError(message);
};

/** The active public key `keyId` names for the organization, or undefined when unknown or revoked. */
export function activeKey(state: OrgTrust, fileKeys: FileKeys | undefined, keyId: string): Uint8Array | undefined {
  const k = Object.hasOwn(state.keys, keyId) ? state.keys[keyId] : undefined;
  if (k) return k.revoked || !k.publicKey ? undefined : hexToBytes(k.publicKey);
  const f = fileKeys && Object.hasOwn(fileKeys, keyId) ? fileKeys[keyId] : undefined;
  return f ? hexToBytes(f.toLowerCase()) : undefined;
}

const API_KEYS = /^(?:\/[^?#]*)?\/v1\/api-keys$/;
const REVOKE = /^(?:\/[^?#]*)?\/v1\/api-keys\/([^/]+)\/revoke$/;
const END_USER_AUTH = /^(?:\/[^?#]*)?\/v1\/config\/end-user-auth$/;
const VAULTS = /^(?:\/[^?#]*)?\/v1\/vaults$/;
const RESHARE = /^(?:\/[^?#]*)?\/v1\/vaults\/([^/]+)\/reshare$/;
const KEY_ID = /^[A-Za-z0-9_.:-]{1,64}$/;
const NODES = /^(?:\/[^?#]*)?\/v1\/nodes$/;
const NODE_REVOKE = /^(?:\/[^?#]*)?\/v1\/nodes\/([^/]+)\/revoke$/;
const TEE_MEASUREMENTS = /^(?:\/[^?#]*)?\/v1\/tee\/measurements$/;
const EXPORTS = /^(?:\/[^?#]*)?\/v1\/vaults\/([^/]+)\/exports$/;
const VAULT_POLICY = /^(?:\/[^?#]*)?\/v1\/vaults\/([^/]+)\/policy$/;
/** How far after the enrolment's signature an attestation is judged (the enclave's and the customer's clocks differ). */
const ATTESTATION_SKEW_S = 300;
const MAX_ATTESTATION_BYTES = 24 * 1024;

type Recognized =
  | { op: 'add_key'; publicKey: string; label?: string }
  | { op: 'revoke_key'; keyId: string }
  | { op: 'end_user_auth'; jwks: JSONWebKeySet; audience: string; accountCenter?: AccountCenterOptIn }
  | ({ op: 'create_vault'; tier: TierName; endUserSubject?: string } & CommitteeBinding)
  | ({ op: 'reshare_vault'; vaultId: string; targetTier?: TierName; rotation?: number } & CommitteeBinding)
  | { op: 'enrol_node'; nodeId: string; kind: 'self' | 'tee'; signingKey: string; encryptionKey: string; attestation?: Uint8Array }
  | { op: 'revoke_node'; nodeId: string }
  | { op: 'tee_measurements'; version: number; allowed: Record<string, string>[] }
  | { op: 'export_request'; vaultId: string; request: ExportRequest; bytes: Uint8Array; signature: Uint8Array }
  | { op: 'vault_policy'; vaultId: string; change: PolicyChange };

/** A customer's node as its signed request names it (docs/trust.md "Committees"). */
export interface CustomerNode {
  nodeId: string;
  /** Ed25519 and X25519 public keys, lower-case hex. */
  signingKey: string;
  encryptionKey: string;
}

/** What a signed creation or reshare request binds of the committee. */
export interface CommitteeBinding {
  /** The node ids the customer was shown: the parties must be exactly these. */
  committee?: string[];
  /** The customer's own node (self and customer_tee only): the only node seated as the customer member. */
  customerNode?: CustomerNode;
}

const NODE_ID = /^n[0-9a-f]{20}$/;
const KEY_HEX = /^[0-9a-fA-F]{64}$/;
const TIERS: readonly unknown[] = TIER_NAMES;

/** Reads `committee` and `customer_node` of a request body for a vault of `tier`. */
function committeeBinding(b: Record<string, unknown>, tier: TierName | undefined): CommitteeBinding {
  const out: CommitteeBinding = {};
  if (b.committee !== undefined) {
    const c = b.committee;
    if (!Array.isArray(c) || c.length < 1 || c.length > 16 || c.some((x) => typeof x !== 'string' || !NODE_ID.test(x))) fail('committee must list 1 to 16 node ids');
    if (new Set(c as string[]).size !== (c as string[]).length) fail('committee lists a node twice');
    out.committee = [...(c as string[])];
  }
  if (b.customer_node !== undefined) {
    const n = b.customer_node;
    if (tier === 'hosted') fail('customer_node applies to self and customer_tee vaults only');
    if (typeof n !== 'object' || n === null || Array.isArray(n)) return fail('customer_node must be {node_id, signing_key, encryption_key}');
    const { node_id: id, signing_key: sk, encryption_key: ek, ...extra } = n as Record<string, unknown>;
    if (Object.keys(extra).length || typeof id !== 'string' || !NODE_ID.test(id) || typeof sk !== 'string' || !KEY_HEX.test(sk) || typeof ek !== 'string' || !KEY_HEX.test(ek)) {
      fail('customer_node must be {node_id, signing_key, encryption_key} with 32-byte hex keys');
    }
    if (id !== nodeIdFor(hexToBytes((sk as string).toLowerCase()))) fail('customer_node.node_id is not the id derived from its signing key');
    if (out.committee && !out.committee.includes(id as string)) fail('customer_node is not in the committee');
    out.customerNode = { nodeId: id as string, signingKey: (sk as string).toLowerCase(), encryptionKey: (ek as string).toLowerCase() };
  }
  return out;
}

function jsonBody(e: RequestEntry): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(e.body));
  } catch {
    return fail('the request body is not UTF-8 JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail('the request body is not a JSON object');
  return v as Record<string, unknown>;
}

/** The JWK members that carry private or symmetric key material: never accepted in a JWKS. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

function checkJwks(jwks: unknown): JSONWebKeySet {
  if (typeof jwks !== 'object' || jwks === null || !Array.isArray((jwks as { keys?: unknown }).keys)) return fail('jwks must be {"keys": [...]}');
  const keys = (jwks as { keys: unknown[] }).keys;
  if (keys.length < 1 || keys.length > 100) fail('jwks holds 1 to 100 keys');
  for (const k of keys) {
    if (typeof k !== 'object' || k === null || Array.isArray(k)) fail('every JWK is an object');
    const jwk = k as Record<string, unknown>;
    if (jwk.kty !== 'EC' && jwk.kty !== 'OKP' && jwk.kty !== 'RSA') fail('JWKs are EC, OKP or RSA public keys');
    if (PRIVATE_MEMBERS.some((m) => m in jwk)) fail('a JWK carries private key material');
  }
  try {
    createLocalJWKSet(jwks as JSONWebKeySet);
  } catch {
    fail('jwks is not a valid JWK Set');
  }
  return jwks as JSONWebKeySet;
}


/** The path's id (`m[1]`), percent-decoded and of the form `shape`; `what` names it in the refusal. */
function pathId(m: RegExpExecArray, what: string, shape = KEY_ID): string {
  let id: string;
  try {
    id = decodeURIComponent(m[1]!);
  } catch {
    return fail(`the ${what} id in the path is not valid`);
  }
  if (!shape.test(id)) fail(`the ${what} id in the path is not valid`);
  return id;
}

/** What a request entry asks for, from its method, path and body; unknown requests are refused. */
export function recognize(e: RequestEntry, path: string): Recognized {
  let m: RegExpExecArray | null;
  if (e.method === 'POST' && API_KEYS.test(path)) {
    const b = jsonBody(e);
    if (typeof b.public_key !== 'string' || !/^[0-9a-fA-F]{64}$/.test(b.public_key)) fail('public_key must be 32 bytes of hex');
    if (b.label !== undefined && (typeof b.label !== 'string' || b.label.length > 120)) fail('label must be a string of at most 120 characters');
    return { op: 'add_key', publicKey: (b.public_key as string).toLowerCase(), ...(typeof b.label === 'string' ? { label: b.label } : {}) };
  }
  if (e.method === 'POST' && (m = REVOKE.exec(path))) {
    const keyId = pathId(m, 'key');
    return { op: 'revoke_key', keyId };
  }
  if (e.method === 'PUT' && END_USER_AUTH.test(path)) {
    const b = jsonBody(e);
    if (typeof b.audience !== 'string' || b.audience.length < 1 || b.audience.length > 255) fail('audience must be a string of 1 to 255 characters');
    const jwks = checkJwks(b.jwks);
    if (b.account_center === undefined) return { op: 'end_user_auth', jwks, audience: b.audience as string };
    const problem = accountCenterOptInProblem(b.account_center, jwks as { keys: { kid?: unknown }[] });
    if (problem) fail(problem);
    const ac = b.account_center as AccountCenterOptIn;
    return { op: 'end_user_auth', jwks, audience: b.audience as string, accountCenter: { jwk: ac.jwk, origin: ac.origin } };
  }
  if (e.method === 'POST' && VAULTS.test(path)) {
    const b = jsonBody(e);
    if (b.tier !== 'hosted' && b.tier !== 'self' && b.tier !== 'customer_tee') fail('tier must be hosted, self or customer_tee');
    const s = b.end_user_subject;
    if (s !== undefined && (typeof s !== 'string' || s.length < 1 || s.length > 255)) fail('end_user_subject must be a string of 1 to 255 characters');
    if (s !== undefined && b.tier !== 'hosted') fail('end_user_subject applies to hosted vaults only');
    return { op: 'create_vault', tier: b.tier as TierName, ...(typeof s === 'string' ? { endUserSubject: s } : {}), ...committeeBinding(b, b.tier as TierName) };
  }
  if (e.method === 'POST' && (m = RESHARE.exec(path))) {
    const vaultId = pathId(m, 'vault');
    const b = e.body.length ? jsonBody(e) : {};
    if (b.target_tier !== undefined && !TIERS.includes(b.target_tier)) fail('target_tier must be hosted, self or customer_tee');
    const targetTier = b.target_tier as TierName | undefined;
    // The vault's rotation (its epoch) the request was made at: a request of another epoch is a replay.
    if (b.rotation !== undefined && (!Number.isSafeInteger(b.rotation) || (b.rotation as number) < 0 || (b.rotation as number) > 2 ** 32 - 1)) fail('rotation must be an integer from 0 to 2^32-1');
    const rotation = b.rotation as number | undefined;
    return { op: 'reshare_vault', vaultId, ...(targetTier ? { targetTier } : {}), ...(rotation !== undefined ? { rotation } : {}), ...committeeBinding(b, targetTier) };
  }
  if (e.method === 'POST' && NODES.test(path)) return enrolment(jsonBody(e));
  if (e.method === 'POST' && (m = NODE_REVOKE.exec(path))) {
    const nodeId = pathId(m, 'node', NODE_ID);
    return { op: 'revoke_node', nodeId };
  }
  if (e.method === 'PUT' && TEE_MEASUREMENTS.test(path)) {
    const b = jsonBody(e);
    if (!Number.isSafeInteger(b.version) || (b.version as number) < 1 || (b.version as number) > 2 ** 32 - 1) fail('version must be an integer from 1 to 2^32-1');
    const allowed = b.allowed;
    if (!Array.isArray(allowed) || allowed.length < 1 || allowed.length > 16) fail('allowed lists 1 to 16 measurement sets');
    const sets = (allowed as unknown[]).map((set) => {
      const problem = measurementSetProblem(set);
      return problem ? fail(problem) : normalizeMeasurementSet(set as Record<string, string>);
    });
    return { op: 'tee_measurements', version: b.version as number, allowed: sets };
  }
  if (e.method === 'POST' && (m = EXPORTS.exec(path))) {
    const vaultId = pathId(m, 'vault');
    const b = jsonBody(e);
    if (typeof b.request !== 'string' || !/^(?:[0-9a-f]{2}){1,1024}$/.test(b.request)) fail('request must be the canonical export request, lower-case hex');
    if (typeof b.signature !== 'string' || !/^[0-9a-f]{128}$/.test(b.signature)) fail('signature must be 64 bytes of lower-case hex');
    const bytes = hexToBytes(b.request as string);
    let request: ExportRequest;
    try {
      request = decodeExportRequest(bytes);
    } catch (err) {
      if (err instanceof ExportRequestError) return fail(`the export request: ${err.message}`);
      throw err;
    }
    if (request.vaultId !== vaultId) fail(`the export request names vault ${request.vaultId}, the path ${vaultId}`);
    return { op: 'export_request', vaultId, request, bytes, signature: hexToBytes(b.signature as string) };
  }
  if (e.method === 'PUT' && (m = VAULT_POLICY.exec(path))) {
    const vaultId = pathId(m, 'vault');
    try {
      return { op: 'vault_policy', vaultId, change: parsePolicyChange(jsonBody(e), vaultId) };
    } catch (err) {
      return fail(`the policy change is not valid: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return fail(`${e.method} ${path} is not a request this node applies`);
}

/** The body of POST /v1/nodes. */
function enrolment(b: Record<string, unknown>): Extract<Recognized, { op: 'enrol_node' }> {
  const { kind, node_id: id, signing_key: sk, encryption_key: ek, attestation, label } = b;
  if (kind !== 'self' && kind !== 'tee') fail('kind must be self or tee');
  if (typeof id !== 'string' || !NODE_ID.test(id) || typeof sk !== 'string' || !KEY_HEX.test(sk) || typeof ek !== 'string' || !KEY_HEX.test(ek)) {
    fail('a node enrolment names node_id, signing_key and encryption_key (32-byte hex keys)');
  }
  if (!isValidEd25519PublicKeyHex(sk as string)) fail('signing_key is not a valid Ed25519 public key');
  if (id !== nodeIdFor(hexToBytes((sk as string).toLowerCase()))) fail('node_id is not the id derived from its signing key');
  if (label !== undefined && (typeof label !== 'string' || label.length > 120)) fail('label must be a string of at most 120 characters');
  const out: Extract<Recognized, { op: 'enrol_node' }> = { op: 'enrol_node', nodeId: id as string, kind: kind as 'self' | 'tee', signingKey: (sk as string).toLowerCase(), encryptionKey: (ek as string).toLowerCase() };
  if (kind === 'self') {
    if (attestation !== undefined) fail('attestation applies to tee nodes only');
    return out;
  }
  if (typeof attestation !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(attestation) || attestation.length > (MAX_ATTESTATION_BYTES / 3) * 4) {
    fail('a tee node enrolment carries its attestation document, base64');
  }
  out.attestation = new Uint8Array(Buffer.from(attestation as string, 'base64'));
  return out;
}

/** The organization's enrolled node `nodeId`, revoked or not; undefined when never enrolled. */
export function enrolledNode(state: OrgTrust, nodeId: string): EnrolledNode | undefined {
  return state.nodes && Object.hasOwn(state.nodes, nodeId) ? state.nodes[nodeId] : undefined;
}

/** The policy of vault `vaultId` in force at `now` (Unix seconds), if the owner signed one. */
export function vaultPolicy(state: OrgTrust, vaultId: string, now: number): PolicyVersion | undefined {
  return state.policies && Object.hasOwn(state.policies, vaultId) ? policyInForce(state.policies[vaultId], now) : undefined;
}

/** Whether `pcrs` match one of the measurement sets the organization allows now. */
export function measurementsAllowed(state: OrgTrust, pcrs: Record<string, string> | undefined): boolean {
  return pcrs !== undefined && state.teeMeasurements !== undefined && pcrsAllowed(state.teeMeasurements.allowed, pcrs);
}

const clone = (s: OrgTrust): OrgTrust => ({
  org: s.org, ...(s.bootstrap ? { bootstrap: s.bootstrap } : {}),
  keys: Object.fromEntries(Object.entries(s.keys).map(([k, v]) => [k, { ...v }])),
  ...(s.endUser ? { endUser: s.endUser } : {}), applied: [...s.applied],
  ...(s.nodes ? { nodes: Object.fromEntries(Object.entries(s.nodes).map(([k, v]) => [k, { ...v }])) } : {}),
  ...(s.teeMeasurements ? { teeMeasurements: s.teeMeasurements } : {}),
  ...(s.exports ? { exports: { ...s.exports } } : {}),
  ...(s.policies ? { policies: { ...s.policies } } : {}),
});

function applyOne(s: OrgTrust, entry: TrustEntry, hash: string, ctx: TrustContext): void {
  if (entry.kind === 'bootstrap') {
    if (entry.org !== s.org) fail(`a bootstrap entry for ${entry.org} in the log of ${s.org}`);
    if (!verifyBootstrap(entry, ctx.operatorKeys)) fail('the bootstrap entry is not signed by an operator key of this node');
    if (s.bootstrap && s.bootstrap !== hash) fail(`${s.org} was bootstrapped already; a second bootstrap is refused`);
    s.bootstrap = hash;
    // A revoked id stays revoked, even against its own bootstrap.
    if (!Object.hasOwn(s.keys, entry.keyId)) s.keys[entry.keyId] = { publicKey: entry.publicKey, revoked: false };
    return;
  }
  const v = verifyRequestEntry(entry, (keyId) => activeKey(s, ctx.fileKeys, keyId));
  const r = recognize(entry, v.path);
  switch (r.op) {
    case 'add_key': {
      const id = apiKeyId(s.org, r.publicKey);
      if (!Object.hasOwn(s.keys, id)) s.keys[id] = { publicKey: r.publicKey, revoked: false, ...(r.label ? { label: r.label } : {}) };
      return;
    }
    case 'revoke_key': {
      const known = Object.hasOwn(s.keys, r.keyId) ? s.keys[r.keyId] : undefined;
      const fromFile = ctx.fileKeys && Object.hasOwn(ctx.fileKeys, r.keyId) ? ctx.fileKeys[r.keyId]!.toLowerCase() : '';
      s.keys[r.keyId] = { ...(known ?? { publicKey: fromFile }), revoked: true };
      return;
    }
    case 'end_user_auth':
      if (!s.endUser || v.created > s.endUser.created) s.endUser = { jwks: r.jwks, audience: r.audience, created: v.created, ...(r.accountCenter ? { accountCenter: r.accountCenter } : {}) };
      return;
    case 'create_vault':
    case 'reshare_vault':
      return;
    case 'enrol_node': {
      const nodes = (s.nodes ??= {});
      // Known (active or revoked): a replayed or repeated enrolment changes nothing.
      if (Object.hasOwn(nodes, r.nodeId)) return;
      const node: EnrolledNode = { kind: r.kind, signingKey: r.signingKey, encryptionKey: r.encryptionKey, revoked: false };
      if (r.kind === 'tee') node.pcrs = verifyAttestation(s.org, r, v.created, ctx);
      nodes[r.nodeId] = node;
      return;
    }
    case 'revoke_node': {
      const nodes = (s.nodes ??= {});
      const known = Object.hasOwn(nodes, r.nodeId) ? nodes[r.nodeId] : undefined;
      // Revoked for good, even an id this node never saw enrolled: a later enrolment cannot revive it.
      nodes[r.nodeId] = known ? { ...known, revoked: true } : { kind: 'self', signingKey: '', encryptionKey: '', revoked: true };
      return;
    }
    case 'tee_measurements':
      if (!s.teeMeasurements || r.version > s.teeMeasurements.version) s.teeMeasurements = { version: r.version, allowed: r.allowed };
      return;
    case 'export_request': {
      if (r.request.org !== s.org) fail(`an export request of ${r.request.org} in the log of ${s.org}`);
      // The canonical request carries its own signature, by the key that signed the HTTP request.
      const key = activeKey(s, ctx.fileKeys, v.keyId);
      if (!key || !verifyEd25519(r.signature, exportRequestMessage(r.bytes), key)) fail('the export request\'s own signature does not verify under the key that sent it');
      const exports = (s.exports ??= {});
      // A request id names one export for good: a replay, or another request under a used id, changes nothing.
      if (Object.hasOwn(exports, r.request.requestId)) return;
      exports[r.request.requestId] = {
        vaultId: r.vaultId, recipientKey: bytesToHex(r.request.recipientKey), notBefore: r.request.notBefore,
        requestHash: bytesToHex(exportRequestHash(r.bytes)), request: bytesToHex(r.bytes), keyId: v.keyId, created: v.created,
      };
      return;
    }
    case 'vault_policy': {
      // A change the policy in force does not allow (no quorum, an old version) is kept as refused and
      // changes nothing: the API should not have appended it, and a replay must not undo a later one.
      const policies = (s.policies ??= {});
      const before = Object.hasOwn(policies, r.vaultId) ? policies[r.vaultId] : undefined;
      policies[r.vaultId] = applyPolicyChange(before, r.change, v.created, ctx.now ?? v.created);
      return;
    }
  }
}

/**
 * A tee enrolment's attestation, verified at the time the customer signed the enrolment: chain and
 * signature by the node's pinned roots, taken within ATTESTATION_MAX_AGE_S before, and `user_data`
 * binding this organization, node id and keys (core/trust/tee-binding.ts).
 */
function verifyAttestation(org: string, r: Extract<Recognized, { op: 'enrol_node' }>, created: number, ctx: TrustContext): Record<string, string> {
  if (!ctx.verifyTee) return fail('this node verifies no TEE attestation (no attestation roots configured); a tee enrolment is refused');
  try {
    // Judged a little after the signature's created time: the enclave's clock and the customer's differ.
    return ctx.verifyTee(r.attestation!, { at: new Date((created + ATTESTATION_SKEW_S) * 1000), userData: teeNodeBinding(org, r.nodeId, r.signingKey, r.encryptionKey) });
  } catch (err) {
    return fail(`the attestation of tee node ${r.nodeId} does not verify: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * Applies a log to a state: returns the new state (the input is not changed) and whether anything
 * changed. Throws TrustEntryError (code bad_trust_log) naming the first entry that fails.
 */
export function applyTrustLog(state: OrgTrust, log: readonly Uint8Array[], ctx: TrustContext): { state: OrgTrust; changed: boolean } {
  const s = clone(state);
  const seen = new Set(s.applied);
  let changed = false;
  log.forEach((bytes, i) => {
    const hash = trustEntryHash(bytes);
    if (seen.has(hash)) return;
    try {
      applyOne(s, decodeTrustEntry(bytes), hash, ctx);
    } catch (err) {
      if (err instanceof TrustEntryError) throw new TrustEntryError(`trust log entry ${i}: ${err.message}`);
      throw err;
    }
    seen.add(hash);
    s.applied.push(hash);
    changed = true;
  });
  return { state: s, changed };
}

export interface CreationProof extends CommitteeBinding {
  tier: 'hosted' | 'self' | 'customer_tee';
  endUserSubject?: string;
  /** The API key that signed the creation request. */
  keyId: string;
  hash: string;
}

/**
 * Verifies a vault request the customer signed (a request entry, signed by an active key of the
 * organization) and that it is the operation `op`; what it asks for, with the signing key and the
 * entry's hash.
 */
function verifyVaultRequest<Op extends 'create_vault' | 'reshare_vault'>(state: OrgTrust, fileKeys: FileKeys | undefined, bytes: Uint8Array, op: Op, what: string): Omit<Extract<Recognized, { op: Op }>, 'op'> & { keyId: string; hash: string } {
  const entry = decodeTrustEntry(bytes);
  if (entry.kind !== 'request') return fail(`the ${what} request is not a request entry`);
  const v = verifyRequestEntry(entry, (keyId) => activeKey(state, fileKeys, keyId));
  const r = recognize(entry, v.path);
  if (r.op !== op) return fail(`the ${what} request is not ${op === 'create_vault' ? 'POST /v1/vaults' : 'POST /v1/vaults/{id}/reshare'}`);
  const fields: Partial<Recognized> = { ...r };
  delete fields.op;
  return { ...(fields as Omit<Extract<Recognized, { op: Op }>, 'op'>), keyId: v.keyId, hash: trustEntryHash(bytes) };
}

/** Verifies a vault's creation request (POST /v1/vaults). */
export function verifyCreationRequest(state: OrgTrust, fileKeys: FileKeys | undefined, bytes: Uint8Array): CreationProof {
  return verifyVaultRequest(state, fileKeys, bytes, 'create_vault', 'creation');
}

export interface ReshareProof extends CommitteeBinding {
  vaultId: string;
  targetTier?: 'hosted' | 'self' | 'customer_tee';
  /** The vault's rotation (epoch) the customer made the request at. */
  rotation?: number;
  keyId: string;
  hash: string;
}

/** Verifies a vault's reshare request (POST /v1/vaults/{id}/reshare). */
export function verifyReshareRequest(state: OrgTrust, fileKeys: FileKeys | undefined, bytes: Uint8Array): ReshareProof {
  return verifyVaultRequest(state, fileKeys, bytes, 'reshare_vault', 'reshare');
}
