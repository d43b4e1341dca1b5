// Wires the coordinator: its LevelDB state, the node link service and the API-facing service on one
// gRPC server. main.ts only boots this.
import * as grpc from '@grpc/grpc-js';
import { Level } from 'level';
import { readFileSync } from 'node:fs';
import { addService } from '../proto/grpc.ts';
import { NodeLinkService } from '../proto/gen/mpc/v1/node_link_pb.ts';
import { CoordinatorService } from '../proto/gen/mpc/v1/coordinator_pb.ts';
import type { Logger } from '../common/logger.ts';
import type { CoordinatorConfig } from './config.ts';
import { NodeRegistry, type AttachedNodeInfo } from './nodes/node-registry.ts';
import { createLinkHandler } from './nodes/link-server.ts';
import { SessionHub } from './sessions/session-hub.ts';
import { KIND_VALUES } from '../core/link/node-kind.ts';
import { VaultStore, type VaultRecord } from './vaults/vault-store.ts';
import { VaultService } from './vaults/vault-service.ts';
import { describeReadiness, type EcdsaReadiness } from './vaults/ot-pairs.ts';
import { loadTeeVerifier } from '../tee/attestation/enrolment-verifier.ts';
import { CustodyError } from '../core/errors/custody-error.ts';
import { toRpcError } from '../core/rpc/rpc-error.ts';
import { Scheme, type MemberActionBinding as WireMemberAction, type Tier } from '../proto/gen/mpc/v1/coordinator_pb.ts';
import type { MemberActionBinding } from '../core/session/member-action-binding.ts';
import type { TierName } from '../core/tiers.ts';
import { hexToBytes } from '@noble/hashes/utils.js';
import { tierFromWire, WIRE_TIERS } from '../core/tier-wire.ts';
import { createMetricsRegistry, type Registry } from '../common/metrics/metrics-registry.ts';
import { serveMetrics } from '../common/metrics/metrics-server.ts';
import { SessionMetrics } from './sessions/session-metrics.ts';
import { InventoryClient } from './nodes/inventory-client.ts';
import { VaultRebuild } from './vaults/vault-rebuild.ts';

export interface RunningCoordinator {
  port: number;
  registry: NodeRegistry;
  hub: SessionHub;
  vaults: VaultService;
  rebuild: VaultRebuild;
  /** The coordinator's metrics; served on `metricsPort` when COORDINATOR_METRICS_LISTEN is set. */
  metrics: Registry;
  metricsPort: number | undefined;
  stop(): Promise<void>;
}

function toWire(n: AttachedNodeInfo) {
  return {
    nodeId: n.nodeId, kind: KIND_VALUES[n.kind], owner: n.owner, attachedAtMs: BigInt(n.attachedAtMs),
    signingKey: n.signingKey, encryptionKey: n.encryptionKey,
  };
}

