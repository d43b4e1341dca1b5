// The contract of JobQueue (api/jobs/job-queue.ts), run against the embedded store
// (job-queue-leveldb.unit.ts) and PostgreSQL (job-queue-postgres.test.ts): dedupe, exclusive claims under
// concurrency, stale lease tokens refused, lapsed leases handed over, ordering keys, retry and dead.
// Leases are real time (PostgreSQL's clock decides), so the lease cases wait a few hundred milliseconds.
import type { Test } from 'tap';
import type { JobQueue, LeasedJob } from '../../api/jobs/job-queue.ts';
import type { Op, RecordRepository } from '../../api/store/record-repository.ts';
import { LeaseLostError } from '../../api/jobs/lease-lost-error.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `store`: the record store whose batches enqueue onto `queue` (the same database). */
export function jobQueueContract(t: Test, queue: JobQueue, store: RecordRepository): void {
  let n = 0;
  /** Each case uses its own kinds and ordering keys, so cases share one queue without seeing each other. */
  const fresh = (what = 'k') => `${what}${++n}_${Math.random().toString(36).slice(2, 8)}`;

  t.test('enqueue stores the job; a dedupe key makes enqueue idempotent, also under concurrency', async (t) => {
    const kind = fresh();
    const a = await queue.enqueue(kind, 'vault-1', { step: 1 }, { dedupeKey: 'd1' });
    t.ok(a.created);
    t.match(a.job, { kind, key: 'vault-1', payload: { step: 1 }, state: 'queued', attempts: 0, dedupeKey: 'd1' });
    t.same(await queue.get(a.job.id), a.job);
    const b = await queue.enqueue(kind, 'vault-1', { step: 2 }, { dedupeKey: 'd1' });
    t.notOk(b.created);
    t.same(b.job, a.job, 'the first job, with its payload');
    t.ok((await queue.enqueue(fresh(), 'vault-1', {}, { dedupeKey: 'd1' })).created, 'dedupe keys are per kind');
    const race = await Promise.all(Array.from({ length: 10 }, (_, i) => queue.enqueue(kind, 'v', { i }, { dedupeKey: 'd2' })));
    t.equal(race.filter((r) => r.created).length, 1, 'one of ten concurrent enqueues creates');
    t.equal(new Set(race.map((r) => r.job.id)).size, 1, 'all name the same job');
    const [claimed] = await queue.claim('w', [kind], 1, 10_000);
    await queue.complete(claimed!, claimed!.leaseToken);
    t.notOk((await queue.enqueue(kind, 'vault-1', {}, { dedupeKey: 'd1' })).created, 'a finished job still holds its dedupe key');
    t.equal(await queue.get('j999999999999'), undefined);
    t.equal(await queue.get('999999999'), undefined);
  });

  t.test('4 claimers racing over 200 jobs: every job is claimed exactly once', async (t) => {
    const kind = fresh();
    const ids = new Set<string>();
    for (let i = 0; i < 200; i += 50) {
      const batch = await Promise.all(Array.from({ length: 50 }, (_, j) => queue.enqueue(kind, `k${i + j}`, { i: i + j })));
      for (const r of batch) ids.add(r.job.id);
    }
    const claims = new Map<string, string[]>();
    const tokens = new Set<string>();
    await Promise.all(
      ['w1', 'w2', 'w3', 'w4'].map(async (w) => {
        for (;;) {
          const got = await queue.claim(w, [kind], 7, 60_000);
          if (got.length === 0) return;
          for (const j of got) {
            claims.set(j.id, [...(claims.get(j.id) ?? []), w]);
            tokens.add(j.leaseToken);
            t.equal(j.leaseOwner, w);
            t.equal(j.attempts, 1);
          }
        }
      }),
    );
    t.equal(claims.size, 200, 'all 200 claimed');
    t.ok([...claims.values()].every((ws) => ws.length === 1), 'none claimed twice');
    t.same(new Set(claims.keys()), ids);
    t.equal(tokens.size, 200, 'a token per claim');
    t.ok(new Set([...claims.values()].flat()).size > 1, 'the claimers shared the work');
    t.same(await queue.claim('w5', [kind], 10, 60_000), [], 'nothing left while the leases live');
  });

  t.test('a job is not claimed before its runAt, nor for another kind; limit is honoured', async (t) => {
    const kind = fresh();
    const other = fresh();
    // Due in 3 s: the claims below run before then even on a loaded machine (0.4 s was not always enough).
    const runAt = Date.now() + 3_000;
    const later = await queue.enqueue(kind, 'later', {}, { runAt });
    const now = [];
    for (const i of [0, 1, 2]) now.push(await queue.enqueue(kind, `now${i}`, { i }));
    t.same(await queue.claim('w', [other], 10, 10_000), []);
    const first = await queue.claim('w', [kind], 2, 10_000);
    t.same(first.map((j) => j.id), now.slice(0, 2).map((r) => r.job.id), 'oldest due first, at most the limit');
    t.same((await queue.claim('w', [kind, other], 10, 10_000)).map((j) => j.id), [now[2]!.job.id], 'the future job waits');
    await sleep(runAt - Date.now() + 50);
    t.same((await queue.claim('w', [kind], 10, 10_000)).map((j) => j.id), [later.job.id], 'due now');
  });

  t.test('a lapsed lease is handed over; the stale token is refused by complete, fail, extend, release', async (t) => {
    const kind = fresh();
    const { job } = await queue.enqueue(kind, 'v', { x: 1 });
    const [a] = await queue.claim('crashed', [kind], 1, 150);
    t.ok(a);
    t.same(await queue.claim('other', [kind], 1, 10_000), [], 'not while the lease lives');
    await sleep(250);
    const [b] = await queue.claim('other', [kind], 1, 10_000);
    t.equal(b?.id, job.id, 'claimable again once the lease lapsed');
    t.equal(b!.attempts, 2);
    t.not(b!.leaseToken, a!.leaseToken, 'a new token');
    await t.rejects(queue.complete(a!, a!.leaseToken), LeaseLostError);
    await t.rejects(queue.fail(a!, a!.leaseToken, Date.now(), 'late'), LeaseLostError);
    await t.rejects(queue.extend(a!, a!.leaseToken, 10_000), LeaseLostError);
    await t.rejects(queue.release(a!, a!.leaseToken), LeaseLostError);
    await t.rejects(queue.complete(b!, 'not-a-token'), LeaseLostError);
    await t.rejects(queue.complete({ id: 'nope' }, b!.leaseToken), { code: 'conflict' });
    t.match(await queue.get(job.id), { state: 'leased', leaseOwner: 'other' }, 'the stale worker changed nothing');
    await queue.complete(b!, b!.leaseToken);
    t.match(await queue.get(job.id), { state: 'done', attempts: 2 });
    await t.rejects(queue.complete(b!, b!.leaseToken), LeaseLostError, 'completed once only');
    t.same(await queue.claim('third', [kind], 1, 150), [], 'a done job is never claimed');
  });

  t.test('extend keeps a lease alive; a token whose lease lapsed unclaimed still completes', async (t) => {
    const kind = fresh();
    await queue.enqueue(kind, 'v', {});
    const [a] = await queue.claim('w', [kind], 1, 200);
    const until = await queue.extend(a!, a!.leaseToken, 2000);
    t.ok(until > a!.leasedUntil, 'the lease moved on');
    await sleep(300);
    t.same(await queue.claim('other', [kind], 1, 1000), [], 'the extended lease holds');
    await queue.enqueue(kind, 'w', {});
    const [c] = await queue.claim('w', [kind], 1, 100);
    await sleep(200);
    await queue.complete(c!, c!.leaseToken);
    t.match(await queue.get(c!.id), { state: 'done' }, 'nobody took it over, so its holder finishes it');
  });

  t.test('an ordering key runs its jobs one at a time, in enqueue order', async (t) => {
    const kind = fresh();
    const kind2 = fresh();
    const A = fresh('wallet');
    const B = fresh('wallet');
    const a1 = await queue.enqueue(kind, 'a1', {}, { orderingKey: A });
    const a2 = await queue.enqueue(kind2, 'a2', {}, { orderingKey: A });
    const a3 = await queue.enqueue(kind, 'a3', {}, { orderingKey: A });
    const b1 = await queue.enqueue(kind, 'b1', {}, { orderingKey: B });
    const free = await queue.enqueue(kind, 'free', {});
    const first = await queue.claim('w', [kind, kind2], 10, 10_000);
    t.same(first.map((j) => j.id).sort(), [a1.job.id, b1.job.id, free.job.id].sort(), 'one job per key, the earliest');
    t.same(await queue.claim('w', [kind, kind2], 10, 10_000), [], 'a2 waits for a1 (keys span kinds)');
    await queue.complete(first.find((j) => j.key === 'a1')!, first.find((j) => j.key === 'a1')!.leaseToken);
    const [j2] = await queue.claim('w', [kind, kind2], 10, 10_000);
    t.equal(j2?.id, a2.job.id);
    await queue.fail(j2!, j2!.leaseToken, Date.now() + 60_000, 'node offline');
    t.same(await queue.claim('w', [kind, kind2], 10, 10_000), [], 'a retrying job still holds its key');
    t.same((await queue.get(a3.job.id))?.state, 'queued', 'a3 still waits');
  });

  t.test('a dead job releases its ordering key; a lapsed lease of the head is reclaimed first', async (t) => {
    const kind = fresh();
    const K = fresh('wallet');
    const x1 = await queue.enqueue(kind, 'x1', {}, { orderingKey: K });
    const x2 = await queue.enqueue(kind, 'x2', {}, { orderingKey: K });
    const [c1] = await queue.claim('w', [kind], 5, 150);
    t.equal(c1?.id, x1.job.id);
    await sleep(250);
    const [c1b, ...rest] = await queue.claim('w2', [kind], 5, 10_000);
    t.equal(c1b?.id, x1.job.id, 'the lapsed head, not its successor');
    t.equal(rest.length, 0);
    await queue.fail(c1b!, c1b!.leaseToken, null, 'gave up');
    t.match(await queue.get(x1.job.id), { state: 'dead', lastError: 'gave up', attempts: 2 });
    const [c2] = await queue.claim('w', [kind], 5, 10_000);
    t.equal(c2?.id, x2.job.id, 'the key moved on');
  });

  t.test('racing claimers keep each ordering key sequential: 10 keys x 8 jobs, never two at once', async (t) => {
    const kind = fresh();
    const keys = Array.from({ length: 10 }, () => fresh('wallet'));
    const expected = new Map<string, string[]>();
    for (let i = 0; i < 8; i++) {
      for (const k of keys) {
        const { job } = await queue.enqueue(kind, k, { i }, { orderingKey: k });
        expected.set(k, [...(expected.get(k) ?? []), job.id]);
      }
    }
    const order = new Map<string, string[]>();
    const holding = new Set<string>();
    let overlaps = 0;
    let done = 0;
    await Promise.all(
      ['w1', 'w2', 'w3', 'w4'].map(async (w) => {
        while (done < 80) {
          const got = await queue.claim(w, [kind], 3, 30_000);
          await Promise.all(
            got.map(async (j: LeasedJob) => {
              if (holding.has(j.key)) overlaps++;
              holding.add(j.key);
              order.set(j.key, [...(order.get(j.key) ?? []), j.id]);
              await sleep(1 + Math.floor(Math.random() * 3));
              holding.delete(j.key);
              await queue.complete(j, j.leaseToken);
              done++;
            }),
          );
          if (got.length === 0) await sleep(2);
        }
      }),
    );
    t.equal(overlaps, 0, 'no key had two jobs leased at once');
    t.same(order, expected, 'each key ran its jobs in enqueue order');
  });

  t.test('a group limit: no group holds more live leases than perGroup, over kinds; others pass it', async (t) => {
    const [k1, k2] = [fresh(), fresh()];
    const [gA, gB] = [fresh('org'), fresh('org')];
    const a: string[] = [];
    for (let i = 0; i < 4; i++) a.push((await queue.enqueue(k1, `a${i}`, {}, { groupKey: gA })).job.id);
    a.push((await queue.enqueue(k2, 'a4', {}, { groupKey: gA })).job.id);
    const b = [(await queue.enqueue(k2, 'b0', {}, { groupKey: gB })).job.id, (await queue.enqueue(k1, 'b1', {}, { groupKey: gB })).job.id];
    const free = [(await queue.enqueue(k1, 'f0', {})).job.id, (await queue.enqueue(k2, 'f1', {})).job.id];
    const first = await queue.claim('w', [k1, k2], 20, 400, { perGroup: 2 });
    t.same(first.map((j) => j.id).sort(), [a[0], a[1], ...b, ...free].sort(), 'the two oldest of A, both of B, and every job of no group');
    t.equal(first.find((j) => j.id === a[0])?.groupKey, gA, 'the job names its group');
    t.same(await queue.claim('w', [k1, k2], 20, 60_000, { perGroup: 2 }), [], 'A is at its limit');
    const done = first.find((j) => j.id === a[0])!;
    await queue.complete(done, done.leaseToken);
    t.same((await queue.claim('w', [k1, k2], 20, 60_000, { perGroup: 2 })).map((j) => j.id), [a[2]], 'a finished job frees one place: the next oldest of A');
    await sleep(600); // the first claim's leases lapse (a[1] and B's): they no longer count
    const again = await queue.claim('w', [k1, k2], 20, 60_000, { perGroup: 2 });
    t.ok(again.some((j) => j.id === a[1]) && !again.some((j) => j.id === a[3]), 'a lapsed lease is claimable again and A stays at two live (a[1] reclaimed beside a[2])');
    t.same((await queue.claim('w', [k1, k2], 20, 60_000)).map((j) => j.id).sort(), [a[3], a[4]].sort(), 'a claim without the limit takes the rest');
  });

  t.test('racing claimers keep every group within its limit: 3 groups x 10 jobs, perGroup 2', async (t) => {
    const kind = fresh();
    const groups = [fresh('org'), fresh('org'), fresh('org')];
    // A group's jobs are due together (oldest first), so every claimer wants the same group first and the
    // limit is what holds them back; a first claim of three takes two of the first group and one of the
    // next, so the limit is reached whatever the timing (interleaved groups reached it only by chance).
    for (const g of groups) for (let i = 0; i < 10; i++) await queue.enqueue(kind, g, { i }, { groupKey: g });
    const live = new Map<string, number>();
    let most = 0;
    let done = 0;
    await Promise.all(
      ['w1', 'w2', 'w3', 'w4'].map(async (w) => {
        while (done < 30) {
          const got = await queue.claim(w, [kind], 3, 30_000, { perGroup: 2 });
          await Promise.all(
            got.map(async (j: LeasedJob) => {
              live.set(j.key, (live.get(j.key) ?? 0) + 1);
              most = Math.max(most, live.get(j.key)!);
              await sleep(2 + Math.floor(Math.random() * 4));
              live.set(j.key, live.get(j.key)! - 1);
              await queue.complete(j, j.leaseToken);
              done++;
            }),
          );
          if (got.length === 0) await sleep(2);
        }
      }),
    );
    t.equal(done, 30, 'every job ran');
    t.ok(most <= 2, `no group ran more than two at once (${most})`);
    t.equal(most, 2, 'and the limit was reached');
  });

  t.test('fail retries at retryAt with the error kept; release gives a job back unrun; stats report depth and lag', async (t) => {
    const kind = fresh();
    const { job } = await queue.enqueue(kind, 'v', {});
    const [a] = await queue.claim('w', [kind], 1, 10_000);
    await queue.fail(a!, a!.leaseToken, Date.now() + 300, 'rpc timeout');
    t.match(await queue.get(job.id), { state: 'queued', attempts: 1, lastError: 'rpc timeout' });
    t.notOk('leaseToken' in (await queue.get(job.id))!, 'no token kept');
    t.same(await queue.claim('w', [kind], 1, 10_000), [], 'backing off');
    await sleep(350);
    const [b] = await queue.claim('w', [kind], 1, 10_000);
    t.equal(b?.attempts, 2);
    await queue.release(b!, b!.leaseToken);
    t.match(await queue.get(job.id), { state: 'queued', attempts: 1 }, 'a release is not an attempt');
    const [c] = await queue.claim('w', [kind], 1, 10_000);
    t.equal(c?.id, job.id, 'released jobs are due at once');
    await queue.fail(c!, c!.leaseToken, null, 'bad payload');
    t.match(await queue.get(job.id), { state: 'dead', lastError: 'bad payload' });

    const s = fresh();
    await queue.enqueue(s, 'old', {}, { runAt: Date.now() - 5000 });
    await queue.enqueue(s, 'new', {});
    await queue.enqueue(s, 'future', {}, { runAt: Date.now() + 60_000 });
    const [held] = await queue.claim('w', [s], 1, 10_000);
    t.equal(held?.key, 'old');
    const mine = (await queue.stats()).find((x) => x.kind === s);
    t.equal(mine?.depth, 3);
    t.equal(mine?.leased, 1);
    t.ok(mine!.lagMs >= 0 && mine!.lagMs < 2000, `lag of the oldest due queued job (${mine!.lagMs} ms)`);
    t.notOk((await queue.stats()).some((x) => x.kind === kind), 'a kind with only finished jobs is absent');
  });

  t.test('an enqueue operation joins a batch: the job and the records are written together, deduped, in order', async (t) => {
    const kind = fresh();
    const col = fresh('col');
    const first: Op = { type: 'enqueue', kind, key: 'tx-1', payload: { phase: 'sign' }, opts: { dedupeKey: 'tx-1', orderingKey: `${col}-wallet` } };
    await store.batch([{ type: 'put', collection: col, id: 'tx-1', value: { state: 'created' } }, first]);
    t.same(await store.get(col, 'tx-1'), { state: 'created' }, 'the record is written');
    t.match(first, { out: { created: true } }, 'the operation says it created the job');
    const id = (first as { out: { id: string } }).out.id;
    t.match(await queue.get(id), { kind, key: 'tx-1', payload: { phase: 'sign' }, state: 'queued', dedupeKey: 'tx-1' });

    const again: Op = { type: 'enqueue', kind, key: 'tx-1', payload: { phase: 'other' }, opts: { dedupeKey: 'tx-1' } };
    await store.batch([{ type: 'put', collection: col, id: 'tx-1', value: { state: 'checks' } }, again]);
    t.same(again, { ...again, out: { id, created: false } }, 'a dedupe key already taken names the first job');
    t.same(await store.get(col, 'tx-1'), { state: 'checks' }, 'and the records of that batch are still written');
    t.match(await queue.get(id), { payload: { phase: 'sign' } }, 'the first job unchanged');

    const twice: Op[] = [1, 2].map((i) => ({ type: 'enqueue', kind, key: `dup-${i}`, payload: {}, opts: { dedupeKey: 'same-batch' } }));
    await store.batch(twice);
    t.same(twice.map((o) => (o as { out: { created: boolean } }).out.created), [true, false], 'one dedupe key twice in one batch: one job');

    const second: Op = { type: 'enqueue', kind, key: 'tx-2', payload: {}, opts: { orderingKey: `${col}-wallet` } };
    await store.batch([second, { type: 'put', collection: col, id: 'tx-2', value: {} }]);
    const byBatch = await queue.enqueue(kind, 'tx-3', {}, { orderingKey: `${col}-wallet` });
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const [j] = await queue.claim('w', [kind], 5, 10_000);
      const also = await queue.claim('w', [kind], 5, 10_000);
      t.equal(also.filter((x) => x.orderingKey !== undefined).length, 0, 'one job of the ordering key at a time');
      for (const x of also) await queue.complete(x, x.leaseToken);
      order.push(j!.key);
      await queue.complete(j!, j!.leaseToken);
    }
    t.same(order, ['tx-1', 'tx-2', 'tx-3'], 'jobs enqueued in batches and alone keep one ordering');
    t.equal(byBatch.created, true);

    const due = Date.now() + 60_000;
    const later: Op = { type: 'enqueue', kind, key: 'later', payload: {}, opts: { runAt: due } };
    await store.batch([later]);
    t.same(await queue.claim('w', [kind], 5, 10_000), [], 'runAt is kept');
  });

  t.test('a batch that fails enqueues nothing', async (t) => {
    const kind = fresh();
    const col = fresh('col');
    const bad = { type: 'put', collection: col, id: 'b', value: { n: 1n } } as Op;
    await t.rejects(store.batch([{ type: 'put', collection: col, id: 'a', value: {} }, { type: 'enqueue', kind, key: 'a', payload: {} }, bad]));
    t.equal(await store.get(col, 'a'), undefined, 'no record');
    t.same(await queue.claim('w', [kind], 5, 10_000), [], 'no job');
    t.equal((await queue.stats()).find((x) => x.kind === kind), undefined);
  });

  t.test('release to a later time defers a job without counting an attempt', async (t) => {
    const kind = fresh();
    const { job } = await queue.enqueue(kind, 'wait', {});
    const [a] = await queue.claim('w', [kind], 1, 10_000);
    await queue.release(a!, a!.leaseToken, Date.now() + 300);
    t.match(await queue.get(job.id), { state: 'queued', attempts: 0 });
    t.same(await queue.claim('w', [kind], 1, 10_000), [], 'not due yet');
    await sleep(350);
    const [b] = await queue.claim('w', [kind], 1, 10_000);
    t.equal(b?.id, job.id, 'due at the time given');
    t.equal(b?.attempts, 1);
  });

  t.test('prune deletes finished jobs past the retention, oldest first, and frees their dedupe keys', async (t) => {
    const kind = fresh();
    const done = await queue.enqueue(kind, 'done', {}, { dedupeKey: 'once' });
    const dead = await queue.enqueue(kind, 'dead', {});
    const waiting = await queue.enqueue(kind, 'waiting', {}, { runAt: Date.now() + 60_000 });
    const [a] = await queue.claim('w', [kind], 1, 10_000);
    await queue.complete(a!, a!.leaseToken);
    await sleep(30);
    const between = Date.now();
    await sleep(30);
    const [b] = await queue.claim('w', [kind], 1, 10_000);
    await queue.fail(b!, b!.leaseToken, null, 'bad payload');
    const [running] = await queue.enqueue(kind, 'running', {}).then(() => queue.claim('w', [kind], 1, 10_000));
    t.equal(running?.key, 'running');
    t.equal(await queue.prune(Date.now() - 60_000, 10), 0, 'nothing finished before the cut-off');
    // Other cases' finished jobs share the queue: those older than the cut-off go too.
    t.ok((await queue.prune(between, 1000)) >= 1);
    t.equal(await queue.get(done.job.id), undefined, 'the job done before the cut-off is gone');
    t.match(await queue.get(dead.job.id), { state: 'dead' }, 'the one that died after it stays');
    t.equal(await queue.prune(Date.now() + 1000, 1), 1, 'the limit holds');
    // Everything finished so far (the limit-1 prune may have taken this case's dead job already).
    await queue.prune(Date.now() + 1000, 1000);
    t.equal(await queue.get(dead.job.id), undefined, 'dead jobs go as well');
    t.match(await queue.get(waiting.job.id), { state: 'queued' }, 'a queued job stays');
    t.match(await queue.get(running!.id), { state: 'leased' }, 'a leased job stays');
    const again = await queue.enqueue(kind, 'done', { second: true }, { dedupeKey: 'once' });
    t.ok(again.created, 'the pruned job\'s dedupe key is free again');
  });
}
