// The export routes (docs/export.md "API"): a request not signed by the calling key, or for another
// vault, is refused and changes nothing; a good one is kept, appended to the trust log the nodes read
// and announced by `vault.export.requested`, and the nodes are asked at once (so their delays start);
// approvals verify before they are kept; collect stores what the nodes sealed, opaque to the API. The
// coordinator is played by the test: the nodes' own checks are test/node/export-share.unit.ts.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { randomBytes } from 'node:crypto';
import { vaultApp } from './vault-app.ts';
import { exportRequestBody, approveExport, newExportRecipient } from '../../../api/sdk/key-export.ts';
import { decodeTrustEntry } from '../../../core/trust/trust-entry.ts';
import type { ExportVaultRequest, ExportedShare } from '../../../proto/gen/mpc/v1/coordinator_pb.ts';
import { OUTBOX } from '../../../api/vaults/collections.ts';

t.test('export requests, approvals and collection through the API', async (t) => {
  const calls: ExportVaultRequest[] = [];
  let answer: Partial<ExportedShare>[] = [];
  const coordinator = {
    exportVault: async (req: ExportVaultRequest) => {
      calls.push(req);
      return { $typeName: 'mpc.v1.ExportVaultResponse', threshold: 2, shares: answer.map((s) => ({ $typeName: 'mpc.v1.ExportedShare', nodeId: '', status: 'waiting', readyAt: 0n, approvals: 0, approvalsNeeded: 0, party: 0, enc: new Uint8Array(), ciphertext: new Uint8Array(), code: '', message: '', ...s })) };
    },
  };
  const a = await vaultApp(t, { coordinator: coordinator as never });
  const created = (await a.call('POST', '/v1/vaults', { tier: 'hosted' })).json() as { id: string };
  await a.store.batch([a.vaults.vaultOp({ ...(await a.vaults.vault(a.org.id, created.id)), state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey())), chain_code: bytesToHex(randomBytes(32)) })]);
  const recipient = await newExportRecipient();
  const requestId = 'exp_' + bytesToHex(randomBytes(10));
  const req = { org: a.org.id, vaultId: created.id, recipientKey: recipient.publicKey, requestId, notBefore: 0 };
  const body = exportRequestBody(req, a.creds.secretKey);
  const logLength = async () => (await a.vaults.trustLog(a.org.id)).length;
  const events = async (type: string) => {
    let n = 0;
    for await (const e of OUTBOX.in(a.store).all()) if (e.type === type) n++;
    return n;
  };
  const before = await logLength();

  const other = exportRequestBody(req, ed25519.utils.randomSecretKey());
  const forged = await a.call('POST', `/v1/vaults/${created.id}/exports`, other);
  t.equal(forged.statusCode, 403, 'a request not signed by the calling key');
  t.equal(forged.json().code, 'bad_export_request');
  const elsewhere = await a.call('POST', `/v1/vaults/${created.id}/exports`, exportRequestBody({ ...req, vaultId: 'vlt_other' }, a.creds.secretKey));
  t.equal(elsewhere.statusCode, 400, 'a request for another vault');
  t.equal((await a.call('POST', `/v1/vaults/${created.id}/exports`, { request: 'zz', signature: body.signature })).statusCode, 400, 'a request that is not hex');
  t.equal(await logLength(), before, 'the trust log is unchanged');
  t.equal((await a.call('GET', `/v1/vaults/${created.id}/exports/${requestId}`)).statusCode, 404, 'and no export exists');
  t.equal(calls.length, 0, 'no node was asked');

  answer = [{ nodeId: 'n1', status: 'waiting', readyAt: 1_900_000_000n, approvalsNeeded: 1 }, { nodeId: 'n2', status: 'waiting', readyAt: 1_900_000_005n, approvalsNeeded: 1 }, { nodeId: 'n3', status: 'failed', code: 'node_not_attached' }];
  const ok = await a.call('POST', `/v1/vaults/${created.id}/exports`, body);
  t.equal(ok.statusCode, 202, 'the customer\'s request is accepted');
  const view = ok.json() as { state: string; nodes: { node_id: string; ready_at: number | null; code: string | null }[]; request_sha256: string };
  t.equal(view.state, 'waiting');
  t.same(view.nodes.map((n) => [n.node_id, n.ready_at, n.code]), [['n1', 1_900_000_000, null], ['n2', 1_900_000_005, null], ['n3', null, 'node_not_attached']], 'each node\'s answer, with when it seals');
  const log = await a.vaults.trustLog(a.org.id);
  t.equal(log.length, before + 1, 'the signed request is appended to the trust log');
  const entry = decodeTrustEntry(log.at(-1)!);
  t.ok(entry.kind === 'request' && entry.url.endsWith(`/v1/vaults/${created.id}/exports`) && JSON.parse(new TextDecoder().decode(entry.body)).request === body.request, 'as the customer signed it');
  t.equal(await events('vault.export.requested'), 1, 'vault.export.requested is emitted');
  t.equal(calls.length, 1, 'the nodes were asked at once');
  t.same([calls[0]!.exportId, calls[0]!.trustLog.length], [requestId, before + 1], 'with the request id and the log that holds the request');

  const again = await a.call('POST', `/v1/vaults/${created.id}/exports`, body);
  t.same([again.statusCode, again.headers['idempotent-replayed']], [202, 'true'], 'the same request again is a replay');
  const reused = await a.call('POST', `/v1/vaults/${created.id}/exports`, exportRequestBody({ ...req, notBefore: 5 }, a.creds.secretKey));
  t.equal(reused.statusCode, 409, 'another request under the same id is a conflict');
  t.same([await logLength(), await events('vault.export.requested'), calls.length], [before + 1, 1, 1], 'neither appended, emitted nor asked anything');

  const approver = ed25519.utils.randomSecretKey();
  const approval = approveExport(body.request, approver);
  const bad = await a.call('POST', `/v1/vaults/${created.id}/exports/${requestId}/approvals`, { ...approval, signature: approveExport(exportRequestBody({ ...req, notBefore: 9 }, a.creds.secretKey).request, approver).signature });
  t.equal(bad.statusCode, 400, 'an approval of other bytes is refused');
  t.equal((await a.call('GET', `/v1/vaults/${created.id}/exports/${requestId}`)).json().approvals.length, 0, 'and not kept');
  const good = await a.call('POST', `/v1/vaults/${created.id}/exports/${requestId}/approvals`, approval);
  t.equal(good.json().approvals.length, 1, 'a valid approval is kept');

  const enc = bytesToHex(randomBytes(32));
  answer = [
    { nodeId: 'n1', status: 'sealed', readyAt: 1_900_000_000n, approvals: 1, approvalsNeeded: 1, party: 1, enc: hexToBytes(enc), ciphertext: new Uint8Array(200).fill(1) },
    { nodeId: 'n2', status: 'sealed', readyAt: 1_900_000_005n, approvals: 1, approvalsNeeded: 1, party: 2, enc: hexToBytes(enc), ciphertext: new Uint8Array(200).fill(2) },
    { nodeId: 'n3', status: 'failed', code: 'node_not_attached' },
  ];
  const collected = await a.call('POST', `/v1/vaults/${created.id}/exports/${requestId}/collect`);
  t.equal(collected.statusCode, 200);
  const done = collected.json() as { state: string; shares: { node_id: string; party: number; ciphertext: string }[] };
  t.equal(done.state, 'sealed', 'two sealed shares of a 2-of-n key: sealed');
  t.same(done.shares.map((s) => [s.node_id, s.party]), [['n1', 1], ['n2', 2]], 'the sealed shares, as the nodes returned them');
  t.same(calls.at(-1)!.approvals.map((x) => bytesToHex(x.approverKey)), [approval.approver_key], 'the approvals went to the nodes');
  t.equal(await events('vault.exported'), 1, 'vault.exported is emitted');
  await a.call('POST', `/v1/vaults/${created.id}/exports/${requestId}/collect`);
  t.equal(await events('vault.exported'), 1, 'once');
});
