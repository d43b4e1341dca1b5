// The receipt check of the catalog-events tests: a row's trigger runs, deliveries are sent, and the event
// must arrive at the test's endpoint, verified by the SDK's verifier, its type the catalog name, its data
// exactly the fields of the catalog's example with the row's values, and a sensitive event's data only the
// fields of its allow-list (SENSITIVE_FIELDS), each an id, an enum or a number.
import type { Test } from 'tap';
import type { Received } from '../../support/loopback-receiver.ts';
import { SENSITIVE_FIELDS, eventType, sensitiveDataAllowed, type EventType } from '../../../api/webhooks/event-catalog.ts';
import type { verifyWebhook } from '../../../api/sdk/webhook-receiver.ts';

/**
 * Catalog names whose row is in another file (repository paths), each of which checks it has exactly
 * these rows: an area's in-process app, or a file that already runs real signer nodes and a chain.
 */
export const ELSEWHERE: Readonly<Record<string, string>> = {
  'funding_request.completed': 'test/api/webhooks/catalog-events-funding.unit.ts',
  'funding_request.failed': 'test/api/webhooks/catalog-events-funding.unit.ts',
  'off_ramp_request.completed': 'test/api/webhooks/catalog-events-funding.unit.ts',
  'off_ramp_request.failed': 'test/api/webhooks/catalog-events-funding.unit.ts',
  'integration_gateway.status_changed': 'test/api/webhooks/catalog-events-funding.unit.ts',
  'escrow.released': 'test/api/webhooks/catalog-events-escrow.unit.ts',
  'escrow.cancelled': 'test/api/webhooks/catalog-events-escrow.unit.ts',
  'token.deployed': 'test/api/tokenization/token-operations.unit.ts',
  'tokenization.operation.confirmed': 'test/api/tokenization/token-operations.unit.ts',
  'tokenization.operation.failed': 'test/api/tokenization/token-operations.unit.ts',
  'vault.failed': 'test/e2e/vault-lifecycle.test.ts',
  'vault.activated': 'test/e2e/customer-webhooks.test.ts',
  'transaction.broadcast': 'test/e2e/customer-webhooks.test.ts',
  'transaction.confirmed': 'test/e2e/customer-webhooks.test.ts',
  'transaction.final': 'test/e2e/customer-webhooks.test.ts',
  'vault.reshare.started': 'test/e2e/customer-nodes.test.ts',
  'vault.reshare.completed': 'test/e2e/customer-nodes.test.ts',
  'vault.export.requested': 'test/e2e/governance-journey.ts',
  'vault.exported': 'test/e2e/governance-journey.ts',
};

/** ELSEWHERE's names for `file`, sorted: what that file's rows must be exactly. */
export const elsewhereIn = (file: string): string[] => Object.keys(ELSEWHERE).filter((k) => ELSEWHERE[k] === file).sort();

type Verified = (g: Received) => ReturnType<typeof verifyWebhook>;

/** Checks that `got` holds a verified delivery of `e` carrying `want`, its type and fields as the catalog says. */
export function checkReceipt(t: Test, e: EventType, got: readonly Received[], want: Record<string, unknown>, verified: Verified): void {
  const mine = got.filter((g) => g.headers['svc-webhook-event'] === e.name);
  t.ok(mine.length >= 1, 'received at the endpoint');
  const match = mine.map((g) => ({ g, v: verified(g) })).find(({ v }) => v.ok && Object.entries(want).every(([k, x]) => v.event.data[k] === x));
  if (!t.ok(match, `a verified delivery carries ${JSON.stringify(want)}: ${mine.map((g) => g.body).join(' | ').slice(0, 600)}`) || !match?.v.ok) return;
  const ev = match.v.event;
  t.equal(ev.type, e.name, 'its type is the name');
  t.same(Object.keys(ev.data).sort(), Object.keys(e.example_payload).sort(), `its fields are those the catalog lists: ${JSON.stringify(ev.data)}`);
  if (e.sensitive) {
    const allowed = SENSITIVE_FIELDS[e.name] ?? [];
    t.same(Object.keys(ev.data).filter((k) => !allowed.includes(k)), [], 'a sensitive event: only the fields of its allow-list');
    t.ok(sensitiveDataAllowed(ev.data, e.name), 'each an id, an enum or a number');
  }
}

export async function receives(
  t: Test, e: EventType, rx: { got: Received[] }, trigger: () => Promise<Record<string, unknown>>, deliver: () => Promise<unknown>, verified: Verified,
): Promise<void> {
  await t.test(e.name, async (t) => {
    const from = rx.got.length;
    const want = await trigger();
    await deliver();
    checkReceipt(t, e, rx.got.slice(from), want, verified);
  });
}

/**
 * The check for an event a journey's own step already triggered, delivered by a running API: waits until a
 * verified delivery of `name` carrying `want` is among everything received, then checks it as `receives` does.
 */
export async function received(t: Test, name: string, rx: { got: Received[] }, want: Record<string, unknown>, verified: Verified, timeoutMs = 30_000): Promise<void> {
  const e = eventType(name);
  if (!e) throw new Error(`${name} is not a catalog name`);
  await t.test(name, async (t) => {
    const carries = (g: Received) => g.headers['svc-webhook-event'] === name && ((v) => v.ok && Object.entries(want).every(([k, x]) => v.event.data[k] === x))(verified(g));
    for (const until = Date.now() + timeoutMs; !rx.got.some(carries) && Date.now() < until;) await new Promise((r) => setTimeout(r, 100));
    checkReceipt(t, e, rx.got, want, verified);
  });
}
