// The coordinator's presignature pool (coordinator/vaults/presignature-pool.ts) with its sessions
// replaced by fakes: it refills a path in use up to the target once the vault is idle, hands out the
// entries of one attached signer set, drops another epoch's entries, backs off after a refusal, and
// stays off at target 0.
import t from 'tap';
import { createLogger } from '../../common/logger.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { PresignaturePool, type PoolEntries, type PoolHooks } from '../../coordinator/vaults/presignature-pool.ts';

const log = createLogger('test', 'silent');
const PATH = [44, 60, 0, 0, 0];

function fake(opts: { epoch?: number; refuse?: string; attached?: (n: string) => boolean } = {}) {
  const calls: { vaultId: string; path: number[]; count: number }[] = [];
  let n = 0;
  const state = { epoch: opts.epoch ?? 0, refuse: opts.refuse };
  const hooks: PoolHooks = {
    async presign(input) {
      calls.push(input);
      if (state.refuse) throw new CustodyError(state.refuse as never, 'refused');
      return { entryIds: Array.from({ length: input.count }, () => (n++).toString(16).padStart(32, '0')), signers: ['a', 'b'], epoch: state.epoch, path: input.path } satisfies PoolEntries;
    },
    isAttached: opts.attached ?? (() => true),
    epochOf: async () => state.epoch,
  };
  return { hooks, calls, state };
}

t.test('a path in use is refilled to the target when the vault is idle', async (t) => {
  const f = fake();
  const pool = new PresignaturePool(f.hooks, log, { target: 3, idleMs: 1 });
  t.teardown(() => pool.stop());
  t.equal(pool.take('v', 0, PATH, 1), undefined, 'empty at first');
  pool.signingStarted('v');
  pool.signingStarted('v');
  pool.signingEnded('v', PATH);
  t.equal(await pool.refill('v'), 0, 'no refill while a signing of the vault is in flight');
  pool.signingEnded('v', PATH);
  t.equal(await pool.refill('v'), 3, 'idle: three entries made');
  t.same(f.calls, [{ vaultId: 'v', path: PATH, count: 3 }], 'in one presigning session for the path in use');
  t.equal(pool.size('v', 0, PATH), 3);
  const got = pool.take('v', 0, PATH, 2)!;
  t.equal(got.entryIds.length, 2, 'two entries for a two-digest request');
  t.same(got.signers, ['a', 'b'], 'of the signer set that made them');
  t.equal(pool.size('v', 0, PATH), 1, 'one left');
  t.equal(pool.take('v', 0, PATH, 2), undefined, 'not enough for another two-digest request');
  t.equal(pool.take('v', 0, [0], 1), undefined, 'none for another path');
  t.equal(await pool.refill('v'), 2, 'the refill tops it up');
});

t.test('entries of a signer set that is away are not handed out; another epoch\'s are dropped', async (t) => {
  let away = false;
  const f = fake({ attached: (n) => !(away && n === 'b') });
  const pool = new PresignaturePool(f.hooks, log, { target: 2, idleMs: 1 });
  t.teardown(() => pool.stop());
  pool.signingStarted('v');
  pool.signingEnded('v', PATH);
  await pool.refill('v');
  away = true;
  t.equal(pool.take('v', 0, PATH, 1), undefined, 'a signer is away');
  away = false;
  t.equal(pool.take('v', 1, PATH, 1), undefined, 'the vault moved to epoch 1');
  t.equal(pool.size('v', 0, PATH), 0, 'and the epoch-0 entries are gone');
});

t.test('a refusal pauses refills; target 0 is off', async (t) => {
  const f = fake({ refuse: 'presignature_pool_unanchored' });
  let now = 0;
  const pool = new PresignaturePool(f.hooks, log, { target: 2, idleMs: 1, backoffMs: 1000, now: () => now });
  t.teardown(() => pool.stop());
  pool.signingStarted('v');
  pool.signingEnded('v', PATH);
  t.equal(await pool.refill('v'), 0, 'the nodes keep no pool');
  t.equal(await pool.refill('v'), 0, 'no second attempt meanwhile');
  t.equal(f.calls.length, 1, 'one presigning session was tried');
  now += 10_001;
  f.state.refuse = undefined;
  t.equal(await pool.refill('v'), 2, 'after the pause it tries again');

  // Logged once, as what it is: nodes without a pool are not a failure; a refill that fails is.
  const lines: { level: number; msg: string }[] = [];
  const recorded = createLogger('test', 'info', { write: (line: string) => void lines.push(JSON.parse(line)) } as unknown as NodeJS.WritableStream);
  const quiet = new PresignaturePool(fake({ refuse: 'presignature_pool_unanchored' }).hooks, recorded, { target: 2, idleMs: 1, backoffMs: 0 });
  t.teardown(() => quiet.stop());
  quiet.signingStarted('v');
  quiet.signingEnded('v', PATH);
  await quiet.refill('v');
  await quiet.refill('v');
  t.same(lines.map((l) => [l.level, l.msg]), [[30, 'the nodes keep no presignature pool for this vault; signings use the full protocol']], 'said once, at info');
  lines.length = 0;
  const failing = new PresignaturePool(fake({ refuse: 'ot_busy' }).hooks, recorded, { target: 2, idleMs: 1, backoffMs: 0 });
  t.teardown(() => failing.stop());
  failing.signingStarted('v');
  failing.signingEnded('v', PATH);
  await failing.refill('v');
  t.same(lines.map((l) => [l.level, l.msg]), [[40, 'presignature refill failed; signings use the full protocol meanwhile']], 'a failure is a warning');

  const off = new PresignaturePool(fake().hooks, log, { target: 0 });
  off.signingStarted('v');
  off.signingEnded('v', PATH);
  t.notOk(off.enabled, 'target 0: off');
  t.equal(await off.refill('v'), 0, 'nothing made');
  t.equal(off.take('v', 0, PATH, 1), undefined, 'nothing handed out');
});
