// The calldata of the calls a customer's vault wallet makes on a managed token itself (docs/platform/
// tokenization.md "Calls by a vault wallet"): a mint under the wallet's own mint policy and an NFT transfer.
// The API and the SDK build the same bytes from the same fields, so the intent the customer signs (kind 1,
// docs/intents.md: to the token, value 0, data this calldata) is the one the API recomputes and compares.
// The signatures are those of contracts/tokens/*.sol; test/api/tokenization/token-calls.unit.ts checks the
// bytes against the compiled ABIs.
import { encodeFunctionData, parseAbi, type Hex } from 'viem';

export type TokenStandard = 'erc20' | 'erc721' | 'erc1155';

const ABI = parseAbi([
  'function mint(address to, uint256 amount)',
  'function mint(address to, uint256 id, uint256 amount, bytes data)',
  'function safeTransferFrom(address from, address to, uint256 tokenId)',
  'function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes data)',
]);

/** `mint` of a token of `kind`: ERC-20 `(to, amount)`, ERC-721 `(to, tokenId)`, ERC-1155 `(to, id, amount, data)`. */
export function mintCalldata(kind: TokenStandard, p: { to: Hex; amount?: bigint; tokenId?: bigint; data?: Hex }): Hex {
  if (kind === 'erc20') return encodeFunctionData({ abi: ABI, functionName: 'mint', args: [p.to, need(p.amount, 'amount')] });
  if (kind === 'erc721') return encodeFunctionData({ abi: ABI, functionName: 'mint', args: [p.to, need(p.tokenId, 'tokenId')] });
  return encodeFunctionData({ abi: ABI, functionName: 'mint', args: [p.to, need(p.tokenId, 'tokenId'), need(p.amount, 'amount'), p.data ?? '0x'] });
}

/**
 * An NFT transfer from `from` (the holder that sends the transaction): ERC-721 `safeTransferFrom(from, to,
 * tokenId)`, ERC-1155 `safeTransferFrom(from, to, id, amount, "")`. ERC-20 tokens have none.
 */
export function nftTransferCalldata(kind: Exclude<TokenStandard, 'erc20'>, p: { from: Hex; to: Hex; tokenId: bigint; amount?: bigint }): Hex {
  if (kind === 'erc721') return encodeFunctionData({ abi: ABI, functionName: 'safeTransferFrom', args: [p.from, p.to, p.tokenId] });
  return encodeFunctionData({ abi: ABI, functionName: 'safeTransferFrom', args: [p.from, p.to, p.tokenId, need(p.amount, 'amount'), '0x'] });
}

function need(v: bigint | undefined, what: string): bigint {
  if (v === undefined) throw new TypeError(`${what} is required for this token kind`);
  return v;
}
