// A relay process for event-relay.test.ts: opens the store at argv[2], relays the outbox until it is
// empty, prints `started` before its first pass and `done <n>` at the end. The test kills it mid-way.
import { RecordStore } from '../../api/store/record-store.ts';
import { createPlatform } from '../../api/platform.ts';
import { CustomerLinks } from '../../api/customers/customer-links.ts';
import { EventRelay } from '../../api/customers/event-relay.ts';
import { createLogger } from '../../common/logger.ts';

const store = await RecordStore.open(process.argv[2]!);
const platform = await createPlatform(store, { objectDir: `${process.argv[2]}/objects` });
const relay = new EventRelay({ store, links: new CustomerLinks(store), deliveries: platform.deliveries, log: createLogger('relay', 'silent'), batch: 10 });
process.stdout.write('started\n');
const pass = await relay.runOnce();
process.stdout.write(`done ${pass.relayed}\n`);
await store.close();
