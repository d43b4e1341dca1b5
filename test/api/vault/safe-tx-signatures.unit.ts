// POST /v1/transactions with a Safe transaction intent (kind 3, docs/intents.md): the SDK builds and
// signs it, the worker asks the cluster for the SafeTx digest's signature (no template, no chain backend
// needed) and the transaction ends `signed` with the owner's 65-byte signature, which recovers to the
// wallet over protocol-kit's SafeTx hash. A retry returns the same transaction; what the nodes would
// refuse is refused first with 400 or 403 and stores nothing; a refusal by the nodes rejects it; a
// signature that does not recover is never stored.
import t from 'tap';
import { getAddress, recoverAddress, toHex as viemHex, type Hex } from 'viem';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { calculateSafeTransactionHash } from '@safe-global/protocol-kit';
import { walletApp, signingCoordinator } from '../wallets/wallet-app.ts';
import { CustodyClient } from '../../../api/sdk/client.ts';
import { TransactionWorker } from '../../../api/transactions/transaction-worker.ts';
import type { TransactionRecord } from '../../../api/transactions/records.ts';
import type { CoordinatorClient } from '../../../api/coordinator/coordinator-client.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { decodeIntent, encodeIntent, signIntent, type SafeTxIntent } from '../../../core/intents/intent.ts';
import { safeTxHash, SAFE_DELEGATECALL_TARGETS } from '../../../core/chains/evm/safe-tx.ts';
import { createLogger } from '../../../common/logger.ts';
import { injectFetch } from '../../support/inject-fetch.ts';
import { waitUntil } from '../../cluster/cluster-harness.ts';

const SAFE = '0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a';
const TOKEN = '0x7070707070707070707070707070707070707070';
const MINT = '0x40c10f19000000000000000000000000b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b200000000000000000000000000000000000000000000000000000000000003e8';

