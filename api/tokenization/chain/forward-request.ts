// ERC-2771 forward requests of OpenZeppelin's `ERC2771Forwarder` (contracts 5.x, `metatx/ERC2771Forwarder.sol`):
// the EIP-712 struct `ForwardRequest(address from, address to, uint256 value, uint256 gas, uint256 nonce, uint48
// deadline, bytes data)` in the forwarder's domain (name `TokenForwarder`, version `1`, the chain id, the
// forwarder's address), its hash, the holder's signature check, and the forwarder's own reads: `nonces(from)` and
// `verify(request)`. `execute(request)` appends `from` to `data` and calls `to` with `gas`; the target, trusting
// the forwarder, takes the last 20 bytes as its `_msgSender()`. What the inner call would do is replayed the
// same way (`innerCall`): from the forwarder's address, with `data ‖ from`.
import { concat, encodeFunctionData, getAddress, hashTypedData, verifyTypedData, type Address, type Hex, type PublicClient } from 'viem';
import { builtArtifact } from './artifacts.ts';
import { FORWARDER_NAME } from './safe-infrastructure.ts';

export const FORWARDER_VERSION = '1';

export const EIP712_DOMAIN_TYPES = [
  { name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: 'uint256' }, { name: 'verifyingContract', type: 'address' },
] as const;

export const FORWARD_REQUEST_TYPES = {
  ForwardRequest: [
    { name: 'from', type: 'address' }, { name: 'to', type: 'address' }, { name: 'value', type: 'uint256' }, { name: 'gas', type: 'uint256' },
    { name: 'nonce', type: 'uint256' }, { name: 'deadline', type: 'uint48' }, { name: 'data', type: 'bytes' },
  ],
} as const;

/** A forward request as signed. `deadline` is a unix time in seconds (uint48). */
export interface ForwardRequest {
  from: Address;
  to: Address;
  value: bigint;
  gas: bigint;
  nonce: bigint;
  deadline: number;
  data: Hex;
}

export function forwarderAbi() {
  return builtArtifact('ERC2771Forwarder').abi;
}

export function forwarderDomain(chainId: number, forwarder: Address) {
  return { name: FORWARDER_NAME, version: FORWARDER_VERSION, chainId, verifyingContract: getAddress(forwarder) };
}

/** What the holder signs (`eth_signTypedData_v4`), as viem takes it. */
export function forwardRequestTypedData(chainId: number, forwarder: Address, r: ForwardRequest) {
  return { domain: forwarderDomain(chainId, forwarder), types: FORWARD_REQUEST_TYPES, primaryType: 'ForwardRequest' as const, message: r };
}

/** The EIP-712 hash the holder's key signs: what the forwarder recovers the signer from. */
export function forwardRequestHash(chainId: number, forwarder: Address, r: ForwardRequest): Hex {
  return hashTypedData(forwardRequestTypedData(chainId, forwarder, r));
}

/** Whether `signature` is `r.from`'s ECDSA signature over the request (the forwarder takes no other kind). */
export function forwardSignatureValid(chainId: number, forwarder: Address, r: ForwardRequest, signature: Hex): Promise<boolean> {
  return verifyTypedData({ address: r.from, ...forwardRequestTypedData(chainId, forwarder, r), signature }).catch(() => false);
}

/** The forwarder's `ForwardRequestData`: the request without its nonce (the forwarder supplies its own), with the signature. */
function requestData(r: ForwardRequest, signature: Hex) {
  return { from: r.from, to: r.to, value: r.value, gas: r.gas, deadline: r.deadline, data: r.data, signature };
}

/** Calldata of `execute(request)`: what the relayer sends to the forwarder. */
export function executeCalldata(r: ForwardRequest, signature: Hex): Hex {
  return encodeFunctionData({ abi: forwarderAbi(), functionName: 'execute', args: [requestData(r, signature)] });
}

/** The holder's next nonce at the forwarder: the only one a new request may carry. */
export async function readForwarderNonce(client: PublicClient, forwarder: Address, from: Address): Promise<bigint> {
  return (await client.readContract({ address: forwarder, abi: forwarderAbi(), functionName: 'nonces', args: [from] })) as bigint;
}

/** The forwarder's own `verify(request)`: the target trusts it, the deadline has not passed, the signer is `from` at its current nonce. */
export async function forwarderVerifies(client: PublicClient, forwarder: Address, r: ForwardRequest, signature: Hex): Promise<boolean> {
  return (await client.readContract({ address: forwarder, abi: forwarderAbi(), functionName: 'verify', args: [requestData(r, signature)] })) as boolean;
}

/** The call `execute` makes, as the target receives it: from the forwarder, `data ‖ from`. */
export function innerCall(forwarder: Address, r: ForwardRequest): { account: Address; to: Address; data: Hex; gas: bigint } {
  return { account: forwarder, to: r.to, data: concat([r.data, r.from]), gas: r.gas };
}
