// Key export on three real nodes in one process (session hosts, sealed stores with rollback anchors,
// trust registries, export records), the test playing a malicious API and coordinator (docs/export.md,
// docs/threat-model.md "Key export"):
// - without the customer's signed request in the trust log, no node seals anything or changes a record;
// - a request the API signed itself is refused with the whole log;
// - without the governance's approvals, or with forged, foreign or repeated ones, no share is sealed;
// - the delay runs on each node's clock from its first sight of the request: a backdated not-before,
//   repeated sessions or a parameter cannot shorten it;
// - a coordinator cannot name another recipient: the parameters have no such field, and a sealed share
//   opens only with the customer's recipient key;
// - with the quorum, after the delay, t sealed shares reconstruct the vault's key, whose BIP-32 root
//   matches the vault's xpub; the nodes mark the vault exported and keep their shares.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { HDKey } from '@scure/bip32';
import { Protocol, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import type { SessionHost } from '../../node/runtime/session-host.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import { VaultShareStore } from '../../node/storage/vault-shares.ts';
import { ExportRecords } from '../../node/storage/export-records.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { IntentAuthorizer } from '../../node/runtime/authorization/sign-authorizer.ts';
import { IntentLedger } from '../../node/runtime/authorization/intent-ledger.ts';
import { RosterRegistry } from '../../node/runtime/authorization/roster-registry.ts';
import type { ExportGovernance } from '../../node/runtime/authorization/export-governance.ts';
import { nodeProtocols, type NodeProtocolDeps } from '../../node/runtime/sessions/node-protocols.ts';
import { dkgParams, dkgResult, exportParams, exportResult } from '../../core/session/session-contract.ts';
import type { ExportResult } from '../../core/session/session-results.ts';
import type { KeyPackage } from '../../core/session/key-package.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { signBootstrap } from '../../core/trust/trust-entry.ts';
import { signRoster } from '../../core/trust/roster.ts';
import { encodeExportRequest, exportRequestHash, signExportApproval, type ExportApproval } from '../../core/export/export-request.ts';
import { openExportShare, type SealedExportShare } from '../../core/export/export-share.ts';
import { exportRequestBody, newExportRecipient, reconstructExport } from '../../api/sdk/key-export.ts';
import { extendedPublicKey } from '../../api/vaults/extended-key.ts';
import { createLogger } from '../../common/logger.ts';
import { relayHost, runRelayed, storeRecords, type RelayOutcome } from './relay-host.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';

const seed = (s: string) => sha256(new TextEncoder().encode(s));
const ORG = 'org_export';
const KEY = 'vault-export';
const operator = seed('export operator');
const operatorKeys = [bytesToHex(ed25519.getPublicKey(operator))];
const customer = signer(ORG, seed('export customer key'));
const bootstrap = signBootstrap(ORG, customer.publicKey, 1_795_000_000, operator);
const approverSecrets = [seed('approver a'), seed('approver b'), seed('approver c')];
const approverKeys = approverSecrets.map((s) => ed25519.getPublicKey(s));
const DELAY = 3600;
// Two of the three named approvers; the delay of the node's own view.
const governance: ExportGovernance = { forVault: () => ({ k: 2, approverKeys, delaySeconds: DELAY }) };
// The nodes' clock for export delays, moved by the test.
let clockMs = 1_800_000_000_000;

interface TestNode {
  identity: NodeIdentity;
  host: SessionHost;
  store: SealedStore;
  outcomes: Map<string, RelayOutcome>;
}
const nodes = new Map<string, TestNode>();

async function node(t: Test): Promise<TestNode> {
  const dir = mkdtempSync(join(tmpdir(), 'export-'));
  const storageKey = new Uint8Array(randomBytes(32));
  const store = await SealedStore.open(join(dir, 'db'), storageKey, { anchor: new FileRollbackAnchor(join(dir, 'anchor'), storageKey) });
  t.teardown(async () => {
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  const identity = new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)));
  const trust = new TrustRegistry(store, { operatorKeys });
  const deps: NodeProtocolDeps = {
    vault: new VaultShareStore(store), trust, authorizer: new IntentAuthorizer(trust), ledger: new IntentLedger(store), rosters: new RosterRegistry(store, operatorKeys), identity,
    exportRecords: new ExportRecords(store), exportGovernance: governance, exportNow: () => clockMs,
  };
  const outcomes = new Map<string, RelayOutcome>();
  const host = relayHost(identity, nodes, nodeProtocols(deps), createLogger('test', 'silent'), outcomes);
  const n = { identity, host, store, outcomes };
  nodes.set(identity.nodeId, n);
  return n;
}

