// The receipt check of the catalog-events tests: a row's trigger runs, deliveries are sent, and the event
// must arrive at the test's endpoint, verified by the SDK's verifier, its type the catalog name, its data
// exactly the fields of the catalog's example with the row's values, and a sensitive event's data only the
// fields of its allow-list (SENSITIVE_FIELDS), each an id, an enum or a number.
import type { Test } from 'tap';
import type { Received } from '../setup-platform.ts';
import { SENSITIVE_FIELDS, sensitiveDataAllowed, type EventType } from '../../../api/webhooks/event-catalog.ts';
import type { verifyWebhook } from '../../../api/sdk/webhook-receiver.ts';

/** Catalog names whose row is in another area's file (which checks it has exactly these rows). */
export const ELSEWHERE: Readonly<Record<string, string>> = {
  'funding_request.completed': 'catalog-events-funding.unit.ts',
  'funding_request.failed': 'catalog-events-funding.unit.ts',
  'off_ramp_request.failed': 'catalog-events-funding.unit.ts',
  'integration_gateway.status_changed': 'catalog-events-funding.unit.ts',
  'escrow.released': 'catalog-events-escrow.unit.ts',
  'escrow.cancelled': 'catalog-events-escrow.unit.ts',
};

export async function receives(
  t: Test, e: EventType, rx: { got: Received[] }, trigger: () => Promise<Record<string, unknown>>, deliver: () => Promise<unknown>,
  verified: (g: Received) => ReturnType<typeof verifyWebhook>,
): Promise<void> {
  await t.test(e.name, async (t) => {
    const from = rx.got.length;
    const want = await trigger();
    await deliver();
    const got = rx.got.slice(from).filter((g) => g.headers['svc-webhook-event'] === e.name);
    t.ok(got.length >= 1, 'received at the endpoint');
    const match = got.map((g) => ({ g, v: verified(g) })).find(({ v }) => v.ok && Object.entries(want).every(([k, x]) => v.event.data[k] === x));
    if (!t.ok(match, `a verified delivery carries ${JSON.stringify(want)}: ${got.map((g) => g.body).join(' | ').slice(0, 600)}`) || !match?.v.ok) return;
    const ev = match.v.event;
    t.equal(ev.type, e.name, 'its type is the name');
    t.same(Object.keys(ev.data).sort(), Object.keys(e.example_payload).sort(), `its fields are those the catalog lists: ${JSON.stringify(ev.data)}`);
    if (e.sensitive) {
      const allowed = SENSITIVE_FIELDS[e.name] ?? [];
      t.same(Object.keys(ev.data).filter((k) => !allowed.includes(k)), [], 'a sensitive event: only the fields of its allow-list');
      t.ok(sensitiveDataAllowed(ev.data, e.name), 'each an id, an enum or a number');
    }
  });
}
