// Funding against a real chain (docs/platform/funding.md): on a real anvil, the issuer (a separate anvil
// account, the minter of an ERC20PresetMinterPauser it deployed) mints when the sandbox rail settles a
// funding request; the holder wallet's ERC-20 balance equals the ledger and reconciliation reports no
// difference. Then the off-ramp's on-chain leg: the holder's transfer to the burn address (sent here as
// the holder's address, as the transaction worker would broadcast it) is found by its Transfer log, and
// the request moves to payout only once that transfer is final. A mint outside the flows shows as a
// reconciliation difference.
import t from 'tap';
import { createWalletClient, erc20Abi, http, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { startAnvil } from '../../chains/anvil.ts';
import { fundingApp, BURN } from './funding-app.ts';
import { EvmChain } from '../../../api/chains/evm/evm-chain.ts';
import { evmNetwork } from '../../../core/chains/evm/evm-networks.ts';
import { StablecoinIssuer, UNITS_PER_CENT } from '../../../api/funding/stablecoin-issuer.ts';
import { deployStablecoin } from '../../../api/funding/deploy-stablecoin.ts';
import { holderStablecoin } from '../../../api/ledger/platform-ledger.ts';
import { FUNDING_REQUESTS, OFF_RAMP_REQUESTS } from '../../../api/funding/collections.ts';
import { TRANSACTIONS } from '../../../api/transactions/collections.ts';
import { txIndex } from '../../../api/transactions/transaction-service.ts';
import type { TransactionRecord } from '../../../api/transactions/records.ts';

// anvil's second dev account: the issuer, never a customer's key.
const ISSUER_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as Hex;
const SETTLE = 30_000;

t.test('a funding request settles, the issuer mints, the chain agrees with the ledger; the off-ramp finds the burn transfer on chain', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const net = evmNetwork('evm-local')!;
  const token = await deployStablecoin(net, anvil.url, ISSUER_KEY);
  // The issuer keeps its nonces in the API's store: made once the app's store exists.
  const made: { issuer?: StablecoinIssuer } = {};
  const s = await fundingApp(t, { settleMs: SETTLE, issuer: (c) => (c === 'evm-local' ? made.issuer : undefined) });
  const real = made.issuer = new StablecoinIssuer({ store: s.store, chain: new EvmChain(net, anvil.url), rpcUrl: anvil.url, issuerKey: ISSUER_KEY, token });
  t.equal(real.asset, `evm-local:${token}`);
  t.equal(real.address, privateKeyToAccount(ISSUER_KEY).address, 'the issuer is its own account');

  const h = await s.holder();
  const wallet = h.wallet.address as Hex;
  const fund = async (cents: string, key: string) => {
    const r = await s.bearer('POST', '/v1/funding-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, fiat_amount: cents, currency: 'USD' }, s.acme.owner, { 'idempotency-key': key });
    t.equal(r.statusCode, 201, r.body);
    return r.json().id as string;
  };
  const a = await fund('150000', 'a');
  const b = await fund('2575', 'b');
  s.clock.advance(SETTLE);
  await s.rail.runDue();
  for (const id of [a, b]) t.equal((await FUNDING_REQUESTS.in(s.store).get(id))!.status, 'minting', 'settled, minting');
  const mints = await Promise.all([a, b].map(async (id) => (await FUNDING_REQUESTS.in(s.store).get(id))!.mint!));
  t.not(mints[0]!.nonce, mints[1]!.nonce, 'two mints, two issuer nonces');
  // anvil mines each transaction at once; the chain's finality depth (2) needs one block more.
  await anvil.testClient.mine({ blocks: 1 });
  await s.service.runDue();
  const done = await Promise.all([a, b].map(async (id) => (await FUNDING_REQUESTS.in(s.store).get(id))!));
  t.same(done.map((r) => r.status), ['completed', 'completed']);
  for (const r of done) {
    const receipt = await anvil.publicClient.getTransactionReceipt({ hash: r.mint!.tx_hash as Hex });
    t.equal(receipt.from.toLowerCase(), real.address.toLowerCase(), 'the mint is the issuer\'s transaction');
    t.equal(receipt.to?.toLowerCase(), token, 'to the stablecoin');
  }
  const want = (150000n + 2575n) * UNITS_PER_CENT;
  const onChain = await anvil.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [wallet] });
  t.equal(onChain, want, 'the wallet holds what was funded');
  t.equal(await s.ledger.balance(holderStablecoin(h.id, real.asset), real.asset), onChain, 'the ledger equals the chain');
  const rec = await s.service.reconcile({ tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id });
  t.equal(rec.lines.length, 1);
  t.same(rec.differences, [], 'reconciliation: no difference');
  t.same(rec.lines[0], { account_holder_id: h.id, asset: real.asset, addresses: [wallet.toLowerCase()], block_number: rec.lines[0]!.block_number, ledger_balance: want.toString(), chain_balance: want.toString(), difference: '0' });

  // Off-ramp: the holder sends exactly 25.75 to the burn address from its wallet.
  const units = 2575n * UNITS_PER_CENT;
  const ofr = await s.bearer('POST', '/v1/off-ramp-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, stablecoin_amount: units.toString(), currency: 'USD' }, s.acme.owner, { 'idempotency-key': 'o' });
  t.equal(ofr.statusCode, 201, ofr.body);
  const ofrId = ofr.json().id as string;
  await anvil.testClient.setBalance({ address: wallet, value: 10n ** 18n });
  await anvil.testClient.impersonateAccount({ address: wallet });
  const holderClient = createWalletClient({ chain: foundry, transport: http(anvil.url), account: wallet });
  const hash = await holderClient.writeContract({ address: token, abi: erc20Abi, functionName: 'transfer', args: [BURN as Hex, units], account: wallet, chain: foundry });
  await anvil.publicClient.waitForTransactionReceipt({ hash });
  s.clock.advance(1000);
  const created = new Date(s.clock.now()).toISOString();
  // The vault-API transaction as the worker leaves it once final.
  const tx = {
    id: 'txn_0000000000000000000000burn', org: h.wallet.org, vault_id: h.vault.id, wallet_id: h.wallet.id, chain: 'evm-local', family: 'evm', state: 'final',
    idempotency_key: 'burn', request_hash: 'x', intent: '', intent_signature: '', api_key_id: 'key_x', intent_sha256: 'x',
    transfers: [{ recipient: BURN, asset: real.asset, amount: units.toString() }], tx_hash: hash, reason: null, fee: '1', created_at: created, updated_at: created,
  } as TransactionRecord;
  await s.store.batch([TRANSACTIONS.putOp(tx.id, tx, { index: txIndex(tx) })]);
  await s.service.advanceOffRamp(ofrId);
  t.equal((await OFF_RAMP_REQUESTS.in(s.store).get(ofrId))!.status, 'awaiting_transfer', 'mined but not final yet: nothing moves');
  await anvil.testClient.mine({ blocks: 1 });
  await s.service.advanceOffRamp(ofrId);
  const confirmed = (await OFF_RAMP_REQUESTS.in(s.store).get(ofrId))!;
  t.equal(confirmed.status, 'payout_pending', 'the Transfer log to the burn address is final: the payout is submitted');
  t.equal(confirmed.tx_hash, hash);
  s.clock.advance(SETTLE);
  await s.rail.runDue();
  t.equal((await OFF_RAMP_REQUESTS.in(s.store).get(ofrId))!.status, 'completed');
  t.same((await s.service.reconcile({ tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id })).differences, [], 'still no difference after the redemption');

  // Stablecoin that reaches the wallet outside the flows is a difference, reported.
  const issuerWallet = createWalletClient({ chain: foundry, transport: http(anvil.url), account: privateKeyToAccount(ISSUER_KEY) });
  const extra = await issuerWallet.writeContract({ address: token, abi: [{ type: 'function', name: 'mint', stateMutability: 'nonpayable', inputs: [{ name: 'to', type: 'address' }, { name: 'amount', type: 'uint256' }], outputs: [] }], functionName: 'mint', args: [wallet, 7n] });
  await anvil.publicClient.waitForTransactionReceipt({ hash: extra });
  const diff = await s.service.reconcile({ tenant: s.acme.tenant.id, workspace: s.acme.sandbox.id });
  t.same(diff.differences.map((d) => [d.account_holder_id, d.difference]), [[h.id, '7']]);
});
