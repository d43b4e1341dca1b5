// A coordinator outage costs latency, not transactions (docs/operations.md "What losing a coordinator
// means"): on a real anvil, a transfer whose signing finds the coordinator unreachable for longer than the
// eight attempts that used to fail it is retried until the coordinator answers and ends `final`; one
// whose intent expires first ends `failed` with a reason that names the coordinator in words, not gRPC text.
// And a coordinator that broadcasts a transfer itself and answers an error does not make it read `failed`:
// the worker finds the intent's transaction at its nonce and follows it to `final`. A signature that
// does not recover the wallet is never broadcast: the transaction says why and signs again.
import t from 'tap';
import { type Hex } from 'viem';
import { waitUntil } from '../cluster/cluster-harness.ts';
import { signingCoordinator } from '../api/wallets/wallet-app.ts';
import { CustodyClient } from '../../api/sdk/client.ts';
import { TransactionWorker } from '../../api/transactions/transaction-worker.ts';
import type { TransactionRecord } from '../../api/transactions/records.ts';
import type { CoordinatorClient } from '../../api/coordinator/coordinator-client.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { decodeIntent, type EvmTransferIntent } from '../../core/intents/intent.ts';
import { decodeBlob } from '../../core/codec/blob.ts';
import { evmSignedTransaction, evmTransaction } from '../../core/chains/evm/evm-transaction.ts';
import { createLogger } from '../../common/logger.ts';
import { anvilWallet } from '../api/wallets/anvil-wallet.ts';
import { injectFetch } from '../support/inject-fetch.ts';

const BOB = '0x00000000000000000000000000000000000000b0' as Hex;