export async function startCoordinator(config: CoordinatorConfig, log: Logger): Promise<RunningCoordinator> {
  const db = new Level<string, string>(config.dataDir, { valueEncoding: 'utf8' });
  await db.open();
  const registry = new NodeRegistry(db);
  const vaultStore = new VaultStore(db);
  // Process metrics only when the registry is served: a test's in-process coordinators skip them.
  const metrics = createMetricsRegistry({ process: config.metricsListen !== undefined });
  const sessionMetrics = new SessionMetrics(metrics);
  sessionMetrics.countAttached(() => registry.list());
  const hub = new SessionHub({ send: (id, m) => registry.send(id, m), isAttached: (id) => registry.isAttached(id) }, log, sessionMetrics);
  registry.on('left', (nodeId) => hub.nodeLeft(nodeId));
  const vaults = new VaultService(vaultStore, registry, hub, log, { dkgMs: config.dkgTimeoutMs, signMs: config.signTimeoutMs, reshareMs: config.reshareTimeoutMs, attachWaitMs: config.attachWaitMs, roundMs: config.roundTimeoutMs }, config.roster, loadTeeVerifier(config.teeRootsFile, config.teeAllowDevRoot), config.presignPoolTarget, config.noncePoolTarget);
  // Records rebuilt from the nodes (vault-rebuild.ts): lazily for a vault the API asks about, on the
  // operator's RebuildVaults, and brought forward as nodes attach in the first minutes after start.
  const inventory = new InventoryClient(registry);
  const rebuild = new VaultRebuild(vaultStore, vaults, registry, inventory, log);
  vaults.lazyRebuild = (vaultId) => rebuild.lazy(vaultId);
  const stopForward = rebuild.forwardAtStart(config.rebuildWindowMs, config.rebuildAdoptAll);
  // Every error leaves as a gRPC status with structured details (core/rpc/rpc-error.ts); one that is
  // not a CustodyError is a bug: logged here, answered as `internal` without its text.
  const guard = async <T>(f: () => Promise<T>): Promise<T> => {
    try {
      return await f();
    } catch (err) {
      if (!(err instanceof CustodyError)) log.error({ err: err instanceof Error ? err.stack ?? err.message : String(err) }, 'coordinator call failed unexpectedly');
      throw toRpcError(err);
    }
  };
  const server = new grpc.Server({ 'grpc.keepalive_time_ms': 10_000, 'grpc.keepalive_timeout_ms': 5_000 });

  addService(server, NodeLinkService, {
    attach: createLinkHandler({
      coordinatorId: config.coordinatorId, heartbeatIntervalMs: config.heartbeatIntervalMs, registry, log,
      onSession: (nodeId, msg) => hub.fromNode(nodeId, msg),
      inSession: (nodeId) => hub.hasParty(nodeId),
      onInventory: (nodeId, page) => inventory.fromNode(nodeId, page),
    }),
  });
  addService(server, CoordinatorService, {
    listNodes: (req) => guard(async () => ({ nodes: registry.list().map(toWire), ...(req.signing ? { unsignable: unsignableWire(await vaults.unsignable()) } : {}) })),
    createVault: (req) => guard(async () => ({
      vault: vaultInfo(vaults, await vaults.createVault({
        vaultId: req.vaultId, owner: req.owner, tier: tierName(req.tier), nodeIds: req.nodeIds, threshold: req.threshold || undefined,
        trustLog: req.trustLog, creationRequest: req.creationRequest.length ? req.creationRequest : undefined, requestId: req.requestId, customerNodeId: req.customerNodeId,
      })),
    })),
    getVault: (req) => guard(async () => ({ vault: vaultInfo(vaults, await vaults.get(req.vaultId)) })),
    reshare: (req) => guard(async () => ({
      vault: vaultInfo(vaults, await vaults.reshare({
        vaultId: req.vaultId, nodeIds: req.nodeIds, threshold: req.threshold || undefined, targetTier: req.targetTier ? tierName(req.targetTier) : undefined,
        trustLog: req.trustLog, reshareRequest: req.reshareRequest.length ? req.reshareRequest : undefined, requestId: req.requestId, customerNodeId: req.customerNodeId,
      })),
    })),
    exportVault: (req) => guard(async () => {
      const out = await vaults.exportVault({
        vaultId: req.vaultId, exportId: req.exportId, trustLog: req.trustLog, requestId: req.requestId,
        approvals: req.approvals.map((a) => ({ approverKey: a.approverKey, signature: a.signature })),
      });
      return {
        threshold: out.threshold,
        shares: out.shares.map((s) => (s.status === 'failed'
          ? { nodeId: s.nodeId, status: s.status, code: s.code, message: s.message }
          : { nodeId: s.nodeId, status: s.status, readyAt: BigInt(s.readyAt), approvals: s.approvals, approvalsNeeded: s.approvalsNeeded, party: s.party ?? 0, enc: s.enc ?? new Uint8Array(), ciphertext: s.ciphertext ?? new Uint8Array() })),
      };
    }),
    proposeCommittee: (req) => guard(async () => {
      const p = vaults.proposeCommittee(tierName(req.tier), req.customerNodeId);
      return {
        members: p.members.map((m) => ({ nodeId: m.nodeId, kind: KIND_VALUES[m.kind], signingKey: m.signingKey, encryptionKey: m.encryptionKey })),
        threshold: p.threshold, rosterVersion: BigInt(p.rosterVersion),
      };
    }),
    sign: (req) => guard(async () => {
      const scheme = req.scheme === Scheme.SCHNORR_TAPROOT ? 'taproot' : req.scheme === Scheme.SCHNORR_BIP340 ? 'bip340' : req.scheme === Scheme.ECDSA ? 'ecdsa' : undefined;
      if (!scheme) throw new CustodyError('invalid_request', 'unknown scheme');
      const a = req.authorization;
      // The proto's bytes go to the nodes as they are (core/session/session-contract.ts).
      const out = await vaults.sign({
        vaultId: req.vaultId, requestId: req.requestId, path: req.path, scheme, digests: req.digests,
        intent: a?.intent ?? new Uint8Array(), intentSignature: a?.intentSignature ?? new Uint8Array(),
        apiKeyId: a?.apiKeyId ?? '', template: a?.template ?? new Uint8Array(), endUserToken: a?.endUserToken ?? '',
        trustLog: a?.trustLog ?? [],
        // Checked by the sign-params encoder (core/session/session-params.ts) before any session opens.
        ...(a?.memberAction ? { memberAction: memberActionOf(a.memberAction) } : {}),
        // A vault policy's evidence, passed through unread: every node verifies it.
        ...(a?.chainLink.length ? { chainLink: a.chainLink } : {}),
        ...(a?.chain.length ? { chain: a.chain.map((c) => ({ link: c.link, intent: c.intent })) } : {}),
        ...(a?.approvals.length ? {
          approvals: a.approvals.map((x) => ({
            approver_id: x.approverId, signature: x.signature,
            ...(x.passkey ? { passkey: { credential: x.passkey.credential, credential_id: x.passkey.credentialId, authenticator_data: x.passkey.authenticatorData, client_data_json: x.passkey.clientDataJson, signature: x.passkey.signature } } : {}),
          })),
        } : {}),
      });
      return { signatures: out.signatures, recoveryIds: out.recoveryIds, signers: out.signers, publicKey: out.publicKey };
    }),
    rebuildVaults: (req) => guard(async () => {
      if (req.vaultIds.length > 10_000) throw new CustodyError('invalid_request', 'at most 10000 vault ids in one rebuild');
      const r = await rebuild.rebuild(req.vaultIds, req.takeOver);
      return { vaults: r.vaults, nodes: r.nodes };
    }),
    releaseVault: (req) => guard(async () => {
      if (!req.vaultId || !/^[a-z0-9-]{1,32}$/.test(req.movedTo)) throw new CustodyError('invalid_request', 'a vault id and the shard name it moved to (lower-case letters, digits and -, at most 32)');
      return { vault: vaultInfo(vaults, await vaults.release(req.vaultId, req.movedTo)) };
    }),
    watchNodes(_req, call) {
      const send = (nodes: AttachedNodeInfo[]) => call.write({ nodes: nodes.map(toWire) });
      send(registry.list());
      registry.on('change', send);
      const stop = () => registry.off('change', send);
      call.on('cancelled', stop);
      call.on('close', stop);
      call.on('error', stop);
    },
  });

  let credentials: grpc.ServerCredentials;
  if (config.tlsCert && config.tlsKey && config.tlsClientCa) {
    credentials = grpc.ServerCredentials.createSsl(
      readFileSync(config.tlsClientCa),
      [{ cert_chain: readFileSync(config.tlsCert), private_key: readFileSync(config.tlsKey) }],
      true,
    );
    log.info('mutual TLS on the coordinator port');
  } else {
    credentials = grpc.ServerCredentials.createInsecure();
    log.warn({ listen: config.listen }, 'plaintext gRPC on loopback: development only');
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(config.listen, credentials, (err, p) => (err ? reject(err) : resolve(p))),
  );
  const metricsServer = config.metricsListen ? await serveMetrics(metrics, { listen: config.metricsListen, ready: async () => {
    // Vaults that cannot sign do not make the coordinator unready (it can do nothing about a node that is
    // away), but the probe says how many and why.
    if (db.status !== 'open') return false;
    const u = await vaults.unsignable();
    return { ready: true, detail: { unsignable: { count: u.count, reasons: u.reasons, vaults: u.vaults.map((v) => ({ vault_id: v.vaultId, reason: v.readiness.reason, detached_members: v.readiness.detached, missing_pairs: v.readiness.missingPairs })) } } };
  } }) : undefined;
  if (metricsServer) log.info({ listen: config.metricsListen, port: metricsServer.port }, 'metrics listening');
  return {
    port,
    registry,
    hub,
    vaults,
    rebuild,
    metrics,
    metricsPort: metricsServer?.port,
    async stop() {
      stopForward();
      vaults.pool.stop();
      vaults.noncePool.stop();
      vaults.stop();
      await metricsServer?.close();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      await db.close();
    },
  };
}

