// An EVM overspend is refused at checks, unsigned (docs/transactions.md "Lifecycle"): on a real anvil, a
// transfer of more than the wallet holds, one whose value fits but not with its fee ceiling, and an ERC-20
// transfer of more tokens than the wallet holds all end `failed` with `insufficient_funds`, before any
// signing request, with their nonce handed back; a transfer the wallet can pay passes the check and goes
// on to signing (no cluster here, so it ends `signing_unavailable`, which proves it got that far).
import t from 'tap';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { createWalletClient, http, parseEther, type Abi, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { startAnvil } from '../chains/anvil.ts';
import { waitUntil } from '../cluster/cluster-harness.ts';
import { vaultApp } from '../api/vault/vault-app.ts';
import { CustodyClient, type SendEvmParameters } from '../../api/sdk/client.ts';
import { TransactionService } from '../../api/transactions/transaction-service.ts';
import { TransactionWorker } from '../../api/transactions/transaction-worker.ts';
import type { TransactionRecord } from '../../api/transactions/records.ts';
import type { VaultRecord, WalletRecord } from '../../api/vaults/records.ts';
import { EvmChain } from '../../api/chains/evm/evm-chain.ts';
import { ChainError } from '../../api/chains/chain-error.ts';
import { evmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { createLogger } from '../../common/logger.ts';
import { injectFetch } from '../support/inject-fetch.ts';

const require = createRequire(import.meta.url);
const token = require('@openzeppelin/contracts-v4/build/contracts/ERC20PresetFixedSupply.json') as { abi: Abi; bytecode: Hex };
const DEV = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266' as Hex;
const BOB = '0x00000000000000000000000000000000000000b0' as Hex;

t.test('EVM overspends end failed with insufficient_funds at checks, unsigned; a payable transfer goes on to signing', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const chain = new EvmChain(evmNetwork('evm-local')!, anvil.url);
  let transactions!: TransactionService;
  const a = await vaultApp(t, { transactions: (vaults) => (transactions = new TransactionService({ vaults, hasBackend: () => true })) });
  const v = await a.vaults.createVault(a.org.id, { tier: 'hosted' });
  const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey())), chain_code: bytesToHex(randomBytes(32)) };
  await a.store.batch([a.vaults.vaultOp(active)]);
  const wallet = async (account: number): Promise<WalletRecord> => (await a.vaults.createWallet(a.org.id, v.id, 'evm-local', account, undefined)).wallet;
  const poor = await wallet(0);
  const holder = await wallet(1);

  // Funded by ordinary transfers from anvil's first dev account; the holder gets the token's whole supply.
  const dev = createWalletClient({ chain: foundry, transport: http(anvil.url), account: DEV });
  for (const w of [poor, holder]) await anvil.publicClient.waitForTransactionReceipt({ hash: await dev.sendTransaction({ to: w.address as Hex, value: parseEther('1') }) });
  const deployed = await anvil.publicClient.waitForTransactionReceipt({ hash: await dev.deployContract({ abi: token.abi, bytecode: token.bytecode, args: ['Test Dollar', 'TUSD', 1000n, holder.address as Hex] }) });
  const contract = deployed.contractAddress!;

  // The check itself, on the chain: native value plus the fee ceiling, and a token balance.
  await t.resolves(chain.requireFunds(poor.address as Hex, { native: parseEther('1') }), 'exactly the balance is payable');
  await t.rejects(chain.requireFunds(poor.address as Hex, { native: parseEther('1') + 1n }), { code: 'insufficient_funds', permanent: true }, 'one wei more is not');
  await t.rejects(chain.requireFunds(holder.address as Hex, { token: { contract, amount: 1001n } }), { code: 'insufficient_funds', message: /holds 1000 of token/ });
  await t.resolves(chain.requireFunds(holder.address as Hex, { token: { contract, amount: 1000n } }));
  const notToken = await chain.requireFunds(holder.address as Hex, { token: { contract: BOB, amount: 1n } }).then(() => undefined, (e: unknown) => e);
  t.ok(notToken instanceof ChainError && notToken.code === 'would_revert' && notToken.permanent, 'an address that is no token contract is not sent to');

  const worker = new TransactionWorker({
    vaults: a.vaults, transactions, coordinator: undefined, log: createLogger('worker', 'silent'), pollMs: 100, maxSigningAttempts: 1,
    chains: { evm: (c) => (c === 'evm-local' ? chain : undefined), bitcoin: () => undefined },
  });
  worker.start();
  t.teardown(() => worker.stop());

  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: a.org.id, keyId: a.creds.keyId, secretKey: a.creds.secretKey, fetch: injectFetch(a.app) });
  const submit = async (p: SendEvmParameters): Promise<TransactionRecord> => {
    const intent = await client.evmIntent(p);
    const r = await a.call('POST', '/v1/transactions', { wallet_id: p.wallet.id, intent: bytesToHex(intent), idempotency_key: p.idempotencyKey, intent_signature: client.signIntent(intent) });
    t.equal(r.statusCode, 202, r.body);
    const id = (r.json() as { id: string }).id;
    await waitUntil(async () => ['failed', 'rejected', 'signed'].includes((await a.store.get<TransactionRecord>('transactions', id))!.state), 30_000, `transaction ${p.idempotencyKey} to end`, 50);
    return (await a.store.get<TransactionRecord>('transactions', id))!;
  };
  /** Whether anything holds nonce 0 of the wallet (a transaction, or a reservation). */
  const holdsZero = async (w: { address: string }) => (await transactions.nonces.at('evm-local', w.address, 0)) !== undefined;

  const balance = await anvil.publicClient.getBalance({ address: poor.address as Hex });
  const overspends: [string, SendEvmParameters][] = [
    ['more than the balance', { wallet: poor, to: BOB, amount: balance + 1n, idempotencyKey: 'over-value' }],
    // The value fits; with the fee ceiling of a 21,000-gas transfer it does not. This one used to be signed.
    ['the balance, leaving nothing for the fee', { wallet: poor, to: BOB, amount: balance, idempotencyKey: 'over-fee' }],
    ['more tokens than held', { wallet: holder, to: BOB, amount: 1001n, asset: contract, idempotencyKey: 'over-token' }],
  ];
  for (const [what, p] of overspends) {
    const tx = await submit(p);
    t.equal(tx.state, 'failed', `${what}: failed (a chain condition, as Bitcoin's), not rejected`);
    t.match(tx.reason, /^insufficient_funds: /, `${what}: the reason is insufficient_funds (${tx.reason})`);
    t.equal(tx.tx_hash, null, `${what}: nothing was signed`);
    t.equal(tx.raw_tx, undefined);
    t.match(tx.reason, /nonce 0 is released/, `${what}: the reason says the nonce is released`);
    t.notOk(await holdsZero(p.wallet), `${what}: nothing holds the nonce any more`);
  }
  const events: string[] = [];
  for await (const e of a.store.all<{ type: string; data: { reason?: string } }>('outbox')) if (e.type === 'transaction.failed') events.push(e.data.reason ?? '');
  t.equal(events.filter((r) => r.startsWith('insufficient_funds: ')).length, 3, 'each failure is a transaction.failed event with its reason');

  // What the wallets can pay passes the check and goes on to the signing request.
  for (const p of [{ wallet: poor, to: BOB, amount: parseEther('0.5'), idempotencyKey: 'payable' }, { wallet: holder, to: BOB, amount: 1000n, asset: contract, idempotencyKey: 'payable-token' }] as SendEvmParameters[]) {
    const tx = await submit(p);
    t.equal(tx.state, 'failed');
    t.match(tx.reason, /^signing_unavailable: .*no coordinator/, `${p.idempotencyKey}: past the funds check, to signing (${tx.reason})`);
  }
  t.equal(await anvil.publicClient.getTransactionCount({ address: poor.address as Hex }), 0, 'nothing was ever sent from the wallet');
});
