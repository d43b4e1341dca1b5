// The coordinator's precommitted FROST nonce rows (coordinator/vaults/frost-nonce-pool.ts) with the
// precommit session replaced by a fake: rows come back exactly as the nodes reported them (signatures
// as bytes), per suite and path; a path in use is refilled to the target when the vault is idle; a
// refusal that the nodes keep no pool backs off; another epoch's rows are dropped; target 0 is off.
import t from 'tap';
import { createLogger } from '../../common/logger.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { FrostNoncePool, type FrostNoncePoolHooks, type FrostPoolScheme } from '../../coordinator/vaults/frost-nonce-pool.ts';
import type { PrecommittedNonce } from '../../core/session/session-params.ts';

const log = createLogger('test', 'silent');
const PATH = [86, 1, 0, 0, 0];

function fake(opts: { refuse?: string } = {}) {
  const calls: { vaultId: string; path: number[]; count: number; scheme: FrostPoolScheme }[] = [];
  let n = 0;
  const state = { epoch: 0, refuse: opts.refuse };
  const entry = (party: number): PrecommittedNonce => ({ party, entryId: (n++).toString(16).padStart(32, '0'), hiding: '02' + '11'.repeat(32), binding: '03' + '22'.repeat(32), signature: new Uint8Array(64).fill(n) });
  const hooks: FrostNoncePoolHooks = {
    async precommit(input) {
      calls.push(input);
      if (state.refuse) throw new CustodyError(state.refuse as never, 'refused');
      return { rows: Array.from({ length: input.count }, () => [entry(1), entry(2)]), signers: ['a', 'b'], epoch: state.epoch, scheme: input.scheme, path: input.path };
    },
    isAttached: () => true,
    epochOf: async () => state.epoch,
  };
  return { hooks, calls, state };
}

t.test('rows round-trip, per suite and path; idle refill to the target; epochs; target 0', async (t) => {
  const f = fake();
  const pool = new FrostNoncePool(f.hooks, log, { target: 2, idleMs: 1 });
  t.teardown(() => pool.stop());
  t.equal(pool.take('v', 0, 'taproot', PATH, 1), undefined, 'empty at first');
  pool.signingStarted('v', 'taproot');
  pool.signingEnded('v', 'taproot', PATH);
  t.equal(await pool.refill('v', 'taproot'), 2, 'idle: two rows made');
  t.same(f.calls, [{ vaultId: 'v', path: PATH, count: 2, scheme: 'taproot' }], 'by one precommit session for the suite and path in use');
  t.equal(pool.size('v', 0, 'bip340', PATH), 0, 'nothing for BIP-340');
  t.equal(pool.take('v', 0, 'taproot', [0], 1), undefined, 'nothing for another path');
  const got = pool.take('v', 0, 'taproot', PATH, 1)!;
  t.equal(got.rows.length, 1);
  t.equal(got.rows[0]!.length, 2, 'a row names every signer');
  t.ok(got.rows[0]![0]!.signature instanceof Uint8Array && got.rows[0]![0]!.signature.length === 64, 'signatures come back as bytes');
  t.same(got.signers, ['a', 'b']);
  t.equal(pool.size('v', 0, 'taproot', PATH), 1, 'one row left');
  t.equal(pool.size('v', 1, 'taproot', PATH), 0, 'a new epoch drops the old rows');
  const off = new FrostNoncePool(fake().hooks, log, { target: 0 });
  t.notOk(off.enabled, 'target 0: off');
  t.equal(await off.refill('v', 'taproot'), 0);
});

t.test('a refusal that the nodes keep no nonce pool backs off the refills', async (t) => {
  const f = fake({ refuse: 'nonce_pool_unanchored' });
  let now = 1_000;
  const pool = new FrostNoncePool(f.hooks, log, { target: 2, idleMs: 1, backoffMs: 100, now: () => now });
  t.teardown(() => pool.stop());
  pool.signingStarted('v', 'taproot');
  pool.signingEnded('v', 'taproot', PATH);
  t.equal(await pool.refill('v', 'taproot'), 0, 'refused');
  now += 500;
  t.equal(await pool.refill('v', 'taproot'), 0, 'paused ten times the back-off');
  t.equal(f.calls.length, 1, 'no second session while paused');
  now += 600;
  f.state.refuse = undefined;
  t.equal(await pool.refill('v', 'taproot'), 2, 'refills after the pause');
});
