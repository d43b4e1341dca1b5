// The per-token operations as calls of the token's own ABI (docs/platform/tokenization.md "Operations"): each
// route's body becomes one call from the admin Safe to the token, its arguments checked against the ABI's
// types by encoding them (a value that does not encode is 422 validation_failed, before anything is stored).
// `raw_safe_tx` is any Safe transaction the customer states field by field.
import { encodeFunctionData, isAddress, isHex, keccak256, toHex, zeroHash, type Abi, type Address, type Hex } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { builtArtifact, TOKEN_CONTRACT, type TokenKind } from './chain/artifacts.ts';

export const ROLE_NAMES = ['DEFAULT_ADMIN_ROLE', 'MINTER_ROLE', 'PAUSER_ROLE', 'ACCESS_LIST_ROLE', 'RECOVERY_ROLE'] as const;
export type RoleName = (typeof ROLE_NAMES)[number];

/** A role's bytes32: DEFAULT_ADMIN_ROLE is zero, the others keccak256 of their name (contracts/tokens/TokenControls.sol). */
export function roleId(role: RoleName): Hex {
  return role === 'DEFAULT_ADMIN_ROLE' ? zeroHash : keccak256(toHex(role));
}

/** The route path of each operation kind, and who may propose it. */
export const OPERATION_KINDS = {
  mint: { path: 'mint', permission: 'tokenization.operate' },
  burn: { path: 'burn', permission: 'tokenization.operate' },
  pause: { path: 'pause', permission: 'tokenization.manage' },
  unpause: { path: 'unpause', permission: 'tokenization.manage' },
  grant_role: { path: 'roles/grant', permission: 'tokenization.manage' },
  revoke_role: { path: 'roles/revoke', permission: 'tokenization.manage' },
  access_list_add: { path: 'access-list/add', permission: 'tokenization.manage' },
  access_list_remove: { path: 'access-list/remove', permission: 'tokenization.manage' },
  set_access_registry: { path: 'access-registry', permission: 'tokenization.manage' },
  disable_access_registry: { path: 'access-registry/disable', permission: 'tokenization.manage' },
  enable_treasury: { path: 'treasury-enable', permission: 'tokenization.manage' },
  disable_treasury: { path: 'treasury-disable', permission: 'tokenization.manage' },
  recover: { path: 'recover', permission: 'tokenization.manage' },
  deprecate: { path: 'deprecate', permission: 'tokenization.manage' },
  set_mint_policy: { path: 'policies', permission: 'tokenization.manage' },
  revoke_mint_policy: { path: 'policies/revoke', permission: 'tokenization.manage' },
  raw_safe_tx: { path: 'raw-safe-tx', permission: 'tokenization.manage' },
} as const;
export type OperationKind = keyof typeof OPERATION_KINDS;

/**
 * Safe operations on the token's access registry (contracts/tokens/AccessRegistry.sol, docs/platform/rwa.md
 * "Holders, eligibility, lockups and the cap table"): proposed by the RWA holders service when a holder's
 * eligibility or lockup changes, signed and executed like every other operation; no route of their own here.
 * The body names the registry, the holders and the values (integers as decimal strings or numbers).
 */
export const REGISTRY_OPERATION_KINDS = {
  registry_set_eligibility: { permission: 'tokenization.manage' },
  registry_set_token_eligibility: { permission: 'tokenization.manage' },
  registry_set_lockup: { permission: 'tokenization.manage' },
} as const;
export type RegistryOperationKind = keyof typeof REGISTRY_OPERATION_KINDS;
export const isRegistryOperation = (op: string): op is RegistryOperationKind => op in REGISTRY_OPERATION_KINDS;

/** What a Safe transaction of an operation calls. */
export interface OperationCall { to: Address; value: bigint; data: Hex; operation: 0 | 1 }

const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);

export function tokenAbi(kind: TokenKind): Abi {
  return builtArtifact(TOKEN_CONTRACT[kind]).abi;
}

/** Encodes `fn(args)` of the token's ABI; what does not encode is 422 naming the function. */
export function encodeTokenCall(kind: TokenKind, fn: string, args: readonly unknown[]): Hex {
  try {
    return encodeFunctionData({ abi: tokenAbi(kind), functionName: fn, args });
  } catch (err) {
    throw invalid(fn, `the arguments do not fit the ${TOKEN_CONTRACT[kind]} ABI: ${(err as { shortMessage?: string }).shortMessage ?? (err as Error).message}`);
  }
}

