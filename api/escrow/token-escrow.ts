// The TokenEscrow contract as the API uses it (contracts/TokenEscrow.sol, docs/platform/escrows.md): its
// committed artifact (ABI and bytecode, reproduced from the source by a test), the on-chain id of an
// escrow, and the exact calldata of the calls a payer's wallet makes.
import { encodeFunctionData, keccak256, stringToBytes, type Abi, type Hex } from 'viem';
// Imported (not read from a path) so the build carries it into dist/ beside this module.
import artifact from './token-escrow-artifact.json' with { type: 'json' };

export interface TokenEscrowArtifact { contract: string; compiler: string; source_sha256: string; abi: Abi; bytecode: Hex; deployed_bytecode: Hex }

/** The committed artifact (api/escrow/token-escrow-artifact.json, written by contracts/compile.ts). */
export function tokenEscrowArtifact(): TokenEscrowArtifact {
  return artifact as unknown as TokenEscrowArtifact;
}

/** The parts of the ABI the API calls and reads, typed for viem; the test checks they match the artifact's. */
export const TOKEN_ESCROW_ABI = [
  { type: 'function', name: 'deposit', stateMutability: 'nonpayable', inputs: [{ name: 'id', type: 'bytes32' }, { name: 'token', type: 'address' }, { name: 'payee', type: 'address' }, { name: 'amount', type: 'uint256' }, { name: 'refundableAfter', type: 'uint64' }], outputs: [] },
  { type: 'function', name: 'release', stateMutability: 'nonpayable', inputs: [{ name: 'id', type: 'bytes32' }], outputs: [] },
  { type: 'function', name: 'refund', stateMutability: 'nonpayable', inputs: [{ name: 'payer', type: 'address' }, { name: 'id', type: 'bytes32' }], outputs: [] },
  {
    type: 'function', name: 'escrowOf', stateMutability: 'view', inputs: [{ name: 'payer', type: 'address' }, { name: 'id', type: 'bytes32' }],
    outputs: [{ name: '', type: 'tuple', components: [{ name: 'token', type: 'address' }, { name: 'payer', type: 'address' }, { name: 'payee', type: 'address' }, { name: 'amount', type: 'uint256' }, { name: 'refundableAfter', type: 'uint64' }, { name: 'state', type: 'uint8' }] }],
  },
  { type: 'event', name: 'Deposited', inputs: [{ name: 'id', type: 'bytes32', indexed: true }, { name: 'payer', type: 'address', indexed: true }, { name: 'payee', type: 'address', indexed: true }, { name: 'token', type: 'address', indexed: false }, { name: 'amount', type: 'uint256', indexed: false }, { name: 'refundableAfter', type: 'uint64', indexed: false }] },
  { type: 'event', name: 'Released', inputs: [{ name: 'id', type: 'bytes32', indexed: true }, { name: 'payer', type: 'address', indexed: true }, { name: 'payee', type: 'address', indexed: true }, { name: 'amount', type: 'uint256', indexed: false }] },
  { type: 'event', name: 'Refunded', inputs: [{ name: 'id', type: 'bytes32', indexed: true }, { name: 'payer', type: 'address', indexed: true }, { name: 'amount', type: 'uint256', indexed: false }, { name: 'by', type: 'address', indexed: false }] },
] as const;

const APPROVE_ABI = [{ type: 'function', name: 'approve', stateMutability: 'nonpayable', inputs: [{ name: 'spender', type: 'address' }, { name: 'amount', type: 'uint256' }], outputs: [{ name: '', type: 'bool' }] }] as const;

/** The contract's escrow states (enum State). */
export const ONCHAIN_STATES = ['none', 'funded', 'released', 'refunded'] as const;
export type OnchainState = (typeof ONCHAIN_STATES)[number];

/**
 * The id the contract keys an escrow by, under its payer's address: keccak256 of the UTF-8 bytes `custody/escrow/v1:` followed by
 * the API's escrow id (`esc_…`). Domain-separated, and anyone holding the escrow id recomputes it.
 */
export function onchainEscrowId(escrowId: string): Hex {
  return keccak256(stringToBytes(`custody/escrow/v1:${escrowId}`));
}

export interface EscrowTerms { escrowId: Hex; token: Hex; payee: Hex; amount: bigint; refundableAfter: bigint }

/** One call a wallet makes: a native-asset intent with amount 0 to `to` and this calldata (docs/intents.md). */
export interface EscrowCall { function: 'approve' | 'deposit' | 'release'; to: Hex; value: '0'; data: Hex }

/** What funding takes from the payer's wallet, in order: approve the contract for the amount, then deposit. */
export function fundingCalls(contract: Hex, t: EscrowTerms): [EscrowCall, EscrowCall] {
  return [
    { function: 'approve', to: t.token, value: '0', data: encodeFunctionData({ abi: APPROVE_ABI, functionName: 'approve', args: [contract, t.amount] }) },
    { function: 'deposit', to: contract, value: '0', data: encodeFunctionData({ abi: TOKEN_ESCROW_ABI, functionName: 'deposit', args: [t.escrowId, t.token, t.payee, t.amount, t.refundableAfter] }) },
  ];
}

/** What releasing takes from the payer's wallet. */
export function releaseCall(contract: Hex, escrowId: Hex): EscrowCall {
  return { function: 'release', to: contract, value: '0', data: encodeFunctionData({ abi: TOKEN_ESCROW_ABI, functionName: 'release', args: [escrowId] }) };
}
