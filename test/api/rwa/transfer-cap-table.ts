// A cap table for tests (api/rwa/seams.ts `CapTableSource`): the balances at a block summed from the token's
// ERC-20 / ERC-721 Transfer logs read with viem from the chain, so they are the chain's own.
import { getAddress, parseAbiItem, zeroAddress, type Hex, type PublicClient } from 'viem';
import type { CapTableSource, RwaScope } from '../../../api/rwa/seams.ts';
import type { TokenService } from '../../../api/tokenization/token-service.ts';

const TRANSFER20 = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
const TRANSFER721 = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)');

/** `of` names the chain and the tokens once the app that holds them is built (the app takes the cap table). */
export class TransferLogCapTable implements CapTableSource {
  constructor(private readonly of: () => { client: PublicClient; tokens: TokenService }) {}

  async balancesAt(scope: RwaScope, tokenId: string, block: bigint): Promise<Map<Hex, bigint>> {
    const { client, tokens } = this.of();
    const token = await tokens.get(scope, tokenId);
    const head = await client.getBlockNumber({ cacheTime: 0 });
    if (block > head) throw new Error(`the chain is at ${head}, not ${block}`);
    const out = new Map<Hex, bigint>();
    const add = (a: string, d: bigint) => {
      if (a.toLowerCase() === zeroAddress) return;
      const k = a.toLowerCase() as Hex;
      const v = (out.get(k) ?? 0n) + d;
      if (v === 0n) out.delete(k);
      else out.set(k, v);
    };
    const address = getAddress(token.address);
    if (token.kind === 'erc20') {
      for (const l of await client.getLogs({ address, event: TRANSFER20, fromBlock: 0n, toBlock: block, strict: true })) {
        add(l.args.from, -l.args.value);
        add(l.args.to, l.args.value);
      }
    } else {
      for (const l of await client.getLogs({ address, event: TRANSFER721, fromBlock: 0n, toBlock: block, strict: true })) {
        add(l.args.from, -1n);
        add(l.args.to, 1n);
      }
    }
    return out;
  }
}