const address = (v: unknown, field: string): Address => {
  if (typeof v !== 'string' || !isAddress(v, { strict: false })) throw invalid(field, 'not an EVM address');
  return v.toLowerCase() as Address;
};
const nonZero = (v: unknown, field: string): Address => {
  const a = address(v, field);
  if (BigInt(a) === 0n) throw invalid(field, 'the zero address');
  return a;
};
const uint = (v: unknown, field: string, bits = 256): bigint => {
  if (typeof v !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(v)) throw invalid(field, 'a non-negative integer as a decimal string');
  const n = BigInt(v);
  if (n >= 1n << BigInt(bits)) throw invalid(field, `above uint${bits}`);
  return n;
};
const positive = (v: unknown, field: string): bigint => {
  const n = uint(v, field);
  if (n === 0n) throw invalid(field, 'must be above 0');
  return n;
};
const need = (body: Record<string, unknown>, field: string, kind: TokenKind, op: string) => {
  if (body[field] === undefined) throw invalid(field, `required to ${op} on ${kind}`);
  return body[field];
};
const refuse = (body: Record<string, unknown>, fields: string[], kind: TokenKind) => {
  for (const f of fields) if (body[f] !== undefined) throw invalid(f, `not a field of this operation on ${kind}`);
};

/** The call an operation's body asks for on a token of `kind` at `token`. */
export function operationCall(kind: TokenKind, token: Address, op: OperationKind | RegistryOperationKind, body: Record<string, unknown>): OperationCall {
  if (isRegistryOperation(op)) return registryCall(token, op, body);
  const call = (fn: string, args: unknown[]): OperationCall => ({ to: token, value: 0n, operation: 0, data: encodeTokenCall(kind, fn, args) });
  switch (op) {
    case 'mint':
      if (kind === 'erc20') { refuse(body, ['token_id', 'data'], kind); return call('mint', [nonZero(body.to, 'to'), positive(need(body, 'amount', kind, 'mint'), 'amount')]); }
      if (kind === 'erc721') { refuse(body, ['amount', 'data'], kind); return call('mint', [nonZero(body.to, 'to'), uint(need(body, 'token_id', kind, 'mint'), 'token_id')]); }
      return call('mint', [nonZero(body.to, 'to'), uint(need(body, 'token_id', kind, 'mint'), 'token_id'), positive(need(body, 'amount', kind, 'mint'), 'amount'), hexData(body.data ?? '0x', 'data')]);
    case 'burn':
      // What the Safe itself holds (ERC-1155: or an account that approved the Safe as its operator).
      if (kind === 'erc20') { refuse(body, ['token_id', 'account'], kind); return call('burn', [positive(need(body, 'amount', kind, 'burn'), 'amount')]); }
      if (kind === 'erc721') { refuse(body, ['amount', 'account'], kind); return call('burn', [uint(need(body, 'token_id', kind, 'burn'), 'token_id')]); }
      return call('burn', [nonZero(body.account ?? token, 'account'), uint(need(body, 'token_id', kind, 'burn'), 'token_id'), positive(need(body, 'amount', kind, 'burn'), 'amount')]);
    case 'pause': return call('pause', []);
    case 'unpause': return call('unpause', []);
    case 'grant_role': return call('grantRole', [roleId(body.role as RoleName), nonZero(body.account, 'account')]);
    case 'revoke_role': return call('revokeRole', [roleId(body.role as RoleName), nonZero(body.account, 'account')]);
    case 'access_list_add': return call('setAccess', [accounts(body.accounts), body.list === 'deny' ? 2 : 1]);
    case 'access_list_remove': return call('setAccess', [accounts(body.accounts), 0]);
    case 'set_access_registry': return call('setAccessRegistry', [nonZero(body.registry, 'registry')]);
    case 'disable_access_registry': return call('setAccessRegistry', ['0x0000000000000000000000000000000000000000']);
    case 'enable_treasury': return call('enableTreasury', [nonZero(body.treasury, 'treasury')]);
    case 'disable_treasury': return call('disableTreasury', []);
    case 'recover': {
      const lost = nonZero(body.lost, 'lost');
      const to = nonZero(body.to, 'to');
      if (lost === to) throw invalid('to', 'the same address as lost');
      if (kind === 'erc20') { refuse(body, ['token_ids'], kind); return call('recover', [lost, to]); }
      const ids = body.token_ids;
      if (!Array.isArray(ids) || ids.length === 0) throw invalid('token_ids', `required to recover on ${kind}: the token ids to move`);
      return call('recover', [lost, to, ids.map((x, i) => uint(x, `token_ids[${i}]`))]);
    }
    case 'deprecate': return call('deprecate', [nonZero(body.successor, 'successor')]);
    case 'set_mint_policy': return call('setMintPolicy', [nonZero(body.minter, 'minter'), positive(body.cap, 'cap'), uint(body.period_seconds === undefined ? undefined : String(body.period_seconds), 'period_seconds', 64)]);
    case 'revoke_mint_policy': return call('removeMintPolicy', [nonZero(body.minter, 'minter')]);
    case 'raw_safe_tx': {
      const operation = body.operation ?? 0;
      if (operation !== 0 && operation !== 1) throw invalid('operation', '0 (call) or 1 (delegatecall)');
      return { to: address(body.to, 'to'), value: uint(body.value ?? '0', 'value'), data: hexData(body.data ?? '0x', 'data'), operation };
    }
  }
}

