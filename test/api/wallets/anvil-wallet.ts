// A real anvil, both APIs over it (wallet-app.ts) and an active vault whose key the test holds, with
// its first EVM wallet funded with 1 ETH from anvil's first dev account: what the tests that send
// through the transaction worker on a real chain start from.
import type { Test } from 'tap';
import { createWalletClient, http, parseEther, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { startAnvil } from '../../chains/anvil.ts';
import { walletApp } from './wallet-app.ts';
import type { Chains } from '../../../api/transactions/transaction-worker.ts';
import { EvmChain } from '../../../api/chains/evm/evm-chain.ts';
import { evmNetwork } from '../../../core/chains/evm/evm-networks.ts';

export const DEV = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266' as Hex;

export async function anvilWallet(t: Test) {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const chain = new EvmChain(evmNetwork('evm-local')!, anvil.url);
  const chains: Chains = { evm: (c) => (c === 'evm-local' ? chain : undefined), bitcoin: () => undefined };
  const s = await walletApp(t, { chains });
  const { vault, secret, chainCode } = await s.activeVault(s.acme.org);
  const w = await s.wallet(s.acme.org, vault.id);
  const address = w.address as Hex;
  const dev = createWalletClient({ chain: foundry, transport: http(anvil.url), account: DEV });
  await anvil.publicClient.waitForTransactionReceipt({ hash: await dev.sendTransaction({ to: address, value: parseEther('1') }) });
  return { anvil, chain, chains, s, vault, secret, chainCode, w, address, dev };
}
