// Builds the protocol run for each session the coordinator opens, after the node's own checks: the key
// and epoch exist here, the session's parties are the committee pinned with the key, and for signing
// the authorization (intent, API key, digests) holds. Secrets are stored before a public result leaves.
import { bytesToHex } from '@noble/hashes/utils.js';
import { taggedHash } from '../../../core/codec/transcript.ts';
import { Protocol, type Party } from '../../../proto/gen/mpc/v1/session_pb.ts';
import { encodeBlob } from '../../../core/codec/blob.ts';
import { dkg } from '../../protocols/dkg/dkg.ts';
import { frostSign, type FrostSuite } from '../../protocols/frost/frost-sign.ts';
import { reshare, type ReshareResult } from '../../protocols/reshare/reshare.ts';
import { scalarHex } from '../../protocols/math/curve.ts';
import { SessionRefused, type ProtocolFactory, type SessionContext } from '../session-host.ts';
import type { PartyProtocol } from '../party-protocol.ts';
import type { KeyVault, PinnedMember, StoredKey } from '../key-vault.ts';
import type { SignAuthorizer, SignGrant } from '../authorization/sign-authorizer.ts';
import { authorizeKeyCreation } from '../authorization/key-creation.ts';
import { TIER_NAMES, type TierName } from '../../../core/tiers.ts';
import { authorizeReshareRequest } from '../authorization/reshare-request.ts';
import { checkCommittee } from '../authorization/committee-check.ts';
import type { RosterRegistry } from '../authorization/roster-registry.ts';
import type { TrustRegistry } from '../authorization/trust-registry.ts';
import { inSequence, readParams, runProtocol } from './run-protocol.ts';
import { ecdsaOtSetup, encodeOtSetup } from '../../protocols/ecdsa/ot-setup.ts';
import { OtPairLocks } from '../ot-pair-locks.ts';
import { otGuarded } from './ot-guarded.ts';
import { ecdsaPresign } from '../../protocols/ecdsa/presign.ts';
import { ecdsaOnline, type EcdsaSignature } from '../../protocols/ecdsa/online.ts';
import type { Presignature } from '../../protocols/ecdsa/presignature.ts';
import type { DkgSessionParams, EpochSessionParams, ReshareSessionParams, SignSessionParams } from '../../../core/session/session-params.ts';

const pin = (parties: Party[], indexOf: (p: Party) => number | undefined): PinnedMember[] =>
  parties
    .filter((p) => indexOf(p) !== undefined)
    .map((p) => ({ index: indexOf(p)!, nodeId: p.nodeId, signingKey: bytesToHex(p.signingKey), encryptionKey: bytesToHex(p.encryptionKey) }))
    .sort((a, b) => a.index - b.index);

/** Every session party must be the pinned committee member with the same index and keys. */
function checkAgainstCommittee(ctx: SessionContext, committee: PinnedMember[], indexOf: (p: Party) => number | undefined): void {
  for (const p of ctx.parties) {
    const idx = indexOf(p);
    if (idx === undefined) continue;
    const m = committee.find((c) => c.index === idx);
    if (!m || m.nodeId !== p.nodeId || m.signingKey !== bytesToHex(p.signingKey) || m.encryptionKey !== bytesToHex(p.encryptionKey)) {
      throw new SessionRefused('committee_mismatch', `party ${p.nodeId} is not committee member ${idx} of this key`);
    }
  }
}

/** The share of `keyId` at `epoch`, with every session party checked against its pinned committee. */
async function keyAtEpoch(vault: KeyVault, ctx: SessionContext, keyId: string, epoch: number): Promise<StoredKey> {
  let stored = await vault.current(keyId);
  // The coordinator commits a reshare before nodes hear of it: a pending epoch it uses is committed.
  if (stored && stored.key.pkg.epoch < epoch && (await vault.pending(keyId))?.key.pkg.epoch === epoch) {
    await vault.commit(keyId, epoch);
    stored = await vault.current(keyId);
  }
  if (!stored) throw new SessionRefused('unknown_key', `no share of ${keyId} here`);
  if (stored.key.pkg.epoch !== epoch) throw new SessionRefused('epoch_mismatch', `this node holds epoch ${stored.key.pkg.epoch}, not ${epoch}`);
  checkAgainstCommittee(ctx, stored.committee, (x) => x.index);
  return stored;
}

