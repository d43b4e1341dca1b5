// The member's money in one view (docs/platform/account-holders.md "Balance"): on a real anvil, a holder
// funded through the sandbox rail and the real issuer sees its wallet's stablecoin equal to the token's
// balanceOf and its native balance equal to the chain's, beside its ledger fiat and its sandbox bank
// accounts; a chain backend that does not answer (or none configured) marks that wallet unavailable with
// null amounts while the rest of the answer stands.
import t from 'tap';
import { erc20Abi, type Hex } from 'viem';
import { startAnvil } from '../../chains/anvil.ts';
import { moneyApp } from './holder-money-app.ts';
import { EvmChain } from '../../../api/chains/evm/evm-chain.ts';
import { evmNetwork } from '../../../core/chains/evm/evm-networks.ts';
import { StablecoinIssuer, UNITS_PER_CENT } from '../../../api/funding/stablecoin-issuer.ts';
import { deployStablecoin } from '../../../api/funding/deploy-stablecoin.ts';
import { FUNDING_REQUESTS } from '../../../api/funding/collections.ts';
import { TOKEN } from '../funding/funding-app.ts';

// anvil's second dev account: the issuer, as in test/api/funding/funding-anvil.unit.ts.
const ISSUER_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as Hex;
const SETTLE = 30_000;

t.test('on a real anvil: the wallet\'s stablecoin is balanceOf, its native balance the chain\'s; fiat and bank beside them', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const net = evmNetwork('evm-local')!;
  const token = await deployStablecoin(net, anvil.url, ISSUER_KEY);
  const made: { issuer?: StablecoinIssuer } = {};
  const chain = new EvmChain(net, anvil.url);
  const s = await moneyApp(t, { settleMs: SETTLE, issuer: (c) => (c === 'evm-local' ? made.issuer : undefined), chains: { evm: (c) => (c === 'evm-local' ? chain : undefined), bitcoin: () => undefined } });
  made.issuer = new StablecoinIssuer({ store: s.store, chain, rpcUrl: anvil.url, issuerKey: ISSUER_KEY, token });
  const m = await s.member();
  const wallet = m.wallet.address as Hex;

  const fund = await s.bearer('POST', '/v1/funding-requests', { account_holder_id: m.id, wallet_id: m.wallet.id, fiat_amount: '12345', currency: 'USD' }, s.acme.owner, { 'idempotency-key': 'f' });
  t.equal(fund.statusCode, 201, fund.body);
  s.clock.advance(SETTLE);
  await s.rail.runDue();
  await anvil.testClient.mine({ blocks: 1 });
  await s.service.runDue();
  t.equal((await FUNDING_REQUESTS.in(s.store).get(fund.json().id))!.status, 'completed', 'minted and final');
  await anvil.testClient.setBalance({ address: wallet, value: 123_456_789n });

  const r = await m.self('GET', 'balance');
  t.equal(r.statusCode, 200, r.body);
  const b = r.json();
  const onChain = await anvil.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [wallet] });
  t.equal(onChain, 12345n * UNITS_PER_CENT);
  t.equal(b.wallets.length, 1);
  const w = b.wallets[0];
  t.match(w, { wallet_id: m.wallet.id, chain: 'evm-local', address: m.wallet.address, status: 'ok', reason: null });
  t.equal(w.block_height, Number(await anvil.publicClient.getBlockNumber()), 'read at the chain\'s head');
  t.same(w.balances, [
    { asset: 'evm-local:native', amount: (await anvil.publicClient.getBalance({ address: wallet })).toString() },
    { asset: `evm-local:${token.toLowerCase()}`, amount: onChain.toString() },
  ], 'native and the configured stablecoin, in base units');
  t.equal(w.balances[0].amount, '123456789');
  t.same(b.fiat, [{ currency: 'USD', amount: '0' }], 'the settled fiat went to the issuer\'s reserve when minted');
  t.same(b.bank, { savings: { balance: '0', currency: 'USD' }, checking: { balance: '100000', currency: 'USD' } }, 'the sandbox bank, opened');
  t.equal(b.account_holder_id, m.id);
  // Rule 5 holds here too.
  t.equal((await m.self('GET', `balance?account_holder_id=${m.id}`)).json().code, 'caller_identity_refused');
  t.equal((await m.self('GET', 'balance', undefined, { 'x-account-holder-id': m.id })).json().code, 'caller_identity_refused');
  t.equal((await m.self('GET', 'balance', undefined, {}, s.acme.owner)).json().code, 'member_session_invalid');
});

t.test('a chain backend that does not answer: that wallet unavailable with null amounts, the rest answered (200)', async (t) => {
  const down = new EvmChain(evmNetwork('evm-local')!, 'http://127.0.0.1:9/rpc', 2_000);
  const s = await moneyApp(t, { settleMs: 1000, chains: { evm: (c) => (c === 'evm-local' ? down : undefined), bitcoin: () => undefined } });
  const m = await s.member();
  // Fiat settled on the ledger; the issuer double's mint is not final, so the fiat is still the holder's.
  const fund = await s.bearer('POST', '/v1/funding-requests', { account_holder_id: m.id, wallet_id: m.wallet.id, fiat_amount: '2500', currency: 'USD' }, s.acme.owner, { 'idempotency-key': 'f' });
  t.equal(fund.statusCode, 201, fund.body);
  s.clock.advance(1000);
  await s.rail.runDue();
  t.equal((await FUNDING_REQUESTS.in(s.store).get(fund.json().id))!.status, 'minting');

  const r = await m.self('GET', 'balance');
  t.equal(r.statusCode, 200, r.body);
  const b = r.json();
  t.same(b.wallets, [{
    wallet_id: m.wallet.id, chain: 'evm-local', address: m.wallet.address, status: 'unavailable', reason: 'chain_unavailable', block_height: null, as_of: null,
    balances: [{ asset: 'evm-local:native', amount: null }, { asset: `evm-local:${TOKEN}`, amount: null }],
  }]);
  t.same(b.fiat, [{ currency: 'USD', amount: '2500' }], 'the ledger fiat is answered');
  t.same(b.bank.checking, { balance: '100000', currency: 'USD' });
  t.notOk(JSON.stringify(b).includes('127.0.0.1'), 'the backend\'s address is not told');
});

t.test('no backend configured for the chain: unavailable, no_backend; no linked wallet: none listed', async (t) => {
  const s = await moneyApp(t);
  const m = await s.member();
  const b = (await m.self('GET', 'balance')).json();
  t.match(b.wallets, [{ wallet_id: m.wallet.id, status: 'unavailable', reason: 'no_backend', balances: [{ amount: null }, { amount: null }] }]);
  t.same(b.fiat, [], 'no fiat account yet');
  const lone = await s.member(s.globex);
  await s.store.batch([{ type: 'del', collection: 'account_holder_vaults', id: lone.id }]);
  t.same((await lone.self('GET', 'balance')).json().wallets, [], 'a holder without a linked vault has no wallets');
});
