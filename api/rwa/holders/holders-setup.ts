// The holders part of the real-world-asset layer (docs/platform/rwa.md "Holders, eligibility, lockups and the
// cap table"): eligibility and lockups pushed to each token's access registry through its admin Safe, and the
// cap table indexed from the chain's Transfer history (the `CapTableSource` other parts read).
import { evmNetwork } from '../../../core/chains/evm/evm-networks.ts';
import type { Platform } from '../../platform.ts';
import type { Tokenization } from '../../tokenization/tokenization-setup.ts';
import type { TokenLog } from '../seams.ts';
import { CapTableIndexer } from './cap-table.ts';
import { HoldersService } from './holders-service.ts';

export interface RwaHolders {
  holders: HoldersService;
  capTable: CapTableIndexer;
}

/** `log`: the tokens' transparency log; without it eligibility and lockup changes answer 503 and change nothing. */
export function createRwaHolders(platform: Platform, tokenization: Tokenization, log: TokenLog | undefined): RwaHolders {
  return {
    holders: new HoldersService({ store: platform.store, audit: platform.audit, tokenization, log, clock: platform.clock }),
    // A block is indexed once it is the chain's finality depth below the head.
    capTable: new CapTableIndexer({ store: platform.store, tokens: tokenization.tokens, chain: tokenization.chain, confirmations: (chain) => evmNetwork(chain)?.finalityDepth ?? 64, clock: platform.clock }),
  };
}