function checkDigests(digests: unknown): void {
  if (!Array.isArray(digests) || digests.length < 1 || digests.length > 256) throw new SessionRefused('bad_params', '1 to 256 digests');
}

export interface NodeProtocolDeps {
  vault: KeyVault;
  authorizer: SignAuthorizer;
  trust: TrustRegistry;
  /** The newest operator-signed service-node roster this node accepted; without it no DKG or reshare is joined. */
  rosters?: RosterRegistry;
  /** Records durably what is signed for each intent and refuses a different signing of it (intent-ledger.ts). */
  ledger: { claim(grant: SignGrant): Promise<void> };
  /** Shared by every session of the node (one ECDSA run per OT pair at a time). */
  otLocks?: OtPairLocks;
}

/** How long an ECDSA session waits for a run over the same OT pair to end before refusing. */
const OT_PAIR_WAIT_MS = 3_000;

export function nodeProtocols(deps: NodeProtocolDeps): ProtocolFactory {
  const { vault, authorizer, trust } = deps;
  const roster = (hex: unknown) => {
    if (!deps.rosters) throw new SessionRefused('bad_roster', 'this node keeps no roster and joins no key generation or reshare');
    return deps.rosters.accept(hex);
  };
  const otLocks = deps.otLocks ?? new OtPairLocks();
  const sessionHex = (ctx: SessionContext) => bytesToHex(ctx.open.sessionId);

  return async (ctx): Promise<PartyProtocol> => {
    const me = ctx.myIndex;
    const indexes = ctx.parties.map((p) => p.index);
    switch (ctx.open.protocol) {
      case Protocol.DKG: {
        const p = readParams<DkgSessionParams>('dkg-params', ctx.open.params);
        if (await vault.current(p.keyId)) throw new SessionRefused('key_exists', `key ${p.keyId} already exists on this node`);
        const grant = await authorizeKeyCreation(trust, p);
        // Every member is one this node verifies itself, in the tier's shape (docs/trust.md "Committees").
        checkCommittee({ tier: grant.tier, threshold: p.threshold, members: ctx.parties, roster: await roster(p.roster), customerNode: grant.customerNode, shown: grant.committee });
        const used = grant.creationHash ? await vault.creationBinding(grant.creationHash) : undefined;
        if (used !== undefined && used !== p.keyId) throw new SessionRefused('bad_creation_request', 'this creation request already created another key');
        const meta = { owner: p.owner, tier: grant.tier, ...(grant.endUser ? { endUser: grant.endUser } : {}) };
        return runProtocol(dkg, me, [{ sessionId: sessionHex(ctx), keyId: p.keyId, epoch: p.epoch, threshold: p.threshold, parties: indexes, me }], ([k]) => ({
          result: encodeBlob('dkg-result', { pkg: k!.pkg }),
          commit: () => vault.putNew(p.keyId, { key: k!, ...meta, committee: pin(ctx.parties, (x) => x.index) }, grant.creationHash),
        }));
      }
      case Protocol.SIGN_SCHNORR: {
        const p = readParams<SignSessionParams>('sign-params', ctx.open.params);
        const stored = await keyAtEpoch(vault, ctx, p.keyId, p.epoch);
        if (p.scheme !== 'taproot' && p.scheme !== 'bip340') throw new SessionRefused('wrong_scheme', 'Schnorr sessions sign taproot or bip340');
        checkDigests(p.digests);
        const key = { id: stored.key.share.id, share: scalarHex(stored.key.share.scalar()), pkg: stored.key.pkg };
        const suite: FrostSuite = p.scheme;
        const params = p.digests.map((message, i) => ({ sessionId: bytesToHex(sessionDigest(ctx.open.sessionId, i)), suite, message, signers: indexes, me, key, path: p.path }));
        const run = runProtocol(frostSign, me, params, (sigs) => ({ result: encodeBlob('sign-result', { signatures: sigs.map((s) => s.signature), publicKey: sigs[0]!.publicKey }) }));
        // Round 1 (fresh nonce commitments) does not depend on the request and goes out first; the
        // request is verified while it is relayed, and no signature share is made before that passes.
        return {
          ...run,
          admit: async () => {
            const grant = await authorizer.authorize({ ...p, owner: stored.owner, groupKey: stored.key.pkg.groupKey, chainCode: stored.key.pkg.chainCode, endUser: stored.endUser });
            // On disk before any signature share of this intent leaves.
            await deps.ledger.claim(grant);
            // Nonces of this session are single-use from here on, across restarts.
            await vault.claimSession(sessionHex(ctx));
          },
        };
      }
      case Protocol.OT_SETUP: {
        const p = readParams<EpochSessionParams>('ot-params', ctx.open.params);
        const stored = await keyAtEpoch(vault, ctx, p.keyId, p.epoch);
        if (indexes.length !== stored.key.pkg.parties.length) throw new SessionRefused('bad_parties', 'the OT setup runs on the whole committee');
        return runProtocol(ecdsaOtSetup, me, [{ sessionId: sessionHex(ctx), keyId: p.keyId, epoch: p.epoch, parties: indexes, me }], ([setup]) => ({
          result: encodeBlob('ot-result', { keyId: p.keyId, epoch: p.epoch }),
          commit: () => vault.putOt(p.keyId, setup!, encodeOtSetup(setup!)),
        }));
      }
      case Protocol.SIGN_ECDSA: {
        const p = readParams<SignSessionParams>('sign-params', ctx.open.params);
        const stored = await keyAtEpoch(vault, ctx, p.keyId, p.epoch);
        if (p.scheme !== 'ecdsa') throw new SessionRefused('wrong_scheme', 'ECDSA sessions sign ecdsa');
        checkDigests(p.digests);
        // One run per OT pair at a time on this node; the material is read after the pairs are held,
        // so every retirement that landed before is seen.
        const peers = indexes.filter((i) => i !== me);
        const release = await otLocks.acquire(p.keyId, peers, OT_PAIR_WAIT_MS);
        let guarded: PartyProtocol;
        let presigs: Presignature[] = [];
        try {
          const ot = await vault.ot(p.keyId);
          if (!ot) throw new SessionRefused('no_ot_setup', 'no OT setup for this key epoch yet');
          const retired = peers.filter((i) => ot.retired.includes(i));
          if (retired.length) throw new SessionRefused('ot_retired', `OT material with parties ${retired.join(',')} was retired after an abort; a new setup is needed`);
          const grant = await authorizer.authorize({ ...p, owner: stored.owner, groupKey: stored.key.pkg.groupKey, chainCode: stored.key.pkg.chainCode, endUser: stored.endUser });
          // On disk before the first presigning message leaves.
          await deps.ledger.claim(grant);
          await vault.claimSession(sessionHex(ctx));
          const key = { id: stored.key.share.id, share: scalarHex(stored.key.share.scalar()), pkg: stored.key.pkg };
          const presign = runProtocol(ecdsaPresign, me, p.digests.map((_, i) => ({ sessionId: bytesToHex(sessionDigest(ctx.open.sessionId, i)), signers: indexes, me, key, path: p.path, ot })), (ps) => {
            presigs = ps;
            // The OT material is done with once the presignatures exist: the pairs serve the next run.
            release();
            return { result: new Uint8Array() };
          });
          const run = otGuarded(presign, { vault, keyId: p.keyId, setupId: ot.setupId, me, peers });
          guarded = { ...run, dispose: () => (run.dispose(), release()) };
        } catch (err) {
          release();
          throw err;
        }
        return inSequence(guarded, () =>
          runProtocol(ecdsaOnline, me, presigs.map((presignature, i) => ({ presignature, digest: p.digests[i]! })), (sigs: EcdsaSignature[]) => ({
            result: encodeBlob('sign-result', { signatures: sigs.map((s) => s.compact), recoveryIds: sigs.map((s) => s.recovery), publicKey: sigs[0]!.publicKey }),
          })),
        );
      }
      case Protocol.RESHARE: {
        const p = readParams<ReshareSessionParams>('reshare-params', ctx.open.params);
        const mine = p.members.find((m) => m.party === me);
        if (!mine) throw new SessionRefused('not_a_party', 'this node is not a reshare member');
        let oldShare: { id: number; share: string } | undefined;
        // A member that held the key keeps its end-user binding while the key stays hosted; end-user
        // tokens gate the hosted tier only, so a move to another tier drops it (docs/trust.md).
        const held = await vault.current(p.keyId);
        const tier = typeof p.tier === 'string' ? p.tier : held?.tier;
        if (!TIER_NAMES.includes(tier as TierName)) throw new SessionRefused('bad_params', 'the reshare names no valid tier');
        // The new committee passes the same checks as a DKG's; a customer member is the node the
        // customer's signed reshare request names, or one already pinned with this node's share.
        const receivers = ctx.parties.filter((x) => p.members.some((m) => m.party === x.index && m.newId !== undefined));
        const binding = await authorizeReshareRequest(trust, { owner: p.owner, keyId: p.keyId, tier: tier!, trustLog: p.trustLog, reshareRequest: p.reshareRequest });
        checkCommittee({
          tier: tier as TierName, threshold: p.newThreshold, members: receivers, roster: await roster(p.roster),
          customerNode: binding.customerNode, shown: binding.committee, pinned: held && held.tier === tier ? held.committee : undefined,
        });
        const carried: Pick<StoredKey, 'tier' | 'endUser'> = {
          ...(tier ? { tier } : {}),
          ...(held?.endUser && (tier === undefined || tier === 'hosted') ? { endUser: held.endUser } : {}),
        };
        if (mine.oldId !== undefined) {
          const stored = held;
          if (!stored) throw new SessionRefused('unknown_key', `no share of ${p.keyId} here`);
          if (JSON.stringify(stored.key.pkg) !== JSON.stringify(p.oldPkg)) throw new SessionRefused('package_mismatch', 'the old package differs from the one stored here');
          if (stored.key.share.id !== mine.oldId) throw new SessionRefused('bad_params', 'wrong old id for this node');
          const byParty = new Map(p.members.map((m) => [m.party, m]));
          checkAgainstCommittee(ctx, stored.committee, (x) => byParty.get(x.index)?.oldId);
          oldShare = { id: stored.key.share.id, share: scalarHex(stored.key.share.scalar()) };
        }
        const byParty = new Map(p.members.map((m) => [m.party, m]));
        const params = { sessionId: sessionHex(ctx), members: p.members, me, oldPkg: p.oldPkg, newThreshold: p.newThreshold, newEpoch: p.newEpoch, ...(oldShare ? { oldShare } : {}) };
        return runProtocol(reshare, me, [params], ([r]: ReshareResult[]) => {
          const pkg = r!.kind === 'receiver' ? r!.key.pkg : r!.pkg;
          const out = { result: encodeBlob('reshare-result', { pkg }) };
          if (r!.kind !== 'receiver') return out;
          return { ...out, commit: () => vault.putPending(p.keyId, { key: r!.key, owner: p.owner, ...carried, committee: pin(ctx.parties, (x) => byParty.get(x.index)?.newId) }) };
        });
      }
      case Protocol.COMMIT_EPOCH:
      case Protocol.ABANDON_EPOCH: {
        const p = readParams<EpochSessionParams>('epoch-params', ctx.open.params);
        const commit = ctx.open.protocol === Protocol.COMMIT_EPOCH;
        let outcome = 'abandoned';
        return {
          start: async () => {
            if (commit) outcome = await vault.commit(p.keyId, p.epoch);
            else await vault.abandon(p.keyId, p.epoch);
            return { kind: 'done', out: [], result: encodeBlob('epoch-result', { outcome }) };
          },
          deliver: () => ({ kind: 'abort', code: 'bad_message', message: 'no messages in this session', culprits: [] }),
          dispose() {},
        };
      }
      default:
        throw new SessionRefused('unsupported_protocol', `protocol ${ctx.open.protocol} is not supported by this node`);
    }
  };
}

/** A distinct session id per digest of a multi-digest session. */
function sessionDigest(sessionId: Uint8Array, i: number): Uint8Array {
  return taggedHash('custody/sign/instance/v1', [sessionId, String(i)]);
}
