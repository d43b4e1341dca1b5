// The payments' collections (docs/api-storage.md, "The interface").
import { collection } from '../store/collection.ts';
import type { PaymentQuoteRecord } from './payment-quotes.ts';

/** Index `<workspace> NUL <id>`. Quotes are never changed: a payment names one by id. */
export const PAYMENT_QUOTES = collection<PaymentQuoteRecord>('payment_quotes');
