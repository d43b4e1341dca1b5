// The EVM convenience form of POST /transactions (`to`, `amount`, `asset`, `max_fee`) names exactly one
// intent: the SDK builds it to sign, the API builds it to verify the signature, from the same fields.
import { hexToBytes } from '@noble/hashes/utils.js';
import type { EvmTransferIntent } from './intent.ts';

/** Fee ceiling when the request gives none: 0.01 of the native coin (10^16 base units). */
export const DEFAULT_EVM_MAX_FEE = 10n ** 16n;

export interface EvmFields {
  organization: string;
  walletId: string;
  chainId: bigint;
  /** The transaction's nonce (POST /v1/transactions/prepare reserves one): a version 3 intent. */
  nonce?: bigint | string | undefined;
  /** The wallet's 0x address. */
  from: string;
  to: string;
  /** Base units, base-10 integer string. */
  amount: string;
  /** `native` (or absent) or a token contract 0x address. */
  asset?: string | undefined;
  maxFee?: string | undefined;
  idempotencyKey: string;
  /** Unix seconds; nodes refuse 0 (no expiry) and anything more than a day ahead. */
  notAfter?: bigint | undefined;
}

const addr = (a: string) => hexToBytes(a.slice(2).toLowerCase());

export function evmIntentFromFields(f: EvmFields): EvmTransferIntent {
  return {
    kind: 'evm.transfer',
    organization: f.organization,
    walletId: f.walletId,
    chainId: f.chainId,
    ...(f.nonce === undefined ? {} : { nonce: BigInt(f.nonce) }),
    from: addr(f.from),
    to: addr(f.to),
    asset: f.asset === undefined || f.asset === 'native' ? { kind: 'native' } : { kind: 'erc20', contract: addr(f.asset) },
    amount: BigInt(f.amount),
    data: new Uint8Array(),
    maxFee: f.maxFee === undefined ? DEFAULT_EVM_MAX_FEE : BigInt(f.maxFee),
    idempotencyKey: f.idempotencyKey,
    notAfter: f.notAfter ?? 0n,
  };
}
