// An escrow funded and released through the vault API's real signing path (docs/platform/escrows.md
// "Funding and releasing"): the customer's backend builds each of the escrow's calls as an intent with the
// SDK (native asset, amount 0, the calldata the escrow answered), signs it with its API key and submits
// it to POST /v1/transactions; the transaction worker has it signed (a stand-in coordinator holding the
// vault's key), broadcasts it to a real anvil and follows it to finality. The escrow service sees the
// contract move and the ledger follows; the API itself signs nothing.
import t from 'tap';
import { bytesToHex } from '@noble/hashes/utils.js';
import { erc20Abi, http, createWalletClient, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { waitUntil } from '../../cluster/cluster-harness.ts';
import { anvilWallet } from '../wallets/anvil-wallet.ts';
import { signingCoordinator } from '../wallets/wallet-app.ts';
import { CustodyClient } from '../../../api/sdk/client.ts';
import { TransactionWorker } from '../../../api/transactions/transaction-worker.ts';
import type { TransactionRecord } from '../../../api/transactions/records.ts';
import { createLogger } from '../../../common/logger.ts';
import { evmNetwork } from '../../../core/chains/evm/evm-networks.ts';
import { deployStablecoin, stablecoinArtifact } from '../../../api/funding/deploy-stablecoin.ts';
import { deployEscrow } from '../../../api/escrow/deploy-escrow.ts';
import { EscrowChain } from '../../../api/escrow/escrow-chain.ts';
import { EscrowService, escrowAccount, escrowView } from '../../../api/escrow/escrow-service.ts';
import { PlatformLedger, holderStablecoin } from '../../../api/ledger/platform-ledger.ts';
import { CustomerLinks } from '../../../api/customers/customer-links.ts';
import { ACCOUNT_HOLDER_VAULTS, VAULT_ACCOUNT_HOLDERS } from '../../../api/account-holders/collections.ts';
import { ISSUER_KEY, DEPLOYER_KEY, UNIT } from './escrow-app.ts';
import { injectFetch } from '../../support/inject-fetch.ts';

t.test('approve, deposit and release as customer-signed vault-API transactions; the escrow follows the chain', async (t) => {
  const { anvil, chains, s, vault, secret, chainCode, w, address } = await anvilWallet(t);
  const net = evmNetwork('evm-local')!;
  const token = await deployStablecoin(net, anvil.url, ISSUER_KEY);
  const contract = await deployEscrow(net, anvil.url, DEPLOYER_KEY);
  const issuer = createWalletClient({ chain: foundry, transport: http(anvil.url), account: privateKeyToAccount(ISSUER_KEY) });
  await anvil.publicClient.waitForTransactionReceipt({ hash: await issuer.writeContract({ address: token, abi: stablecoinArtifact().abi, functionName: 'mint', args: [address, 300n * UNIT] }) });

  // Two active holders of Acme's sandbox workspace: the payer holds the vault's wallet, the payee another vault's.
  const holder = async () => {
    const made = await s.bearer('POST', '/v1/account-holders', { type: 'individual', given_name: 'Ada', family_name: 'Lovelace' });
    const id = made.json().id as string;
    for (const [v, patch] of [[1, { verification_status: 'pending' }], [2, { verification_status: 'verified' }], [3, { status: 'active' }]] as const) {
      const r = await s.bearer('PATCH', `/v1/account-holders/${id}`, patch, s.acme.owner, { 'if-match': `"${v}"` });
      if (r.statusCode !== 200) throw new Error(r.body);
    }
    return id;
  };
  const link = async (holderId: string, vaultId: string, walletId: string) => {
    const now = new Date().toISOString();
    await s.store.batch([
      ACCOUNT_HOLDER_VAULTS.putOp(holderId, { v: 1, account_holder_id: holderId, tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id, org: s.acme.org, vault_id: vaultId, chains: ['evm-local'], wallets: [{ chain: 'evm-local', wallet_id: walletId }], linked_at: now, updated_at: now }),
      VAULT_ACCOUNT_HOLDERS.putOp(vaultId, { v: 1, account_holder_id: holderId }),
    ]);
  };
  const payer = await holder();
  await link(payer, vault.id, w.id);
  const payee = await holder();
  const other = await s.activeVault(s.acme.org);
  const payeeWallet = await s.wallet(s.acme.org, other.vault.id);
  await link(payee, other.vault.id, payeeWallet.id);

  const escrowChain = new EscrowChain(net, anvil.url, contract);
  const ledger = new PlatformLedger(s.store);
  const service = new EscrowService({
    store: s.store, audit: s.platform.audit, cursors: s.platform.cursors, deliveries: s.platform.deliveries, links: new CustomerLinks(s.store), ledger,
    escrow: (c) => (c === 'evm-local' ? escrowChain : undefined), stablecoin: (c) => (c === 'evm-local' ? token : undefined), fundingWindowMs: 3_600_000, clock: Date.now,
  });
  const scope = { tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id };
  const refundable = new Date(Math.floor(Date.now() / 1000) * 1000 + 7 * 86_400_000).toISOString();
  const e = await service.create(scope, { type: 'api_key', id: 'key_test' }, { payer_account_holder_id: payer, payer_wallet_id: w.id, payee_account_holder_id: payee, amount: (120n * UNIT).toString(), refundable_after: refundable }, 'vault-path');
  const { calls } = escrowView(e);

  const worker = new TransactionWorker({ vaults: s.vaults, transactions: s.transactions, coordinator: signingCoordinator(secret, chainCode), chains, log: createLogger('worker', 'silent'), pollMs: 50 });
  worker.start();
  t.teardown(() => worker.stop());
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: s.acme.org, keyId: s.acme.creds.keyId, secretKey: s.acme.creds.secretKey, fetch: injectFetch(s.app) });
  const stored = async (id: string) => (await s.store.get<TransactionRecord>('transactions', id))!;
  /** The customer's backend: the call as an intent (native asset, amount 0, the calldata), signed with its API key, submitted, followed to final. */
  const send = async (call: { to: Hex; data: Hex }, key: string) => {
    const intent = await client.evmIntent({ wallet: w, to: call.to, amount: 0n, data: call.data, idempotencyKey: key });
    const r = await s.signed('POST', '/v1/transactions', { wallet_id: w.id, intent: bytesToHex(intent), idempotency_key: key, intent_signature: client.signIntent(intent) });
    t.equal(r.statusCode, 202, r.body);
    const id = r.json().id as string;
    await waitUntil(async () => {
      const state = (await stored(id)).state;
      if (state === 'failed' || state === 'rejected') throw new Error(`${id} ended ${state}: ${(await stored(id)).reason}`);
      if (state === 'confirmed') await anvil.testClient.mine({ blocks: 1 });
      return state === 'final';
    }, 60_000, `${id} to be final`, 100);
    return stored(id);
  };

  await send(calls.funding[0], 'escrow-approve');
  t.equal(await anvil.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'allowance', args: [address, contract] }), 120n * UNIT, 'the wallet approved the contract for the amount');
  await service.runDue();
  t.equal((await service.get(scope, e.id)).status, 'awaiting_funding');
  const dep = await send(calls.funding[1], 'escrow-deposit');
  await service.runDue();
  const funded = await service.get(scope, e.id);
  t.match(funded, { status: 'funded', deposit_tx_hash: dep.tx_hash });
  t.equal(await anvil.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [contract] }), 120n * UNIT, 'the contract holds it');
  t.match(await escrowChain.escrowAt(address as Hex, e.escrow_id as Hex), { state: 'funded', payer: address.toLowerCase(), payee: payeeWallet.address.toLowerCase(), amount: 120n * UNIT });

  const rel = await send(calls.release, 'escrow-release');
  await service.runDue();
  t.match(await service.get(scope, e.id), { status: 'released', settlement_tx_hash: rel.tx_hash });
  t.equal(await anvil.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [payeeWallet.address as Hex] }), 120n * UNIT, 'the payee\'s wallet holds it');
  t.equal(await ledger.balance(escrowAccount(e.id, e.asset), e.asset), 0n);
  t.equal(await ledger.balance(holderStablecoin(payee, e.asset), e.asset), 120n * UNIT);
  t.same((await service.reconcile(scope)).differences, [], 'the escrow account agrees with the contract');
});
