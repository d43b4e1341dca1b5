// The payment service as the configuration describes it (docs/platform/payments.md): the quote's pricing
// and checks, the fee collectors, the payer's balance read from the chain backends, and the sweep that
// follows approvals and transactions to confirmed.
import type { Hex } from 'viem';
import type { ApiConfig } from '../config.ts';
import type { Platform } from '../platform.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import type { Chains } from '../transactions/transaction-worker.ts';
import { CustomerLinks } from '../customers/customer-links.ts';
import { FeeSchedules } from '../fees/fee-schedules.ts';
import { platformFeeOf } from '../fees/platform-fee.ts';
import { PlatformLedger } from '../ledger/platform-ledger.ts';
import { PaymentQuotes } from './payment-quotes.ts';
import { feeCollectorsOf } from './payment-fee-collectors.ts';
import { PaymentService, type PaymentServiceOptions } from './payments.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The payment service of this server (api/payments/payments.ts), for its sweep and for tests. */
    payments?: PaymentService;
  }
}

export interface Payments {
  service: PaymentService;
  quotes: PaymentQuotes;
  /** Starts the sweep (every API_PAYMENT_SWEEP_MS); `stop` ends it. */
  start(): void;
  stop(): void;
}

export function createPayments(config: ApiConfig, platform: Platform, o: { store?: RecordRepository | undefined; chains?: Chains | undefined; log?: PaymentServiceOptions['log'] }): Payments {
  const store = o.store ?? platform.store;
  const links = new CustomerLinks(store);
  const schedules = new FeeSchedules({ store: platform.store, audit: platform.audit, cursors: platform.cursors, clock: platform.clock });
  const quotes = new PaymentQuotes({ store, links, schedules, platformFee: platformFeeOf(config), clock: platform.clock });
  const service = new PaymentService({
    store, audit: platform.audit, cursors: platform.cursors, deliveries: platform.deliveries, links, ledger: new PlatformLedger(store, platform.clock), quotes,
    collectors: feeCollectorsOf(config), clock: platform.clock, log: o.log,
    tokenBalance: async (chain, token, address) => o.chains?.evm(chain)?.tokenBalance(token as Hex, address as Hex, 'pending'),
  });
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  const tick = () => {
    timer = setTimeout(() => {
      void service.runDue()
        .catch((err: unknown) => o.log?.warn({ category: (err as { code?: string }).code ?? 'error' }, 'payment sweep failed'))
        .finally(() => { if (running) tick(); });
    }, config.paymentSweepMs);
    timer.unref();
  };
  return {
    service, quotes,
    start: () => {
      if (running) return;
      running = true;
      tick();
    },
    stop: () => {
      running = false;
      if (timer) clearTimeout(timer);
    },
  };
}
