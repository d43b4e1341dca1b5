// A node joins a DKG or a reshare only for a committee it verifies member by member (docs/trust.md
// "Committees"): service nodes from the operator-signed roster with their exact keys, the customer's
// node from the organization's enrolments in its trust log (and the one its signed request names), the
// parties the request names, the tier's shape, and never a roster older than one it accepted. Real session hosts, sealed stores in temporary directories and
// trust registries; the test plays the coordinator, opening sessions and relaying envelopes.
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { SessionOpenSchema, Protocol, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import type { SessionHost } from '../../node/runtime/session-host.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { VaultShareStore } from '../../node/storage/vault-shares.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { IntentAuthorizer } from '../../node/runtime/authorization/sign-authorizer.ts';
import { RosterRegistry } from '../../node/runtime/authorization/roster-registry.ts';
import { nodeProtocols, type NodeProtocolDeps } from '../../node/runtime/sessions/node-protocols.ts';
import { dkgParams, dkgResult, epochParams, reshareParams, reshareResult } from '../../core/session/session-contract.ts';
import type { ReshareSessionParams } from '../../core/session/session-params.ts';
import { signBootstrap } from '../../core/trust/trust-entry.ts';
import { signRoster } from '../../core/trust/roster.ts';
import { createLogger } from '../../common/logger.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';
import { createDevAttestationAuthority } from '../../tee/attestation/dev-provider.ts';
import { AWS_NITRO_ROOT_G1_PEM, nitroTeeVerifier } from '../../tee/attestation/enrolment-verifier.ts';
import { teeNodeBinding } from '../../core/trust/tee-binding.ts';
import { claimsOnlyLedger } from './claims-only-ledger.ts';
import { relayHost } from './relay-host.ts';
import { deadlineOf, newSessionId } from './session-ids.ts';

const seed = (s: string) => sha256(new TextEncoder().encode(s));
const ORG = 'org_committee';
const operator = seed('committee operator');
const operatorKeys = [bytesToHex(ed25519.getPublicKey(operator))];
const first = signer(ORG, seed('committee first key'));
const trustLog = [signBootstrap(ORG, first.publicKey, 1_795_000_000, operator)];
const log = createLogger('test', 'silent');
// The nodes pin a DEV-ONLY attestation root, as a local cluster does (docs/tee.md).
const authority = createDevAttestationAuthority();
const verifyTee = nitroTeeVerifier({ rootsPem: authority.rootPem, allowDevRoot: true });

interface Outcome {
  done?: Uint8Array;
  failed?: { code: string; message: string };
}

interface TestNode {
  identity: NodeIdentity;
  host: SessionHost;
  vault: VaultShareStore;
  outcomes: Map<string, Outcome>;
}

const nodes = new Map<string, TestNode>();

/** A node with its own sealed store, key vault, trust registry and roster registry, behind a real session host. */
async function node(t: Test): Promise<TestNode> {
  const store = await SealedStore.open(mkdtempSync(join(tmpdir(), 'committee-')), new Uint8Array(randomBytes(32)));
  t.teardown(() => store.close());
  const identity = new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)));
  const vault = new VaultShareStore(store);
  const trust = new TrustRegistry(store, { operatorKeys, verifyTee });
  const deps = { vault, trust, authorizer: new IntentAuthorizer(trust), rosters: new RosterRegistry(store, operatorKeys), ledger: claimsOnlyLedger(store), identity };
  const outcomes = new Map<string, Outcome>();
  const host = relayHost(identity, nodes, nodeProtocols(deps as unknown as NodeProtocolDeps), log, outcomes);
  const n = { identity, host, vault, outcomes };
  nodes.set(identity.nodeId, n);
  return n;
}

/** What the coordinator knows of a node: id and keys (a fake one has keys the coordinator made). */
const fake = () => new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)));
type Member = { nodeId: string; signingKey: Uint8Array; encryptionKey: Uint8Array };
const pub = (m: { identity: NodeIdentity } | NodeIdentity): Member => {
  const id = m instanceof NodeIdentity ? m : m.identity;
  return { nodeId: id.nodeId, signingKey: id.signingKey, encryptionKey: id.encryptionKey };
};
const rosterOf = (version: number, members: Member[]) =>
  signRoster({ version, created: 1_795_000_000 + version, nodes: members.map((m) => ({ nodeId: m.nodeId, signingKey: bytesToHex(m.signingKey), encryptionKey: bytesToHex(m.encryptionKey) })) }, operator);