/** The wire binding as the session parameters carry it; the encoder checks every field's shape. */
function memberActionOf(m: WireMemberAction): MemberActionBinding {
  const p = m.passkey;
  return {
    actionId: m.actionId, salt: m.salt,
    // An empty list on the wire is an action of one intent.
    ...(m.batch.length > 0 ? { batch: m.batch } : {}),
    ...(p ? { passkey: { credentialId: p.credentialId, authenticatorData: p.authenticatorData, clientDataJson: p.clientDataJson, signature: p.signature } } : {}),
  };
}

function tierName(t: Tier): TierName {
  const name = tierFromWire(t);
  if (!name) throw new CustodyError('invalid_request', 'unknown tier');
  return name;
}

/** Whether an active vault can sign ECDSA now, as GetVault carries it (docs/vault-api.md "Signing readiness"). */
function readinessWire(r: EcdsaReadiness) {
  return { ready: r.ready, reason: r.reason ?? '', detached: r.detached, missingPairs: r.missingPairs, message: describeReadiness(r) ?? '' };
}

function unsignableWire(u: Awaited<ReturnType<VaultService['unsignable']>>) {
  return { count: u.count, reasons: u.reasons, vaults: u.vaults.map((v) => ({ vaultId: v.vaultId, readiness: readinessWire(v.readiness) })) };
}

function vaultInfo(vaults: VaultService, k: VaultRecord) {
  return {
    ...(k.state === 'active' && k.pkg ? { ecdsa: readinessWire(vaults.ecdsaReadiness(k)) } : {}),
    vaultId: k.vaultId, owner: k.owner, tier: Object.hasOwn(WIRE_TIERS, k.tier) ? WIRE_TIERS[k.tier as TierName] : 0, threshold: k.threshold, committee: k.committee, epoch: k.epoch, rotation: k.rotation,
    publicKey: k.publicKey ? hexToBytes(k.publicKey) : new Uint8Array(), chainCode: k.chainCode ? hexToBytes(k.chainCode) : new Uint8Array(),
    state: k.state, problem: k.problem ?? '',
  };
}
