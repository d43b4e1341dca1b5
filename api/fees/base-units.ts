// Money on the platform API (docs/platform/fees.md "Money"): an integer number of an asset's base units
// (wei, satoshis, a token's smallest unit), sent as a JSON string of decimal digits and held as a bigint,
// always beside the asset it counts. Integers only: no rounding ever happens outside a documented floor.

/** The largest amount an EVM transfer can carry (uint256); also the per-payment limit (docs/platform/fees.md). */
export const MAX_UINT256 = 2n ** 256n - 1n;

/** Decimal digits without leading zeros, at most 78 (2^256 has 78 digits). */
const BASE_UNITS = /^(0|[1-9][0-9]{0,77})$/;

/** The amount, or undefined when `s` is not a base-unit string. */
export function parseBaseUnits(s: string): bigint | undefined {
  return BASE_UNITS.test(s) ? BigInt(s) : undefined;
}

/** An asset as api/transactions/records.ts `TransferRecord` names it: `<chain>:native` or `<chain>:0x<token contract>`. */
const ASSET = /^([a-z0-9-]{1,40}):(native|0x[0-9a-fA-F]{40})$/;

/** The asset id split into its chain and what it is on that chain, contract in lower case; undefined when malformed. */
export function parseAsset(s: string): { chain: string; token: 'native' | `0x${string}`; id: string } | undefined {
  const m = ASSET.exec(s);
  if (!m) return undefined;
  const token = m[2] === 'native' ? 'native' : (m[2]!.toLowerCase() as `0x${string}`);
  return { chain: m[1]!, token, id: `${m[1]}:${token}` };
}
