// The calls a gasless relay may carry (docs/platform/tokenization.md "Gasless transfers"): the relayer pays
// gas for transfers of the token's own holders and nothing else, so a forward request's `data` must be exactly
// one holder's transfer of this token, in the one canonical encoding this module builds:
// - ERC-20: `transfer(to, amount)`, the holder being the sender (its `_msgSender()`);
// - ERC-721: `safeTransferFrom(from, to, tokenId)` with `from` the holder;
// - ERC-1155: `safeTransferFrom(from, to, id, amount, "")` with `from` the holder.
// Approvals, burns, batches, other overloads and transfers on behalf of someone else are refused, and so is any
// `data` that does not encode back byte for byte (trailing bytes, dirty padding). Pure: no chain, no store.
import { decodeFunctionData, isAddress, toFunctionSelector, type AbiFunction, type Address, type Hex } from 'viem';
import { FieldValidationError } from '../validation.ts';
import { encodeTokenCall, tokenAbi } from './token-calls.ts';
import type { TokenKind } from './chain/artifacts.ts';

/** The one function signature a relayed transfer of each kind may call. */
export const GASLESS_TRANSFER_FUNCTION: Record<TokenKind, string> = {
  erc20: 'transfer(address,uint256)',
  erc721: 'safeTransferFrom(address,address,uint256)',
  erc1155: 'safeTransferFrom(address,address,uint256,uint256,bytes)',
};

/** A holder's transfer, as built and as decoded from a request's data. Integers as decimal strings. */
export interface GaslessTransfer {
  function: string;
  from: string;
  to: string;
  amount: string | null;
  token_id: string | null;
}

export interface GaslessTransferInput { from: string; to: string; amount?: string | undefined; token_id?: string | undefined }

const UINT = /^(0|[1-9][0-9]{0,77})$/;
const fail = (field: string, reason: string) => new FieldValidationError([{ field, reason }]);

function holderAndRecipient(from: string, to: string, fromField: string, toField: string): [Address, Address] {
  if (!isAddress(from, { strict: false }) || BigInt(from) === 0n) throw fail(fromField, 'not a non-zero EVM address');
  if (!isAddress(to, { strict: false }) || BigInt(to) === 0n) throw fail(toField, 'not a non-zero EVM address');
  if (from.toLowerCase() === to.toLowerCase()) throw fail(toField, 'the holder itself: a transfer to oneself moves nothing');
  return [from.toLowerCase() as Address, to.toLowerCase() as Address];
}

function uint(v: string | undefined, field: string, positive: boolean): bigint {
  if (v === undefined || !UINT.test(v)) throw fail(field, 'a non-negative integer as a decimal string');
  const n = BigInt(v);
  if (n >= 1n << 256n) throw fail(field, 'above uint256');
  if (positive && n === 0n) throw fail(field, 'must be above 0');
  return n;
}

/** The transfer `input` asks for on a token of `kind`, and its calldata; 422 naming the field otherwise. */
export function gaslessTransferCall(kind: TokenKind, input: GaslessTransferInput): { data: Hex; transfer: GaslessTransfer } {
  const [from, to] = holderAndRecipient(input.from, input.to, 'from', 'to');
  const fields: Record<TokenKind, { need: ('amount' | 'token_id')[]; refuse: ('amount' | 'token_id')[] }> = {
    erc20: { need: ['amount'], refuse: ['token_id'] },
    erc721: { need: ['token_id'], refuse: ['amount'] },
    erc1155: { need: ['token_id', 'amount'], refuse: [] },
  };
  for (const f of fields[kind].refuse) if (input[f] !== undefined) throw fail(f, `not a field of a transfer on ${kind}`);
  for (const f of fields[kind].need) if (input[f] === undefined) throw fail(f, `required to transfer on ${kind}`);
  const transfer: GaslessTransfer = { function: GASLESS_TRANSFER_FUNCTION[kind], from, to, amount: input.amount ?? null, token_id: input.token_id ?? null };
  if (kind === 'erc20') return { data: encodeTokenCall(kind, 'transfer', [to, uint(input.amount, 'amount', true)]), transfer };
  if (kind === 'erc721') return { data: encodeTokenCall(kind, 'safeTransferFrom', [from, to, uint(input.token_id, 'token_id', false)]), transfer };
  return { data: encodeTokenCall(kind, 'safeTransferFrom', [from, to, uint(input.token_id, 'token_id', false), uint(input.amount, 'amount', true), '0x']), transfer };
}

function selectorOf(kind: TokenKind): Hex {
  return toFunctionSelector(GASLESS_TRANSFER_FUNCTION[kind]);
}

/**
 * The holder's transfer a request's `data` carries, or 422 on `field`: only this kind's transfer function,
 * with `from` the holder, a non-zero recipient other than the holder, a positive amount, no ERC-1155 data, and
 * `data` exactly as `gaslessTransferCall` would encode it.
 */
export function decodeGaslessTransfer(kind: TokenKind, data: Hex, holder: string, field = 'request.data'): GaslessTransfer {
  const why = `must be the holder's ${GASLESS_TRANSFER_FUNCTION[kind]} of this token`;
  if (data.length < 10 || data.slice(0, 10).toLowerCase() !== selectorOf(kind)) throw fail(field, `${why}; nothing else is relayed`);
  let args: readonly unknown[];
  try {
    const abi = tokenAbi(kind).filter((x): x is AbiFunction => x.type === 'function' && toFunctionSelector(x) === selectorOf(kind));
    args = decodeFunctionData({ abi, data }).args ?? [];
  } catch {
    throw fail(field, `${why}; it does not decode`);
  }
  const s = (x: unknown) => (typeof x === 'bigint' ? x.toString() : String(x));
  const input: GaslessTransferInput = kind === 'erc20'
    ? { from: holder, to: s(args[0]), amount: s(args[1]) }
    : { from: s(args[0]), to: s(args[1]), token_id: s(args[2]), ...(kind === 'erc1155' ? { amount: s(args[3]) } : {}) };
  if (input.from.toLowerCase() !== holder.toLowerCase()) throw fail(field, `${why}: it moves tokens of ${input.from}, not of the request's from ${holder}`);
  if (kind === 'erc1155' && args[4] !== '0x') throw fail(field, `${why}: the ERC-1155 data argument must be empty`);
  let built;
  try {
    built = gaslessTransferCall(kind, input);
  } catch (err) {
    const f = (err as FieldValidationError).fields?.[0];
    throw fail(field, `${why}: ${f ? `${f.field} ${f.reason}` : (err as Error).message}`);
  }
  if (built.data.toLowerCase() !== data.toLowerCase()) throw fail(field, `${why}, in its canonical encoding (no trailing or non-canonical bytes)`);
  return built.transfer;
}
