// Customer governance on real processes and anvil (issue 42 "Show"), and traces across those processes
// (docs/operations.md "Traces"): one stack for every part, started with tracing on and exporting to a
// receiver the test runs. The trace journey runs first, on a fresh organization.
import t from 'tap';
import { startStack } from './stack.ts';
import { governanceJourney } from './governance-journey.ts';
import { traceReceiver, tracesJourney } from './traces-journey.ts';

t.setTimeout(600_000);

const traces = await traceReceiver();
t.teardown(() => traces.close());
const s = await startStack({
  anvil: true, bearerKey: true,
  apiEnv: { API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1', ...traces.env }, coordinatorEnv: traces.env,
  nodeEnv: { NODE_EXPORT_DELAY_SECONDS: '3', ...traces.env },
});
t.teardown(() => s.stop());

await t.test('one transfer is one trace across the API, the coordinator and every signing node', (t) => tracesJourney(t, s, traces.spans));
await t.test('policies and approvals, enforced by the nodes', (t) => governanceJourney(t, s));
