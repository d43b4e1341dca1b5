// What every service that moves money on the platform ledger is built with (funding and off-ramp,
// payments, escrows): the one store, the audit log, list cursors, webhook deliveries, the customer
// links (workspace to organization) and the ledger itself.
import type { RecordRepository } from '../store/record-repository.ts';
import type { AuditLog } from '../tenancy/audit-log.ts';
import type { CursorCodec } from '../store/pagination.ts';
import type { DeliveryEngine } from '../webhooks/delivery-engine.ts';
import type { CustomerLinks } from '../customers/customer-links.ts';
import type { PlatformLedger } from './platform-ledger.ts';

export interface MoneyFlowDeps {
  store: RecordRepository;
  audit: AuditLog;
  cursors: CursorCodec;
  deliveries: DeliveryEngine;
  links: CustomerLinks;
  ledger: PlatformLedger;
}
