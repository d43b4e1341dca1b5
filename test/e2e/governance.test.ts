// Customer governance on real processes and anvil (issue 42 "Show"): one stack for every part.
import t from 'tap';
import { startStack } from './stack.ts';
import { governanceJourney } from './governance-journey.ts';

t.setTimeout(600_000);

const s = await startStack({ anvil: true, bearerKey: true, apiEnv: { API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1' }, nodeEnv: { NODE_EXPORT_DELAY_SECONDS: '3' } });
t.teardown(() => s.stop());

await t.test('policies and approvals, enforced by the nodes', (t) => governanceJourney(t, s));
