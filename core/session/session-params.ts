// The parameters the coordinator opens each kind of session with, carried as blobs of kind
// 'dkg-params', 'sign-params', 'reshare-params', 'ot-params' and 'epoch-params'; both sides encode and
// decode them with session-contract.ts, which checks every field.
import { MAX_SESSION_PARTIES, readKeyPackage, type KeyPackage } from './key-package.ts';
import { readReshareMember, type ReshareMember } from './reshare-member.ts';
import { SIGN_SCHEMES, type SignFields } from './sign-fields.ts';
import { MEMBER_ACTION_BATCH_MAX, MEMBER_ACTION_ID, MEMBER_ACTION_SALT_BYTES, PASSKEY_LIMITS, type MemberActionBinding, type PasskeyAssertion } from './member-action-binding.ts';
import { InputError } from '../errors/protocol-errors.ts';
import { bytes, defined, hex, int, list, MAX_UINT32, oneOf, optional, record, text, type Fields } from './shape.ts';

export interface DkgSessionParams {
  keyId: string;
  owner: string;
  epoch: number;
  threshold: number;
  tier: string;
  /** The owner's trust log (encoded entries) and its signed POST /v1/vaults request (docs/trust.md). */
  trustLog?: Uint8Array[];
  creationRequest?: Uint8Array;
  /** The operator-signed service-node roster (core/trust/roster.ts), carried unchanged. */
  roster?: Uint8Array;
}

export interface SignSessionParams extends SignFields {
  keyId: string;
  epoch: number;
  /**
   * ECDSA only: the presignature entry (docs/protocols/pools.md) each digest signs with, one per digest;
   * absent when the session presigns as well.
   */
  presignatures?: string[];
  /**
   * Taproot/BIP-340 only: precommitted FROST nonces (docs/protocols/pools.md "FROST"), one list per
   * digest naming every signer's entry and commitments, each signed by that signer's node identity key.
   */
  precommitted?: PrecommittedNonce[][];
}

/** One signer's precommitted nonce entry, as it reported it (a `precommit-result` entry plus its party). */
export interface PrecommittedNonce {
  party: number;
  entryId: string;
  /** Compressed points (33 bytes, hex): D and E. */
  hiding: string;
  binding: string;
  /** The party's Ed25519 identity signature over the entry's statement (frost-precommit.ts `precommitStatement`). */
  signature: Uint8Array;
}

/** A precommit session ('precommit-params'): FROST nonce pairs for a key epoch, signer set (the session's parties), suite and path. */
export interface PrecommitSessionParams {
  keyId: string;
  epoch: number;
  path: number[];
  scheme: 'taproot' | 'bip340';
  /** How many pairs each node draws. */
  count: number;
}

/** A presigning session ('presign-params'): ECDSA presignatures for a key epoch, signer set (the session's parties) and path. */
export interface PresignSessionParams {
  keyId: string;
  epoch: number;
  path: number[];
  /** The entry ids, 16 random bytes of hex each, one presignature per id. */
  entryIds: string[];
}

export interface ReshareSessionParams {
  keyId: string;
  owner: string;
  oldPkg: KeyPackage;
  newEpoch: number;
  newThreshold: number;
  members: ReshareMember[];
  /** Tier of the new epoch. */
  tier?: string;
  /** The operator-signed service-node roster; the owner's trust log and signed reshare request. */
  roster?: Uint8Array;
  trustLog?: Uint8Array[];
  reshareRequest?: Uint8Array;
}

/** OT setup ('ot-params') and the second phase of a reshare ('epoch-params'). */
export interface EpochSessionParams {
  keyId: string;
  epoch: number;
  /**
   * A commit only: the receipts of the new committee's members (`party` is the member's index in the
   * new committee), each its identity key's signature over the epoch statement (epoch-receipt.ts).
   */
  receipts?: EpochReceipt[];
}

export interface EpochReceipt {
  party: number;
  signature: Uint8Array;
}