t.test('a Safe owner signature through the vault API and the SDK', async (t) => {
  // No chain backend at all: a Safe transaction's signature is returned, never broadcast.
  const s = await walletApp(t, { hasBackend: () => false });
  const { vault, secret, chainCode } = await s.activeVault(s.acme.org, undefined, { recipient_allowlist: [TOKEN, SAFE] });
  const w = await s.wallet(s.acme.org, vault.id);
  const real = signingCoordinator(secret, chainCode);
  const asked: Parameters<CoordinatorClient['sign']>[0][] = [];
  let answer: ((req: Parameters<CoordinatorClient['sign']>[0]) => ReturnType<CoordinatorClient['sign']>) | undefined;
  const coordinator = {
    sign: async (...args: Parameters<CoordinatorClient['sign']>) => {
      asked.push(args[0]);
      return answer ? answer(args[0]) : real.sign(...args);
    },
  } as unknown as CoordinatorClient;
  const worker = new TransactionWorker({ vaults: s.vaults, transactions: s.transactions, coordinator, chains: { evm: () => undefined, bitcoin: () => undefined }, log: createLogger('worker', 'silent'), pollMs: 20, maxRetryDelayMs: 20 });
  worker.start();
  t.teardown(() => worker.stop());
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: s.acme.org, keyId: s.acme.creds.keyId, secretKey: s.acme.creds.secretKey, fetch: injectFetch(s.app) });
  const stored = async (id: string) => (await s.store.get<TransactionRecord>('transactions', id))!;
  const count = async () => (await client.listTransactions({ wallet_id: w.id, limit: 100 })).data.length;

  const params = { wallet: w, safe: SAFE, to: TOKEN, data: MINT, safeNonce: 3n, idempotencyKey: 'safe-mint-3' };
  const submitted = await client.signSafeTx(params);
  t.equal(submitted.kind, 'safe_tx');
  t.match(submitted.state, /created|checks/, 'accepted in an early state');
  const { signature, safeTxHash: digest, transaction } = await client.safeTxSignature(submitted.id, { timeoutMs: 30_000 });
  t.equal(transaction.state, 'signed', 'its last state is signed');
  t.match(signature, /^0x[0-9a-f]{130}$/, '65 bytes r || s || v');
  t.ok(['1b', '1c'].includes(signature.slice(-2)), 'v is 27 or 28');
  const intent = decodeIntent(asked[0]!.authorization!.intent!) as SafeTxIntent;
  const theirs = calculateSafeTransactionHash(getAddress(SAFE), {
    to: getAddress(TOKEN), value: '0', data: MINT, operation: 0, safeTxGas: '0', baseGas: '0', gasPrice: '0', gasToken: getAddress(viemHex(new Uint8Array(20))), refundReceiver: getAddress(viemHex(new Uint8Array(20))), nonce: 3,
  } as never, '1.4.1', 31337n);
  t.equal(digest, theirs, 'the SafeTx hash is protocol-kit\'s');
  t.equal(await recoverAddress({ hash: theirs as Hex, signature: signature as Hex }), getAddress(w.address), 'the signature recovers to the wallet, the Safe owner');
  t.same(transaction.safe_tx, { safe: SAFE, chain_id: '31337', nonce: '3', to: TOKEN, operation: 0, safe_tx_hash: theirs });
  t.same(transaction.transfers, [], 'nothing of the wallet\'s own moves');
  t.equal(transaction.tx_hash, null, 'nothing broadcast');
  // What the cluster was asked: the intent's digest, ECDSA at the wallet's path, no template.
  t.equal(asked.length, 1);
  t.same([...(asked[0]!.digests ?? [])[0]!], [...safeTxHash(intent)]);
  t.equal(asked[0]!.authorization!.template!.length, 0, 'no template');

  // A retry is the same transaction, signed once.
  const again = await client.signSafeTx(params);
  t.equal(again.id, submitted.id, 'the same idempotency key returns the same transaction');
  t.equal(again.signature, signature, 'with the same signature');
  await new Promise((r) => setTimeout(r, 200));
  t.equal(asked.length, 1, 'and the cluster was not asked again');
  t.equal((await stored(submitted.id)).state, 'signed', 'it stays signed');

  // Bad input: a clear 400 (or 403), nothing stored.
  const before = await count();
  const post = (body: Record<string, unknown>) => s.signed('POST', '/v1/transactions', body);
  const bodyOf = (over: Partial<SafeTxIntent>, key: string) => {
    const base = decodeIntent(client.safeTxIntent({ ...params, idempotencyKey: key })) as SafeTxIntent;
    const bytes = encodeIntent({ ...base, ...over });
    return { wallet_id: w.id, intent: bytesToHex(bytes), idempotency_key: key, intent_signature: bytesToHex(signIntent(bytes, s.acme.creds.secretKey)) };
  };
  const refusals: [string, Record<string, unknown>, number, RegExp][] = [
    ['an owner that is not the wallet', bodyOf({ owner: new Uint8Array(20).fill(0xee) }, 'bad-owner'), 400, /owner address/],
    ['another chain', bodyOf({ chainId: 1n }, 'bad-chain'), 400, /chain id 1/],
    ['a delegatecall elsewhere', bodyOf({ operation: 1, to: hexToBytes(TOKEN.slice(2)) }, 'bad-delegatecall'), 400, /MultiSendCallOnly/],
    ['a call target the policy does not allow', bodyOf({ to: new Uint8Array(20).fill(0x66) }, 'bad-target'), 403, /allow list/],
    ['an intent of another wallet id', bodyOf({ walletId: 'wal_other' }, 'bad-wallet'), 400, /another wallet/],
    ['a signature over other bytes', { ...bodyOf({}, 'bad-sig'), intent_signature: bodyOf({ safeNonce: 4n }, 'bad-sig').intent_signature }, 403, /did not verify/],
  ];
  for (const [what, body, status, message] of refusals) {
    const res = await post(body);
    t.equal(res.statusCode, status, `${what}: ${status}`);
    t.match(res.json().error, message, what);
  }
  const truncated = bodyOf({}, 'truncated');
  const res = await post({ ...truncated, intent: (truncated.intent as string).slice(0, -2) });
  t.equal(res.statusCode, 400, 'a truncated intent: 400');
  t.equal(res.json().code, 'invalid_request');
  t.equal(await count(), before, 'nothing was stored for any of them');
  await t.rejects(Promise.resolve().then(() => client.safeTxIntent({ ...params, safe: '0x1234' })), { code: 'bad_intent' }, 'the SDK refuses a malformed Safe address');

  // A batch through MultiSendCallOnly: the policy's allow list names call targets, and a batch's own
  // calls are not read, so a vault with an allow list signs a batch only when it lists MultiSendCallOnly.
  await t.rejects(client.signSafeTx({ ...params, to: SAFE_DELEGATECALL_TARGETS[0]!, operation: 1, data: '0x8d80ff0a', safeNonce: 4n, idempotencyKey: 'safe-batch-4' }), { status: 403, code: 'forbidden' }, 'a batch, MultiSendCallOnly not allow-listed');
  const open = await s.activeVault(s.acme.org);
  const w2 = await s.wallet(s.acme.org, open.vault.id);
  answer = signingCoordinator(open.secret, open.chainCode).sign;
  const batch = await client.signSafeTx({ ...params, wallet: w2, to: SAFE_DELEGATECALL_TARGETS[0]!, operation: 1, data: '0x8d80ff0a', safeNonce: 4n, idempotencyKey: 'safe-batch-4b' });
  const batchSig = await client.safeTxSignature(batch.id, { timeoutMs: 30_000 });
  t.equal(batchSig.transaction.safe_tx?.operation, 1, 'a vault without an allow list signs a delegatecall into MultiSendCallOnly');
  t.equal(await recoverAddress({ hash: batchSig.safeTxHash as Hex, signature: batchSig.signature as Hex }), getAddress(w2.address), 'by its own wallet');
  answer = undefined;
  t.equal(await count(), before + 0, 'the refused batch stored nothing for the first wallet');

  // A signature that does not recover the wallet is not stored; the signing runs again.
  let forged = 1;
  answer = async (req) => {
    const out = await real.sign(req);
    if (forged-- <= 0) return out;
    return { ...out, signatures: out.signatures.map((sig) => sig.map((b, i) => (i === 40 ? b ^ 1 : b))) };
  };
  const checked = await client.signSafeTx({ ...params, safeNonce: 5n, idempotencyKey: 'safe-forged' });
  const good = await client.safeTxSignature(checked.id, { timeoutMs: 30_000 });
  t.equal(await recoverAddress({ hash: good.safeTxHash as Hex, signature: good.signature as Hex }), getAddress(w.address), 'the stored signature is one that recovers');
  t.equal(forged, -1, 'the forged answer was refused, the next one taken');

  // The nodes refuse: the transaction is rejected with their reason, and the SDK says so.
  answer = async () => {
    throw new CustodyError('digest_mismatch', 'the digests asked for are not the ones this intent and template produce');
  };
  const refused = await client.signSafeTx({ ...params, safeNonce: 6n, idempotencyKey: 'safe-refused' });
  await waitUntil(async () => (await stored(refused.id)).state === 'rejected', 30_000, 'the refused signing to be rejected', 20);
  t.match((await stored(refused.id)).reason, /^signers refused: digest_mismatch/);
  await t.rejects(client.safeTxSignature(refused.id, { timeoutMs: 5_000 }), { code: 'not_signed' });
  t.notOk((await stored(refused.id)).signature, 'no signature');
});
