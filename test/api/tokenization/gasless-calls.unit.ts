// What a gasless relay may carry and what the holder signs (api/tokenization/gasless-calls.ts,
// api/tokenization/chain/forward-request.ts): each kind's one transfer function built and decoded back; every
// other call (approvals, burns, batches, other overloads, another holder's tokens, trailing or non-canonical
// bytes, ERC-1155 data) refused with 422 naming the field; the ForwardRequest hash equal to EIP-712 encoded by
// hand as OpenZeppelin's forwarder does; the typed data answered as JSON signed by a viem account verifies, and
// changing any one of its seven fields after signing makes the signature fail.
import t from 'tap';
import { concat, encodeAbiParameters, encodeFunctionData, keccak256, toHex, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { decodeGaslessTransfer, gaslessTransferCall, GASLESS_TRANSFER_FUNCTION } from '../../../api/tokenization/gasless-calls.ts';
import { tokenAbi } from '../../../api/tokenization/token-calls.ts';
import { forwardRequestHash, forwardSignatureValid, type ForwardRequest } from '../../../api/tokenization/chain/forward-request.ts';
import { typedDataJson } from '../../../api/tokenization/gasless-service.ts';
import { FieldValidationError } from '../../../api/validation.ts';

const HOLDER = '0x00000000000000000000000000000000000000a1';
const TO = '0x00000000000000000000000000000000000000b2';
const OTHER = '0x00000000000000000000000000000000000000c3';
const FORWARDER = '0x00000000000000000000000000000000000000f0' as Address;
const TOKEN = '0x00000000000000000000000000000000000000e0' as Address;

const refusedOn = (fn: () => unknown): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof FieldValidationError && err.code === 'validation_failed' ? err.fields[0]!.field : `not a field error: ${(err as Error).message}`;
  }
};

t.test('each kind builds its one transfer function, and the data decodes back to the same transfer', async (t) => {
  const cases = [
    ['erc20', { from: HOLDER, to: TO, amount: '5' }, 'transfer(address,uint256)'],
    ['erc721', { from: HOLDER, to: TO, token_id: '7' }, 'safeTransferFrom(address,address,uint256)'],
    ['erc1155', { from: HOLDER, to: TO, token_id: '7', amount: '3' }, 'safeTransferFrom(address,address,uint256,uint256,bytes)'],
  ] as const;
  for (const [kind, input, fn] of cases) {
    const { data, transfer } = gaslessTransferCall(kind, input);
    t.equal(transfer.function, fn, `${kind}: ${fn}`);
    t.equal(GASLESS_TRANSFER_FUNCTION[kind], fn);
    t.same(decodeGaslessTransfer(kind, data, HOLDER), transfer, `${kind}: decodes back`);
    t.same(transfer, { function: fn, from: HOLDER, to: TO, amount: 'amount' in input ? input.amount : null, token_id: 'token_id' in input ? input.token_id : null });
  }
});

t.test('building refuses what is not a holder\'s transfer of this kind, naming the field', async (t) => {
  const cases: [string, 'erc20' | 'erc721' | 'erc1155', Record<string, string>, string][] = [
    ['ERC-20 without amount', 'erc20', { from: HOLDER, to: TO }, 'amount'],
    ['ERC-20 with a token id', 'erc20', { from: HOLDER, to: TO, amount: '1', token_id: '1' }, 'token_id'],
    ['ERC-20 amount 0', 'erc20', { from: HOLDER, to: TO, amount: '0' }, 'amount'],
    ['ERC-20 amount over uint256', 'erc20', { from: HOLDER, to: TO, amount: (1n << 256n).toString() }, 'amount'],
    ['ERC-721 with an amount', 'erc721', { from: HOLDER, to: TO, token_id: '1', amount: '1' }, 'amount'],
    ['ERC-721 without a token id', 'erc721', { from: HOLDER, to: TO }, 'token_id'],
    ['ERC-1155 without amount', 'erc1155', { from: HOLDER, to: TO, token_id: '1' }, 'amount'],
    ['to the zero address', 'erc20', { from: HOLDER, to: `0x${'00'.repeat(20)}`, amount: '1' }, 'to'],
    ['to oneself', 'erc20', { from: HOLDER, to: HOLDER, amount: '1' }, 'to'],
    ['from not an address', 'erc20', { from: '0x12', to: TO, amount: '1' }, 'from'],
  ];
  for (const [what, kind, input, field] of cases) t.equal(refusedOn(() => gaslessTransferCall(kind, input as never)), field, what);
});

