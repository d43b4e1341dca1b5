// The gateway conformance suite, version 1 (docs/platform/gateways.md "Conformance"): runs against the
// gateway's base_url in its sandbox mode and records one result per check. Every answer is checked with
// the protocol's strict parser, so a malformed answer fails the check that got it. Transfers of a run
// have references `cnf_<run tag>_<check>`; their callbacks are kept by the callback route for the run,
// which waits for them (up to API_GATEWAY_CALLBACK_WAIT_MS) and deletes them when it is done.
import { randomBytes } from 'node:crypto';
import type { RecordRepository } from '../store/record-repository.ts';
import { CATEGORY_SENTENCES, GatewayCallError, type GatewayCallCategory, type GatewayClient, type RawAnswer } from './gateway-client.ts';
import { SANDBOX_AMOUNTS, isErrorAnswer, parseWireTransfer, type TransferSubmission, type WireTransfer } from './gateway-protocol.ts';
import type { ConformanceCheck, GatewayRecord } from './gateway-records.ts';
import { GATEWAY_CONFORMANCE_CALLBACKS } from './collections.ts';

export interface ConformanceOptions {
  client: GatewayClient;
  store: RecordRepository;
  callbackUrl: string;
  /** How long the run waits for the callbacks of its transfers. */
  callbackWaitMs: number;
  /** How often it looks for them. */
  pollMs?: number;
}

/** The checks of suite version 1, in the order they are answered. */
export const SUITE_CHECKS = [
  'request_signature', 'submit', 'idempotent_resubmission', 'status_read', 'settlement_callback',
  ...Object.values(SANDBOX_AMOUNTS).flatMap((o) => (o.outcome === 'failed' || o.outcome === 'refused' ? [`failure:${o.reason}`] : o.outcome === 'returned' ? [`return:${o.reason}`] : [])),
  'timeout_retry', 'malformed_request',
] as const;

const SETTLING_AMOUNT = '2500';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A check failed for this reason. */
class CheckFailed extends Error {}
const fail = (m: string): never => {
  throw new CheckFailed(m);
};