/** Bounds of the parameters, checked by every decoder (and by every encoder, so a bad request fails before a session opens). */
export const PARAM_LIMITS = {
  /** keyId, owner, apiKeyId: characters. */
  name: 128,
  tier: 32,
  digests: 256,
  /** BIP-32 depth is one byte. */
  path: 255,
  intent: 256 * 1024,
  template: 1024 * 1024,
  endUserToken: 16 * 1024,
  trustLogEntries: 10_000,
  /** One trust-log entry, creation or reshare request: a signed HTTP request with a body of at most 256 KiB. */
  trustEntry: 512 * 1024,
  roster: 64 * 1024,
  /** Presignatures made by one presigning session. */
  presignEntries: 32,
  /** Nonce pairs each node draws in one precommit session. */
  precommitEntries: 32,
  /** One signed link of a vault's intent chain (docs/policies.md). */
  chainLink: 1024,
  /** Links relayed with one signing (core/policy/intent-chain.ts MAX_RELAYED_LINKS). */
  chainLinks: 4096,
  approvals: 64,
} as const;

const L = PARAM_LIMITS;
const name = (v: unknown, what: string) => text(v, what, L.name, 1);
const epochOf = (v: unknown, what: string) => int(v, what, 0, MAX_UINT32);
const entry = (v: unknown, what: string) => bytes(v, what, 1, L.trustEntry);
const trustLogOf = (o: Fields, what: string) => optional(o, 'trustLog', (x) => list(x, `${what}.trustLog`, L.trustLogEntries, entry));

export function readDkgParams(v: unknown, what = 'dkg-params'): DkgSessionParams {
  const o = record(v, what, ['keyId', 'owner', 'epoch', 'threshold', 'tier'], ['trustLog', 'creationRequest', 'roster']);
  return {
    keyId: name(o.keyId, `${what}.keyId`), owner: name(o.owner, `${what}.owner`), epoch: epochOf(o.epoch, `${what}.epoch`),
    threshold: int(o.threshold, `${what}.threshold`, 1, MAX_SESSION_PARTIES), tier: text(o.tier, `${what}.tier`, L.tier, 1),
    ...defined({
      trustLog: trustLogOf(o, what),
      creationRequest: optional(o, 'creationRequest', (x) => bytes(x, `${what}.creationRequest`, 0, L.trustEntry)),
      roster: optional(o, 'roster', (x) => bytes(x, `${what}.roster`, 0, L.roster)),
    }),
  };
}

export function readSignParams(v: unknown, what = 'sign-params'): SignSessionParams {
  const o = record(v, what, ['keyId', 'epoch', 'path', 'scheme', 'digests', 'intent', 'intentSignature', 'apiKeyId', 'template', 'endUserToken'], ['trustLog', 'memberAction', 'presignatures', 'precommitted', 'chainLink', 'chain', 'approvals']);
  const digests = list(o.digests, `${what}.digests`, L.digests, (x, w) => bytes(x, w, 32), 1);
  const presignatures = optional(o, 'presignatures', (x) => list(x, `${what}.presignatures`, L.digests, (y, w) => hex(y, w, 16), 1));
  if (presignatures && presignatures.length !== digests.length) throw new InputError('bad_params', `${what}.presignatures: one entry per digest`);
  if (presignatures && o.scheme !== 'ecdsa') throw new InputError('bad_params', `${what}.presignatures: ECDSA only`);
  const precommitted = optional(o, 'precommitted', (x) => list(x, `${what}.precommitted`, L.digests, (y, w) => list(y, w, MAX_SESSION_PARTIES, readPrecommittedNonce, 1), 1));
  if (precommitted && precommitted.length !== digests.length) throw new InputError('bad_params', `${what}.precommitted: one list per digest`);
  if (precommitted && o.scheme !== 'taproot' && o.scheme !== 'bip340') throw new InputError('bad_params', `${what}.precommitted: Taproot and BIP-340 only`);
  return {
    keyId: name(o.keyId, `${what}.keyId`), epoch: epochOf(o.epoch, `${what}.epoch`),
    path: list(o.path, `${what}.path`, L.path, (x, w) => int(x, w, 0, MAX_UINT32)),
    scheme: oneOf(o.scheme, `${what}.scheme`, SIGN_SCHEMES),
    digests,
    intent: bytes(o.intent, `${what}.intent`, 0, L.intent),
    intentSignature: bytes(o.intentSignature, `${what}.intentSignature`, 64),
    apiKeyId: text(o.apiKeyId, `${what}.apiKeyId`, L.name),
    template: bytes(o.template, `${what}.template`, 0, L.template),
    endUserToken: text(o.endUserToken, `${what}.endUserToken`, L.endUserToken),
    ...defined({ trustLog: trustLogOf(o, what), memberAction: optional(o, 'memberAction', (x) => readMemberAction(x, `${what}.memberAction`)), presignatures, precommitted, ...readPolicyFields(o, what) }),
  };
}