t.test('decoding refuses every other call, another holder\'s tokens and non-canonical bytes', async (t) => {
  const enc = (kind: 'erc20' | 'erc721' | 'erc1155', fn: string, args: unknown[]) => encodeFunctionData({ abi: tokenAbi(kind), functionName: fn, args });
  const erc20 = gaslessTransferCall('erc20', { from: HOLDER, to: TO, amount: '5' }).data;
  const cases: [string, 'erc20' | 'erc721' | 'erc1155', Hex][] = [
    ['ERC-20 approve', 'erc20', enc('erc20', 'approve', [TO, 5n])],
    ['ERC-20 transferFrom', 'erc20', enc('erc20', 'transferFrom', [HOLDER, TO, 5n])],
    ['ERC-20 burn', 'erc20', enc('erc20', 'burn', [5n])],
    ['ERC-20 transfer of 0', 'erc20', enc('erc20', 'transfer', [TO, 0n])],
    ['ERC-20 transfer to oneself', 'erc20', enc('erc20', 'transfer', [HOLDER, 1n])],
    ['trailing bytes', 'erc20', concat([erc20, '0x00'])],
    ['a dirty address word', 'erc20', `0x${erc20.slice(2, 10)}ff${erc20.slice(12)}` as Hex],
    ['a selector alone', 'erc20', erc20.slice(0, 10) as Hex],
    ['empty data', 'erc20', '0x'],
    ['ERC-721 transferFrom', 'erc721', enc('erc721', 'transferFrom', [HOLDER, TO, 7n])],
    ['ERC-721 safeTransferFrom with data', 'erc721', encodeFunctionData({ abi: tokenAbi('erc721'), functionName: 'safeTransferFrom', args: [HOLDER, TO, 7n, '0x01'] })],
    ['ERC-721 another holder\'s token', 'erc721', encodeFunctionData({ abi: tokenAbi('erc721'), functionName: 'safeTransferFrom', args: [OTHER, TO, 7n] })],
    ['ERC-721 setApprovalForAll', 'erc721', enc('erc721', 'setApprovalForAll', [TO, true])],
    ['ERC-1155 batch', 'erc1155', enc('erc1155', 'safeBatchTransferFrom', [HOLDER, TO, [1n], [1n], '0x'])],
    ['ERC-1155 with data', 'erc1155', enc('erc1155', 'safeTransferFrom', [HOLDER, TO, 1n, 1n, '0x01'])],
    ['ERC-1155 another holder\'s tokens', 'erc1155', enc('erc1155', 'safeTransferFrom', [OTHER, TO, 1n, 1n, '0x'])],
    ['an ERC-20 transfer on an ERC-1155', 'erc1155', erc20],
  ];
  for (const [what, kind, data] of cases) t.equal(refusedOn(() => decodeGaslessTransfer(kind, data, HOLDER)), 'request.data', what);
});

t.test('the ForwardRequest hash is EIP-712 as OpenZeppelin\'s ERC2771Forwarder computes it', async (t) => {
  const r: ForwardRequest = { from: HOLDER as Address, to: TOKEN, value: 0n, gas: 80_000n, nonce: 3n, deadline: 1_900_000_000, data: gaslessTransferCall('erc20', { from: HOLDER, to: TO, amount: '5' }).data };
  // By hand: keccak256("\x19\x01" ‖ domainSeparator ‖ structHash), the type strings as in ERC2771Forwarder.sol and EIP712.sol.
  const domainType = keccak256(toHex('EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)'));
  const separator = keccak256(encodeAbiParameters([{ type: 'bytes32' }, { type: 'bytes32' }, { type: 'bytes32' }, { type: 'uint256' }, { type: 'address' }], [domainType, keccak256(toHex('TokenForwarder')), keccak256(toHex('1')), 31337n, FORWARDER]));
  const typeHash = keccak256(toHex('ForwardRequest(address from,address to,uint256 value,uint256 gas,uint256 nonce,uint48 deadline,bytes data)'));
  const struct = keccak256(encodeAbiParameters(
    [{ type: 'bytes32' }, { type: 'address' }, { type: 'address' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint48' }, { type: 'bytes32' }],
    [typeHash, r.from, r.to, r.value, r.gas, r.nonce, r.deadline, keccak256(r.data)],
  ));
  t.equal(forwardRequestHash(31337, FORWARDER, r), keccak256(concat(['0x1901', separator, struct])));
});

t.test('the typed data as answered is what a wallet signs; any field changed after signing fails', async (t) => {
  const holder = privateKeyToAccount(generatePrivateKey());
  const r: ForwardRequest = { from: holder.address, to: TOKEN, value: 0n, gas: 80_000n, nonce: 0n, deadline: 1_900_000_000, data: gaslessTransferCall('erc20', { from: holder.address, to: TO, amount: '5' }).data };
  const typed = typedDataJson(31337, FORWARDER, r);
  t.same(typed.types.EIP712Domain.map((x) => x.name), ['name', 'version', 'chainId', 'verifyingContract'], 'eth_signTypedData_v4 needs the domain type');
  t.match(typed.message, { value: '0', gas: '80000', nonce: '0', deadline: 1_900_000_000 }, 'integers as JSON takes them');
  // The JSON as it travels: integers of uint256 as strings, signed as it is.
  const signature = await holder.signTypedData(JSON.parse(JSON.stringify(typed)));
  t.equal(await forwardSignatureValid(31337, FORWARDER, r, signature), true, 'the holder\'s signature verifies');
  const altered: [string, Partial<ForwardRequest>][] = [
    ['from', { from: privateKeyToAccount(generatePrivateKey()).address }], ['to', { to: OTHER as Address }], ['value', { value: 1n }], ['gas', { gas: 80_001n }],
    ['nonce', { nonce: 1n }], ['deadline', { deadline: 1_900_000_001 }], ['data', { data: gaslessTransferCall('erc20', { from: holder.address, to: TO, amount: '6' }).data }],
  ];
  for (const [field, change] of altered) t.equal(await forwardSignatureValid(31337, FORWARDER, { ...r, ...change }, signature), false, `${field} changed: refused`);
  t.equal(await forwardSignatureValid(31337, OTHER as Address, r, signature), false, 'another forwarder\'s domain: refused');
  t.equal(await forwardSignatureValid(1, FORWARDER, r, signature), false, 'another chain: refused');
  t.equal(await forwardSignatureValid(31337, FORWARDER, r, `0x${'00'.repeat(65)}`), false, 'garbage: refused, not thrown');
});
