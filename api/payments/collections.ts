// The payments' collections (docs/api-storage.md, "The interface").
import { collection } from '../store/collection.ts';
import type { PaymentQuoteRecord } from './payment-quotes.ts';
import type { PaymentEventRecord, PaymentKeyRecord, PaymentRecord } from './payment-records.ts';
import type { ComplianceCaseRecord } from './compliance-cases.ts';

/** Index `<workspace> NUL <id>`. Quotes are never changed: a payment names one by id. */
export const PAYMENT_QUOTES = collection<PaymentQuoteRecord>('payment_quotes');
/**
 * Indexes `<workspace> NUL all NUL <id>`, `<workspace> NUL holder NUL <holder> NUL <id>` for the payer and
 * a holder payee, `open NUL <id>` while the sweep has something to follow (authorizing, submitted, or an
 * unsent webhook event).
 */
export const PAYMENTS = collection<PaymentRecord>('payments');
/** A payment's history, append-only: index `<payment id> NUL <event id>`. */
export const PAYMENT_EVENTS = collection<PaymentEventRecord>('payment_events');
/** Written in the batch that stores a payment, so a retry after a crash finds it. */
export const PAYMENT_KEYS = collection<PaymentKeyRecord>('payment_keys');
/** Compliance cases (compliance-cases.ts): index `payment NUL <payment id>`, the case's subject. */
export const COMPLIANCE_CASES = collection<ComplianceCaseRecord>('compliance_cases');
