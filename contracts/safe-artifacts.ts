// Extracts the Safe 1.4.1 contracts the tokenization chain layer deploys from the audited npm release
// (@safe-global/safe-contracts 1.4.1, build/artifacts/contracts/...) into one committed file,
// api/tokenization/contracts/Safe-1.4.1.json, so the API carries their bytecode without depending at run time
// on that package (whose peer dependency is a whole ethers 5). test/api/tokenization/safe-artifacts.unit.ts
// checks the file equals the package's artifacts and that each deployed bytecode hashes to the code hash the
// Safe team publishes for 1.4.1 (@safe-global/safe-deployments).
// Run: node --import tsx contracts/safe-artifacts.ts
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

export const SAFE_PACKAGE = '@safe-global/safe-contracts';
export const SAFE_VERSION = '1.4.1';
export const SAFE_ARTIFACTS_PATH = join(here, '..', 'api', 'tokenization', 'contracts', `Safe-${SAFE_VERSION}.json`);

/**
 * Each contract: its artifact in the package, and its file in @safe-global/safe-deployments (none for the
 * proxy, which is only ever created by the factory). `selfImmutable`: its runtime code holds its own address
 * in an immutable (MultiSend refuses to be called other than by DELEGATECALL that way), so the deployed code
 * differs by address from the artifact, in those 32 bytes.
 */
export const SAFE_CONTRACTS = [
  { name: 'Safe', artifact: 'Safe.sol/Safe', deployment: 'safe' },
  { name: 'SafeL2', artifact: 'SafeL2.sol/SafeL2', deployment: 'safe_l2' },
  { name: 'SafeProxyFactory', artifact: 'proxies/SafeProxyFactory.sol/SafeProxyFactory', deployment: 'safe_proxy_factory' },
  { name: 'SafeProxy', artifact: 'proxies/SafeProxy.sol/SafeProxy', deployment: null },
  { name: 'CompatibilityFallbackHandler', artifact: 'handler/CompatibilityFallbackHandler.sol/CompatibilityFallbackHandler', deployment: 'compatibility_fallback_handler' },
  { name: 'MultiSend', artifact: 'libraries/MultiSend.sol/MultiSend', deployment: 'multi_send', selfImmutable: true },
  { name: 'MultiSendCallOnly', artifact: 'libraries/MultiSendCallOnly.sol/MultiSendCallOnly', deployment: 'multi_send_call_only' },
] as const;
export type SafeContractName = (typeof SAFE_CONTRACTS)[number]['name'];

export interface SafeArtifacts {
  package: string;
  version: string;
  contracts: Record<SafeContractName, { artifact: string; selfImmutable: boolean; abi: unknown[]; bytecode: `0x${string}`; deployed_bytecode: `0x${string}` }>;
}

/** The artifacts as the installed package ships them. */
export function extractSafeArtifacts(): SafeArtifacts {
  const version = (require(`${SAFE_PACKAGE}/package.json`) as { version: string }).version;
  if (version !== SAFE_VERSION) throw new Error(`${SAFE_PACKAGE} ${version} is installed, not ${SAFE_VERSION}`);
  const contracts = {} as SafeArtifacts['contracts'];
  for (const c of SAFE_CONTRACTS) {
    const a = require(`${SAFE_PACKAGE}/build/artifacts/contracts/${c.artifact}.json`) as { abi: unknown[]; bytecode: `0x${string}`; deployedBytecode: `0x${string}` };
    contracts[c.name] = { artifact: `build/artifacts/contracts/${c.artifact}.json`, selfImmutable: 'selfImmutable' in c, abi: a.abi, bytecode: a.bytecode, deployed_bytecode: a.deployedBytecode };
  }
  return { package: SAFE_PACKAGE, version, contracts };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(SAFE_ARTIFACTS_PATH, JSON.stringify(extractSafeArtifacts()) + '\n');
  console.log(`wrote ${SAFE_ARTIFACTS_PATH}`);
}
