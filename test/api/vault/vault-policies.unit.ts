// Vault policies through the API (docs/policies.md): the legacy policy migrated into the trust log by the
// customer's signature, changes governed by the policy in force (quorum, delay), intents admitted only
// with their chain link after the head, fast refusals with the nodes' codes, a transaction waiting for
// approvals, approved, rejected or expired. Every refusal reads state back and shows nothing changed.
// The nodes' own checks of the same evidence: test/node/policy-enforcement.unit.ts and the governance e2e.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { vaultApp } from './vault-app.ts';
import { CustodyClient, CustodyApiError, type Transaction } from '../../../api/sdk/client.ts';
import { approvePolicyChange, chainIntent } from '../../../api/sdk/policy.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { TransactionWorker } from '../../../api/transactions/transaction-worker.ts';
import type { TransactionRecord } from '../../../api/transactions/records.ts';
import type { VaultRecord, WalletRecord } from '../../../api/vaults/records.ts';
import { createLogger } from '../../../common/logger.ts';
import { injectFetch } from '../../support/inject-fetch.ts';
import { waitUntil } from '../../cluster/cluster-harness.ts';
import { signApproval, intentApprovalMessage } from '../../../core/policy/policy-approval.ts';

const BOB = '0x00000000000000000000000000000000000000b0';
const people = ['alice', 'bob', 'carol'].map((id) => ({ id, secretKey: ed25519.utils.randomSecretKey() }));
const approvers = people.map((p) => ({ id: p.id, public_key: bytesToHex(ed25519.getPublicKey(p.secretKey)) }));
const [alice, bob, carol] = people as [typeof people[0], typeof people[0], typeof people[0]];

