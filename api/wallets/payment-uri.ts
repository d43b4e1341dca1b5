// Payment-request URIs for a wallet's address (POST /v1/wallets/{id}/qr, docs/platform/wallets.md):
// EIP-681 (https://eips.ethereum.org/EIPS/eip-681) for EVM chains, the native asset as
// `ethereum:<address>@<chain id>?value=<wei>` and an ERC-20 token as a call of its `transfer`,
// `ethereum:<token>@<chain id>/transfer?address=<address>&uint256=<units>`; BIP-21
// (https://github.com/bitcoin/bips/blob/master/bip-0021.mediawiki) for Bitcoin,
// `bitcoin:<address>?amount=<BTC>&label=...&message=...`, the amount in BTC written exactly from satoshis.
// Pure: amounts are integers in base units, checked here; nothing is rounded.
import { getAddress } from 'viem';
import { CustodyError } from '../../core/errors/custody-error.ts';

const MAX_UINT256 = 2n ** 256n - 1n;
/** 21 million BTC in satoshis: no Bitcoin amount can be more. */
export const MAX_SATS = 21_000_000n * 100_000_000n;

const bad = (message: string) => new CustodyError('invalid_request', message);

export type EvmAsset = { kind: 'native' } | { kind: 'erc20'; contract: string };

/** EIP-681: a payment of `amount` base units (any amount when absent) of `asset` to `address` on chain `chainId`. */
export function evmPaymentUri(chainId: bigint, address: string, asset: EvmAsset, amount?: bigint): string {
  if (amount !== undefined && (amount <= 0n || amount > MAX_UINT256)) throw bad('amount must be a positive integer below 2^256');
  const to = getAddress(address);
  if (asset.kind === 'native') return `ethereum:${to}@${chainId}${amount !== undefined ? `?value=${amount}` : ''}`;
  return `ethereum:${getAddress(asset.contract)}@${chainId}/transfer?address=${to}${amount !== undefined ? `&uint256=${amount}` : ''}`;
}

/** BTC as BIP-21 writes it: decimal, '.' separator, no exponent, no trailing zeros; exact for any satoshi amount. */
export function satsToBtc(sats: bigint): string {
  if (sats < 0n) throw bad('amount must not be negative');
  const whole = sats / 100_000_000n;
  const fraction = (sats % 100_000_000n).toString().padStart(8, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : `${whole}`;
}

/** BIP-21: a payment of `amountSats` (any amount when absent) to `address`, with an optional label and message. */
export function bip21Uri(address: string, opts: { amountSats?: bigint | undefined; label?: string | undefined; message?: string | undefined } = {}): string {
  const { amountSats, label, message } = opts;
  if (amountSats !== undefined && (amountSats <= 0n || amountSats > MAX_SATS)) throw bad('amount must be a positive number of satoshis, at most 21 million BTC');
  const params: string[] = [];
  if (amountSats !== undefined) params.push(`amount=${satsToBtc(amountSats)}`);
  // Percent-encoded as RFC 3986 asks of a query value (BIP-21 "Query Keys"); a space is %20, never '+'.
  if (label !== undefined) params.push(`label=${encodeURIComponent(label)}`);
  if (message !== undefined) params.push(`message=${encodeURIComponent(message)}`);
  return `bitcoin:${address}${params.length ? `?${params.join('&')}` : ''}`;
}
