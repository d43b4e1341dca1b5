// TokenEscrow on a real chain (contracts/TokenEscrow.sol, docs/platform/escrows.md "The contract"): on
// anvil, with the sandbox stablecoin, a deposit pulls exactly the amount from the payer, only the payer
// releases to the payee, the payee refunds at any time and the payer only from refundableAfter on; every
// refusal reverts with its named error and moves nothing.
import t, { type Test } from 'tap';
import { BaseError, ContractFunctionRevertedError, createWalletClient, erc20Abi, http, parseEventLogs, type Abi, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { startAnvil, type Anvil } from '../../chains/anvil.ts';
import { evmNetwork } from '../../../core/chains/evm/evm-networks.ts';
import { deployStablecoin, stablecoinArtifact } from '../../../api/funding/deploy-stablecoin.ts';
import { deployEscrow } from '../../../api/escrow/deploy-escrow.ts';
import { onchainEscrowId, tokenEscrowArtifact, TOKEN_ESCROW_ABI } from '../../../api/escrow/token-escrow.ts';

// anvil's development accounts ("test test … junk"): 1 issues the token, 8 deploys the escrow, 2 pays, 3 is paid, 4 a stranger.
const KEYS = {
  issuer: '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  deployer: '0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97',
  payer: '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  payee: '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  stranger: '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
} as const satisfies Record<string, Hex>;
const abi = tokenEscrowArtifact().abi;
const UNIT = 10n ** 18n;

async function setup(t: Test) {
  const anvil: Anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const net = evmNetwork('evm-local')!;
  const token = await deployStablecoin(net, anvil.url, KEYS.issuer);
  const escrow = await deployEscrow(net, anvil.url, KEYS.deployer);
  const client = (k: keyof typeof KEYS) => createWalletClient({ chain: foundry, transport: http(anvil.url), account: privateKeyToAccount(KEYS[k]) });
  const addr = (k: keyof typeof KEYS) => privateKeyToAccount(KEYS[k]).address;
  const wait = async (hash: Hex) => {
    const r = await anvil.publicClient.waitForTransactionReceipt({ hash });
    if (r.status !== 'success') throw new Error(`${hash} reverted`);
    return r;
  };
  await wait(await client('issuer').writeContract({ address: token, abi: stablecoinArtifact().abi, functionName: 'mint', args: [addr('payer'), 1000n * UNIT] }));
  const balance = (who: Hex) => anvil.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [who] });
  /** Sends `fn(args)` from `who` to the escrow and waits; the receipt. */
  const call = async (who: keyof typeof KEYS, fn: string, args: unknown[]) => wait(await client(who).writeContract({ address: escrow, abi: abi as Abi, functionName: fn, args }));
  /** The custom error `fn(args)` from `who` reverts with (simulated: nothing is sent). */
  const revertOf = async (who: keyof typeof KEYS, fn: string, args: unknown[]): Promise<string> => {
    try {
      await anvil.publicClient.simulateContract({ address: escrow, abi: abi as Abi, functionName: fn, args, account: addr(who) });
    } catch (err) {
      const r = err instanceof BaseError ? err.walk((e) => e instanceof ContractFunctionRevertedError) : undefined;
      if (r instanceof ContractFunctionRevertedError) return r.data?.errorName === 'Error' || !r.data ? (r.reason ?? 'reverted') : r.data.errorName;
      throw err;
    }
    return 'no revert';
  };
  const approve = async (amount: bigint, who: keyof typeof KEYS = 'payer') => wait(await client(who).writeContract({ address: token, abi: erc20Abi, functionName: 'approve', args: [escrow, amount] }));
  const state = async (id: Hex, payer: Hex = addr('payer')) => anvil.publicClient.readContract({ address: escrow, abi: TOKEN_ESCROW_ABI, functionName: 'escrowOf', args: [payer, id] });
  const now = async () => (await anvil.publicClient.getBlock()).timestamp;
  const mintTo = async (who: keyof typeof KEYS, amount: bigint) => wait(await client('issuer').writeContract({ address: token, abi: stablecoinArtifact().abi, functionName: 'mint', args: [addr(who), amount] }));
  return { anvil, token, escrow, addr, balance, call, revertOf, approve, state, now, mintTo };
}

