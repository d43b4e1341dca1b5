// `npm start`'s tokenization (docs/platform/tokenization.md "Who pays"): on the local anvil, the shared Safe
// infrastructure (the deterministic-deployment proxy if absent, the Safe 1.4.1 contracts and the
// ERC2771Forwarder, CREATE2 at fixed addresses) is deployed once by the tokenization deployer account
// (anvil's development account 7, funded by anvil at genesis; never a customer's key), and the API is
// configured with that account's key file, so tokens deploy at once, and with the gasless relayer's (anvil's
// development account 6), so holders' signed forward requests are relayed at once. What is already on chain is skipped
// (the chain layer checks the code at each address), so a second start sends nothing; after anvil's state
// is lost, everything is deployed again.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Anvil's development account 7 (mnemonic "test test ... junk", m/44'/60'/0'/0/7): a local sandbox key only. */
const SANDBOX_TOKENIZATION_DEPLOYER_KEY = '0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356';
/** Anvil's development account 6: the gasless relayer, another account than the deployer (the API refuses one for both). */
const SANDBOX_TOKENIZATION_RELAYER_KEY = '0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e';

/**
 * The API settings of tokenization on evm-local, deploying the shared infrastructure where the chain lacks it.
 * `load(path)` imports a module of the project by its path without extension (`api/tokenization/token-chain`):
 * from dist/ under `npm start`, from the sources in tests. Returns the settings and what was deployed or found.
 */
export async function sandboxTokenization({ data, rpcUrl, load, log = () => {} }) {
  const keyFile = join(data, 'tokenization-deployer.key');
  if (!existsSync(keyFile)) writeFileSync(keyFile, `${SANDBOX_TOKENIZATION_DEPLOYER_KEY}\n`, { mode: 0o600 });
  const relayerKeyFile = join(data, 'tokenization-relayer.key');
  if (!existsSync(relayerKeyFile)) writeFileSync(relayerKeyFile, `${SANDBOX_TOKENIZATION_RELAYER_KEY}\n`, { mode: 0o600 });
  const [{ tokenChain }, { evmNetwork }, { deploySafeInfrastructure }, { readDeployerKey }] = await Promise.all([
    load('api/tokenization/token-chain'), load('core/chains/evm/evm-networks'), load('api/tokenization/chain/safe-infrastructure'), load('api/tokenization/tokenization-setup'),
  ]);
  // The same key file the API reads, read the way it reads it.
  const chain = tokenChain(evmNetwork('evm-local'), rpcUrl, readDeployerKey(keyFile));
  for (const end = Date.now() + 20_000; !(await chain.client.getChainId().then((id) => id === 31337, () => false));) {
    if (Date.now() > end) throw new Error(`anvil did not answer at ${rpcUrl} within 20 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const { addresses, deployed, skipped } = await deploySafeInfrastructure(chain.client, chain.sender);
  log(deployed.length
    ? `Safe 1.4.1 infrastructure and forwarder deployed on evm-local (${deployed.join(', ')}); proxy factory ${addresses.proxyFactory}, forwarder ${addresses.forwarder}`
    : `Safe 1.4.1 infrastructure and forwarder present on evm-local (proxy factory ${addresses.proxyFactory}, forwarder ${addresses.forwarder})`);
  return { env: { API_TOKENIZATION_DEPLOYER_KEY_FILE: keyFile, API_TOKENIZATION_RELAYER_KEY_FILE: relayerKeyFile }, addresses, deployed, skipped, deployer: chain.sender.address };
}