const customerNode = (m: Member) => ({ node_id: m.nodeId, signing_key: bytesToHex(m.signingKey), encryption_key: bytesToHex(m.encryptionKey) });

/** Opens a session on every real node among `members` with encoded `params` and waits until each has reported. */
async function run(members: Member[], protocol: Protocol, keyId: string, params: Uint8Array): Promise<Map<string, Outcome>> {
  const sessionId = newSessionId();
  const sid = bytesToHex(sessionId);
  const parties: Party[] = members.map((m, i) => ({ $typeName: 'mpc.v1.Party', nodeId: m.nodeId, index: i + 1, signingKey: m.signingKey, encryptionKey: m.encryptionKey }));
  const open = create(SessionOpenSchema, { sessionId, protocol, keyId, parties, params, deadlineMs: deadlineOf(sessionId) });
  const real = members.map((m) => nodes.get(m.nodeId)).filter((n): n is TestNode => n !== undefined && bytesToHex(n.identity.signingKey) === bytesToHex(members.find((x) => x.nodeId === n.identity.nodeId)!.signingKey));
  for (const n of real) n.host.onOpen(open);
  // A node that joined a session with a party that never speaks waits for it: reported as `joined`.
  const deadline = Date.now() + 10_000;
  while (real.some((n) => !n.outcomes.has(sid)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  // A refusal by some ends the session for the others (the coordinator cancels it).
  for (const n of real) n.host.abortAll('session over');
  return new Map(real.map((n) => [n.identity.nodeId, n.outcomes.get(sid) ?? { failed: { code: 'joined', message: 'still in the session' } }]));
}

let keyCounter = 0;
const dkg = (members: Member[], tier: string, body: Record<string, unknown>, roster: Uint8Array, threshold = tier === 'hosted' ? 2 : members.length, log: Uint8Array[] = trustLog) => {
  const keyId = `vault-${++keyCounter}`;
  return run(members, Protocol.DKG, keyId, dkgParams.encode({
    keyId, owner: ORG, epoch: 0, threshold, tier, trustLog: log, creationRequest: signedEntry(first, 'POST', '/v1/vaults', { tier, ...body }), roster,
  }));
};
/** The organization's signed enrolment of a node (docs/trust.md "Enrolled nodes"). */
const enrol = (m: Member, kind = 'self') => signedEntry(first, 'POST', '/v1/nodes', { kind, ...customerNode(m) });
const revoke = (m: Member) => signedEntry(first, 'POST', `/v1/nodes/${m.nodeId}/revoke`);

const fill48 = (b: number) => new Uint8Array(48).fill(b);
const codes = (m: Map<string, Outcome>) => [...m.values()].map((o) => o.failed?.code ?? 'done');

t.test('a hosted DKG with a fake party seated beside honest nodes: every honest node refuses', async (t) => {
  const [a, b, c] = [await node(t), await node(t), await node(t)];
  const roster = rosterOf(1, [pub(a), pub(b), pub(c)]);
  const ok = await dkg([pub(a), pub(b), pub(c)], 'hosted', {}, roster);
  t.same(codes(ok), ['done', 'done', 'done'], 'the roster committee generates a key');

  // The coordinator runs a party of its own (keys it made, not on the roster) in place of c.
  const outsider = fake();
  const refused = await dkg([pub(a), pub(b), pub(outsider)], 'hosted', {}, roster);
  t.same(codes(refused), ['unverified_committee', 'unverified_committee'], 'both honest nodes refuse');
  t.match([...refused.values()][0]!.failed!.message, /neither on the operator's roster/);

  // The same under c's node id: the roster pins c's keys.
  const impostor = { ...pub(outsider), nodeId: c.identity.nodeId };
  t.same(codes(await dkg([pub(a), pub(b), impostor], 'hosted', {}, roster)), ['unverified_committee', 'unverified_committee'], 'a listed id with other keys is refused');

  // A hosted committee of another shape: all three, but every one required.
  t.same(codes(await dkg([pub(a), pub(b), pub(c)], 'hosted', {}, roster, 3)), ['bad_committee', 'bad_committee', 'bad_committee'], 'hosted is 2-of-3');
  // A roster signed by someone else than the operator.
  const forged = signRoster({ version: 9, created: 1, nodes: [pub(a), pub(b), pub(outsider)].map((m) => ({ nodeId: m.nodeId, signingKey: bytesToHex(m.signingKey), encryptionKey: bytesToHex(m.encryptionKey) })) }, seed('not the operator'));
  t.same(codes(await dkg([pub(a), pub(b), pub(outsider)], 'hosted', {}, forged)), ['bad_roster', 'bad_roster'], 'a roster not signed by an operator key');
});

t.test('a self-tier DKG seats only a node the organization enrolled', async (t) => {
  const [a, b, named, other] = [await node(t), await node(t), await node(t), await node(t)];
  const roster = rosterOf(1, [pub(a), pub(b)]);
  const body = { customer_node: customerNode(pub(named)) };
  // Nothing enrolled: a node that says it is the customer's (or that the request names) is not seated.
  const unenrolled = await dkg([pub(a), pub(named)], 'self', body, roster);
  t.same(codes(unenrolled), ['unverified_committee', 'unverified_committee'], 'a named node that was never enrolled');
  t.match([...unenrolled.values()][0]!.failed!.message, /nor a node org_committee enrolled/);
  t.same(codes(await dkg([pub(a), pub(other)], 'self', {}, roster)), ['unverified_committee', 'unverified_committee'], 'the coordinator\'s choice of an unenrolled node');

  const enrolled = [...trustLog, enrol(pub(named))];
  t.same(codes(await dkg([pub(a), pub(other)], 'self', body, roster, 2, enrolled)), ['unverified_committee', 'unverified_committee'], 'a node the customer did not enrol');
  t.same(codes(await dkg([pub(a), { ...pub(named), encryptionKey: fake().encryptionKey }], 'self', {}, roster, 2, enrolled)), ['unverified_committee', 'identity_mismatch'], 'the enrolled id with another encryption key (the node itself sees its id misused)');
  t.same(codes(await dkg([pub(a), pub(b)], 'self', body, roster, 2, enrolled)), ['bad_committee', 'bad_committee'], 'a self key without the customer node');
  t.same(codes(await dkg([pub(a), pub(named)], 'self', body, roster, 1, enrolled)), ['bad_committee', 'bad_committee'], 'the customer node must be required');
  t.same(codes(await dkg([pub(a), pub(named)], 'customer_tee', {}, roster, 2, enrolled)), ['bad_committee', 'bad_committee'], 'a self node is not seated in a customer_tee key');
  t.same(codes(await dkg([pub(a), pub(named)], 'self', body, roster, 2, enrolled)), ['done', 'done'], 'the enrolled node the request names');
  t.same(codes(await dkg([pub(a), pub(named)], 'self', {}, roster, 2, enrolled)), ['done', 'done'], 'the enrolled node, the request naming none');

  // Another node enrolled too, but the request pins the first: only that one is seated.
  const both = [...enrolled, enrol(pub(other))];
  t.same(codes(await dkg([pub(a), pub(other)], 'self', body, roster, 2, both)), ['unverified_committee', 'unverified_committee'], 'an enrolled node other than the one the request pins');

  // Revoked for good: a later log without the revocation, or enrolling it again, changes nothing.
  t.same(codes(await dkg([pub(a), pub(named)], 'self', {}, roster, 2, [...both, revoke(pub(named))])), ['node_revoked', 'node_revoked'], 'a revoked node');
  t.same(codes(await dkg([pub(a), pub(named)], 'self', {}, roster, 2, [...trustLog, enrol(pub(named))])), ['node_revoked', 'node_revoked'], 'a replayed enrolment does not revive it');
});

t.test('the parties must be exactly the committee the creation request names', async (t) => {
  const [a, b, c, d] = [await node(t), await node(t), await node(t), await node(t)];
  const roster = rosterOf(1, [pub(a), pub(b), pub(c), pub(d)]);
  const shown = { committee: [a, b, c].map((n) => n.identity.nodeId) };
  t.same(codes(await dkg([pub(a), pub(b), pub(d)], 'hosted', shown, roster)), ['unverified_committee', 'unverified_committee', 'unverified_committee'], 'another roster node than shown');
  t.same(codes(await dkg([pub(a), pub(b), pub(c)], 'hosted', shown, roster)), ['done', 'done', 'done'], 'the committee shown');
});

t.test('a roster older than one a node accepted is refused', async (t) => {
  const [a, b, c] = [await node(t), await node(t), await node(t)];
  const v1 = rosterOf(1, [pub(a), pub(b), pub(c)]);
  const v2 = rosterOf(2, [pub(a), pub(b), pub(c)]);
  t.same(codes(await dkg([pub(a), pub(b), pub(c)], 'hosted', {}, v2)), ['done', 'done', 'done'], 'version 2 accepted');
  const stale = await dkg([pub(a), pub(b), pub(c)], 'hosted', {}, v1);
  t.same(codes(stale), ['stale_roster', 'stale_roster', 'stale_roster'], 'version 1 after version 2');
  t.match([...stale.values()][0]!.failed!.message, /older than version 2/);
  t.same(codes(await dkg([pub(a), pub(b), pub(c)], 'hosted', {}, rosterOf(2, [pub(a), pub(b), pub(c), pub(fake())]))), ['bad_roster', 'bad_roster', 'bad_roster'], 'another roster under a version already accepted');
});

t.test('a reshare to the self tier seats only an enrolled customer node', async (t) => {
  const [a, b, c, self] = [await node(t), await node(t), await node(t), await node(t)];
  const roster = rosterOf(1, [pub(a), pub(b), pub(c)]);
  const created = await dkg([pub(a), pub(b), pub(c)], 'hosted', {}, roster);
  const oldPkg = dkgResult.decode([...created.values()][0]!.done!).pkg;
  const keyId = `vault-${keyCounter}`;
  // Dealers a and b (old ids 1 and 2); a and the self node receive (new ids 1 and 2).
  const members = [{ party: 1, oldId: 1, newId: 1 }, { party: 2, oldId: 2 }, { party: 3, newId: 2 }];
  const reshare = (extra: Partial<ReshareSessionParams>) => run([pub(a), pub(b), pub(self)], Protocol.RESHARE, keyId, reshareParams.encode({
    keyId, owner: ORG, oldPkg, newEpoch: 1, newThreshold: 2, members, tier: 'self', roster, trustLog, ...extra,
  }));
  const without = await reshare({});
  t.same(codes(without), ['reshare_request_required', 'reshare_request_required', 'reshare_request_required'], 'the coordinator\'s word moves no vault to a customer node');
  const ask = (body: Record<string, unknown>) => signedEntry(first, 'POST', `/v1/vaults/${keyId}/reshare`, { target_tier: 'self', rotation: 0, committee: [a.identity.nodeId, self.identity.nodeId], ...body });
  const asked = ask({ customer_node: customerNode(pub(self)) });
  t.same(codes(await reshare({ reshareRequest: asked })), ['unverified_committee', 'unverified_committee', 'unverified_committee'], 'named but never enrolled');
  const enrolled = [...trustLog, enrol(pub(self))];
  const other = fake();
  const elsewhere = ask({ committee: [a.identity.nodeId, other.nodeId], customer_node: customerNode(pub(other)) });
  t.same(codes(await reshare({ reshareRequest: elsewhere, trustLog: enrolled })), ['unverified_committee', 'unverified_committee', 'unverified_committee'], 'the customer named another node');
  const unbound = signedEntry(first, 'POST', `/v1/vaults/${keyId}/reshare`, { target_tier: 'self', customer_node: customerNode(pub(self)) });
  t.same(codes(await reshare({ reshareRequest: unbound, trustLog: enrolled })), ['reshare_request_required', 'reshare_request_required', 'reshare_request_required'], 'a request that binds no rotation or committee');
  const moved = await reshare({ reshareRequest: asked, trustLog: enrolled });
  t.same(codes(moved), ['done', 'done', 'done'], 'the enrolled node the customer named');
  t.ok(await self.vault.pending(keyId), 'the self node holds the pending share');

  // The vault commits to self (a and the self node, on their receipts) ...
  const results = [...moved.values()].map((o) => reshareResult.decode(o.done!));
  const receipts = [results[0]!, results[2]!].map((r, i) => ({ party: i + 1, signature: r.receipt! }));
  for (const n of [a, b, self]) t.equal(codes(await run([pub(n)], Protocol.COMMIT_EPOCH, keyId, epochParams.encode({ keyId, epoch: 1, receipts })))[0], 'done');
  t.equal((await self.vault.current(keyId))?.tier, 'self');
  const selfPkg = results[0]!.pkg;

  // ... and a coordinator (with the service nodes) tries to move it back to service nodes.
  const back = (extra: Partial<ReshareSessionParams>) => run([pub(a), pub(self), pub(b), pub(c)], Protocol.RESHARE, keyId, reshareParams.encode({
    keyId, owner: ORG, oldPkg: selfPkg, newEpoch: 2, newThreshold: 2, tier: 'hosted', roster, trustLog: enrolled,
    members: [{ party: 1, oldId: 1, newId: 1 }, { party: 2, oldId: 2 }, { party: 3, newId: 2 }, { party: 4, newId: 3 }], ...extra,
  }));
  const toHosted = (body: Record<string, unknown>) => signedEntry(first, 'POST', `/v1/vaults/${keyId}/reshare`, { target_tier: 'hosted', rotation: 1, committee: [a.identity.nodeId, b.identity.nodeId, c.identity.nodeId], ...body });
  const selfCode = async (extra: Partial<ReshareSessionParams>) => (await back(extra)).get(self.identity.nodeId)?.failed?.code ?? 'done';
  t.equal(await selfCode({}), 'reshare_request_required', 'no request: the customer\'s node refuses to deal');
  t.equal(await selfCode({ reshareRequest: toHosted({ rotation: 0 }) }), 'bad_reshare_request', 'a request made at another rotation (a replay) is refused');
  t.equal(await selfCode({ reshareRequest: toHosted({ target_tier: 'customer_tee' }) }), 'bad_reshare_request', 'a request for another tier is refused');
  t.equal(await selfCode({ reshareRequest: toHosted({ committee: [a.identity.nodeId, b.identity.nodeId, fake().nodeId] }) }), 'unverified_committee', 'a request for another committee is refused');
  t.equal((await self.vault.current(keyId))?.key.pkg.epoch, 1, 'the self node still holds its share of epoch 1');
  t.notOk(await b.vault.pending(keyId), 'no service node received a share');
  t.notOk(await self.vault.dealt(keyId), 'the self node dealt nothing');
  t.equal(await selfCode({ reshareRequest: toHosted({}) }), 'done', 'the customer\'s own request moves it');
});

t.test('a customer_tee DKG seats an enrolled TEE node only with measurements the organization allows', async (t) => {
  const [a, enclave] = [await node(t), await node(t)];
  const roster = rosterOf(1, [pub(a)]);
  const image = { 0: fill48(0x0a), 1: fill48(0x01), 2: fill48(0x02) };
  const hex = (b: Uint8Array) => bytesToHex(b);
  const at = 1_795_000_100;
  const m = pub(enclave);
  const attestation = (userData: Uint8Array, pcrs: Record<number, Uint8Array> = image) => Buffer.from(authority.attest({ at: new Date(at * 1000), pcrs, userData })).toString('base64');
  const binding = teeNodeBinding(ORG, m.nodeId, hex(m.signingKey), hex(m.encryptionKey));
  const enrolTee = (doc: string) => signedEntry(first, 'POST', '/v1/nodes', { kind: 'tee', ...customerNode(m), attestation: doc }, { created: at + 60 });
  const measurements = (version: number, pcr0: Uint8Array) => signedEntry(first, 'PUT', '/v1/tee/measurements', { version, allowed: [{ 0: hex(pcr0) }] });

  // An attestation that binds other keys, or comes from a debug enclave, enrols nothing: the log is refused.
  const otherBinding = teeNodeBinding(ORG, m.nodeId, hex(fake().signingKey), hex(m.encryptionKey));
  t.same(codes(await dkg([pub(a), m], 'customer_tee', {}, roster, 2, [...trustLog, enrolTee(attestation(otherBinding))])), ['bad_trust_log', 'bad_trust_log'], 'user_data binding other keys');
  t.same(codes(await dkg([pub(a), m], 'customer_tee', {}, roster, 2, [...trustLog, enrolTee(attestation(binding, {}))])), ['bad_trust_log', 'bad_trust_log'], 'a debug-mode enclave');
  t.same(codes(await dkg([pub(a), m], 'customer_tee', {}, roster, 2, [...trustLog, signedEntry(first, 'POST', '/v1/nodes', { kind: 'tee', ...customerNode(m) })])), ['bad_trust_log', 'bad_trust_log'], 'no attestation');

  const enrolled = [...trustLog, enrolTee(attestation(binding))];
  t.same(codes(await dkg([pub(a), m], 'customer_tee', {}, roster, 2, enrolled)), ['unpinned_measurements', 'unpinned_measurements'], 'no measurements pinned yet');
  t.same(codes(await dkg([pub(a), m], 'customer_tee', {}, roster, 2, [...enrolled, measurements(1, fill48(0x0b))])), ['unpinned_measurements', 'unpinned_measurements'], 'another image pinned');
  const pinned = [...enrolled, measurements(1, fill48(0x0b)), measurements(2, image[0])];
  t.same(codes(await dkg([pub(a), m], 'self', {}, roster, 2, pinned)), ['bad_committee', 'bad_committee'], 'a tee node is not seated as a self node');
  t.same(codes(await dkg([pub(a), m], 'customer_tee', {}, roster, 2, pinned)), ['done', 'done'], 'the attested image the organization pinned');
  // A replayed older version changes nothing; an upgrade that drops the image stops seating the node.
  t.same(codes(await dkg([pub(a), m], 'customer_tee', {}, roster, 2, [...pinned, measurements(1, image[0])])), ['done', 'done'], 'an older version replayed');
  t.same(codes(await dkg([pub(a), m], 'customer_tee', {}, roster, 2, [...pinned, measurements(3, fill48(0x0c))])), ['unpinned_measurements', 'unpinned_measurements'], 'an upgrade that no longer allows the image');
});

t.test('a node without the dev root refuses a dev attestation', async (t) => {
  const store = await SealedStore.open(mkdtempSync(join(tmpdir(), 'committee-')), new Uint8Array(randomBytes(32)));
  t.teardown(() => store.close());
  const prod = new TrustRegistry(store, { operatorKeys, verifyTee: nitroTeeVerifier({ rootsPem: AWS_NITRO_ROOT_G1_PEM, allowDevRoot: false }) });
  const n = fake();
  const at = 1_795_000_100;
  const doc = authority.attest({ at: new Date(at * 1000), pcrs: { 0: fill48(0x0a), 1: fill48(1), 2: fill48(2) }, userData: teeNodeBinding(ORG, n.nodeId, bytesToHex(n.signingKey), bytesToHex(n.encryptionKey)) });
  const entry = signedEntry(first, 'POST', '/v1/nodes', { kind: 'tee', ...customerNode(pub(n)), attestation: Buffer.from(doc).toString('base64') }, { created: at + 60 });
  await t.rejects(prod.apply(ORG, [...trustLog, entry]), /does not verify: .*not a pinned root/);
  const devRootOnly = new TrustRegistry(store, { operatorKeys, verifyTee: nitroTeeVerifier({ rootsPem: authority.rootPem, allowDevRoot: false }) });
  await t.rejects(devRootOnly.apply(ORG, [...trustLog, entry]), /development root/);
  const none = new TrustRegistry(store, { operatorKeys });
  await t.rejects(none.apply(ORG, [...trustLog, entry]), /verifies no TEE attestation/);
});
