// Tokenization on the local chain (docs/platform/tokenization.md "Operations"): the time from POST mint to the
// operation `confirmed`, beside a plain EVM transfer through the vault API (POST /v1/transactions to
// `confirmed`), both on one stack of real processes (coordinator, three service nodes, the API; the stack of
// test/e2e/tokenization-stack.ts, configured as `npm start` configures it) and one anvil, mining a block per
// transaction as the other EVM benches do. A mint is proposed, then both owner vaults' kind-3 intents (built
// and signed with the SDK) are posted to operations/{opId}/signatures at once, each signed by its vault's
// nodes through the vault transaction path; at the Safe's threshold the API executes it and confirms it on
// chain. The transfer is one vault signature and its broadcast. Both are polled through the API every 10 ms.
import { parseEther, type Hex } from 'viem';
import { startTokenizationStack, type TokenizationStack } from '../../test/e2e/tokenization-stack.ts';
import type { Wallet } from '../../api/sdk/client.ts';
import type { BenchSuite } from '../harness.ts';

let s: TokenizationStack | undefined;
let owners: Wallet[] = [];
let tokenId = '';
let holder = '';
let seq = 0;

async function transfer(): Promise<void> {
  const client = s!.client;
  const tx = await client.sendEvm({ wallet: owners[0]!, to: '0x00000000000000000000000000000000000a11ce', amount: 1n, idempotencyKey: `bench-transfer-${seq++}` });
  const done = await client.waitForTransaction(tx.id, ['confirmed'], { intervalMs: 10, timeoutMs: 60_000 });
  if (done.state !== 'confirmed' && done.state !== 'final') throw new Error(`bench transfer ${done.state}: ${done.reason ?? ''}`);
}

async function mint(): Promise<void> {
  const key = `bench-mint-${seq++}`;
  const op = await s!.propose(tokenId, 'mint', { to: holder, amount: '1' }, key);
  await s!.sign(op, owners, key);
  const done = await s!.settled(tokenId, op.id, 10);
  if (done.state !== 'confirmed') throw new Error(`bench mint ${done.state}: ${JSON.stringify(done.failure)}`);
}

export const suite: BenchSuite = {
  title: 'tokenization',
  async setup() {
    s = await startTokenizationStack();
    const vaults = await Promise.all([s.client.createVault({ tier: 'hosted', name: 'owner-a' }), s.client.createVault({ tier: 'hosted', name: 'owner-b' })]
      .map(async (made) => s!.client.waitForVault((await made).id, undefined, { timeoutMs: 240_000 })));
    owners = await Promise.all(vaults.map((v) => s!.client.createWallet(v.id, { chain: 'evm-local' })));
    await s.anvil!.testClient.setBalance({ address: owners[0]!.address as Hex, value: parseEther('100') });
    holder = '0x00000000000000000000000000000000000b0b00';
    // A 2-of-3 admin Safe: the two vault wallets sign, the third owner is an outside signer that never does.
    const made = await s.platform('POST', '/tokenization/erc20', {
      chain: 'evm-local', name: 'Bench Note', symbol: 'BNOTE', admin: { owners: [...owners.map((w) => ({ wallet_id: w.id })), { address: '0x00000000000000000000000000000000000c0ffe' }], threshold: 2 },
    }, { 'idempotency-key': 'bench-token' });
    if (made.status !== 201) throw new Error(`deploying the bench token: ${JSON.stringify(made.json)}`);
    const token = await s.waitToken(made.json.id, (x) => x.status !== 'deploying', 'the bench token');
    if (token.status !== 'deployed') throw new Error(`the bench token is ${token.status}`);
    tokenId = token.id;
    for (const [path, body] of [['roles/grant', { role: 'MINTER_ROLE', account: token.safe }], ['policies', { minter: token.safe, cap: ((1n << 256n) - 1n).toString(), period_seconds: 86_400 }]] as const) {
      const op = await s.operation(tokenId, path, body, owners, `bench-${path}`);
      if (op.state !== 'confirmed') throw new Error(`${path}: ${op.state}`);
    }
  },
  // Also after a setup that failed halfway (bench/harness.ts): stops only what was started.
  async teardown() {
    await s?.stop();
  },
  cases: [
    { name: 'tokenization.evm-transfer-to-confirmed', runs: 12, warmup: 1, fn: transfer, extra: () => ({ note: 'POST /v1/transactions to confirmed: one vault signature, broadcast, included' }) },
    {
      name: 'tokenization.mint-to-confirmed', baseline: 'tokenization.evm-transfer-to-confirmed', runs: 12, warmup: 1, fn: mint,
      extra: () => ({ note: 'POST mint, two owner vaults\' intents signed at once, execTransaction, confirmed; ratio to the transfer' }),
    },
  ],
};