/**
 * An NFT transfer by its holder, the wallet at `from` (docs/platform/tokenization.md "Calls by a vault wallet"):
 * ERC-721 `safeTransferFrom(from, to, tokenId)`, ERC-1155 `safeTransferFrom(from, to, id, amount, "")`; the
 * holder sends it, so no approval is involved. An ERC-20 token has none.
 */
export function nftTransferCall(kind: TokenKind, token: Address, from: Address, body: Record<string, unknown>): OperationCall {
  if (kind === 'erc20') throw invalid('token', 'NFT transfers are of ERC-721 and ERC-1155 tokens; this token is ERC-20');
  const call = (args: unknown[]): OperationCall => ({ to: token, value: 0n, operation: 0, data: encodeTokenCall(kind, 'safeTransferFrom', args) });
  const to = nonZero(body.to, 'to');
  const id = uint(need(body, 'token_id', kind, 'transfer'), 'token_id');
  if (kind === 'erc721') { refuse(body, ['amount'], kind); return call([from, to, id]); }
  return call([from, to, id, positive(need(body, 'amount', kind, 'transfer'), 'amount'), '0x']);
}

/** A registry operation's call: to the registry the body names, for the token at `token`. */
export function registryCall(token: Address, op: RegistryOperationKind, body: Record<string, unknown>): OperationCall {
  const registry = nonZero(body.registry, 'registry');
  const holders = accounts(body.holders, 'holders');
  const num = (v: unknown, field: string, bits: number) => uint(typeof v === 'number' ? String(v) : v, field, bits);
  const eligibility = () => ({
    verified: body.verified === true ? true : body.verified === false ? false : (() => { throw invalid('verified', 'true or false'); })(),
    jurisdiction: Number(num(body.jurisdiction ?? 0, 'jurisdiction', 16)), category: Number(num(body.category ?? 0, 'category', 8)), expiresAt: num(body.expires_at ?? 0, 'expires_at', 64),
  });
  const data = (fn: string, args: unknown[]): OperationCall => {
    try {
      return { to: registry, value: 0n, operation: 0, data: encodeFunctionData({ abi: builtArtifact('AccessRegistry').abi, functionName: fn, args }) };
    } catch (err) {
      throw invalid(fn, `the arguments do not fit the AccessRegistry ABI: ${(err as { shortMessage?: string }).shortMessage ?? (err as Error).message}`);
    }
  };
  switch (op) {
    case 'registry_set_eligibility': return data('setEligibility', [holders, eligibility()]);
    case 'registry_set_token_eligibility': return data('setTokenEligibility', [token, holders, eligibility()]);
    case 'registry_set_lockup': return data('setLockup', [token, holders, num(body.until ?? 0, 'until', 64)]);
  }
}

function accounts(v: unknown, field = 'accounts'): Address[] {
  if (!Array.isArray(v) || v.length === 0 || v.length > 100) throw invalid(field, '1 to 100 addresses');
  return v.map((a, i) => nonZero(a, `${field}[${i}]`));
}

function hexData(v: unknown, field: string): Hex {
  if (typeof v !== 'string' || !isHex(v) || v.length % 2 !== 0 || v.length > 2 + 2 * 65_536) throw invalid(field, '0x hex bytes, at most 64 KiB');
  return v.toLowerCase() as Hex;
}
