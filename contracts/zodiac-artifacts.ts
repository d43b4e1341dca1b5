// Extracts the Zodiac contracts behind `operations/{opId}/module-signature` from the npm release
// (@gnosis.pm/zodiac 4.0.3, `MasterCopyInitData` and `ContractAbis`) into one committed file,
// api/tokenization/contracts/Zodiac-Roles-1.1.0.json, so the API carries their init code without depending
// at run time on that package (which pulls in ethers 6): the Roles Modifier v1.1.0 mastercopy, the
// Permissions library it links, the ModuleProxyFactory 1.2.0, and the ERC-2470 singleton factory's
// published deployment transaction that all three are CREATE2-deployed through. The init codes are the ones
// Zodiac deploys everywhere, so the addresses they give are Zodiac's canonical ones;
// test/api/tokenization/zodiac-artifacts.unit.ts checks the file equals the package and recomputes each
// canonical address the package publishes.
// Run: node --import tsx contracts/zodiac-artifacts.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

export const ZODIAC_PACKAGE = '@gnosis.pm/zodiac';
export const ZODIAC_PACKAGE_VERSION = '4.0.3';
export const ROLES_VERSION = '1.1.0';
export const ZODIAC_ARTIFACTS_PATH = join(here, '..', 'api', 'tokenization', 'contracts', `Zodiac-Roles-${ROLES_VERSION}.json`);

/** Each contract: its `KnownContracts` name in the package and the version whose canonical address it has. */
export const ZODIAC_CONTRACTS = [
  { name: 'Permissions', known: 'permissions', version: '1.0.0' },
  { name: 'Roles', known: 'roles_v1', version: ROLES_VERSION },
  { name: 'ModuleProxyFactory', known: 'factory', version: '1.2.0' },
] as const;
export type ZodiacContractName = (typeof ZODIAC_CONTRACTS)[number]['name'];

type Hex = `0x${string}`;

export interface ZodiacArtifacts {
  package: string;
  version: string;
  roles_version: string;
  /** ERC-2470: the factory, its one-time deployer and the published pre-EIP-155 transaction. */
  singleton_factory: { address: Hex; deployer: Hex; transaction: Hex };
  contracts: Record<ZodiacContractName, { known: string; version: string; abi: unknown[]; salt: Hex; init_code: Hex; canonical_address: Hex }>;
}

interface ZodiacPackage {
  MasterCopyInitData: Record<string, { salt: Hex; initCode: Hex }>;
  ContractAbis: Record<string, unknown[]>;
  ContractVersions: Record<string, Record<string, Record<string, Hex>>>;
}

/** The artifacts as the installed package ships them. */
export function extractZodiacArtifacts(): ZodiacArtifacts {
  const main = require.resolve(ZODIAC_PACKAGE);
  const version = (JSON.parse(readFileSync(join(dirname(main), '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
  if (version !== ZODIAC_PACKAGE_VERSION) throw new Error(`${ZODIAC_PACKAGE} ${version} is installed, not ${ZODIAC_PACKAGE_VERSION}`);
  const z = require(ZODIAC_PACKAGE) as ZodiacPackage;
  // The factory's deployment is not exported: it is read from the package's own deployment helper.
  const helper = readFileSync(join(dirname(main), 'factory', 'singletonFactory.js'), 'utf8');
  const address = /SingletonFactoryAddress = "(0x[0-9a-fA-F]{40})"/.exec(helper)?.[1];
  const deployer = /singletonDeployer = "(0x[0-9a-fA-F]{40})"/.exec(helper)?.[1];
  const transaction = /broadcastTransaction\("(0x[0-9a-fA-F]+)"\)/.exec(helper)?.[1];
  if (!address || !deployer || !transaction) throw new Error(`${ZODIAC_PACKAGE}'s singletonFactory.js no longer names the ERC-2470 factory's deployment`);
  const contracts = {} as ZodiacArtifacts['contracts'];
  for (const c of ZODIAC_CONTRACTS) {
    const init = z.MasterCopyInitData[c.known];
    const canonical = z.ContractVersions['1']?.[c.known]?.[c.version];
    if (!init || !canonical) throw new Error(`${ZODIAC_PACKAGE} has no ${c.known} ${c.version}`);
    contracts[c.name] = { known: c.known, version: c.version, abi: z.ContractAbis[c.known]!, salt: init.salt, init_code: init.initCode.toLowerCase() as Hex, canonical_address: canonical };
  }
  return { package: ZODIAC_PACKAGE, version, roles_version: ROLES_VERSION, singleton_factory: { address: address as Hex, deployer: deployer as Hex, transaction: transaction as Hex }, contracts };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(ZODIAC_ARTIFACTS_PATH, JSON.stringify(extractZodiacArtifacts()) + '\n');
  console.log(`wrote ${ZODIAC_ARTIFACTS_PATH}`);
}