const partiesOf = (members: TestNode[]): Party[] =>
  members.map((m, i) => ({ $typeName: 'mpc.v1.Party', nodeId: m.identity.nodeId, index: i + 1, signingKey: m.identity.signingKey, encryptionKey: m.identity.encryptionKey }));

/** An export session at each member alone, as the coordinator opens them (one party, no messages). */
async function exportAt(members: TestNode[], params: Uint8Array): Promise<RelayOutcome[]> {
  return Promise.all(members.map(async (m) => (await runRelayed([m], partiesOf([m]), Protocol.EXPORT_SHARE, KEY, params, 30_000))[0]!));
}

const results = (o: RelayOutcome[]): ExportResult[] => o.map((r) => {
  if (!r.done) throw new Error(`a node failed: ${r.failed?.code}: ${r.failed?.message}`);
  return exportResult.decode(r.done);
});

const sealedOf = (r: ExportResult): SealedExportShare => ({ nodeId: r.nodeId!, party: r.party!, enc: r.enc!, ciphertext: r.ciphertext! });

function changed(before: Map<string, string>, after: Map<string, string>): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys].filter((k) => before.get(k) !== after.get(k)).sort();
}

t.test('an export seals shares only on the customer\'s request, the quorum and the delay, and only to the customer\'s key', async (t) => {
  const members = [await node(t), await node(t), await node(t)];
  const roster = signRoster({ version: 1, created: 1_795_000_001, nodes: members.map((m) => ({ nodeId: m.identity.nodeId, signingKey: bytesToHex(m.identity.signingKey), encryptionKey: bytesToHex(m.identity.encryptionKey) })) }, operator);
  const created = await runRelayed(members, partiesOf(members), Protocol.DKG, KEY, dkgParams.encode({
    keyId: KEY, owner: ORG, epoch: 0, threshold: 2, tier: 'hosted', trustLog: [bootstrap], roster, creationRequest: signedEntry(customer, 'POST', '/v1/vaults', { tier: 'hosted' }),
  }), 30_000);
  t.ok(created.every((o) => o.done), 'the vault is created');
  const pkg: KeyPackage = dkgResult.decode(created[0]!.done!).pkg;
  const snapshot = () => Promise.all(members.map((m) => storeRecords(m.store)));

  const recipient = await newExportRecipient();
  const requestId = 'exp_' + bytesToHex(randomBytes(12));
  // The customer backdates not_before by a year: the delay still runs from each node's first sight.
  const request = { org: ORG, vaultId: KEY, recipientKey: recipient.publicKey, requestId, notBefore: Math.floor(clockMs / 1000) - 365 * 86400 };
  const body = exportRequestBody(request, customer.secret);
  const exportEntry = signedEntry(customer, 'POST', `/v1/vaults/${KEY}/exports`, body);
  const log = [bootstrap, exportEntry];
  const requestHash = exportRequestHash(hexToBytes(body.request));
  const approvals: ExportApproval[] = approverSecrets.slice(0, 2).map((s) => signExportApproval(requestHash, s));

  await t.test('a malicious API cannot start an export without the customer\'s signed request', async (t) => {
    const before = await snapshot();
    const noRequest = await exportAt(members, exportParams.encode({ keyId: KEY, requestId, trustLog: [bootstrap], approvals }));
    t.same(noRequest.map((o) => o.failed?.code), ['export_not_requested', 'export_not_requested', 'export_not_requested'], 'no request in the log: refused');
    // The API signs an export request with a key of its own, under the customer's key id.
    const apiKey = signer(ORG, seed('a key the API made'), customer.keyId);
    const forgedBody = exportRequestBody({ ...request, recipientKey: (await newExportRecipient()).publicKey }, apiKey.secret);
    const forged = await exportAt(members, exportParams.encode({ keyId: KEY, requestId, trustLog: [bootstrap, signedEntry(apiKey, 'POST', `/v1/vaults/${KEY}/exports`, forgedBody)], approvals }));
    t.same(forged.map((o) => o.failed?.code), ['bad_trust_log', 'bad_trust_log', 'bad_trust_log'], 'a request the API signed itself refuses the whole log');
    // The customer's HTTP signature around a canonical request whose own signature is not the customer's.
    const inner = await exportAt(members, exportParams.encode({
      keyId: KEY, requestId, trustLog: [bootstrap, signedEntry(customer, 'POST', `/v1/vaults/${KEY}/exports`, { ...body, signature: forgedBody.signature })], approvals,
    }));
    t.same(inner.map((o) => o.failed?.code), ['bad_trust_log', 'bad_trust_log', 'bad_trust_log'], 'a request whose canonical bytes the key did not sign is refused');
    t.same(changed(before[0]!, (await snapshot())[0]!), [], 'no record of a node changed');
    t.same(changed(before[2]!, (await snapshot())[2]!), [], 'nor of another');
  });

  const firstSeen = clockMs;
  await t.test('the delay starts at each node\'s first sight and cannot be shortened', async (t) => {
    const first = results(await exportAt(members, exportParams.encode({ keyId: KEY, requestId, trustLog: log, approvals })));
    t.same(first.map((r) => r.status), ['waiting', 'waiting', 'waiting'], 'with the request and the quorum, every node waits');
    t.same(first.map((r) => r.readyAt), [0, 1, 2].map(() => Math.ceil(firstSeen / 1000) + DELAY), 'until its first sight plus the delay of its own governance, not the backdated not-before');
    t.ok(first.every((r) => r.nodeId === undefined && r.ciphertext === undefined), 'and reports no ciphertext');
    for (const m of members) t.ok(await m.store.get(`export/${KEY}/${requestId}`), 'each node recorded its first sight');
    clockMs += (DELAY - 1) * 1000;
    const again = results(await exportAt(members, exportParams.encode({ keyId: KEY, requestId, trustLog: log, approvals })));
    t.same(again.map((r) => r.status), ['waiting', 'waiting', 'waiting'], 'a second session one second before the end still waits');
    t.same(again.map((r) => r.readyAt), first.map((r) => r.readyAt), 'repeating the request moves nothing');
    const withDelay = encodeBlob('export-params', { v: 2, keyId: KEY, requestId, trustLog: log, delaySeconds: 0 });
    t.same((await exportAt(members.slice(0, 1), withDelay)).map((o) => o.failed?.code), ['bad_params'], 'a delay in the parameters is refused as an unknown field');
  });

  clockMs = firstSeen + DELAY * 1000;
  await t.test('after the delay, no share is sealed without the quorum', async (t) => {
    const other = exportRequestHash(encodeExportRequest({ ...request, requestId: 'exp_another_request_01' }));
    const cases: [string, ExportApproval[]][] = [
      ['no approvals', []],
      ['one approval', approvals.slice(0, 1)],
      ['one approver twice', [approvals[0]!, approvals[0]!]],
      ['an approver outside the named set', [approvals[0]!, signExportApproval(requestHash, seed('someone else'))]],
      ['an approval of another request', [approvals[0]!, signExportApproval(other, approverSecrets[1]!)]],
      ['an approval under an approver key it is not by', [approvals[0]!, { approverKey: approverKeys[1]!, signature: signExportApproval(requestHash, seed('someone else')).signature }]],
    ];
    for (const [what, given] of cases) {
      const r = results(await exportAt(members, exportParams.encode({ keyId: KEY, requestId, trustLog: log, approvals: given })));
      t.same(r.map((x) => x.status), ['waiting', 'waiting', 'waiting'], `${what}: every node waits`);
      t.ok(r.every((x) => x.approvals < 2 && x.approvalsNeeded === 2 && x.ciphertext === undefined), `${what}: counted below 2, nothing sealed`);
    }
    for (const m of members) t.equal((await new ExportRecords(m.store).exported(KEY)).length, 0, 'no node marked the vault exported');
  });

  await t.test('with the quorum after the delay, t sealed shares reconstruct the vault\'s key, for the recipient only', async (t) => {
    // The coordinator tries to name its own recipient: the parameters have no such field.
    const coordinatorRecipient = await newExportRecipient();
    const substituted = encodeBlob('export-params', { v: 2, keyId: KEY, requestId, trustLog: log, approvals, recipientKey: coordinatorRecipient.publicKey });
    t.same((await exportAt(members.slice(0, 1), substituted)).map((o) => o.failed?.code), ['bad_params'], 'a recipient key in the parameters is refused');

    const sealed = results(await exportAt(members, exportParams.encode({ keyId: KEY, requestId, trustLog: log, approvals })));
    t.same(sealed.map((r) => r.status), ['sealed', 'sealed', 'sealed'], 'every node seals');
    t.same(sealed.map((r) => r.nodeId), members.map((m) => m.identity.nodeId), 'each names itself');
    const shares = sealed.map(sealedOf);
    const ctx = { org: ORG, vaultId: KEY, requestId, requestHash };
    await t.rejects(openExportShare(coordinatorRecipient.secretKey, ctx, shares[0]!), { code: 'bad_export_share' }, 'the coordinator\'s key opens nothing');
    await t.rejects(openExportShare(recipient.secretKey, { ...ctx, requestId: 'exp_another_request_01' }, shares[0]!), { code: 'bad_export_share' }, 'a share opens only for its own export');
    await t.rejects(openExportShare(recipient.secretKey, ctx, { ...shares[0]!, nodeId: shares[1]!.nodeId }), { code: 'bad_export_share' }, 'a share relabelled to another node does not open');
    const plain = await openExportShare(recipient.secretKey, ctx, shares[1]!);
    t.same([plain.party, plain.threshold, bytesToHex(plain.groupKey), bytesToHex(plain.chainCode)], [2, 2, pkg.groupKey, pkg.chainCode], 'a share carries its index, the threshold, the group key and chain code');

    for (const pick of [[0, 1], [1, 2], [0, 2]]) {
      const key = await reconstructExport({
        org: ORG, vaultId: KEY, requestHex: body.request, requestId, recipientSecretKey: recipient.secretKey, sealed: pick.map((i) => shares[i]!),
        expectedPublicKeyHex: pkg.groupKey, expectedChainCodeHex: pkg.chainCode,
      });
      t.equal(key.publicKeyHex, pkg.groupKey, `parties ${pick.map((i) => i + 1).join(' and ')}: the key is the vault's`);
      t.equal(key.xpub, extendedPublicKey(pkg.groupKey, pkg.chainCode, 'production'), 'the extended key\'s public half is the vault\'s xpub');
      t.equal(HDKey.fromExtendedKey(key.xprv).publicExtendedKey, key.xpub, 'the xprv parses and derives it');
    }
    await t.rejects(reconstructExport({ org: ORG, vaultId: KEY, requestHex: body.request, requestId, recipientSecretKey: recipient.secretKey, sealed: shares.slice(0, 1) }), { code: 'bad_export_share' }, 'one share is not enough');
    await t.rejects(reconstructExport({
      org: ORG, vaultId: KEY, requestHex: body.request, requestId, recipientSecretKey: recipient.secretKey, sealed: shares.slice(0, 2), expectedPublicKeyHex: '02' + '11'.repeat(32),
    }), { code: 'bad_export_share' }, 'a key that is not the expected one is refused');

    for (const m of members) {
      const rec = await new ExportRecords(m.store).exported(KEY);
      t.same(rec.map((r) => [r.requestId, r.firstSeenMs]), [[requestId, firstSeen]], 'each node marked the vault exported by this request');
      t.ok(await new VaultShareStore(m.store).current(KEY), 'and keeps its share: an export refuses nothing by itself');
    }
  });

  await t.test('a revoked API key\'s export seals nothing more', async (t) => {
    const revoke = signedEntry(customer, 'POST', `/v1/api-keys/${customer.keyId}/revoke`);
    const r = await exportAt(members, exportParams.encode({ keyId: KEY, requestId, trustLog: [...log, revoke], approvals }));
    t.same(r.map((o) => o.failed?.code), ['bad_export_request', 'bad_export_request', 'bad_export_request'], 'refused once the key that signed it is revoked');
  });
});
