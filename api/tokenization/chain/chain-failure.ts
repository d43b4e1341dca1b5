// Why a chain step failed, in two kinds the operation pipeline must tell apart (`tokenization.operation.failed`):
// - `reverted`: the chain ran the call and refused it. The revert data is decoded against every ABI here, so
//   a token's custom error (MintCapExceeded, EnforcedPause, AccountDenied…), an ERC2771Forwarder error or a
//   Safe `GSxxx` code reads as what it is. Sending it again changes nothing.
// - `engine`: the chain was not reached or did not answer the question (transport failure, RPC error, nonce or
//   fee trouble). The step may succeed when tried again.
import { BaseError, decodeErrorResult, ExecutionRevertedError, isHex, RawContractError, type Abi, type Hex } from 'viem';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { allAbis } from './artifacts.ts';

export type ChainFailure =
  | { kind: 'reverted'; errorName: string; args: readonly unknown[]; reason: string; data?: Hex }
  | { kind: 'engine'; message: string };

/** The Safe 1.4.1 revert codes (`require(…, "GSxxx")`), as the Safe contracts document them. */
export const SAFE_ERROR_CODES: Record<string, string> = {
  GS000: 'could not finish initialization',
  GS001: 'threshold needs to be defined',
  GS010: 'not enough gas to execute the Safe transaction',
  GS011: 'could not pay gas costs with ether',
  GS012: 'could not pay gas costs with token',
  GS013: 'the Safe transaction failed (safeTxGas and gasPrice are 0, so its inner call\'s revert reverts it)',
  GS020: 'signatures data too short',
  GS021: 'invalid contract signature location: inside static part',
  GS022: 'invalid contract signature location: length not present',
  GS023: 'invalid contract signature location: data not complete',
  GS024: 'invalid contract signature provided',
  GS025: 'hash has not been approved',
  GS026: 'invalid owner provided (a signature not by an owner, or signatures not sorted by owner)',
  GS030: 'only owners can approve a hash',
  GS031: 'method can only be called from this contract',
  GS100: 'modules have already been initialized',
  GS101: 'invalid module address provided',
  GS102: 'module has already been added',
  GS103: 'invalid prevModule, module pair provided',
  GS104: 'method can only be called from an enabled module',
  GS200: 'owners have already been set up',
  GS201: 'threshold cannot exceed owner count',
  GS202: 'threshold needs to be greater than 0',
  GS203: 'invalid owner address provided',
  GS204: 'address is already an owner',
  GS205: 'invalid prevOwner, owner pair provided',
  GS300: 'guard does not implement IERC165',
};

let abis: Abi | undefined;

/** Decodes revert data against every ABI of the chain layer (and Error(string), Panic(uint256)). */
export function decodeRevert(data: Hex, abi: Abi = (abis ??= allAbis())): ChainFailure & { kind: 'reverted' } {
  if (data === '0x') return { kind: 'reverted', errorName: 'Reverted', args: [], reason: 'reverted without a reason', data };
  try {
    const d = decodeErrorResult({ abi, data });
    const args = (d.args ?? []) as readonly unknown[];
    if (d.errorName === 'Error' && typeof args[0] === 'string' && SAFE_ERROR_CODES[args[0]]) {
      return { kind: 'reverted', errorName: args[0], args, reason: `${args[0]}: ${SAFE_ERROR_CODES[args[0]]}`, data };
    }
    const params = d.abiItem && 'inputs' in d.abiItem ? d.abiItem.inputs : [];
    const shown = args.map((a, i) => `${params[i]?.name || i}=${typeof a === 'bigint' ? a.toString() : String(a)}`).join(', ');
    return { kind: 'reverted', errorName: d.errorName, args, reason: d.errorName === 'Error' ? String(args[0]) : `${d.errorName}(${shown})`, data };
  } catch {
    return { kind: 'reverted', errorName: 'Unknown', args: [], reason: `reverted with undecoded data ${data.slice(0, 10)}`, data };
  }
}

/** The revert data carried anywhere in a viem error's chain of causes. */
export function revertDataOf(err: unknown): Hex | undefined {
  if (!(err instanceof BaseError)) return undefined;
  let found: Hex | undefined;
  err.walk((e) => {
    const data = e instanceof RawContractError ? e.data : (e as { raw?: unknown; data?: unknown }).raw ?? (e as { data?: unknown }).data;
    const hex = typeof data === 'object' && data !== null ? (data as { data?: unknown }).data : data;
    if (found === undefined && typeof hex === 'string' && isHex(hex) && (hex.length >= 10 || hex === '0x')) found = hex;
    return false;
  });
  return found;
}

/** Classifies what a chain call threw. */
export function failureOf(err: unknown): ChainFailure {
  if (err instanceof ChainStepError) return err.failure;
  const data = revertDataOf(err);
  if (data !== undefined) return decodeRevert(data);
  if (err instanceof BaseError && err.walk((e) => e instanceof ExecutionRevertedError)) return { kind: 'reverted', errorName: 'Reverted', args: [], reason: 'execution reverted without data' };
  const message = err instanceof BaseError ? err.shortMessage : err instanceof Error ? err.message : String(err);
  return { kind: 'engine', message };
}

/** A chain step that failed, with the classified failure; code `would_revert` for a revert, a transport code otherwise. */
export class ChainStepError extends CustodyError {
  readonly failure: ChainFailure;

  constructor(message: string, failure: ChainFailure, cause?: unknown) {
    super(failure.kind === 'reverted' ? 'would_revert' : 'chain_backend_error', `${message}: ${failure.kind === 'reverted' ? failure.reason : failure.message}`, { cause });
    this.name = 'ChainStepError';
    this.failure = failure;
  }

  static from(err: unknown, doing: string): ChainStepError {
    return err instanceof ChainStepError ? err : new ChainStepError(doing, failureOf(err), err);
  }

  static reverted(message: string, r: { errorName: string; args: readonly unknown[] }): ChainStepError {
    return new ChainStepError(message, { kind: 'reverted', ...r, reason: r.errorName });
  }
}
