// A relay process for event-relay.test.ts: opens the store at argv[2], relays the outbox until it is
// empty, prints `started` before its first pass and `done <n>` at the end. With argv[3] = K, it prints
// `paused` once K store batches are written and waits there, so the test's kill lands mid-way whatever
// the machine's speed.
import { RecordStore } from '../../api/store/record-store.ts';
import { createPlatform } from '../../api/platform.ts';
import { CustomerLinks } from '../../api/customers/customer-links.ts';
import { EventRelay } from '../../api/customers/event-relay.ts';
import { createLogger } from '../../common/logger.ts';

const store = await RecordStore.open(process.argv[2]!);
const pauseAt = process.argv[3] ? Number(process.argv[3]) : undefined;
if (pauseAt !== undefined) {
  const batch = store.batch.bind(store);
  let written = 0;
  store.batch = async (...args: Parameters<typeof batch>) => {
    await batch(...args);
    if (++written === pauseAt) {
      process.stdout.write('paused\n');
      await new Promise(() => undefined);
    }
  };
}
const platform = await createPlatform(store, { objectDir: `${process.argv[2]}/objects` });
const relay = new EventRelay({ store, links: new CustomerLinks(store), deliveries: platform.deliveries, log: createLogger('relay', 'silent'), batch: 10 });
process.stdout.write('started\n');
const pass = await relay.runOnce();
process.stdout.write(`done ${pass.relayed}\n`);
await store.close();
