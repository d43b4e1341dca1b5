// The Zodiac Roles Modifier (v1.1.0, Gnosis Guild) as the module of a token's admin Safe
// (docs/platform/tokenization.md "Module for module-signature"). Once per chain, through the ERC-2470
// singleton factory with Zodiac's own salts: the Permissions library, the Roles mastercopy (which links the
// library at its canonical address) and the ModuleProxyFactory 1.2.0, each at Zodiac's canonical address.
// Per token, one modifier: a minimal proxy of the mastercopy created by `deployModule(mastercopy,
// setUp(abi.encode(safe, safe, safe)), saltNonce)` (owner, avatar and target all the Safe), so its address
// follows from the token id and the Safe. The Safe enables it (`enableModule`) and configures its roles
// (`assignRoles`, `scopeTarget`, `scopeAllowFunction`) by its own transactions; a member then calls
// `execTransactionWithRole(to, value, data, operation, role, true)` and the modifier, if the role allows that
// exact target and function, has the Safe run it through `execTransactionFromModule`.
import {
  concat, encodeAbiParameters, encodeFunctionData, encodePacked, getContractAddress, hexToBigInt, keccak256, stringToBytes, toFunctionSelector,
  type Abi, type AbiFunction, type Address, type Hex, type PublicClient,
} from 'viem';
import zodiac from '../contracts/Zodiac-Roles-1.1.0.json' with { type: 'json' };
import { deploySingleton, ensureSingletonFactory, singletonAddress } from './singleton-factory.ts';
import { SAFE_ABI } from './safe-abi.ts';
import { sendAndWait, type TransactionSender } from './transaction-sender.ts';

type ZodiacName = keyof typeof zodiac.contracts;
const contract = (name: ZodiacName) => zodiac.contracts[name] as { abi: Abi; salt: Hex; init_code: Hex; canonical_address: string };

export const ROLES_VERSION = zodiac.roles_version;
export const ROLES_ABI = contract('Roles').abi;
export const PERMISSIONS_ABI = contract('Permissions').abi;
export const MODULE_PROXY_FACTORY_ABI = contract('ModuleProxyFactory').abi;

/** The chain-wide Zodiac contracts, in deployment order (the mastercopy needs the library it links). */
export const ZODIAC_STEPS: readonly { name: ZodiacName; salt: Hex; initCode: Hex; address: Address }[] = (['Permissions', 'Roles', 'ModuleProxyFactory'] as const).map((name) => {
  const c = contract(name);
  return { name, salt: c.salt, initCode: c.init_code, address: singletonAddress(c.salt, c.init_code) };
});
const at = (name: ZodiacName) => ZODIAC_STEPS.find((s) => s.name === name)!.address;
export const ROLES_MASTERCOPY = at('Roles');
export const MODULE_PROXY_FACTORY = at('ModuleProxyFactory');

/** ExecutionOptions of Roles v1: what a scoped call may do besides calling (0: neither send value nor delegatecall). */
export const EXECUTION_NONE = 0;

/** The salt nonce of a token's modifier: keccak256 of `custody/token-roles/v1:` ‖ the token id, as a uint256. */
export function rolesSaltNonce(tokenId: string): bigint {
  return hexToBigInt(keccak256(stringToBytes(`custody/token-roles/v1:${tokenId}`)));
}

/** The `setUp` call the new proxy runs: owner, avatar and target all the Safe. */
export function rolesInitializer(safe: Address): Hex {
  const params = encodeAbiParameters([{ type: 'address' }, { type: 'address' }, { type: 'address' }], [safe, safe, safe]);
  return encodeFunctionData({ abi: ROLES_ABI, functionName: 'setUp', args: [params] });
}

/** Where the ModuleProxyFactory creates the token's modifier (ModuleProxyFactory.sol `createProxy`). */
export function rolesModifierAddress(tokenId: string, safe: Address): Address {
  const salt = keccak256(encodePacked(['bytes32', 'uint256'], [keccak256(rolesInitializer(safe)), rolesSaltNonce(tokenId)]));
  const bytecode = concat(['0x602d8060093d393df3363d3d373d3d3d363d73', ROLES_MASTERCOPY, '0x5af43d82803e903d91602b57fd5bf3']);
  return getContractAddress({ opcode: 'CREATE2', from: MODULE_PROXY_FACTORY, salt, bytecode });
}

/**
 * Deploys whatever is missing: the singleton factory, the chain-wide Zodiac contracts, then the token's
 * modifier. Idempotent (each address is checked first); the service deployer pays. Returns the modifier.
 */
export async function deployRolesModifier(client: PublicClient, sender: TransactionSender, tokenId: string, safe: Address): Promise<Address> {
  await ensureSingletonFactory(client, sender);
  for (const s of ZODIAC_STEPS) await deploySingleton(client, sender, s.salt, s.initCode);
  const address = rolesModifierAddress(tokenId, safe);
  const code = await client.getCode({ address });
  if (code && code !== '0x') return address;
  await sendAndWait(client, sender, {
    to: MODULE_PROXY_FACTORY,
    data: encodeFunctionData({ abi: MODULE_PROXY_FACTORY_ABI, functionName: 'deployModule', args: [ROLES_MASTERCOPY, rolesInitializer(safe), rolesSaltNonce(tokenId)] }),
  });
  const after = await client.getCode({ address });
  if (!after || after === '0x') throw new Error(`the roles modifier was not created at ${address}`);
  return address;
}

/** Whether the token's modifier exists and the Safe has it enabled. */
export async function rolesModuleState(client: PublicClient, safe: Address, modifier: Address): Promise<{ deployed: boolean; enabled: boolean }> {
  const code = await client.getCode({ address: modifier });
  const deployed = !!code && code !== '0x';
  const enabled = deployed && await client.readContract({ address: safe, abi: SAFE_ABI, functionName: 'isModuleEnabled', args: [modifier] });
  return { deployed, enabled };
}

/** The Safe's own call that enables `modifier` as its module. */
export function enableModuleCall(safe: Address, modifier: Address): { to: Address; data: Hex } {
  return { to: safe, data: encodeFunctionData({ abi: SAFE_ABI, functionName: 'enableModule', args: [modifier] }) };
}

/** A member's call: have the Safe run (to, value, data, operation) under `role`, reverting if the Safe's call fails. */
export function execWithRoleData(tx: { to: Address; value: bigint; data: Hex; operation: 0 | 1 }, role: number): Hex {
  return encodeFunctionData({ abi: ROLES_ABI, functionName: 'execTransactionWithRole', args: [tx.to, tx.value, tx.data, tx.operation, role, true] });
}

export function assignRolesData(member: Address, role: number, memberOf: boolean): Hex {
  return encodeFunctionData({ abi: ROLES_ABI, functionName: 'assignRoles', args: [member, [role], [memberOf]] });
}

export function scopeTargetData(role: number, target: Address): Hex {
  return encodeFunctionData({ abi: ROLES_ABI, functionName: 'scopeTarget', args: [role, target] });
}

export function scopeAllowFunctionData(role: number, target: Address, fn: AbiFunction): Hex {
  return encodeFunctionData({ abi: ROLES_ABI, functionName: 'scopeAllowFunction', args: [role, target, toFunctionSelector(fn), EXECUTION_NONE] });
}

export function scopeRevokeFunctionData(role: number, target: Address, fn: AbiFunction): Hex {
  return encodeFunctionData({ abi: ROLES_ABI, functionName: 'scopeRevokeFunction', args: [role, target, toFunctionSelector(fn)] });
}
