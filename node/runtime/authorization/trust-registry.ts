// The node's persisted view of every organization's trust (docs/trust.md): API keys with their revoked
// flags, the end-user auth config, and the hashes of the trust-log entries applied. One sealed record
// per organization, so its AEAD also guards it against edits on disk; changes go through a per
// organization queue so two sessions applying logs at once cannot lose an update.
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import type { SealedStore } from '../../storage/sealed-store.ts';
import { activeKey, applyTrustLog, emptyTrust, TrustEntryError, verifyCreationRequest, verifyReshareRequest, type CreationProof, type ReshareProof, type FileKeys, type OrgTrust, type TeeAttestationVerifier } from './trust-state.ts';

const ORG = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

const recordKey = (org: string) => `trust/org/${org}`;

export interface TrustRegistryOptions {
  /** Operator Ed25519 public keys (hex) whose bootstrap entries this node accepts. */
  operatorKeys: readonly string[];
  /** Keys from NODE_API_KEYS_FILE: organization -> key id -> public key hex. */
  fileKeys?: Readonly<Record<string, FileKeys>>;
  /** Verifies tee enrolments' attestations (tee/attestation/ with the node's pinned roots); none: tee enrolments are refused. */
  verifyTee?: TeeAttestationVerifier | undefined;
  /** The clock (ms) a policy change's first sighting is read from; Date.now by default. */
  now?: () => number;
}

export class TrustRegistry {
  private readonly cache = new Map<string, OrgTrust>();
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly store: SealedStore, private readonly opts: TrustRegistryOptions) {}

  private fileKeys(org: string): FileKeys | undefined {
    const f = this.opts.fileKeys;
    return f && Object.hasOwn(f, org) ? f[org] : undefined;
  }

  /** True when the operator's bootstrap file names the organization (its legacy root of trust). */
  knownFromFile(org: string): boolean {
    return this.fileKeys(org) !== undefined;
  }

  private serialize<T>(org: string, f: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(org) ?? Promise.resolve();
    const next = prev.then(f, f);
    this.queues.set(org, next.catch(() => undefined));
    return next;
  }

  /** The organization's trust as stored (empty when the node never heard of it). */
  async state(org: string): Promise<OrgTrust> {
    if (!ORG.test(org)) throw new TrustEntryError('not a valid organization identifier');
    const cached = this.cache.get(org);
    if (cached) return cached;
    const raw = await this.store.getSecret(recordKey(org));
    const s = raw ? decodeBlob<OrgTrust>('org-trust', raw) : emptyTrust(org);
    if (s.org !== org) throw new Error(`trust record of ${org} names ${s.org}`);
    this.cache.set(org, s);
    return s;
  }

  /** Applies a trust log (bad_trust_log on the first bad entry; nothing is stored then) and returns the result. */
  apply(org: string, log: readonly Uint8Array[]): Promise<OrgTrust> {
    return this.serialize(org, async () => {
      const before = await this.state(org);
      if (!log.length) return before;
      const { state, changed } = applyTrustLog(before, log, { operatorKeys: this.opts.operatorKeys, fileKeys: this.fileKeys(org), verifyTee: this.opts.verifyTee, now: Math.floor((this.opts.now ?? Date.now)() / 1000) });
      if (changed) {
        await this.store.putSecret(recordKey(org), encodeBlob('org-trust', state));
        this.cache.set(org, state);
      }
      return state;
    });
  }

  /** The active key `keyId` of `org` (persisted registry over the bootstrap file), or undefined. */
  async activeKey(org: string, keyId: string): Promise<Uint8Array | undefined> {
    return activeKey(await this.state(org), this.fileKeys(org), keyId);
  }

  /** Verifies a vault creation request against the organization's keys as stored now. */
  async creationProof(org: string, bytes: Uint8Array): Promise<CreationProof> {
    return verifyCreationRequest(await this.state(org), this.fileKeys(org), bytes);
  }

  /** Verifies a vault reshare request against the organization's keys as stored now. */
  async reshareProof(org: string, bytes: Uint8Array): Promise<ReshareProof> {
    return verifyReshareRequest(await this.state(org), this.fileKeys(org), bytes);
  }
}
