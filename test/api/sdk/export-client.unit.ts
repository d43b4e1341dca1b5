// The SDK's key export methods (docs/export.md "From the SDK and the CLI") against the API in this
// process, its coordinator answering as nodes do (the real nodes: test/e2e/governance-journey.ts): the
// request is built and signed with the client's key, an approver refuses a request the API shows for
// another vault, export or recipient key (nothing kept), API errors map to CustodyApiError, and
// waitForExport collects until sealed, reporting each answer, or runs out with WaitTimeoutError.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { randomBytes } from 'node:crypto';
import { vaultApp } from '../vault/vault-app.ts';
import { injectFetch } from '../../support/inject-fetch.ts';
import { CustodyClient, WaitTimeoutError, type VaultExport } from '../../../api/sdk/client.ts';
import { newExportRecipient } from '../../../api/sdk/key-export.ts';
import { decodeExportRequest, exportApprovalMessage, exportRequestHash } from '../../../core/export/export-request.ts';
import type { ExportVaultRequest, ExportedShare } from '../../../proto/gen/mpc/v1/coordinator_pb.ts';

t.test('request, approve, collect and wait from the SDK', async (t) => {
  const calls: ExportVaultRequest[] = [];
  let answer: Partial<ExportedShare>[] = [{ nodeId: 'n1', status: 'waiting', readyAt: 1_900_000_000n }, { nodeId: 'n2', status: 'waiting', readyAt: 1_900_000_000n }];
  const coordinator = {
    exportVault: async (req: ExportVaultRequest) => {
      calls.push(req);
      return { $typeName: 'mpc.v1.ExportVaultResponse', threshold: 2, shares: answer.map((s) => ({ $typeName: 'mpc.v1.ExportedShare', nodeId: '', status: 'waiting', readyAt: 0n, approvals: 0, approvalsNeeded: 0, party: 0, enc: new Uint8Array(), ciphertext: new Uint8Array(), code: '', message: '', ...s })) };
    },
  };
  const a = await vaultApp(t, { coordinator: coordinator as never });
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: a.org.id, keyId: a.creds.keyId, secretKey: a.creds.secretKey, fetch: injectFetch(a.app) });
  const created = (await a.call('POST', '/v1/vaults', { tier: 'hosted' })).json() as { id: string };
  await a.store.batch([a.vaults.vaultOp({ ...(await a.vaults.vault(a.org.id, created.id)), state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey())), chain_code: bytesToHex(randomBytes(32)) })]);
  const recipient = await newExportRecipient();

  const exp = await client.requestExport(created.id, { recipientPublicKey: recipient.publicKey, notBefore: 1_800_000_000 });
  const request = decodeExportRequest(Buffer.from(exp.request, 'hex'));
  t.match(request, { org: a.org.id, vaultId: created.id, requestId: exp.id, notBefore: 1_800_000_000 }, 'the canonical request, built by the SDK');
  t.equal(bytesToHex(request.recipientKey), bytesToHex(recipient.publicKey), 'sealed to the recipient key');
  t.match(exp.id, /^exp_[0-9a-f]{24}$/, 'a fresh request id when none is given');
  t.same([exp.state, exp.shares, calls.length], ['waiting', [], 1], 'accepted (the API checked the client key signed it); the nodes asked once');
  const named = await client.requestExport(created.id, { recipientPublicKey: recipient.publicKey, requestId: 'exp_chosen_by_customer' });
  t.equal(named.id, 'exp_chosen_by_customer', 'or the one given');
  await t.rejects(client.getExport(created.id, 'exp_nothing_here_at_all'), { name: 'CustodyApiError', status: 404 }, 'an unknown export: 404');
  await t.rejects(client.requestExport('vlt_not_a_vault', { recipientPublicKey: recipient.publicKey }), { name: 'CustodyApiError' }, 'another vault: an API error');

  // An API that shows the approver another request the customer signed (another export id): not signed.
  const approver = ed25519.utils.randomSecretKey();
  const lying = (over: (e: VaultExport) => VaultExport) => new CustodyClient({
    baseUrl: 'http://api.test', organization: a.org.id, keyId: a.creds.keyId, secretKey: a.creds.secretKey,
    fetch: async (url, init) => {
      const res = await injectFetch(a.app)(url, init);
      if (init?.method !== 'GET' && init?.method !== undefined) return res;
      return new Response(JSON.stringify(over(await res.json() as VaultExport)), { status: res.status, headers: res.headers });
    },
  });
  await t.rejects(lying((e) => ({ ...e, request: named.request })).approveExportRequest(created.id, exp.id, approver), { code: 'bad_response' }, 'a request of another export id is not approved');
  await t.rejects(lying((e) => ({ ...e, request: 'zz' })).approveExportRequest(created.id, exp.id, approver), { code: 'bad_response' }, 'bytes that are no request are not approved');
  await t.rejects(client.approveExportRequest(created.id, exp.id, approver, { recipientKey: (await newExportRecipient()).publicKey }), { code: 'bad_response' }, 'another recipient key than the approver expects');
  await t.rejects(client.approveExportRequest(created.id, exp.id, approver, { inspect: () => { throw new Error('not this one'); } }), /not this one/, 'inspect refuses');
  t.same((await client.getExport(created.id, exp.id)).approvals, [], 'nothing was kept');

  let seen: string | undefined;
  const approved = await client.approveExportRequest(created.id, exp.id, approver, { recipientKey: recipient.publicKey, inspect: (r) => (seen = r.requestId) });
  t.equal(seen, exp.id, 'inspect saw the decoded request');
  t.same(approved.approvals.map((x) => x.approver_key), [bytesToHex(ed25519.getPublicKey(approver))], 'the approval is kept');
  t.ok(ed25519.verify(Buffer.from(approved.approvals[0]!.signature, 'hex'), exportApprovalMessage(exportRequestHash(Buffer.from(exp.request, 'hex'))), ed25519.getPublicKey(approver)),
    'signed over the approval domain and the request hash');

  const progress: string[] = [];
  await t.rejects(client.waitForExport(created.id, exp.id, { timeoutMs: 1, intervalMs: 1, progress: (e) => progress.push(e.state) }), WaitTimeoutError, 'still waiting: the wait runs out');
  t.ok(progress.length >= 1 && progress.every((s) => s === 'waiting'), 'it reported the nodes\' answers');
  const collectsBefore = calls.length;
  answer = [
    { nodeId: 'n1', status: 'sealed', party: 1, enc: randomBytes(32), ciphertext: randomBytes(200) },
    { nodeId: 'n2', status: 'sealed', party: 2, enc: randomBytes(32), ciphertext: randomBytes(200) },
  ];
  const sealed = await client.waitForExport(created.id, exp.id, { timeoutMs: 60_000, intervalMs: 1, progress: (e) => progress.push(e.state) });
  t.same([sealed.state, sealed.shares.map((s) => s.party), progress.at(-1)], ['sealed', [1, 2], 'sealed'], 'sealed: the shares, and the last answer reported');
  t.ok(calls.length > collectsBefore, 'each wait collects from the nodes');
  t.same(calls.at(-1)!.approvals.map((x) => bytesToHex(x.approverKey)), [bytesToHex(ed25519.getPublicKey(approver))], 'with the approval');
  t.equal((await client.collectExport(created.id, exp.id)).state, 'sealed', 'collectExport');
});