t.test('deposit, then the payer releases to the payee', async (t) => {
  const c = await setup(t);
  t.equal(await c.anvil.publicClient.getCode({ address: c.escrow }), tokenEscrowArtifact().deployed_bytecode, 'the chain holds the artifact\'s deployed bytecode: what anyone compares');
  const id = onchainEscrowId('esc_release');
  const after = (await c.now()) + 86_400n;
  t.equal(await c.revertOf('payer', 'deposit', [id, c.token, c.addr('payee'), 100n * UNIT, after]), 'ERC20: insufficient allowance', 'no approval: transferFrom refuses');
  await c.approve(100n * UNIT);
  const dep = await c.call('payer', 'deposit', [id, c.token, c.addr('payee'), 100n * UNIT, after]);
  t.equal(await c.balance(c.addr('payer')), 900n * UNIT, 'pulled from the payer');
  t.equal(await c.balance(c.escrow), 100n * UNIT, 'held by the contract');
  const [d] = parseEventLogs({ abi: TOKEN_ESCROW_ABI, logs: dep.logs, eventName: 'Deposited' });
  t.same(d!.args, { id, payer: c.addr('payer'), payee: c.addr('payee'), token: d!.args.token, amount: 100n * UNIT, refundableAfter: after });
  t.equal(d!.args.token.toLowerCase(), c.token, 'the token');
  const s = await c.state(id);
  t.same({ ...s, token: s.token.toLowerCase() }, { token: c.token, payer: c.addr('payer'), payee: c.addr('payee'), amount: 100n * UNIT, refundableAfter: after, state: 1 }, 'the view: funded');

  t.equal(await c.revertOf('payee', 'release', [id]), 'NotFunded', 'the payee cannot release: under its address the id names nothing');
  t.equal(await c.revertOf('stranger', 'release', [id]), 'NotFunded', 'nor anyone else');
  t.equal(await c.revertOf('payer', 'deposit', [id, c.token, c.addr('payee'), 1n, after]), 'EscrowExists', 'an id is deposited once');
  const rel = await c.call('payer', 'release', [id]);
  const [r] = parseEventLogs({ abi: TOKEN_ESCROW_ABI, logs: rel.logs, eventName: 'Released' });
  t.same(r!.args, { id, payer: c.addr('payer'), payee: c.addr('payee'), amount: 100n * UNIT });
  t.equal(await c.balance(c.addr('payee')), 100n * UNIT, 'paid to the payee');
  t.equal(await c.balance(c.escrow), 0n);
  t.equal((await c.state(id)).state, 2, 'released');
  t.equal(await c.revertOf('payer', 'release', [id]), 'NotFunded', 'a second release is refused');
  t.equal(await c.revertOf('payee', 'refund', [c.addr('payer'), id]), 'NotFunded', 'and a refund after release');
  t.equal(await c.revertOf('payer', 'deposit', [id, c.token, c.addr('payee'), 1n, after]), 'EscrowExists', 'a released id is never reused');
});

