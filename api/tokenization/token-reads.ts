// Reads of a token that answer from the chain (docs/platform/tokenization.md "Reads"): a view function of the
// token's ABI called by name with typed arguments, the treasury switch, and the addresses of the token's
// contracts with what the chain holds at each. A name that is not a view function of the ABI, or an argument
// that does not fit its type, is 422 validation_failed before the chain is asked.
import { getAddress, isAddress, isHex, type AbiFunction, type AbiParameter, type Address } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { failureOf } from './chain/chain-failure.ts';
import { SAFE_ABI } from './chain/safe-abi.ts';
import { rolesModifierAddress, rolesModuleState } from './chain/roles-module.ts';
import type { TokenRecord } from './records.ts';
import type { TokenChain } from './token-chain.ts';
import { tokenAbi } from './token-calls.ts';

const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);

/** A JSON value as the ABI type `p` takes it: integers as decimal strings (or safe integers), bytes as 0x hex. */
export function abiArgument(p: Pick<AbiParameter, 'type'> & { components?: readonly AbiParameter[] }, v: unknown, field: string): unknown {
  const array = /^(.*)\[(\d*)\]$/.exec(p.type);
  if (array) {
    if (!Array.isArray(v) || (array[2] !== '' && v.length !== Number(array[2]))) throw invalid(field, `an array of ${p.type}`);
    return v.map((x, i) => abiArgument({ ...p, type: array[1]! }, x, `${field}[${i}]`));
  }
  if (/^u?int\d*$/.test(p.type)) {
    const ok = (typeof v === 'string' && /^-?(0|[1-9][0-9]{0,77})$/.test(v)) || (typeof v === 'number' && Number.isSafeInteger(v));
    if (!ok) throw invalid(field, `${p.type} as a decimal string`);
    const n = BigInt(v as string | number);
    const bits = BigInt(p.type.replace(/^u?int/, '') || '256');
    const unsigned = p.type.startsWith('u');
    if (unsigned ? n < 0n || n >= 1n << bits : n < -(1n << (bits - 1n)) || n >= 1n << (bits - 1n)) throw invalid(field, `out of range for ${p.type}`);
    return n;
  }
  if (p.type === 'address') {
    if (typeof v !== 'string' || !isAddress(v, { strict: false })) throw invalid(field, 'an EVM address');
    return getAddress(v);
  }
  if (p.type === 'bool') {
    if (typeof v !== 'boolean') throw invalid(field, 'true or false');
    return v;
  }
  if (p.type === 'string') {
    if (typeof v !== 'string') throw invalid(field, 'a string');
    return v;
  }
  const fixed = /^bytes(\d+)$/.exec(p.type);
  if (p.type === 'bytes' || fixed) {
    if (typeof v !== 'string' || !isHex(v) || v.length % 2 !== 0 || (fixed && v.length !== 2 + 2 * Number(fixed[1]))) throw invalid(field, `${p.type} as 0x hex`);
    return v;
  }
  throw invalid(field, `argument type ${p.type} is not taken here`);
}

const json = (v: unknown): unknown => (typeof v === 'bigint' ? v.toString() : Array.isArray(v) ? v.map(json) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, json(x)])) : v);

/** Calls the view function `name` of the token's ABI with `args` (a JSON array). */
export async function readToken(chain: TokenChain, token: TokenRecord, name: string, args: unknown[]): Promise<{ function: string; result: unknown }> {
  const fns = tokenAbi(token.kind).filter((x): x is AbiFunction => x.type === 'function' && x.name === name && (x.stateMutability === 'view' || x.stateMutability === 'pure'));
  if (fns.length === 0) throw invalid('function', `${name} is not a view function of the ${token.kind} token's ABI`);
  const fn = fns.find((f) => f.inputs.length === args.length);
  if (!fn) throw invalid('args', `${name} takes ${fns.map((f) => f.inputs.length).join(' or ')} argument(s), not ${args.length}`);
  const typed = fn.inputs.map((p, i) => abiArgument(p, args[i], `args[${i}]`));
  try {
    const result = await chain.client.readContract({ address: getAddress(token.address), abi: [fn], functionName: name, args: typed });
    const signature = `${name}(${fn.inputs.map((p) => p.type).join(',')})`;
    return { function: signature, result: json(result) };
  } catch (err) {
    const f = failureOf(err);
    if (f.kind === 'reverted') throw new CustodyError('would_revert', `${name} reverted: ${f.reason}`);
    throw new CustodyError('chain_backend_error', `reading ${name}: ${f.message}`);
  }
}

async function onChain<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const f = failureOf(err);
    throw new CustodyError('chain_backend_error', `reading ${what}: ${f.kind === 'engine' ? f.message : f.reason}`);
  }
}

export async function treasuryStatus(chain: TokenChain, token: TokenRecord) {
  const [treasury, enabled] = await onChain('treasuryStatus', () => chain.client.readContract({ address: getAddress(token.address), abi: tokenAbi(token.kind), functionName: 'treasuryStatus' }) as Promise<readonly [Address, boolean]>);
  return { token_id: token.id, enabled, treasury: BigInt(treasury) === 0n ? null : treasury.toLowerCase() };
}

/** The token's contracts as the chain shows them now. */
export async function tokenContracts(chain: TokenChain, token: TokenRecord) {
  const code = async (a: string) => ((await onChain(`the code at ${a}`, () => chain.client.getCode({ address: getAddress(a) }))) ?? '0x').length > 2;
  const [tokenCode, safeCode, forwarderCode] = await Promise.all([code(token.address), code(token.safe), code(token.forwarder)]);
  const registry = tokenCode ? await onChain('accessRegistry', () => chain.client.readContract({ address: getAddress(token.address), abi: tokenAbi(token.kind), functionName: 'accessRegistry' }) as Promise<Address>) : null;
  const modifier = rolesModifierAddress(token.id, getAddress(token.safe));
  const safe = safeCode ? await onChain('the Safe', async () => ({
    owners: (await chain.client.readContract({ address: getAddress(token.safe), abi: SAFE_ABI, functionName: 'getOwners' })).map((a) => a.toLowerCase()),
    threshold: Number(await chain.client.readContract({ address: getAddress(token.safe), abi: SAFE_ABI, functionName: 'getThreshold' })),
    nonce: (await chain.client.readContract({ address: getAddress(token.safe), abi: SAFE_ABI, functionName: 'nonce' })).toString(),
  })) : null;
  return {
    token_id: token.id, chain: token.chain, chain_id: token.chain_id,
    token: { address: token.address, deployed: tokenCode },
    safe: { address: token.safe, deployed: safeCode, owners: safe?.owners ?? null, threshold: safe?.threshold ?? null, nonce: safe?.nonce ?? null },
    forwarder: { address: token.forwarder, deployed: forwarderCode },
    access_registry: registry && BigInt(registry) !== 0n ? registry.toLowerCase() : null,
    roles_module: { address: modifier.toLowerCase(), ...(safeCode ? await onChain('the roles module', () => rolesModuleState(chain.client, getAddress(token.safe), modifier)) : { deployed: false, enabled: false }) },
  };
}
