// The funding service as the configuration describes it (docs/platform/funding.md "Configuration"): the
// rail (none, or the sandbox double), one stablecoin issuer per configured chain, and the sweep that
// drives open requests (mints to finality, off-ramp transfers, lost rail callbacks).
import { readFileSync } from 'node:fs';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { ConfigError } from '../../common/config.ts';
import { chainBackends, chainMap, type ApiConfig } from '../config.ts';
import type { Platform } from '../platform.ts';
import { CustomerLinks } from '../customers/customer-links.ts';
import { EvmChain } from '../chains/evm/evm-chain.ts';
import { evmNetwork } from '../../core/chains/evm/evm-networks.ts';
import { PlatformLedger } from '../ledger/platform-ledger.ts';
import { SandboxRail, SYSTEM_SCHEDULER, type Scheduler } from '../rails/sandbox-rail.ts';
import type { PaymentRail } from '../rails/payment-rail.ts';
import { FundingService, type FundingServiceOptions } from './funding-service.ts';
import { StablecoinIssuer } from './stablecoin-issuer.ts';
import type { GatewayService } from '../gateways/gateway-service.ts';

export interface Funding {
  service: FundingService;
  rail: PaymentRail | undefined;
  /** Starts the sweep and the rail's timers; `stop` ends them. */
  start(): void;
  stop(): void;
}

/** Reads the issuer's key file: `0x` and 64 hex digits (surrounding whitespace ignored). */
export function readIssuerKey(file: string): Hex {
  const k = readFileSync(file, 'utf8').trim();
  if (!/^0x[0-9a-fA-F]{64}$/.test(k)) throw new ConfigError(['API_FUNDING_ISSUER_KEY_FILE (fundingIssuerKeyFile): the file must hold 0x and 64 hex digits']);
  return k as Hex;
}

export function createFunding(config: ApiConfig, platform: Platform, opts: { scheduler?: Scheduler; sweepMs?: number; log?: FundingServiceOptions['log']; gateways?: GatewayService | undefined } = {}): Funding {
  const scheduler = opts.scheduler ?? SYSTEM_SCHEDULER;
  const issuers = new Map<string, StablecoinIssuer>();
  const stablecoins = chainMap(config.fundingStablecoins);
  const key = config.fundingIssuerKeyFile && Object.keys(stablecoins).length ? readIssuerKey(config.fundingIssuerKeyFile) : undefined;
  const backends = chainBackends(config);
  for (const [chain, token] of Object.entries(stablecoins)) {
    const net = evmNetwork(chain);
    const url = backends[chain];
    if (!net || !url || !key) throw new ConfigError([`API_FUNDING_STABLECOINS (fundingStablecoins): ${chain} is not an EVM chain with a backend`]);
    issuers.set(chain, new StablecoinIssuer({ store: platform.store, chain: new EvmChain(net, url), rpcUrl: url, issuerKey: key, token: token as Hex }));
  }
  const redemption = { ...Object.fromEntries([...issuers.keys()].map((c) => [c, key ? privateKeyToAccount(key).address : ''])), ...chainMap(config.fundingRedemptionAddresses) };
  // A workspace's gateway pays the fiat, the issuer still redeems the stablecoin: the same burn address.
  opts.gateways?.setRedemptionAddresses(redemption);
  const rail = config.fundingRail === 'sandbox'
    ? new SandboxRail({ store: platform.store, environment: config.environment, settleMs: config.sandboxRailSettleMs, scheduler, redemptionAddresses: redemption })
    : undefined;
  const service = new FundingService({
    store: platform.store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, links: new CustomerLinks(platform.store),
    ledger: new PlatformLedger(platform.store, platform.clock), rail, gateways: opts.gateways, issuer: (c) => issuers.get(c), offRampWindowMs: config.offRampWindowSec * 1000, clock: platform.clock, log: opts.log,
  });
  let timer: unknown;
  let running = false;
  const sweepMs = opts.sweepMs ?? 2000;
  const tick = () => {
    timer = scheduler.setTimeout(() => {
      void (async () => {
        await rail?.runDue().catch((err: unknown) => opts.log?.warn({ category: (err as { code?: string }).code ?? 'error' }, 'payment rail sweep failed'));
        await service.runDue().catch((err: unknown) => opts.log?.warn({ category: (err as { code?: string }).code ?? 'error' }, 'funding sweep failed'));
        if (running) tick();
      })();
    }, sweepMs);
  };
  return {
    service, rail,
    start: () => {
      if (running || (!rail && !opts.gateways)) return;
      running = true;
      tick();
    },
    stop: () => {
      running = false;
      if (timer !== undefined) scheduler.clearTimeout(timer);
      rail?.stop();
    },
  };
}