t.test('the payee refunds at any time; the payer only from refundableAfter on', async (t) => {
  const c = await setup(t);
  const a = onchainEscrowId('esc_payee_refund');
  const b = onchainEscrowId('esc_payer_refund');
  const after = (await c.now()) + 3600n;
  await c.approve(300n * UNIT);
  await c.call('payer', 'deposit', [a, c.token, c.addr('payee'), 100n * UNIT, after]);
  await c.call('payer', 'deposit', [b, c.token, c.addr('payee'), 200n * UNIT, after]);
  t.equal(await c.balance(c.escrow), 300n * UNIT);

  t.equal(await c.revertOf('stranger', 'refund', [c.addr('payer'), a]), 'NotPayerOrPayee', 'a stranger cannot refund');
  t.equal(await c.revertOf('payee', 'refund', [c.addr('payee'), a]), 'NotFunded', 'the id under another payer is another escrow');
  const ref = await c.call('payee', 'refund', [c.addr('payer'), a]);
  const [e] = parseEventLogs({ abi: TOKEN_ESCROW_ABI, logs: ref.logs, eventName: 'Refunded' });
  t.same(e!.args, { id: a, payer: c.addr('payer'), amount: 100n * UNIT, by: c.addr('payee') }, 'refunded by the payee, before refundableAfter');
  t.equal(await c.balance(c.addr('payer')), 800n * UNIT, 'back to the payer');
  t.equal((await c.state(a)).state, 3, 'refunded');
  t.equal(await c.revertOf('payer', 'release', [a]), 'NotFunded', 'a refunded escrow cannot be released');

  t.equal(await c.revertOf('payer', 'refund', [c.addr('payer'), b]), 'NotRefundableYet', 'the payer must wait');
  await c.anvil.testClient.setNextBlockTimestamp({ timestamp: after });
  await c.anvil.testClient.mine({ blocks: 1 });
  const back = await c.call('payer', 'refund', [c.addr('payer'), b]);
  const [f] = parseEventLogs({ abi: TOKEN_ESCROW_ABI, logs: back.logs, eventName: 'Refunded' });
  t.equal(f!.args.by, c.addr('payer'), 'the payer took it back at refundableAfter');
  t.equal(await c.balance(c.addr('payer')), 1000n * UNIT);
  t.equal(await c.balance(c.escrow), 0n, 'the contract holds nothing');
  t.equal(await c.revertOf('payee', 'refund', [c.addr('payer'), b]), 'NotFunded', 'a second refund is refused');
});

t.test('refused deposits move nothing', async (t) => {
  const c = await setup(t);
  const id = onchainEscrowId('esc_refused');
  const after = (await c.now()) + 3600n;
  await c.approve(100n * UNIT);
  t.equal(await c.revertOf('payer', 'deposit', [id, c.token, c.addr('payee'), 0n, after]), 'ZeroAmount');
  t.equal(await c.revertOf('payer', 'deposit', [id, c.token, c.addr('payer'), 1n, after]), 'InvalidParty', 'payer and payee differ');
  t.equal(await c.revertOf('payer', 'deposit', [id, c.token, '0x0000000000000000000000000000000000000000', 1n, after]), 'InvalidParty', 'a payee is required');
  t.equal(await c.revertOf('payer', 'release', [id]), 'NotFunded', 'nothing to release');
  t.equal(await c.revertOf('payee', 'refund', [c.addr('payer'), id]), 'NotFunded', 'nothing to refund');
  t.equal(await c.revertOf('payer', 'deposit', [id, c.token, c.addr('payee'), 101n * UNIT, after]), 'ERC20: insufficient allowance', 'more than approved');
  t.equal(await c.balance(c.addr('payer')), 1000n * UNIT);
  t.equal(await c.balance(c.escrow), 0n);
  t.equal((await c.state(id)).state, 0, 'never deposited');
});

t.test('an id seen in a pending deposit cannot be taken first: escrows are keyed by their payer', async (t) => {
  const c = await setup(t);
  const id = onchainEscrowId('esc_front_run');
  const after = (await c.now()) + 3600n;
  // A stranger deposits first under the payer's id, with other terms (its own token units, itself paid).
  await c.mintTo('stranger', 1n);
  await c.approve(1n, 'stranger');
  await c.call('stranger', 'deposit', [id, c.token, c.addr('payee'), 1n, after]);
  t.equal((await c.state(id, c.addr('stranger'))).state, 1, 'the stranger\'s escrow exists, under the stranger');
  t.equal((await c.state(id)).state, 0, 'the payer\'s escrow under the same id is untouched');
  await c.approve(100n * UNIT);
  await c.call('payer', 'deposit', [id, c.token, c.addr('payee'), 100n * UNIT, after]);
  t.match(await c.state(id), { payer: c.addr('payer'), amount: 100n * UNIT, state: 1 }, 'the payer still deposits with its own terms');
  await c.call('payer', 'release', [id]);
  t.equal((await c.state(id, c.addr('stranger'))).state, 1, 'releasing one leaves the other');
});
