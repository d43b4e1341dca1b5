// The escrow service as the configuration describes it (docs/platform/escrows.md "Configuration"): the
// escrow contract per chain (API_ESCROW_CONTRACTS), holding the chain's stablecoin, and the sweep that
// follows open escrows on chain to finality.
import type { Hex } from 'viem';
import { ConfigError } from '../../common/config.ts';
import { chainBackends, chainMap, type ApiConfig } from '../config.ts';
import type { Platform } from '../platform.ts';
import { CustomerLinks } from '../customers/customer-links.ts';
import { evmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { PlatformLedger } from '../ledger/platform-ledger.ts';
import { EscrowChain } from './escrow-chain.ts';
import { EscrowService, type EscrowServiceOptions } from './escrow-service.ts';

export interface Escrows {
  service: EscrowService;
  /** Starts the sweep (only with a contract configured); `stop` ends it. */
  start(): void;
  stop(): void;
}

export function createEscrows(config: ApiConfig, platform: Platform, stablecoin: (chain: string) => Hex | undefined, opts: { sweepMs?: number; log?: EscrowServiceOptions['log'] } = {}): Escrows {
  const chains = new Map<string, EscrowChain>();
  const backends = chainBackends(config);
  for (const [chain, contract] of Object.entries(chainMap(config.escrowContracts))) {
    const net = evmNetwork(chain);
    const url = backends[chain];
    if (!net || !url) throw new ConfigError([`API_ESCROW_CONTRACTS (escrowContracts): ${chain} is not an EVM chain with a backend`]);
    chains.set(chain, new EscrowChain(net, url, contract.toLowerCase() as Hex));
  }
  const service = new EscrowService({
    store: platform.store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, links: new CustomerLinks(platform.store),
    ledger: new PlatformLedger(platform.store, platform.clock), escrow: (c) => chains.get(c), stablecoin, fundingWindowMs: config.escrowFundingWindowSec * 1000,
    clock: platform.clock, log: opts.log,
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = false;
  const tick = () => {
    timer = setTimeout(() => {
      void service.runDue()
        .catch((err: unknown) => opts.log?.warn({ category: (err as { code?: string }).code ?? 'error' }, 'escrow sweep failed'))
        .finally(() => {
          if (running) tick();
        });
    }, opts.sweepMs ?? 2000);
    timer.unref?.();
  };
  return {
    service,
    start: () => {
      if (running || !chains.size) return;
      running = true;
      tick();
    },
    stop: () => {
      running = false;
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}
