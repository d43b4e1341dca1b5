// The per-token operations as calls of each token kind's ABI (api/tokenization/token-calls.ts): the calldata
// decodes back, against the artifact's own ABI, to the function and arguments asked for; the fields of
// another kind, values that do not fit the ABI types and zero addresses are refused with validation_failed.
// The calls a vault wallet makes itself (a mint, an NFT transfer): the small encoder the SDK builds intents
// with (core/chains/evm/token-call-data.ts) gives the same bytes as the API's, from each artifact's ABI.
import t from 'tap';
import { decodeFunctionData, keccak256, toHex, zeroHash, type Address } from 'viem';
import { nftTransferCall, operationCall, roleId, tokenAbi, type OperationKind } from '../../../api/tokenization/token-calls.ts';
import { mintCalldata, nftTransferCalldata } from '../../../core/chains/evm/token-call-data.ts';
import type { TokenKind } from '../../../api/tokenization/chain/artifacts.ts';

const TOKEN = '0x00000000000000000000000000000000000000aa' as Address;
const A = '0x00000000000000000000000000000000000000b1';
const B = '0x00000000000000000000000000000000000000b2';

const decoded = (kind: TokenKind, op: OperationKind, body: Record<string, unknown>) => {
  const c = operationCall(kind, TOKEN, op, body);
  const d = decodeFunctionData({ abi: tokenAbi(kind), data: c.data });
  const lower = (x: unknown): unknown => (typeof x === 'string' ? x.toLowerCase() : Array.isArray(x) ? x.map(lower) : x);
  return [c.to, d.functionName, ...(d.args ?? []).map(lower)];
};

t.test('each kind\'s calls decode to what was asked', async (t) => {
  t.same(decoded('erc20', 'mint', { to: A, amount: '5' }), [TOKEN, 'mint', A, 5n]);
  t.same(decoded('erc721', 'mint', { to: A, token_id: '7' }), [TOKEN, 'mint', A, 7n]);
  t.same(decoded('erc1155', 'mint', { to: A, token_id: '7', amount: '3' }), [TOKEN, 'mint', A, 7n, 3n, '0x']);
  t.same(decoded('erc20', 'burn', { amount: '2' }), [TOKEN, 'burn', 2n]);
  t.same(decoded('erc721', 'burn', { token_id: '7' }), [TOKEN, 'burn', 7n]);
  t.same(decoded('erc1155', 'burn', { token_id: '7', amount: '1' }), [TOKEN, 'burn', TOKEN, 7n, 1n], 'ERC-1155: the Safe\'s own by default');
  t.same(decoded('erc721', 'recover', { lost: A, to: B, token_ids: ['1', '2'] }), [TOKEN, 'recover', A, B, [1n, 2n]]);
  t.same(decoded('erc1155', 'recover', { lost: A, to: B, token_ids: ['9'] }), [TOKEN, 'recover', A, B, [9n]]);
  t.same(decoded('erc20', 'grant_role', { role: 'MINTER_ROLE', account: A }), [TOKEN, 'grantRole', keccak256(toHex('MINTER_ROLE')), A]);
  t.equal(roleId('DEFAULT_ADMIN_ROLE'), zeroHash);
  t.same(decoded('erc721', 'access_list_add', { accounts: [A, B], list: 'deny' }), [TOKEN, 'setAccess', [A, B], 2]);
  t.same(decoded('erc1155', 'access_list_remove', { accounts: [A] }), [TOKEN, 'setAccess', [A], 0]);
  t.same(decoded('erc20', 'disable_access_registry', {}), [TOKEN, 'setAccessRegistry', `0x${'00'.repeat(20)}`]);
  t.same(decoded('erc20', 'set_mint_policy', { minter: A, cap: '100', period_seconds: 3600 }), [TOKEN, 'setMintPolicy', A, 100n, 3600n]);
  t.match(operationCall('erc20', TOKEN, 'raw_safe_tx', { to: B, value: '1', data: '0xabcd', operation: 0 }), { to: B, value: 1n, data: '0xabcd', operation: 0 });
});

