// Customer-run signer nodes (docs/vault-api.md "Nodes", docs/trust.md "Enrolled nodes"): enrolment,
// revocation and the allowed TEE measurements. Each change goes into the organization's trust log with
// the customer's signed request, in the same batch as the record, so every signer node learns it from
// the customer's own signature; the API's records serve listing and choosing the node to seat.
import { CustodyError } from '../../core/errors/custody-error.ts';
import { isValidEd25519PublicKeyHex } from '../../common/ed25519.ts';
import { nodeIdFor } from '../../core/trust/node-id.ts';
import { teeNodeBinding } from '../../core/trust/tee-binding.ts';
import { measurementSetProblem, normalizeMeasurementSet } from '../../core/trust/tee-measurements.ts';
import { hexToBytes } from '@noble/hashes/utils.js';
import type { TeeAttestationVerifier } from '../../tee/attestation/enrolment-verifier.ts';
import { AttestationError } from '../../tee/attestation/attestation-error.ts';
import type { Op } from '../store/record-store.ts';
import type { NodeRecord, TeeMeasurementsRecord, Tier } from './records.ts';
import type { VaultService } from './vault-service.ts';
import { NODES, TEE_MEASUREMENTS } from './collections.ts';

/** Enrolled nodes an organization may hold, active or revoked. */
export const MAX_NODES_PER_ORG = 64;

export interface EnrolInput {
  kind: 'self' | 'tee';
  node_id: string;
  signing_key: string;
  encryption_key: string;
  label?: string | undefined;
  /** tee: the attestation document, base64. */
  attestation?: string | undefined;
}

/** The node kind a tier seats as its customer member. */
export function customerKindFor(tier: Tier): 'self' | 'tee' | undefined {
  return tier === 'self' ? 'self' : tier === 'customer_tee' ? 'tee' : undefined;
}

export class NodeService {
  constructor(
    private readonly vaults: VaultService,
    private readonly opts: { verifyTee?: TeeAttestationVerifier | undefined; now?: () => Date } = {},
  ) {}

  private now(): Date {
    return this.opts.now?.() ?? new Date();
  }

  private op(n: NodeRecord): Op {
    return NODES.putOp(n.id, n, { index: [`org/${n.org}/${n.created_at}/${n.id}`] });
  }

  list(org: string): Promise<NodeRecord[]> {
    return NODES.in(this.vaults.store).byIndex(`org/${org}/`);
  }

  async get(org: string, nodeId: string): Promise<NodeRecord> {
    const n = await NODES.in(this.vaults.store).get(nodeId);
    if (!n || n.org !== org) throw new CustodyError('not_found', 'no such node');
    return n;
  }

  /**
   * Enrols a node (201), or returns the same enrolment again (200, nothing appended). A tee node's
   * attestation is verified here as the nodes will verify it, so a bad one is refused at once.
   */
  async enrol(org: string, input: EnrolInput, entry?: Uint8Array): Promise<{ node: NodeRecord; created: boolean }> {
    const sk = input.signing_key.toLowerCase();
    const ek = input.encryption_key.toLowerCase();
    if (!isValidEd25519PublicKeyHex(sk)) throw new CustodyError('invalid_request', 'signing_key is not a valid Ed25519 public key (off the curve, of small order, or not canonically encoded)');
    if (input.node_id !== nodeIdFor(hexToBytes(sk))) throw new CustodyError('invalid_request', 'node_id is not the id derived from signing_key (npm run node-identity prints all three)');
    if (input.kind === 'self' && input.attestation !== undefined) throw new CustodyError('invalid_request', 'attestation applies to tee nodes only');
    if (input.kind === 'tee' && input.attestation === undefined) throw new CustodyError('invalid_request', 'a tee node is enrolled with its attestation document (docs/tee.md)');
    const pcrs = input.kind === 'tee' ? this.verifyAttestation(org, input.node_id, sk, ek, input.attestation!) : null;
    return this.vaults.withOrgLock(org, async () => {
      const known = await NODES.in(this.vaults.store).get(input.node_id);
      if (known && known.org !== org) throw new CustodyError('node_taken', 'another organization enrolled this node; create a new node identity');
      if (known?.state === 'revoked') throw new CustodyError('node_revoked', 'this node was revoked and cannot be enrolled again; create a new node identity');
      if (known) {
        if (known.kind !== input.kind || known.signing_key !== sk || known.encryption_key !== ek) throw new CustodyError('conflict', 'this node is enrolled with another kind or other keys');
        return { node: known, created: false };
      }
      if ((await this.list(org)).length >= MAX_NODES_PER_ORG) throw new CustodyError('rate_limited', `node quota reached (${MAX_NODES_PER_ORG} enrolments, revoked ones included)`);
      const node: NodeRecord = {
        id: input.node_id, org, kind: input.kind, signing_key: sk, encryption_key: ek, label: input.label ?? null, state: 'active', pcrs,
        created_at: this.now().toISOString(), revoked_at: null,
      };
      await this.vaults.appendTrustLocked(org, entry, [this.op(node), this.vaults.event(org, 'node.enrolled', 'node', node.id, { node_id: node.id, kind: node.kind })]);
      return { node, created: true };
    });
  }