/** A vault policy's evidence (docs/policies.md): the intent's chain link, the links before it, the approvals. */
function readPolicyFields(o: Fields, what: string): Pick<SignSessionParams, 'chainLink' | 'chain' | 'approvals'> {
  return defined({
    chainLink: optional(o, 'chainLink', (x) => bytes(x, `${what}.chainLink`, 1, L.chainLink)),
    chain: optional(o, 'chain', (x) => list(x, `${what}.chain`, L.chainLinks, (y, w) => {
      const r = record(y, w, ['link', 'intent']);
      return { link: bytes(r.link, `${w}.link`, 1, L.chainLink), intent: bytes(r.intent, `${w}.intent`, 1, L.intent) };
    })),
    approvals: optional(o, 'approvals', (x) => list(x, `${what}.approvals`, L.approvals, (y, w) => {
      const r = record(y, w, ['approver_id', 'signature'], ['passkey']);
      // A member's passkey approval (core/policy/passkey-approval.ts): its credential and assertion, hex.
      const passkey = optional(r, 'passkey', (p) => {
        const q = record(p, `${w}.passkey`, ['credential', 'credential_id', 'authenticator_data', 'client_data_json', 'signature']);
        return {
          credential: text(q.credential, `${w}.passkey.credential`, 16_384, 1), credential_id: text(q.credential_id, `${w}.passkey.credential_id`, 2048, 2),
          authenticator_data: text(q.authenticator_data, `${w}.passkey.authenticator_data`, 8192, 74), client_data_json: text(q.client_data_json, `${w}.passkey.client_data_json`, 8192, 2),
          signature: text(q.signature, `${w}.passkey.signature`, 1024, 2),
        };
      });
      return { approver_id: text(r.approver_id, `${w}.approver_id`, 64, 1), signature: text(r.signature, `${w}.signature`, 128, passkey ? 0 : 128), ...defined({ passkey }) };
    })),
  });
}

export function readPresignParams(v: unknown, what = 'presign-params'): PresignSessionParams {
  const o = record(v, what, ['keyId', 'epoch', 'path', 'entryIds']);
  const entryIds = list(o.entryIds, `${what}.entryIds`, L.presignEntries, (x, w) => hex(x, w, 16), 1);
  if (new Set(entryIds).size !== entryIds.length) throw new InputError('bad_params', `${what}.entryIds: an entry id is named twice`);
  return {
    keyId: name(o.keyId, `${what}.keyId`), epoch: epochOf(o.epoch, `${what}.epoch`),
    path: list(o.path, `${what}.path`, L.path, (x, w) => int(x, w, 0, MAX_UINT32)), entryIds,
  };
}

const ENTRY_FIELDS = ['entryId', 'hiding', 'binding', 'signature'] as const;

function entryFields(o: Fields, what: string): Omit<PrecommittedNonce, 'party'> {
  return { entryId: hex(o.entryId, `${what}.entryId`, 16), hiding: hex(o.hiding, `${what}.hiding`, 33), binding: hex(o.binding, `${what}.binding`, 33), signature: bytes(o.signature, `${what}.signature`, 64) };
}

/** A node's own precommitted entry, as its `precommit-result` reports it (no party: the reporter's). */
export function readPrecommitEntry(v: unknown, what: string): Omit<PrecommittedNonce, 'party'> {
  return entryFields(record(v, what, ENTRY_FIELDS), what);
}

export function readPrecommittedNonce(v: unknown, what: string): PrecommittedNonce {
  const o = record(v, what, ['party', ...ENTRY_FIELDS]);
  return { party: int(o.party, `${what}.party`, 1, MAX_UINT32), ...entryFields(o, what) };
}

export function readPrecommitParams(v: unknown, what = 'precommit-params'): PrecommitSessionParams {
  const o = record(v, what, ['keyId', 'epoch', 'path', 'scheme', 'count']);
  return {
    keyId: name(o.keyId, `${what}.keyId`), epoch: epochOf(o.epoch, `${what}.epoch`),
    path: list(o.path, `${what}.path`, L.path, (x, w) => int(x, w, 0, MAX_UINT32)),
    scheme: oneOf(o.scheme, `${what}.scheme`, ['taproot', 'bip340'] as const), count: int(o.count, `${what}.count`, 1, L.precommitEntries),
  };
}

