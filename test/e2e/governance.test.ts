// One stack of real processes (anvil and the Esplora regtest double beside it) for several journeys,
// each a module of its own: a stack costs some 15 CPU-s to start, so journeys that can share one do.
// Traces across the processes (docs/operations.md "Traces"), with tracing on and exporting to a
// receiver the test runs, first, on the fresh organization; then Bitcoin spends and the nodes' refusal
// of altered digests (bitcoin-journey.ts), before any policy exists; then customer governance (issue 42
// "Show"), which sets the organization's policies last.
import t from 'tap';
import { startStack } from './stack.ts';
import { bitcoinJourney } from './bitcoin-journey.ts';
import { governanceJourney } from './governance-journey.ts';
import { traceReceiver, tracesJourney } from './traces-journey.ts';

t.setTimeout(720_000);

const traces = await traceReceiver();
t.teardown(() => traces.close());
const s = await startStack({
  anvil: true, esplora: true, bearerKey: true,
  apiEnv: { API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1', ...traces.env }, coordinatorEnv: traces.env,
  nodeEnv: { NODE_EXPORT_DELAY_SECONDS: '3', ...traces.env },
});
t.teardown(() => s.stop());

await t.test('one transfer is one trace across the API, the coordinator and every signing node', (t) => tracesJourney(t, s, traces.spans));
await t.test('Bitcoin: P2WPKH and P2TR spends through the SDK are accepted by the script-checking regtest double; altered digests are refused by the nodes', (t) => bitcoinJourney(t, s));
await t.test('policies and approvals, enforced by the nodes', (t) => governanceJourney(t, s));