t.test('what does not fit is refused with validation_failed', async (t) => {
  const refused: [TokenKind, OperationKind, Record<string, unknown>][] = [
    ['erc20', 'mint', { to: A, token_id: '1', amount: '1' }],
    ['erc721', 'mint', { to: A, amount: '1', token_id: '1' }],
    ['erc721', 'mint', { to: A }],
    ['erc1155', 'mint', { to: A, token_id: '1', amount: '0' }],
    ['erc20', 'mint', { to: `0x${'00'.repeat(20)}`, amount: '1' }],
    ['erc20', 'mint', { to: A, amount: '-1' }],
    ['erc20', 'mint', { to: A, amount: (1n << 256n).toString() }],
    ['erc721', 'recover', { lost: A, to: B }],
    ['erc20', 'recover', { lost: A, to: A }],
    ['erc20', 'set_mint_policy', { minter: A, cap: '1', period_seconds: 2 ** 64 }],
    ['erc20', 'access_list_add', { accounts: [], list: 'allow' }],
    ['erc20', 'raw_safe_tx', { to: B, data: '0xabc' }],
    ['erc20', 'raw_safe_tx', { to: B, operation: 2 }],
  ];
  for (const [kind, op, body] of refused) t.throws(() => operationCall(kind, TOKEN, op, body), { code: 'validation_failed' }, `${kind} ${op} ${JSON.stringify(body)}`);
});

t.test('a vault wallet\'s own calls: the SDK\'s encoder and the API\'s give the same calldata', async (t) => {
  t.equal(mintCalldata('erc20', { to: A, amount: 5n }), operationCall('erc20', TOKEN, 'mint', { to: A, amount: '5' }).data);
  t.equal(mintCalldata('erc721', { to: A, tokenId: 7n }), operationCall('erc721', TOKEN, 'mint', { to: A, token_id: '7' }).data);
  t.equal(mintCalldata('erc1155', { to: A, tokenId: 7n, amount: 3n, data: '0xbeef' }), operationCall('erc1155', TOKEN, 'mint', { to: A, token_id: '7', amount: '3', data: '0xbeef' }).data);
  const erc721 = nftTransferCall('erc721', TOKEN, A, { to: B, token_id: '7' });
  t.equal(nftTransferCalldata('erc721', { from: A, to: B, tokenId: 7n }), erc721.data);
  t.same(decodeFunctionData({ abi: tokenAbi('erc721'), data: erc721.data }).args?.map((x) => (typeof x === 'string' ? x.toLowerCase() : x)), [A, B, 7n], 'ERC-721: safeTransferFrom(from, to, id), no data');
  const erc1155 = nftTransferCall('erc1155', TOKEN, A, { to: B, token_id: '7', amount: '2' });
  t.equal(nftTransferCalldata('erc1155', { from: A, to: B, tokenId: 7n, amount: 2n }), erc1155.data);
  t.equal(decodeFunctionData({ abi: tokenAbi('erc1155'), data: erc1155.data }).functionName, 'safeTransferFrom');
  t.throws(() => nftTransferCall('erc20', TOKEN, A, { to: B, token_id: '1' }), { code: 'validation_failed' }, 'an ERC-20 has no NFT transfer');
  t.throws(() => nftTransferCall('erc721', TOKEN, A, { to: B, token_id: '1', amount: '1' }), { code: 'validation_failed' }, 'no amount on an ERC-721');
  t.throws(() => nftTransferCall('erc1155', TOKEN, A, { to: B, token_id: '1' }), { code: 'validation_failed' }, 'an amount on an ERC-1155');
  t.throws(() => nftTransferCall('erc1155', TOKEN, A, { to: `0x${'00'.repeat(20)}`, token_id: '1', amount: '1' }), { code: 'validation_failed' }, 'not to the zero address');
});
