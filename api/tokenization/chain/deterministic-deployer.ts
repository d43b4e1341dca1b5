// CREATE2 through the deterministic-deployment proxy (github.com/Arachnid/deterministic-deployment-proxy):
// a contract at 0x4e59…956c whose calldata is `salt ‖ initCode` and which deploys `initCode` with CREATE2
// under `salt`. Its address is the same on every chain because it is created by a pre-EIP-155 transaction
// from a one-time signer whose key nobody has (the signature is made of 0x22 bytes). anvil pre-deploys it;
// elsewhere `ensureDeterministicDeployer` funds that signer and broadcasts the published transaction.
import { concat, getContractAddress, type Address, type Hex, type PublicClient } from 'viem';
import { sendAndWait, type TransactionSender } from './transaction-sender.ts';

export const DETERMINISTIC_DEPLOYER: Address = '0x4e59b44847b379578588920ca78fbf26c0b4956c';
/** The one-time signer of the published deployment transaction (its nonce 0 creates the proxy). */
export const DETERMINISTIC_DEPLOYER_SIGNER: Address = '0x3fab184622dc19b6109349b94811493bf2a45362';
/** The published deployment transaction: gas price 100 gwei, gas 100,000, no chain id. */
export const DETERMINISTIC_DEPLOYER_TX: Hex =
  '0xf8a58085174876e800830186a08080b853604580600e600039806000f350fe7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035828234f58015156039578182fd5b8082525050506014600cf31ba02222222222222222222222222222222222222222222222222222222222222222a02222222222222222222222222222222222222222222222222222222222222222';
/** What the signer must hold for that transaction: 100 gwei × 100,000 gas. */
export const DETERMINISTIC_DEPLOYER_COST = 10n ** 16n;
/** The proxy's runtime code (the tail of the deployment transaction's init code). */
export const DETERMINISTIC_DEPLOYER_CODE: Hex = '0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035828234f58015156039578182fd5b8082525050506014600cf3';

/** Where the proxy deploys `initCode` under `salt`. */
export function create2Address(salt: Hex, initCode: Hex): Address {
  return getContractAddress({ opcode: 'CREATE2', from: DETERMINISTIC_DEPLOYER, salt, bytecode: initCode });
}

/** Makes sure the proxy is there: 'present' when it was, 'deployed' when this call broadcast its transaction. */
export async function ensureDeterministicDeployer(client: PublicClient, sender: TransactionSender): Promise<'present' | 'deployed'> {
  const code = await client.getCode({ address: DETERMINISTIC_DEPLOYER });
  if (code && code !== '0x') {
    if (code.toLowerCase() !== DETERMINISTIC_DEPLOYER_CODE) throw new Error(`${DETERMINISTIC_DEPLOYER} holds code that is not the deterministic-deployment proxy`);
    return 'present';
  }
  const balance = await client.getBalance({ address: DETERMINISTIC_DEPLOYER_SIGNER });
  if (balance < DETERMINISTIC_DEPLOYER_COST) await sendAndWait(client, sender, { to: DETERMINISTIC_DEPLOYER_SIGNER, value: DETERMINISTIC_DEPLOYER_COST - balance, data: '0x' });
  const hash = await client.sendRawTransaction({ serializedTransaction: DETERMINISTIC_DEPLOYER_TX });
  const receipt = await client.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success') throw new Error(`the deterministic-deployment proxy's transaction ${hash} failed`);
  return 'deployed';
}

/** Deploys `initCode` under `salt` through the proxy; the caller checked the address is empty. Returns the transaction hash. */
export async function deployCreate2(client: PublicClient, sender: TransactionSender, salt: Hex, initCode: Hex): Promise<Hex> {
  const receipt = await sendAndWait(client, sender, { to: DETERMINISTIC_DEPLOYER, data: concat([salt, initCode]), value: 0n });
  const address = create2Address(salt, initCode);
  const code = await client.getCode({ address });
  if (!code || code === '0x') throw new Error(`CREATE2 of ${address} in ${receipt.transactionHash} left no code (the constructor reverted)`);
  return receipt.transactionHash;
}
