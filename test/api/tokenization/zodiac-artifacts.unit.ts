// The roles module the chain layer deploys is Zodiac's own release: the committed extract
// (api/tokenization/contracts/Zodiac-Roles-1.1.0.json) equals what @gnosis.pm/zodiac 4.0.3 ships, each init
// code deployed through the ERC-2470 singleton factory with its salt lands at the canonical address the package
// publishes for that version (a CREATE2 address commits to the init code), the Roles mastercopy links the
// Permissions library at the library's own canonical address, the factory's transaction is the published
// one, and a token's modifier address is the one the package's own calculateProxyAddress computes.
import t from 'tap';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { getContractAddress, parseTransaction, recoverTransactionAddress, type AbiFunction, type Address } from 'viem';
import { extractZodiacArtifacts, ZODIAC_ARTIFACTS_PATH } from '../../../contracts/zodiac-artifacts.ts';
import { SINGLETON_FACTORY, SINGLETON_FACTORY_CODE, SINGLETON_FACTORY_DEPLOYER, SINGLETON_FACTORY_TX, singletonAddress } from '../../../api/tokenization/chain/singleton-factory.ts';
import { MODULE_PROXY_FACTORY, ROLES_ABI, ROLES_MASTERCOPY, rolesInitializer, rolesModifierAddress, rolesSaltNonce, ZODIAC_STEPS } from '../../../api/tokenization/chain/roles-module.ts';
import { decodeRevert } from '../../../api/tokenization/chain/chain-failure.ts';

const require = createRequire(import.meta.url);

t.test('the committed extract is the npm release\'s init codes and ABIs', async (t) => {
  t.same(JSON.parse(readFileSync(ZODIAC_ARTIFACTS_PATH, 'utf8')), extractZodiacArtifacts());
  t.equal(extractZodiacArtifacts().version, '4.0.3');
});

t.test('each init code lands at the canonical address the package publishes', async (t) => {
  const z = require('@gnosis.pm/zodiac') as { ContractVersions: Record<string, Record<string, Record<string, string>>> };
  const published: Record<string, string> = { Permissions: z.ContractVersions['1']!.permissions!['1.0.0']!, Roles: z.ContractVersions['1']!.roles_v1!['1.1.0']!, ModuleProxyFactory: z.ContractVersions['1']!.factory!['1.2.0']! };
  for (const s of ZODIAC_STEPS) t.equal(s.address, published[s.name], `${s.name} at ${published[s.name]}`);
  t.equal(ROLES_MASTERCOPY, published.Roles);
  t.equal(MODULE_PROXY_FACTORY, published.ModuleProxyFactory);
  const roles = ZODIAC_STEPS.find((s) => s.name === 'Roles')!;
  t.ok(roles.initCode.includes(published.Permissions!.slice(2).toLowerCase()), 'the mastercopy links Permissions at its canonical address');
});

t.test('the singleton factory\'s transaction is the published ERC-2470 one', async (t) => {
  const tx = parseTransaction(SINGLETON_FACTORY_TX);
  t.equal(tx.chainId, undefined, 'no chain id: the same on every chain');
  const from = (await recoverTransactionAddress({ serializedTransaction: SINGLETON_FACTORY_TX as never })).toLowerCase();
  t.equal(from, SINGLETON_FACTORY_DEPLOYER);
  t.equal(getContractAddress({ from: from as Address, nonce: 0n }).toLowerCase(), SINGLETON_FACTORY);
  t.equal(SINGLETON_FACTORY, '0xce0042b868300000d44a59004da54a005ffdcf9f', 'EIP-2470\'s address');
  t.ok(tx.data!.endsWith(SINGLETON_FACTORY_CODE.slice(2)), 'the runtime code checked on chain is its init code\'s tail');
  t.equal(singletonAddress(ZODIAC_STEPS[0]!.salt, ZODIAC_STEPS[0]!.initCode), ZODIAC_STEPS[0]!.address);
});

t.test('a token\'s modifier is where the package\'s calculateProxyAddress puts it', async (t) => {
  const z = require('@gnosis.pm/zodiac') as { calculateProxyAddress: (factory: { getAddress(): Promise<string> }, mastercopy: string, initData: string, saltNonce: string) => Promise<string> };
  const safe: Address = '0x1111111111111111111111111111111111111111';
  const theirs = await z.calculateProxyAddress({ getAddress: async () => MODULE_PROXY_FACTORY }, ROLES_MASTERCOPY, rolesInitializer(safe), rolesSaltNonce('tok_a').toString());
  t.equal(rolesModifierAddress('tok_a', safe), theirs);
  t.not(rolesModifierAddress('tok_b', safe), theirs, 'one modifier per token');
});

t.test('the Roles functions the chain layer calls are in the release\'s ABI', async (t) => {
  const fns = new Set(ROLES_ABI.filter((a) => a.type === 'function').map((a) => (a as AbiFunction).name));
  for (const f of ['execTransactionWithRole', 'assignRoles', 'scopeTarget', 'scopeAllowFunction', 'scopeRevokeFunction', 'setUp']) t.ok(fns.has(f), f);
});

t.test('the module\'s refusals decode to their names', async (t) => {
  t.match(decodeRevert('0x05e5a82e'), { errorName: 'FunctionNotAllowed' });
  t.match(decodeRevert('0xfd8e9f28'), { errorName: 'NoMembership' });
});
