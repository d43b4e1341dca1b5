// A payment settled on a real chain (docs/platform/payments.md): on anvil, a BYO member's holder is funded
// through the sandbox rail (the issuer mints the stablecoin), pays another holder; the member approves the
// three transfers (principal, tenant fee, platform fee) as one batch member action from a real OpenID
// provider; each intent goes through POST /v1/transactions and the transaction worker's signing path
// (test/api/wallets/wallet-app.ts signingCoordinator stands for the cluster) to `final`; the sweep confirms
// the payment; the chain, the platform ledger and reconciliation agree; and a customer webhook endpoint
// receives payment.confirmed.
import t from 'tap';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { erc20Abi, type Hex } from 'viem';
import { startAnvil } from '../../chains/anvil.ts';
import { waitUntil } from '../../cluster/cluster-harness.ts';
import { signingCoordinator } from '../wallets/wallet-app.ts';
import { paymentsApp, withMember, PLATFORM_COLLECTOR, TENANT_COLLECTOR } from './payments-app.ts';
import { EvmChain } from '../../../api/chains/evm/evm-chain.ts';
import { evmNetwork } from '../../../core/chains/evm/evm-networks.ts';
import { deployStablecoin } from '../../../api/funding/deploy-stablecoin.ts';
import { UNITS_PER_CENT } from '../../../api/funding/stablecoin-issuer.ts';
import { FUNDING_REQUESTS } from '../../../api/funding/collections.ts';
import { TransactionWorker, type Chains } from '../../../api/transactions/transaction-worker.ts';
import { TRANSACTIONS } from '../../../api/transactions/collections.ts';
import { createLogger } from '../../../common/logger.ts';
import { holderStablecoin, PlatformLedger } from '../../../api/ledger/platform-ledger.ts';
import { reconcileStablecoin } from '../../../api/ledger/reconciliation.ts';
import { ACCOUNT_HOLDER_VAULTS } from '../../../api/account-holders/collections.ts';
import { WALLETS } from '../../../api/vaults/collections.ts';
import { platformFees, tenantFees } from '../../../api/payments/payments.ts';

// anvil's second dev account: the stablecoin's issuer, never a customer's key.
const ISSUER_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as Hex;