  private verifyAttestation(org: string, nodeId: string, sk: string, ek: string, base64: string): Record<string, string> {
    if (!this.opts.verifyTee) throw new CustodyError('unavailable', 'this API verifies no TEE attestation (no attestation roots configured)');
    try {
      return this.opts.verifyTee(new Uint8Array(Buffer.from(base64, 'base64')), { at: this.now(), userData: teeNodeBinding(org, nodeId, sk, ek) });
    } catch (err) {
      if (err instanceof AttestationError) throw new CustodyError('bad_attestation', `the attestation does not verify: ${err.message}`, { cause: err });
      throw err;
    }
  }

  /** Revokes a node for good: it is never seated again and signs nothing more (docs/trust.md). */
  async revoke(org: string, nodeId: string, entry?: Uint8Array): Promise<NodeRecord> {
    return this.vaults.withOrgLock(org, async () => {
      const n = await this.get(org, nodeId);
      if (n.state === 'revoked') throw new CustodyError('conflict', 'the node is already revoked');
      const revoked: NodeRecord = { ...n, state: 'revoked', revoked_at: this.now().toISOString() };
      await this.vaults.appendTrustLocked(org, entry, [this.op(revoked), this.vaults.event(org, 'node.revoked', 'node', n.id, { node_id: n.id, kind: n.kind })]);
      return revoked;
    });
  }

  /**
   * The enrolled node a vault of `tier` seats: the one named (which must be active and of the tier's
   * kind), else the organization's earliest active node of that kind. no_enrolled_node when none.
   */
  async customerNodeFor(org: string, tier: Tier, named?: string): Promise<NodeRecord | undefined> {
    const kind = customerKindFor(tier);
    if (!kind) return undefined;
    if (named) {
      const n = await NODES.in(this.vaults.store).get(named);
      if (!n || n.org !== org) throw new CustodyError('no_enrolled_node', `node ${named} is not enrolled by this organization (POST /v1/nodes)`);
      if (n.state !== 'active') throw new CustodyError('node_revoked', `node ${named} was revoked`);
      if (n.kind !== kind) throw new CustodyError('no_enrolled_node', `node ${named} is a ${n.kind} node; a ${tier} vault needs a ${kind} node`);
      return n;
    }
    const n = (await this.list(org)).find((x) => x.state === 'active' && x.kind === kind);
    if (!n) throw new CustodyError('no_enrolled_node', `a ${tier} vault needs an enrolled ${kind} node; enrol one first (POST /v1/nodes, docs/${kind === 'tee' ? 'tee' : 'self-node'}.md)`);
    return n;
  }

  /** Replaces the allowed measurements, only with a higher version (the nodes apply the same rule). */
  async putMeasurements(org: string, version: number, allowed: Record<string, string>[], entry?: Uint8Array): Promise<TeeMeasurementsRecord> {
    for (const set of allowed) {
      const problem = measurementSetProblem(set);
      if (problem) throw new CustodyError('invalid_request', problem);
    }
    return this.vaults.withOrgLock(org, async () => {
      const current = await this.measurements(org);
      if (current && version <= current.version) throw new CustodyError('conflict', `version ${version} is not above the version in force (${current.version})`);
      const rec: TeeMeasurementsRecord = { org, version, allowed: allowed.map(normalizeMeasurementSet), updated_at: this.now().toISOString() };
      await this.vaults.appendTrustLocked(org, entry, [
        TEE_MEASUREMENTS.putOp(org, rec),
        this.vaults.event(org, 'tee.measurements.updated', 'organization', org, { version }),
      ]);
      return rec;
    });
  }

  measurements(org: string): Promise<TeeMeasurementsRecord | undefined> {
    return TEE_MEASUREMENTS.in(this.vaults.store).get(org);
  }
}
