// The EIP-712 digest a Safe 1.4.1 owner signs for a Safe transaction (safe-smart-account v1.4.1,
// `Safe.getTransactionHash`): domain {chainId, verifyingContract: the Safe}, struct
// `SafeTx(address to,uint256 value,bytes data,uint8 operation,uint256 safeTxGas,uint256 baseGas,
// uint256 gasPrice,address gasToken,address refundReceiver,uint256 nonce)`. The API computes it to check
// a signature, and each node computes it from the intent the customer signed, never taking it from the
// coordinator. Hashing is viem's `hashTypedData`; the type hashes below are pinned by a test against
// Safe's own constants.
import { hexToBytes } from '@noble/hashes/utils.js';
import { hashTypedData, toHex as viemHex, type Hex } from 'viem';
import type { SafeTxIntent } from '../../intents/intent.ts';

/** keccak256 of the SafeTx type string: Safe 1.4.1's `SAFE_TX_TYPEHASH`. */
export const SAFE_TX_TYPEHASH = '0xbb8310d486368db6bd6f849402fdd73ad53d316b5a4b2644ad6efe0f941286d8';
/** keccak256("EIP712Domain(uint256 chainId,address verifyingContract)"): Safe 1.4.1's `DOMAIN_SEPARATOR_TYPEHASH`. */
export const SAFE_DOMAIN_TYPEHASH = '0x47e79534a245952e8b16893a336b85a3d9ea9fa8c573f3d803afb92a79469218';

/** Safe's `Enum.Operation`. */
export const SAFE_OPERATION_CALL = 0;
export const SAFE_OPERATION_DELEGATECALL = 1;

/**
 * The contracts a Safe transaction may delegatecall: Safe 1.4.1's MultiSendCallOnly, at its canonical
 * address (safe-deployments `v1.4.1/multi_send_call_only.json`, deployed through Safe's singleton factory)
 * and at the address this project's chain layer deploys it to (CREATE2 through the deterministic
 * deployment proxy 0x4e59b448…4956c, zero salt: api/tokenization/chain/safe-infrastructure.ts). A CREATE2
 * address commits to the init code, so each address can only ever hold that code;
 * test/api/tokenization/safe-artifacts.unit.ts recomputes the second from the committed artifact.
 * MultiSendCallOnly refuses a nested delegatecall, so a batch can only make calls; a delegatecall to any
 * other code runs that code as the Safe (it could change owners or modules) and is refused. Lower case.
 */
export const SAFE_DELEGATECALL_TARGETS: readonly string[] = ['0x9641d764fc13c8b624c04430c7356c1c7c8102e2', '0x32228ddea8b9a2bd7f2d71a958ff241d79ca5eec'];

export const SAFE_TX_TYPES = {
  SafeTx: [
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'data', type: 'bytes' },
    { name: 'operation', type: 'uint8' },
    { name: 'safeTxGas', type: 'uint256' },
    { name: 'baseGas', type: 'uint256' },
    { name: 'gasPrice', type: 'uint256' },
    { name: 'gasToken', type: 'address' },
    { name: 'refundReceiver', type: 'address' },
    { name: 'nonce', type: 'uint256' },
  ],
} as const;

/** The fields of a Safe transaction, as the intent carries them (addresses as 20 bytes). */
export type SafeTxFields = Pick<SafeTxIntent, 'chainId' | 'safe' | 'to' | 'value' | 'data' | 'operation' | 'safeTxGas' | 'baseGas' | 'gasPrice' | 'gasToken' | 'refundReceiver' | 'safeNonce'>;

const addr = (b: Uint8Array): Hex => viemHex(b);

/** Why a Safe transaction's operation is not one nodes sign, or undefined when it is. */
export function safeOperationProblem(tx: Pick<SafeTxFields, 'operation' | 'to'>): string | undefined {
  if (tx.operation === SAFE_OPERATION_CALL) return undefined;
  if (tx.operation !== SAFE_OPERATION_DELEGATECALL) return `operation ${tx.operation} is neither 0 (call) nor 1 (delegatecall)`;
  if (!SAFE_DELEGATECALL_TARGETS.includes(viemHex(tx.to).toLowerCase())) return `a delegatecall may only go to Safe's MultiSendCallOnly (${SAFE_DELEGATECALL_TARGETS.join(', ')}), not ${viemHex(tx.to)}`;
  return undefined;
}

/** The SafeTx EIP-712 digest (`Safe.getTransactionHash`), 32 bytes. */
export function safeTxHash(tx: SafeTxFields): Uint8Array {
  const h = hashTypedData({
    domain: { chainId: tx.chainId, verifyingContract: addr(tx.safe) },
    types: SAFE_TX_TYPES,
    primaryType: 'SafeTx',
    message: {
      to: addr(tx.to), value: tx.value, data: viemHex(tx.data), operation: tx.operation, safeTxGas: tx.safeTxGas, baseGas: tx.baseGas,
      gasPrice: tx.gasPrice, gasToken: addr(tx.gasToken), refundReceiver: addr(tx.refundReceiver), nonce: tx.safeNonce,
    },
  });
  return hexToBytes(h.slice(2));
}