t.test('policies through the API: migration, governed changes, chained intents, approvals', async (t) => {
  let transactions!: TransactionService;
  const a = await vaultApp(t, { transactions: (vaults) => (transactions = new TransactionService({ vaults, hasBackend: () => true })) });
  const v = await a.vaults.createVault(a.org.id, { tier: 'hosted', policy: { per_transaction_cap: { 'evm-local:native': '1000' } } });
  const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey())), chain_code: bytesToHex(randomBytes(32)) };
  await a.store.batch([a.vaults.vaultOp(active)]);
  const wallet: WalletRecord = (await a.vaults.createWallet(a.org.id, v.id, 'evm-local', 0, undefined)).wallet;
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: a.org.id, keyId: a.creds.keyId, secretKey: a.creds.secretKey, fetch: injectFetch(a.app) });
  const logLength = async () => (await a.vaults.trustLog(a.org.id)).length;
  const events = async (type: string) => {
    const out: Record<string, unknown>[] = [];
    for await (const e of a.store.all<{ type: string; data: Record<string, unknown> }>('outbox')) if (e.type === type) out.push(e.data);
    return out;
  };
  const notAfter = BigInt(Math.floor(Date.now() / 1000) + 3600);
  let nonce = 0n;
  const send = (amount: bigint, key: string, extra: { notAfter?: bigint } = {}) => client.sendEvm({ wallet, to: BOB, amount, idempotencyKey: key, nonce: nonce++, notAfter: extra.notAfter ?? notAfter });

  // The legacy policy, offered as version 1 with the same rules, until the customer signs it.
  const before = await client.getPolicy(v.id);
  t.equal(before.in_force, null, 'no policy in the log yet');
  t.same(before.legacy_policy, { per_transaction_cap: { 'evm-local:native': '1000' } });
  t.same(before.migration?.per_transaction_cap, { 'eip155:31337:native': '1000' }, 'the migration names the asset as nodes do');
  const log0 = await logLength();
  const migrated = await client.migratePolicy(v.id);
  t.equal(migrated.in_force?.version, 1, 'the migration is in force at once (a vault\'s first policy)');
  t.equal(migrated.migration, null, 'nothing left to migrate');
  t.equal(await logLength(), log0 + 1, 'one trust-log entry: the signed PUT');

  // Version 2 names approvers and quorums, and tightens: in force at once.
  const v2 = {
    format: 1, version: 2, vault_id: v.id, change_delay_seconds: 3600, per_transaction_cap: { 'eip155:31337:native': '1000' }, approvers,
    quorums: [
      { k: 2, approvers: ['alice', 'bob', 'carol'], when: { above: { 'eip155:31337:native': '100' } } },
      { k: 2, approvers: ['alice', 'bob', 'carol'], when: { rule: 'policy_change' } },
    ],
  };
  const p2 = await client.putPolicy(v.id, v2);
  t.equal(p2.in_force?.version, 2);
  t.equal(p2.in_force?.tightening, true);

  // Refusals change nothing: a malformed document, a stale version, a change without its quorum.
  const log2 = await logLength();
  const refused = async (body: unknown, status: number, code: string, what: string) => {
    const r = await a.call('PUT', `/v1/vaults/${v.id}/policy`, body);
    t.match([r.statusCode, r.json().code], [status, code], what);
  };
  await refused({ policy: { ...v2, version: 3, bogus: 1 } }, 400, 'bad_policy', 'an unknown field');
  await refused({ policy: { ...v2, version: 2 } }, 409, 'conflict', 'a version not above the latest');
  const v3 = { ...v2, version: 3, per_transaction_cap: { 'eip155:31337:native': '2000' } };
  await refused({ policy: v3 }, 403, 'approval_required', 'a loosening without the change quorum');
  await refused({ policy: v3, approvals: [approvePolicyChange({ fromVersion: 2, next: v3, approverId: 'alice', secretKey: bob.secretKey })] }, 403, 'bad_approval', 'an approval signed by another key');
  await refused({ policy: v3, approvals: [approvePolicyChange({ fromVersion: 1, next: v3, approverId: 'alice', secretKey: alice.secretKey })] }, 403, 'bad_approval', 'an approval of a change from another version');
  t.equal(await logLength(), log2, 'nothing appended');
  t.equal((await client.getPolicy(v.id)).in_force?.version, 2, 'nothing changed');

  // With two approvals the loosening is accepted and waits out the delay; its event says when.
  const p3 = await client.putPolicy(v.id, v3, [alice, bob].map((p) => approvePolicyChange({ fromVersion: 2, next: v3, approverId: p.id, secretKey: p.secretKey })));
  t.equal(p3.in_force?.version, 2, 'version 2 stays in force');
  t.equal(p3.pending[0]?.version, 3);
  t.ok(p3.pending[0]!.effective_at >= Math.floor(Date.now() / 1000) + 3590, 'in force after the delay');
  t.match(await events('vault.policy.changed'), [{ version: 1 }, { version: 2, tightening: true }, { version: 3, tightening: false }], 'an event per accepted version');

  // An intent without its chain link is refused before anything is stored; the SDK links it itself.
  const intent = await client.evmIntent({ wallet, to: BOB, amount: 50n, idempotencyKey: 'raw', nonce: 100n, notAfter });
  const raw = await a.call('POST', '/v1/transactions', { wallet_id: wallet.id, intent: bytesToHex(intent), idempotency_key: 'raw', intent_signature: client.signIntent(intent) });
  t.match([raw.statusCode, raw.json().code], [403, 'chain_link_required']);
  const small = await send(50n, 'small');
  t.equal(small.state, 'created', 'under every quorum: on to signing');
  t.equal(small.policy?.chain_seq, 1);
  const head1 = (await client.getPolicy(v.id)).chain!;
  t.equal(head1.seq, 1);

  // A link that does not follow the head (a concurrent submission took its place) is 409, and the SDK
  // retries with the new head; a link signed by another key is refused.
  const stale = chainIntent({ vaultId: v.id, intent, apiSecretKey: a.creds.secretKey }).bytes;
  const conflict = await a.call('POST', '/v1/transactions', { wallet_id: wallet.id, intent: bytesToHex(intent), idempotency_key: 'raw', intent_signature: client.signIntent(intent), chain_link: bytesToHex(stale) });
  t.match([conflict.statusCode, conflict.json().code], [409, 'chain_conflict']);
  const forged = chainIntent({ vaultId: v.id, intent, prev: undefined, apiSecretKey: ed25519.utils.randomSecretKey() }).bytes;
  const bad = await a.call('POST', '/v1/transactions', { wallet_id: wallet.id, intent: bytesToHex(intent), idempotency_key: 'raw', intent_signature: client.signIntent(intent), chain_link: bytesToHex(forged) });
  t.match([bad.statusCode, bad.json().code], [403, 'bad_chain']);

  // Over the per-transaction cap: the nodes' code, nothing stored, the head unmoved.
  await t.rejects(send(5000n, 'huge'), { status: 403, code: 'cap_exceeded' });
  t.same((await client.getPolicy(v.id)).chain, head1, 'the head did not move');

  // Above 100: waits for 2 of 3 approvals, announced by an event.
  const big = await send(500n, 'big');
  t.equal(big.state, 'awaiting_approval');
  t.match(big.policy?.quorums, [{ k: 2, approved_by: [] }]);
  t.match(await events('transaction.approval_required'), [{ transaction_id: big.id, policy_version: 2, approvals_missing: 2 }]);
  t.same((await client.pendingApprovals(v.id)).map((x) => x.id), [big.id]);

  const approve = (tx: Transaction, body: unknown) => a.call('POST', `/v1/transactions/${tx.id}/approvals`, body);
  const message = intentApprovalMessage(v.id, 2, big.intent_sha256);
  const unknown = await approve(big, signApproval('mallory', message, alice.secretKey));
  t.match([unknown.statusCode, unknown.json().code], [403, 'unknown_approver']);
  const wrongKey = await approve(big, signApproval('alice', message, bob.secretKey));
  t.match([wrongKey.statusCode, wrongKey.json().code], [403, 'bad_approval']);
  const otherVersion = await approve(big, signApproval('alice', intentApprovalMessage(v.id, 1, big.intent_sha256), alice.secretKey));
  t.match([otherVersion.statusCode, otherVersion.json().code], [403, 'bad_approval'], 'an approval under another policy version');
  t.same((await client.getTransaction(big.id)).policy?.approvals, [], 'no approval kept');

  // A malicious API showing other intent bytes than the transaction's hash: the approver's SDK refuses to sign.
  const lying = new CustodyClient({
    baseUrl: 'http://api.test', organization: a.org.id, keyId: a.creds.keyId, secretKey: a.creds.secretKey,
    fetch: async (url, init) => {
      const res = await injectFetch(a.app)(url, init);
      if (init?.method !== 'GET' || !String(url).includes('/v1/transactions/')) return res;
      const body = await res.json() as Transaction;
      return new Response(JSON.stringify({ ...body, policy: { ...body.policy!, intent: bytesToHex(intent) } }), { status: res.status, headers: res.headers });
    },
  });
  await t.rejects(lying.approveTransaction(big.id, alice), { code: 'bad_response' }, 'bytes that do not hash to the transaction\'s intent_sha256 are not approved');

  const one = await client.approveTransaction(big.id, alice, { inspect: (i) => t.equal(i.kind, 'evm.transfer', 'the approver sees the decoded intent') });
  t.equal(one.state, 'awaiting_approval');
  t.same(one.policy?.quorums[0]?.approved_by, ['alice']);
  t.same((await client.approveTransaction(big.id, alice)).policy?.approvals.length, 1, 'the same approver again counts once');
  const two = await client.approveTransaction(big.id, bob);
  t.equal(two.state, 'created', 'two of three: on to signing');
  t.same(two.policy?.approvals.map((x) => x.approver_id), ['alice', 'bob'], 'what the nodes will verify');
  t.same(await client.pendingApprovals(v.id), []);
  const late = await approve(big, signApproval('carol', message, carol.secretKey));
  t.match([late.statusCode, late.json().code], [409, 'conflict'], 'no approvals once on to signing');

  // A rejection by an approver ends it and lets its nonce go.
  const doomed = await send(600n, 'doomed');
  const rejected = await client.approveTransaction(doomed.id, carol, { reject: true });
  t.equal(rejected.state, 'rejected');
  t.match(rejected.reason, /^rejected_by_approver: carol/);
  t.equal(await transactions.nonces.at('evm-local', wallet.address, doomed.nonce!), undefined, 'the nonce is released');
  const afterEnd = await client.approveTransaction(doomed.id, alice).catch((e: unknown) => e);
  t.ok(afterEnd instanceof CustodyApiError && afterEnd.status === 409, 'an ended transaction takes no approval');

  // The chain as the nodes will be shown it: link 2 (the big one, signed after link 3 was made) is relayed
  // with link 1 before it and the links after it up to the head.
  const head = (await client.getPolicy(v.id)).chain!;
  t.equal(head.seq, 3, 'small, big, doomed');
  const relayed = await transactions.policies.relay(v.id, 2, 0, Math.floor(Date.now() / 1000));
  t.equal(relayed.length, 2, 'link 1 and link 3');
  t.equal(bytesToHex(relayed[1]!.intent), (await a.store.get<TransactionRecord>('transactions', doomed.id))!.intent);

  // The chain as the customer reads it, to audit; bad queries are 400 and an unknown vault 404.
  const read = await client.getChain(v.id);
  t.same(read.map((l) => [l.seq, l.transaction_id]), [[1, small.id], [2, big.id], [3, doomed.id]], 'every admitted link, in order, with its transaction');
  t.same((await client.getChain(v.id, { fromSeq: 3, limit: 1 })).map((l) => l.seq), [3]);
  for (const q of ['limit=0', 'limit=1001', 'from_seq=0', 'from_seq=x', 'bogus=1']) {
    const r = await a.call('GET', `/v1/vaults/${v.id}/chain?${q}`);
    t.match([r.statusCode, r.json().code], [400, 'invalid_request'], `chain?${q}`);
  }
  t.equal((await a.call('GET', '/v1/vaults/vlt_nope/chain')).statusCode, 404);

  // Waiting past the intent's not_after: the worker ends it, approval_expired, its nonce released.
  const worker = new TransactionWorker({ vaults: a.vaults, transactions, coordinator: undefined, log: createLogger('worker', 'silent'), pollMs: 100, chains: { evm: () => undefined, bitcoin: () => undefined } });
  worker.start();
  t.teardown(() => worker.stop());
  const brief = await send(700n, 'brief', { notAfter: BigInt(Math.floor(Date.now() / 1000) + 2) });
  t.equal(brief.state, 'awaiting_approval');
  await waitUntil(async () => (await client.getTransaction(brief.id)).state === 'failed', 15_000, 'the waiting transaction to expire', 100);
  t.match((await client.getTransaction(brief.id)).reason, /^approval_expired: .*2 approval\(s\) still missing/);
  t.equal(await transactions.nonces.at('evm-local', wallet.address, brief.nonce!), undefined, 'its nonce is released');
});
