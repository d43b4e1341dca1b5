// A PaymentRail over the network (docs/platform/gateways.md "The gateway as a rail"): one integration
// gateway, called through GatewayClient. Its name is the gateway's id, so funding requests and ledger
// accounts name it. A submission's answer must echo what was submitted; the first answer for a reference
// is kept (`integration_gateway_transfers`), and every later answer and callback is checked against it, so
// a gateway can report only on transfers it was given, with the amount it was given.
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { RecordRepository } from '../store/record-repository.ts';
import type { PaymentRail, RailDirection, RailSubmission, RailTransfer } from '../rails/payment-rail.ts';
import { GatewayCallError, type GatewayClient } from './gateway-client.ts';
import { toRailTransfer, type WireTransfer } from './gateway-protocol.ts';
import type { GatewayRecord } from './gateway-records.ts';
import { GATEWAY_TRANSFERS } from './collections.ts';

export interface GatewayRailOptions {
  gateway: GatewayRecord;
  client: GatewayClient;
  store: RecordRepository;
  /** Where this gateway's callbacks go (`<public origin>/v1/gateway-callbacks/<id>`). */
  callbackUrl: string;
  redemptionAddresses: Readonly<Record<string, string>>;
  /** Told of every failed call (the gateway's history). */
  onFailure: (gateway: GatewayRecord, err: GatewayCallError) => Promise<void>;
}

export class GatewayRail implements PaymentRail {
  readonly name: string;
  readonly sandbox: boolean;
  readonly currencies: readonly string[];

  constructor(private readonly o: GatewayRailOptions) {
    this.name = o.gateway.id;
    // A sandbox workspace's gateway is called in its sandbox mode and moves no money.
    this.sandbox = o.gateway.environment === 'sandbox';
    this.currencies = o.gateway.currencies;
  }

  onSettlement(): void {
    // Callbacks arrive at the service's callback route and are told by the gateway directory.
  }

  redemptionAddress(chain: string): string | undefined {
    return this.o.redemptionAddresses[chain];
  }

  submitPull(req: RailSubmission): Promise<RailTransfer> {
    return this.submit('pull', req);
  }

  submitPush(req: RailSubmission): Promise<RailTransfer> {
    return this.submit('push', req);
  }

  private async guarded<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof GatewayCallError) await this.o.onFailure(this.o.gateway, err).catch(() => undefined);
      throw err;
    }
  }

  private async submit(direction: RailDirection, req: RailSubmission): Promise<RailTransfer> {
    if (req.amount <= 0n) throw new CustodyError('invalid_request', 'a rail transfer moves a positive amount');
    const gw = this.o.gateway;
    return this.guarded(async () => {
      const { transfer } = await this.o.client.submit(gw, {
        reference: req.reference, direction, amount: req.amount.toString(), currency: req.currency, mode: this.sandbox ? 'sandbox' : 'live',
        callback_url: this.o.callbackUrl, account_holder_id: req.account_holder_id ?? null,
      });
      if (transfer.reference !== req.reference || transfer.direction !== direction || transfer.amount !== req.amount.toString() || transfer.currency !== req.currency) {
        throw new GatewayCallError('malformed_answer', 'malformed answer: the transfer answered is not the one submitted (reference, direction, amount or currency differs)');
      }
      await this.remember(transfer);
      return toRailTransfer(transfer);
    });
  }

  /** Keeps the first answer for a reference; a later one naming another transfer id is refused. */
  private async remember(t: WireTransfer): Promise<void> {
    const key = `${this.o.gateway.id}/${t.reference}`;
    const known = await GATEWAY_TRANSFERS.in(this.o.store).get(key);
    if (known) {
      if (known.transfer_id !== t.id) throw new GatewayCallError('malformed_answer', 'malformed answer: the reference was answered with another transfer id before');
      return;
    }
    await GATEWAY_TRANSFERS.in(this.o.store).insertIfAbsent(key, { v: 1, gateway_id: this.o.gateway.id, reference: t.reference, transfer_id: t.id, direction: t.direction, amount: t.amount, currency: t.currency });
  }

  async transfer(id: string): Promise<RailTransfer | undefined> {
    return this.guarded(async () => {
      const t = await this.o.client.get(this.o.gateway, id);
      if (!t) return undefined;
      const known = await GATEWAY_TRANSFERS.in(this.o.store).get(`${this.o.gateway.id}/${t.reference}`);
      if (!known || known.transfer_id !== t.id || known.amount !== t.amount || known.currency !== t.currency || known.direction !== t.direction) {
        throw new GatewayCallError('malformed_answer', 'malformed answer: the transfer read is not the one the gateway answered at submission');
      }
      return toRailTransfer(t);
    });
  }

  /** A callback's transfer, checked against the answer kept at submission; undefined when it names another. */
  static async matches(store: RecordRepository, gatewayId: string, t: WireTransfer): Promise<boolean> {
    const known = await GATEWAY_TRANSFERS.in(store).get(`${gatewayId}/${t.reference}`);
    return !!known && known.transfer_id === t.id && known.amount === t.amount && known.currency === t.currency && known.direction === t.direction;
  }
}