/** A member-action binding: its action id and 32-byte salt, and a passkey proof's WebAuthn assertion. */
function readMemberAction(v: unknown, what: string): MemberActionBinding {
  const o = record(v, what, ['actionId', 'salt'], ['passkey', 'batch']);
  const actionId = text(o.actionId, `${what}.actionId`, 47, 47);
  if (!MEMBER_ACTION_ID.test(actionId)) throw new InputError('bad_params', `${what}.actionId: not a member action id`);
  return {
    actionId, salt: bytes(o.salt, `${what}.salt`, MEMBER_ACTION_SALT_BYTES),
    ...defined({
      passkey: optional(o, 'passkey', (x) => readPasskey(x, `${what}.passkey`)),
      batch: optional(o, 'batch', (x) => list(x, `${what}.batch`, MEMBER_ACTION_BATCH_MAX, (d, w) => bytes(d, w, 32), 1)),
    }),
  };
}

function readPasskey(v: unknown, what: string): PasskeyAssertion {
  const o = record(v, what, ['credentialId', 'authenticatorData', 'clientDataJson', 'signature']);
  const P = PASSKEY_LIMITS;
  return {
    credentialId: bytes(o.credentialId, `${what}.credentialId`, 1, P.credentialId),
    authenticatorData: bytes(o.authenticatorData, `${what}.authenticatorData`, 37, P.authenticatorData),
    clientDataJson: bytes(o.clientDataJson, `${what}.clientDataJson`, 1, P.clientDataJson),
    signature: bytes(o.signature, `${what}.signature`, 1, P.signature),
  };
}

export function readReshareParams(v: unknown, what = 'reshare-params'): ReshareSessionParams {
  const o = record(v, what, ['keyId', 'owner', 'oldPkg', 'newEpoch', 'newThreshold', 'members'], ['tier', 'roster', 'trustLog', 'reshareRequest']);
  return {
    keyId: name(o.keyId, `${what}.keyId`), owner: name(o.owner, `${what}.owner`), oldPkg: readKeyPackage(o.oldPkg, `${what}.oldPkg`),
    newEpoch: epochOf(o.newEpoch, `${what}.newEpoch`), newThreshold: int(o.newThreshold, `${what}.newThreshold`, 1, MAX_SESSION_PARTIES),
    members: list(o.members, `${what}.members`, MAX_SESSION_PARTIES, readReshareMember, 1),
    ...defined({
      tier: optional(o, 'tier', (x) => text(x, `${what}.tier`, L.tier, 1)),
      roster: optional(o, 'roster', (x) => bytes(x, `${what}.roster`, 0, L.roster)),
      trustLog: trustLogOf(o, what),
      reshareRequest: optional(o, 'reshareRequest', (x) => bytes(x, `${what}.reshareRequest`, 0, L.trustEntry)),
    }),
  };
}

export function readEpochParams(v: unknown, what = 'epoch-params'): EpochSessionParams {
  const o = record(v, what, ['keyId', 'epoch'], ['receipts']);
  const receipts = optional(o, 'receipts', (x) => list(x, `${what}.receipts`, 256, (r, w) => {
    const f = record(r, w, ['party', 'signature']);
    return { party: int(f.party, `${w}.party`, 1, MAX_UINT32), signature: bytes(f.signature, `${w}.signature`, 64) };
  }));
  return { keyId: name(o.keyId, `${what}.keyId`), epoch: epochOf(o.epoch, `${what}.epoch`), ...defined({ receipts }) };
}

/**
 * An export session (docs/export.md): the export request id the customer signed into the trust log,
 * the log, and the approvals the API collected. No recipient key: a node seals only to the one in the
 * customer's request.
 */
export interface ExportSessionParams {
  keyId: string;
  requestId: string;
  trustLog?: Uint8Array[];
  approvals?: { approverKey: Uint8Array; signature: Uint8Array }[];
}

export function readExportParams(v: unknown, what = 'export-params'): ExportSessionParams {
  const o = record(v, what, ['keyId', 'requestId'], ['trustLog', 'approvals']);
  const approvals = optional(o, 'approvals', (x) => list(x, `${what}.approvals`, 64, (a, w) => {
    const f = record(a, w, ['approverKey', 'signature']);
    return { approverKey: bytes(f.approverKey, `${w}.approverKey`, 32), signature: bytes(f.signature, `${w}.signature`, 64) };
  }));
  return { keyId: name(o.keyId, `${what}.keyId`), requestId: text(o.requestId, `${what}.requestId`, 64, 16), ...defined({ trustLog: trustLogOf(o, what), approvals }) };
}