t.test('a transfer waits through a coordinator outage; one whose intent expires first fails naming the coordinator', async (t) => {
  const { anvil, chains, s, secret, chainCode, w } = await anvilWallet(t);
  const real = signingCoordinator(secret, chainCode);
  let down = true;
  let refusedCalls = 0;
  // What the coordinator client throws when no connection can be made (core/rpc/rpc-error.ts).
  let malicious = undefined as ((req: Parameters<CoordinatorClient['sign']>[0]) => ReturnType<CoordinatorClient['sign']>) | undefined;
  const coordinator = {
    sign: async (...args: Parameters<CoordinatorClient['sign']>) => {
      if (malicious) return malicious(args[0]);
      if (down) {
        refusedCalls++;
        throw new CustodyError('rpc_error', '14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:7000');
      }
      return real.sign(...args);
    },
  } as unknown as CoordinatorClient;
  const worker = new TransactionWorker({ vaults: s.vaults, transactions: s.transactions, coordinator, chains, log: createLogger('worker', 'silent'), pollMs: 20, maxRetryDelayMs: 20 });
  worker.start();
  t.teardown(() => worker.stop());
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: s.acme.org, keyId: s.acme.creds.keyId, secretKey: s.acme.creds.secretKey, fetch: injectFetch(s.app) });
  const stored = async (id: string) => (await s.store.get<TransactionRecord>('transactions', id))!;

  const tx = await client.sendEvm({ wallet: w, to: BOB, amount: 1000n, idempotencyKey: 'through-outage' });
  await waitUntil(async () => refusedCalls >= 20, 30_000, 'twenty attempts against the unreachable coordinator', 20);
  t.equal((await stored(tx.id)).state, 'checks', 'still waiting after twenty attempts (eight used to fail it)');
  down = false;
  await waitUntil(async () => {
    const r = await stored(tx.id);
    if (r.state === 'failed' || r.state === 'rejected') throw new Error(`${r.state}: ${r.reason}`);
    if (r.state === 'confirmed') await anvil.testClient.mine({ blocks: 1 });
    return r.state === 'final';
  }, 30_000, 'the transfer to be final once the coordinator is back', 50);
  t.pass('final once the coordinator answered again');

  // An intent that expires during the outage: failed, the reason in words.
  down = true;
  const soon = BigInt(Math.floor(Date.now() / 1000) + 2);
  const short = await client.sendEvm({ wallet: w, to: BOB, amount: 1000n, idempotencyKey: 'expires-in-outage', notAfter: soon });
  await waitUntil(async () => (await stored(short.id)).state === 'failed', 30_000, 'the short-lived transfer to fail', 50);
  const failed = await stored(short.id);
  t.match(failed.reason, /^signing_unavailable: the coordinator could not be reached; the intent expired \(not_after\) while waiting/, 'the reason names the coordinator');
  t.notMatch(failed.reason, /UNAVAILABLE|ECONNREFUSED|No connection/, 'no gRPC text');
  t.match(failed.reason, /nonce \d+ is released/, 'and releases its nonce');

  // A malicious coordinator: it has the intent, the template and the signature, sends the transaction
  // itself and tells the API the signing failed.
  const sent: string[] = [];
  const sneaky = async (req: Parameters<CoordinatorClient['sign']>[0]) => {
    const out = await real.sign(req);
    const intent = decodeIntent(req.authorization!.intent!) as EvmTransferIntent;
    const tpl = decodeBlob<{ nonce: number; gasLimit: string; maxFeePerGas: string; maxPriorityFeePerGas: string }>('evm-template', req.authorization!.template!);
    const unsigned = evmTransaction(intent, { nonce: tpl.nonce, gasLimit: BigInt(tpl.gasLimit), maxFeePerGas: BigInt(tpl.maxFeePerGas), maxPriorityFeePerGas: BigInt(tpl.maxPriorityFeePerGas) });
    const sig = out.signatures[0]!;
    const raw = evmSignedTransaction(unsigned, { r: BigInt(`0x${Buffer.from(sig.subarray(0, 32)).toString('hex')}`), s: BigInt(`0x${Buffer.from(sig.subarray(32)).toString('hex')}`), recovery: out.recoveryIds[0]! });
    sent.push(await anvil.publicClient.sendRawTransaction({ serializedTransaction: raw }));
    throw new CustodyError('rpc_error', '14 UNAVAILABLE: connection reset');
  };
  down = false;
  malicious = sneaky;
  const stolen = await client.sendEvm({ wallet: w, to: BOB, amount: 4321n, idempotencyKey: 'coordinator-broadcasts' });
  await waitUntil(async () => {
    const r = await stored(stolen.id);
    if (r.state === 'failed' || r.state === 'rejected') throw new Error(`${r.state}: ${r.reason}`);
    if (r.state === 'confirmed' || r.state === 'broadcast') await anvil.testClient.mine({ blocks: 1 });
    return r.state === 'final';
  }, 30_000, 'the transfer the coordinator sent to be final', 50);
  t.equal(sent.length, 1, 'the coordinator sent it once');
  t.equal((await stored(stolen.id)).tx_hash, sent[0], 'the record follows the transaction that was sent');

  // A coordinator that answers a signature that does not recover the wallet: nothing is broadcast, the
  // transaction says why while it signs again, and the next good signature goes through.
  let forged = 2;
  malicious = async (req) => {
    const out = await real.sign(req);
    if (forged-- <= 0) return out;
    return { ...out, signatures: out.signatures.map((sig) => sig.map((b, i) => (i === 40 ? b ^ 1 : b))) };
  };
  const checked = await client.sendEvm({ wallet: w, to: BOB, amount: 77n, idempotencyKey: 'forged-signature' });
  await waitUntil(async () => ((await stored(checked.id)).waiting ?? '').startsWith('bad_signature:'), 30_000, 'the bad signature to be recorded', 10);
  t.match((await stored(checked.id)).waiting, /^bad_signature: the signature recovers 0x[0-9a-fA-F]{40}, not the wallet .*; nothing was broadcast, signing again/, 'the reason, while it signs again');
  await waitUntil(async () => {
    const r = await stored(checked.id);
    if (r.state === 'failed' || r.state === 'rejected') throw new Error(`${r.state}: ${r.reason}`);
    if (r.state === 'confirmed' || r.state === 'broadcast') await anvil.testClient.mine({ blocks: 1 });
    return r.state === 'final';
  }, 30_000, 'the transfer to be final with a signature that verifies', 50);
  const receipt = await anvil.publicClient.getTransactionReceipt({ hash: (await stored(checked.id)).tx_hash as Hex });
  t.equal(receipt.from.toLowerCase(), w.address.toLowerCase(), 'mined from the wallet, once its signature verified');
  t.equal(forged, -1, 'signed three times: two forged answers refused, the third taken');
});