export async function runConformance(o: ConformanceOptions, gw: GatewayRecord): Promise<ConformanceCheck[]> {
  const tag = randomBytes(8).toString('hex');
  const ref = (name: string) => `cnf_${tag}_${name}`;
  const submission = (name: string, amount: string, direction: 'pull' | 'push' = 'pull'): TransferSubmission => ({
    reference: ref(name), direction, amount, currency: gw.currencies[0] ?? 'USD', mode: 'sandbox', callback_url: o.callbackUrl, account_holder_id: null,
  });
  const post = (body: string, signing: 'service' | 'none' | 'wrong_key' = 'service', timeoutMs?: number) => o.client.raw(gw, 'POST', '/transfers', body, signing, timeoutMs);
  /** The transfer of an answer with one of `statuses`, echoing `s`; a CheckFailed naming what is wrong. */
  const transferOf = (a: RawAnswer, statuses: number[], s?: TransferSubmission): { status: number; transfer: WireTransfer } => {
    let out;
    try {
      out = o.client.transferOf(a, statuses);
    } catch (err) {
      return fail(err instanceof GatewayCallError ? err.message : 'the answer could not be read');
    }
    if (s && (out.transfer.reference !== s.reference || out.transfer.direction !== s.direction || out.transfer.currency !== s.currency)) {
      fail('the transfer answered is not the one submitted (reference, direction or currency differs)');
    }
    return out;
  };
  const submit = async (s: TransferSubmission, statuses = [201]) => transferOf(await post(JSON.stringify(s)), statuses, s);
  const expectRefusal = (a: RawAnswer, status: number, what: string) => {
    if (a.result.status_code === null) fail(`${what}: no answer: ${CATEGORY_SENTENCES[(a.result.error ?? 'connection_failed') as GatewayCallCategory] ?? a.result.error}`);
    if (a.result.status_code !== status) fail(`${what}: answered ${a.result.status_code}, the protocol says ${status}`);
    if (!isErrorAnswer(a.json)) fail(`${what}: the answer is not the protocol's error shape {"error", "code"}`);
  };

  const results = new Map<string, ConformanceCheck>();
  const check = async (name: string, fn: () => Promise<string>) => {
    try {
      results.set(name, { name, passed: true, detail: await fn() });
    } catch (err) {
      const detail = err instanceof CheckFailed ? err.message : err instanceof GatewayCallError ? err.message : 'the check could not run';
      results.set(name, { name, passed: false, detail });
    }
  };
  /** Callbacks expected: reference → what the transfer must end as, and the transfer answered at submission. */
  const awaited = new Map<string, { check: string; status: 'settled' | 'failed' | 'returned'; reason: string | null; transfer: WireTransfer }>();
  // The callback route keeps a conformance callback only where the run awaits one (this placeholder).
  const expect = async (reference: string, want: typeof awaited extends Map<string, infer V> ? V : never) => {
    awaited.set(reference, want);
    await GATEWAY_CONFORMANCE_CALLBACKS.in(o.store).put(`${gw.id}/${reference}`, { v: 1, refused: null, transfer: null, received_at: '' });
  };

  await check('request_signature', async () => {
    const s = submission('signature', SETTLING_AMOUNT);
    expectRefusal(await post(JSON.stringify(s), 'none'), 401, 'an unsigned submission');
    expectRefusal(await post(JSON.stringify(s), 'wrong_key'), 401, 'a submission signed under another key');
    const after = transferOf(await post(JSON.stringify(s)), [200, 201], s);
    if (after.status !== 201) fail('a refused submission created the transfer: the signed one that followed was answered 200, not 201');
    return 'unsigned and wrongly signed submissions refused with 401, and nothing created';
  });

  let settling: WireTransfer | undefined;
  await check('submit', async () => {
    const s = submission('settle', SETTLING_AMOUNT);
    const { transfer } = await submit(s);
    if (transfer.amount !== s.amount) fail('the transfer answered has another amount than submitted');
    if (transfer.status !== 'pending') fail(`a new transfer of a settling amount must be pending in sandbox mode (was ${transfer.status})`);
    settling = transfer;
    await expect(s.reference, { check: 'settlement_callback', status: 'settled', reason: null, transfer });
    return 'a new transfer answered 201, pending, echoing the submission';
  });

  await check('idempotent_resubmission', async () => {
    if (!settling) fail('needs the transfer of check submit');
    const s = submission('settle', SETTLING_AMOUNT);
    const again = await submit(s, [200]);
    if (again.transfer.id !== settling!.id) fail('the same reference was answered with another transfer');
    const changed = await submit({ ...s, amount: '2600' }, [200]);
    if (changed.transfer.id !== settling!.id || changed.transfer.amount !== SETTLING_AMOUNT) fail('a resubmission with another amount was not answered with the original transfer');
    return 'resubmissions answered 200 with the original transfer, whatever else they said';
  });

  await check('status_read', async () => {
    if (!settling) fail('needs the transfer of check submit');
    const got = transferOf(await o.client.raw(gw, 'GET', `/transfers/${encodeURIComponent(settling!.id)}`, undefined), [200]);
    if (got.transfer.id !== settling!.id || got.transfer.reference !== settling!.reference || got.transfer.amount !== settling!.amount) fail('the transfer read is not the one submitted');
    expectRefusal(await o.client.raw(gw, 'GET', `/transfers/${ref('unknown')}`, undefined), 404, 'an unknown transfer id');
    return 'the transfer read back by id; an unknown id answered 404';
  });

  for (const o2 of Object.values(SANDBOX_AMOUNTS)) {
    if (o2.outcome === 'hold') continue;
    const name = o2.outcome === 'returned' ? `return:${o2.reason}` : `failure:${o2.reason}`;
    const amount = Object.entries(SANDBOX_AMOUNTS).find(([, x]) => x === o2)![0];
    await check(name, async () => {
      // Returns are pushes, failures pulls: both directions are exercised.
      const s = submission(name.replace(':', '_'), amount, o2.outcome === 'returned' ? 'push' : 'pull');
      const { transfer } = await submit(s);
      if (transfer.amount !== amount) fail('the transfer answered has another amount than submitted');
      if (o2.outcome === 'refused') {
        if (transfer.status !== 'failed' || transfer.reason !== o2.reason) fail(`amount ${amount} must be refused at submission: failed, ${o2.reason} (was ${transfer.status}, ${transfer.reason})`);
        return `refused at submission: failed, ${o2.reason}`;
      }
      if (transfer.status !== 'pending') fail(`amount ${amount} must be pending at submission (was ${transfer.status})`);
      await expect(s.reference, { check: name, status: o2.outcome, reason: o2.reason, transfer });
      return 'pending; waiting for the callback';
    });
  }

  await check('timeout_retry', async () => {
    const s = submission('hold', Object.entries(SANDBOX_AMOUNTS).find(([, x]) => x.outcome === 'hold')![0]);
    const first = await post(JSON.stringify(s));
    if (first.result.error !== 'timeout') fail(`the sandbox table holds the first submission of amount ${s.amount} past the service's timeout; it was answered (${first.result.status_code ?? first.result.error})`);
    const retry = await submit(s, [200, 201]);
    if (retry.status !== 200) fail('the retry after a timeout created the transfer (201): the held submission was not recorded before answering');
    const again = await submit(s, [200]);
    if (again.transfer.id !== retry.transfer.id) fail('a second retry was answered with another transfer');
    return 'the first submission timed out; retries answered 200 with the one transfer it recorded';
  });

  await check('malformed_request', async () => {
    const s = submission('malformed', SETTLING_AMOUNT);
    expectRefusal(await post(JSON.stringify({ ...s, amount: 2500 })), 400, 'an amount sent as a JSON number');
    expectRefusal(await post(JSON.stringify({ ...s, amount: '25.00' })), 400, 'a decimal amount');
    expectRefusal(await post(JSON.stringify({ ...s, direction: 'sideways' })), 400, 'an unknown direction');
    const { status } = transferOf(await post(JSON.stringify(s)), [200, 201], s);
    if (status !== 201) fail('a malformed submission created the transfer');
    return 'malformed submissions refused with 400 in the error shape, and nothing created';
  });

  // The callbacks: every awaited transfer must be called back, signed, ending as the table says.
  const deadline = Date.now() + o.callbackWaitMs;
  const seen = new Map<string, { refused: string | null; transfer: Record<string, unknown> | null }>();
  while (seen.size < awaited.size && Date.now() < deadline) {
    for (const reference of awaited.keys()) {
      if (seen.has(reference)) continue;
      const cb = await GATEWAY_CONFORMANCE_CALLBACKS.in(o.store).get(`${gw.id}/${reference}`);
      if (cb && (cb.refused !== null || (cb.transfer !== null && cb.transfer.status !== 'pending'))) seen.set(reference, cb);
    }
    if (seen.size < awaited.size) await sleep(o.pollMs ?? 50);
  }
  for (const [reference, want] of awaited) {
    const cb = seen.get(reference);
    let verdict: ConformanceCheck;
    try {
      if (!cb) fail(`no callback within ${o.callbackWaitMs} ms`);
      if (cb!.refused !== null) fail(`the callback was refused: ${cb!.refused}`);
      let t: WireTransfer | undefined;
      try {
        t = parseWireTransfer(cb!.transfer);
      } catch {
        fail('the callback\'s transfer is malformed');
      }
      t = t!;
      if (t.id !== want.transfer.id || t.amount !== want.transfer.amount || t.reference !== reference) fail('the callback names another transfer than the one submitted');
      if (t.status !== want.status || t.reason !== want.reason) fail(`the callback says ${t.status}${t.reason ? `, ${t.reason}` : ''}; the sandbox table says ${want.status}${want.reason ? `, ${want.reason}` : ''}`);
      verdict = { name: want.check, passed: true, detail: `called back, signed: ${want.status}${want.reason ? `, ${want.reason}` : ''}` };
    } catch (err) {
      verdict = { name: want.check, passed: false, detail: err instanceof CheckFailed ? err.message : 'the callback could not be checked' };
    }
    results.set(want.check, verdict);
  }
  if (!results.has('settlement_callback')) results.set('settlement_callback', { name: 'settlement_callback', passed: false, detail: 'needs the transfer of check submit' });
  await o.store.batch([...awaited.keys()].map((r) => GATEWAY_CONFORMANCE_CALLBACKS.delOp(`${gw.id}/${r}`)));
  return SUITE_CHECKS.map((n) => results.get(n) ?? { name: n, passed: false, detail: 'not run' });
}
