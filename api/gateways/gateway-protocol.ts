// The integration-gateway wire protocol, version 1 (docs/platform/gateways.md): the shapes the service
// sends and accepts, checked strictly, and the sandbox mode's magic amounts. A gateway is the
// PaymentRail contract (api/rails/payment-rail.ts) over HTTPS: amounts are minor units as decimal
// strings, times are RFC 3339 strings, a transfer is idempotent by its reference.
import {
  RAIL_FAILURE_REASONS, RAIL_RETURN_REASONS,
  type RailDirection, type RailFailureReason, type RailReturnReason, type RailTransfer,
} from '../rails/payment-rail.ts';

/** The path prefix and the callbacks' `v`. */
export const PROTOCOL_VERSION = 1;
/** The conformance suite's version: a gateway serves production only after passing this one. */
export const SUITE_VERSION = 1;

export const REFERENCE = /^[A-Za-z0-9_-]{1,64}$/;
const AMOUNT = /^[1-9][0-9]{0,17}$/;
const CURRENCY = /^[A-Z]{3}$/;
const TRANSFER_ID = /^[\x21-\x7e]{1,128}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

export type GatewayMode = 'sandbox' | 'live';

/** What the service POSTs to `<base_url>/v1/transfers`. */
export interface TransferSubmission {
  reference: string;
  direction: RailDirection;
  /** Minor units, a positive integer as a string. */
  amount: string;
  currency: string;
  mode: GatewayMode;
  /** Where the gateway POSTs this transfer's callbacks. */
  callback_url: string;
  /** The workspace's account holder the money is for (the tenant's own id of its customer); null when none. */
  account_holder_id: string | null;
}

/** A transfer on the wire. */
export interface WireTransfer {
  id: string;
  reference: string;
  direction: RailDirection;
  amount: string;
  currency: string;
  status: RailTransfer['status'];
  reason: RailFailureReason | RailReturnReason | null;
  submitted_at: string;
  resolved_at: string | null;
}

/** The body of a callback the gateway POSTs to the service. */
export interface CallbackBody {
  v: 1;
  transfer: WireTransfer;
}

/** What the sandbox mode does with a transfer of exactly this amount (any other settles). */
export type SandboxOutcome =
  | { outcome: 'refused'; reason: RailFailureReason }
  | { outcome: 'failed'; reason: RailFailureReason }
  | { outcome: 'returned'; reason: RailReturnReason }
  | { outcome: 'hold' };

/** The sandbox mode's magic amounts (minor units), the same for pulls and pushes. */
export const SANDBOX_AMOUNTS: Readonly<Record<string, SandboxOutcome>> = {
  100001: { outcome: 'failed', reason: 'insufficient_funds' },
  100002: { outcome: 'failed', reason: 'account_closed' },
  100003: { outcome: 'returned', reason: 'unauthorized_debit' },
  100004: { outcome: 'refused', reason: 'account_invalid' },
  100005: { outcome: 'failed', reason: 'rejected_by_bank' },
  100006: { outcome: 'refused', reason: 'limit_exceeded' },
  100007: { outcome: 'returned', reason: 'account_closed' },
  100008: { outcome: 'returned', reason: 'payment_stopped' },
  100009: { outcome: 'hold' },
};

/** The amount of the sandbox table that ends in this outcome. */
export function sandboxAmount(match: (o: SandboxOutcome) => boolean): string {
  const hit = Object.entries(SANDBOX_AMOUNTS).find(([, o]) => match(o));
  if (!hit) throw new Error('no such sandbox amount');
  return hit[0];
}

export class MalformedAnswer extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedAnswer';
  }
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Checks a transfer as the gateway sent it; throws MalformedAnswer naming the first field at fault. */
export function parseWireTransfer(x: unknown): WireTransfer {
  const bad = (m: string): never => {
    throw new MalformedAnswer(m);
  };
  if (!isObject(x)) return bad('the transfer is not a JSON object');
  const allowed = ['id', 'reference', 'direction', 'amount', 'currency', 'status', 'reason', 'submitted_at', 'resolved_at'];
  for (const k of Object.keys(x)) if (!allowed.includes(k)) bad(`unknown field ${k.slice(0, 40)}`);
  if (typeof x.id !== 'string' || !TRANSFER_ID.test(x.id)) bad('id must be 1 to 128 visible ASCII characters');
  if (typeof x.reference !== 'string' || !REFERENCE.test(x.reference)) bad('reference is malformed');
  if (x.direction !== 'pull' && x.direction !== 'push') bad('direction must be pull or push');
  if (typeof x.amount !== 'string' || !AMOUNT.test(x.amount)) bad('amount must be a positive integer of minor units, as a string');
  if (typeof x.currency !== 'string' || !CURRENCY.test(x.currency)) bad('currency must be an ISO 4217 code');
  const status = x.status;
  if (status !== 'pending' && status !== 'settled' && status !== 'failed' && status !== 'returned') return bad('status must be pending, settled, failed or returned');
  const reason = x.reason;
  if (status === 'failed' && !(RAIL_FAILURE_REASONS as readonly unknown[]).includes(reason)) bad('a failed transfer needs a failure reason of the protocol');
  if (status === 'returned' && !(RAIL_RETURN_REASONS as readonly unknown[]).includes(reason)) bad('a returned transfer needs a return reason of the protocol');
  if ((status === 'pending' || status === 'settled') && reason !== null) bad('reason must be null unless failed or returned');
  if (typeof x.submitted_at !== 'string' || !RFC3339.test(x.submitted_at) || Number.isNaN(Date.parse(x.submitted_at))) bad('submitted_at must be an RFC 3339 time');
  if (status === 'pending' ? x.resolved_at !== null : typeof x.resolved_at !== 'string' || !RFC3339.test(x.resolved_at) || Number.isNaN(Date.parse(x.resolved_at))) {
    bad('resolved_at must be null while pending and an RFC 3339 time after');
  }
  return x as unknown as WireTransfer;
}

/** A callback's body; throws MalformedAnswer. */
export function parseCallback(x: unknown): CallbackBody {
  if (!isObject(x) || x.v !== PROTOCOL_VERSION) throw new MalformedAnswer(`a callback is {"v": ${PROTOCOL_VERSION}, "transfer": {...}}`);
  for (const k of Object.keys(x)) if (k !== 'v' && k !== 'transfer') throw new MalformedAnswer(`unknown field ${k.slice(0, 40)}`);
  return { v: 1, transfer: parseWireTransfer(x.transfer) };
}

/** A protocol error answer `{ "error": "<message>", "code": "<slug>" }`. */
export function isErrorAnswer(x: unknown): x is { error: string; code: string } {
  return isObject(x) && typeof x.error === 'string' && typeof x.code === 'string' && /^[a-z_]{1,64}$/.test(x.code);
}

export function toRailTransfer(w: WireTransfer): RailTransfer {
  return {
    id: w.id, reference: w.reference, direction: w.direction, amount: BigInt(w.amount), currency: w.currency, status: w.status, reason: w.reason,
    submitted_at: Date.parse(w.submitted_at), resolved_at: w.resolved_at === null ? null : Date.parse(w.resolved_at),
  };
}
