// The customer links' collections (docs/api-storage.md, "The interface"): a customer ties an organization
// to a tenant and its workspaces.
import { collection } from '../store/collection.ts';
import type { EventRecord } from '../vaults/records.ts';
import type { CustomerRecord } from './customer-links.ts';

export const CUSTOMERS = collection<CustomerRecord>('customers');
/** Look-up entries (`key/<key>`, `org/<org>`, `tenant/<tenant>` → customer id), one per way to find a customer. */
export const CUSTOMER_REFS = collection<string>('customer_refs');
/** Outbox events of an organization no customer links yet, `<org>/<outbox id>`; linking releases them. */
export const OUTBOX_PARKED = collection<EventRecord>('outbox_parked');
