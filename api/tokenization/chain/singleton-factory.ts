// CREATE2 through the ERC-2470 singleton factory (eips.ethereum.org/EIPS/eip-2470): a contract at
// 0xce0042…cf9f whose `deploy(initCode, salt)` CREATE2s `initCode` under `salt`. Like the deterministic-
// deployment proxy it is created by a published pre-EIP-155 transaction from a one-time signer nobody holds a
// key for, so it has the same address on every chain. Zodiac deploys its mastercopies through it, and the
// Roles Modifier's mastercopy links its Permissions library at the library's ERC-2470 address: deploying the
// published init codes through this factory is what gives them their canonical addresses (and a working
// link). `ensureSingletonFactory` funds the signer and broadcasts the published transaction where it is absent
// (anvil does not pre-deploy it).
import { encodeFunctionData, getContractAddress, hexToBytes, parseAbi, parseTransaction, toHex, type Address, type Hex, type PublicClient } from 'viem';
import zodiac from '../contracts/Zodiac-Roles-1.1.0.json' with { type: 'json' };
import { sendAndWait, type TransactionSender } from './transaction-sender.ts';

export const SINGLETON_FACTORY = zodiac.singleton_factory.address.toLowerCase() as Address;
export const SINGLETON_FACTORY_DEPLOYER = zodiac.singleton_factory.deployer.toLowerCase() as Address;
/** The published deployment transaction: gas price 100 gwei, gas 247,000, no chain id. */
export const SINGLETON_FACTORY_TX = zodiac.singleton_factory.transaction as Hex;
/** What the signer must hold for it: 100 gwei × 247,000 gas. */
export const SINGLETON_FACTORY_COST = 247_000n * 100_000_000_000n;
/** The factory's runtime code: its deployment's init code after the 32-byte constructor. */
export const SINGLETON_FACTORY_CODE: Hex = toHex(hexToBytes(parseTransaction(SINGLETON_FACTORY_TX).data!).subarray(32));

const FACTORY_ABI = parseAbi(['function deploy(bytes _initCode, bytes32 _salt) returns (address createdContract)']);

/** Where the factory deploys `initCode` under `salt`. */
export function singletonAddress(salt: Hex, initCode: Hex): Address {
  return getContractAddress({ opcode: 'CREATE2', from: SINGLETON_FACTORY, salt, bytecode: initCode });
}

/** Makes sure the factory is there: 'present' when it was, 'deployed' when this call broadcast its transaction. */
export async function ensureSingletonFactory(client: PublicClient, sender: TransactionSender): Promise<'present' | 'deployed'> {
  const code = await client.getCode({ address: SINGLETON_FACTORY });
  if (code && code !== '0x') {
    if (code.toLowerCase() !== SINGLETON_FACTORY_CODE) throw new Error(`${SINGLETON_FACTORY} holds code that is not the ERC-2470 singleton factory`);
    return 'present';
  }
  const balance = await client.getBalance({ address: SINGLETON_FACTORY_DEPLOYER });
  if (balance < SINGLETON_FACTORY_COST) await sendAndWait(client, sender, { to: SINGLETON_FACTORY_DEPLOYER, value: SINGLETON_FACTORY_COST - balance, data: '0x' });
  const hash = await client.sendRawTransaction({ serializedTransaction: SINGLETON_FACTORY_TX });
  const receipt = await client.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success') throw new Error(`the ERC-2470 singleton factory's transaction ${hash} failed`);
  return 'deployed';
}

/** Deploys `initCode` under `salt` through the factory unless its address holds code; `true` when this call deployed it. */
export async function deploySingleton(client: PublicClient, sender: TransactionSender, salt: Hex, initCode: Hex): Promise<boolean> {
  const address = singletonAddress(salt, initCode);
  const code = await client.getCode({ address });
  if (code && code !== '0x') return false;
  // The factory answers the zero address instead of reverting when CREATE2 fails: the code is checked after.
  await sendAndWait(client, sender, { to: SINGLETON_FACTORY, data: encodeFunctionData({ abi: FACTORY_ABI, functionName: 'deploy', args: [initCode, salt] }), gas: 12_000_000n });
  const after = await client.getCode({ address });
  if (!after || after === '0x') throw new Error(`CREATE2 of ${address} through the singleton factory left no code`);
  return true;
}
