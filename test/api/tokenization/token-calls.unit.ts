// The per-token operations as calls of each token kind's ABI (api/tokenization/token-calls.ts): the calldata
// decodes back, against the artifact's own ABI, to the function and arguments asked for; the fields of
// another kind, values that do not fit the ABI types and zero addresses are refused with validation_failed.
import t from 'tap';
import { decodeFunctionData, keccak256, toHex, zeroHash, type Address } from 'viem';
import { operationCall, roleId, tokenAbi, type OperationKind } from '../../../api/tokenization/token-calls.ts';
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