t.test('funded through the sandbox rail, paid to another holder with one batch approval, confirmed on anvil; chain, ledger and webhook agree', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const net = evmNetwork('evm-local')!;
  const token = await deployStablecoin(net, anvil.url, ISSUER_KEY);
  const asset = `evm-local:${token}`;
  const keyFile = join(mkdtempSync(join(tmpdir(), 'issuer-')), 'issuer.key');
  writeFileSync(keyFile, ISSUER_KEY);
  const chain = new EvmChain(net, anvil.url);
  const chains: Chains = { evm: (c) => (c === 'evm-local' ? chain : undefined), bitcoin: () => undefined };
  const s = await paymentsApp(t, {
    chains, clock: () => Date.now(),
    env: { API_FUNDING_RAIL: 'sandbox', API_SANDBOX_RAIL_SETTLE_MS: '0', API_FUNDING_STABLECOINS: `evm-local=${token}`, API_FUNDING_ISSUER_KEY_FILE: keyFile, API_CHAIN_BACKENDS: `evm-local=${anvil.url}` },
  });
  const secret = secp256k1.utils.randomSecretKey();
  const amount = 2500n * UNITS_PER_CENT;
  const m = await withMember(t, s, () => 0, { token, secret, amount });
  const payer = m.ada.wallet.address as Hex;
  await anvil.testClient.setBalance({ address: payer, value: 10n ** 18n });
  const balanceOf = (a: string) => anvil.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [a as Hex] });

  // A customer webhook endpoint for payment.confirmed.
  const received: { type: string; data: Record<string, unknown> }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => { body += c.toString(); });
    req.on('end', () => { received.push(JSON.parse(body)); res.writeHead(200).end(); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const ep = await s.bearer('POST', '/v1/webhook-endpoints', { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, events: ['payment.confirmed'] });
  t.equal(ep.statusCode, 201, ep.body);

  // Funding: USD 100.00 through the sandbox rail; the issuer mints to the payer's wallet.
  const f = await s.bearer('POST', '/v1/funding-requests', { account_holder_id: m.ada.id, wallet_id: m.ada.wallet.id, fiat_amount: '10000', currency: 'USD' }, s.acme.owner, { 'idempotency-key': 'fund' });
  t.equal(f.statusCode, 201, f.body);
  await waitUntil(async () => {
    await anvil.testClient.mine({ blocks: 1 });
    return (await FUNDING_REQUESTS.in(s.store).get(f.json().id))!.status === 'completed';
  }, 60_000, 'the funding to complete', 300);
  const funded = 10000n * UNITS_PER_CENT;
  t.equal(await balanceOf(payer), funded, 'minted to the payer');

  // The payment; its fees (tenant 30 bps + 1, platform 10 bps + 5) move on chain too.
  const p = await m.pay();
  const fees = { tenant: amount * 30n / 10000n + 1n, platform: amount * 10n / 10000n + 5n };
  t.same(p.transfers.map((x) => [x.role, x.amount]), [['principal', amount.toString()], ['tenant_fee', fees.tenant.toString()], ['platform_fee', fees.platform.toString()]]);
  const a = await m.approve(p);
  const worker = new TransactionWorker({ vaults: s.vaults, transactions: s.transactions, coordinator: signingCoordinator(secret, new Uint8Array(32).fill(7)), chains, log: createLogger('worker', 'silent'), pollMs: 50 });
  worker.start();
  t.teardown(() => worker.stop());
  for (const i of a.intents) t.equal((await m.submit(i, a.signing)).statusCode, 202);
  await s.service.runDue();
  const submitted = await m.get(p.id);
  t.equal(submitted.status, 'submitted');
  await waitUntil(async () => {
    await anvil.testClient.mine({ blocks: 1 });
    const txs = await Promise.all(submitted.transactions.map((x) => TRANSACTIONS.in(s.store).get(x.transaction_id)));
    return txs.every((x) => x?.state === 'final');
  }, 90_000, 'the three transactions to be final', 300);
  await s.service.runDue();
  t.match(await m.get(p.id), { status: 'confirmed' });

  // The chain.
  const total = amount + fees.tenant + fees.platform;
  t.equal(await balanceOf(payer), funded - total, 'the payer paid the amount and both fees');
  t.equal(await balanceOf(m.bob.wallet.address), amount, 'the payee received the amount');
  t.equal(await balanceOf(TENANT_COLLECTOR), fees.tenant, 'the tenant\'s collector received its fee');
  t.equal(await balanceOf(PLATFORM_COLLECTOR), fees.platform, 'the platform\'s collector received its fee');
  for (const x of submitted.transactions) {
    const tx = (await TRANSACTIONS.in(s.store).get(x.transaction_id))!;
    const receipt = await anvil.publicClient.getTransactionReceipt({ hash: tx.tx_hash as Hex });
    t.equal(receipt.from.toLowerCase(), payer.toLowerCase(), `${x.role}: sent from the payer's wallet`);
  }

  // The ledger agrees with the chain, and reconciliation finds no difference.
  const ledger = new PlatformLedger(s.store);
  t.equal(await ledger.balance(holderStablecoin(m.ada.id, asset), asset), funded - total);
  t.equal(await ledger.balance(holderStablecoin(m.bob.id, asset), asset), amount);
  t.equal(await ledger.balance(tenantFees(s.acme.sandbox.id), asset), fees.tenant);
  t.equal(await ledger.balance(platformFees(), asset), fees.platform);
  const rec = await reconcileStablecoin({
    ledger, workspace: s.acme.sandbox.id, blockOf: () => chain.tip(), balanceOf: (_a, address, block) => chain.tokenBalance(token, address as Hex, block),
    addressesOf: async (holder) => {
      const link = (await ACCOUNT_HOLDER_VAULTS.in(s.store).get(holder))!;
      return Promise.all(link.wallets.map(async (w) => (await WALLETS.in(s.store).get(w.wallet_id))!.address));
    },
  });
  t.equal(rec.lines.length, 2, 'both holders reconciled');
  t.same(rec.differences, [], 'reconciliation: no difference');

  // The customer's endpoint receives payment.confirmed.
  await waitUntil(async () => {
    await s.platform.deliveries.runDue();
    return received.some((e) => e.type === 'payment.confirmed');
  }, 30_000, 'the webhook delivery', 200);
  t.match(received.find((e) => e.type === 'payment.confirmed')!.data, { payment_id: p.id, status: 'confirmed', amount: amount.toString(), asset });
  await s.service.runDue();
  t.equal((await ledger.entriesOf(holderStablecoin(m.ada.id, asset))).length, 4, 'one funding entry and three payment entries: a repeat sweep writes nothing twice');
});
