// The node's precommitted FROST nonce pairs (docs/protocols/pools.md "FROST"): sealed under (key, epoch,
// entry id) with their binding, kept only with a rollback anchor, taken once with the deletion and the
// used mark on disk before the pair is handed out; refused when unknown, used, expired, of another
// epoch, signer set, suite, path, script tree or key, or when the commitments named for the node are
// not the ones behind the pair; a restarted node finds a taken pair used; bounded, purged and swept.
import t, { type Test } from 'tap';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { isUnvouchedDiscard } from '../../node/storage/unvouched-records.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import { FrostNonceStore, type FrostNonceBinding } from '../../node/storage/frost-nonce-store.ts';
import { frostPrecommit, frostSignPrecommitted, type FrostPrecommitment } from '../../node/protocols/frost/frost-precommit.ts';
import { outputKey } from '../../node/protocols/frost/taproot.ts';
import { simulate, seededRng } from '../protocols/simulate.ts';
import { dkgKeys } from '../protocols/frost/keys.ts';

const storageKey = new Uint8Array(randomBytes(32));
const keys = dkgKeys(3, 2, 'nonce-store');
const groupKey = keys.get(1)!.pkg.groupKey;
const binding: FrostNonceBinding = { epoch: 0, signers: [1, 2], suite: 'taproot', path: [], merkleRoot: '', publicKey: bytesToHex(outputKey(groupKey)) };
const id = (label: string) => bytesToHex(sha256(new TextEncoder().encode(label))).slice(0, 32);
const draw = (label: string, me = 1, n = 1): FrostPrecommitment[] => frostPrecommit({ suite: 'taproot', me, key: keys.get(me)!, path: [] }, n, seededRng(label));

function tmp(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'frost-nonce-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

async function open(dir: string, opts: { anchor?: boolean; now?: () => number; maxPerKey?: number } = {}) {
  const anchor = opts.anchor === false ? undefined : new FileRollbackAnchor(join(dir, 'anchor'), storageKey);
  const store = await SealedStore.open(join(dir, 'db'), storageKey, { ...(anchor ? { anchor } : {}), discardUnvouched: isUnvouchedDiscard });
  return { store, pool: new FrostNonceStore(store, { ...(opts.now ? { now: opts.now } : {}), ...(opts.maxPerKey ? { maxPerKey: opts.maxPerKey } : {}) }) };
}

const refused = (t: Test, p: Promise<unknown>, code: string, what: string) => t.rejects(p, { code }, what);

t.test('without a rollback anchor the node makes and uses no nonce pairs', async (t) => {
  const { store, pool } = await open(tmp(t), { anchor: false });
  t.teardown(() => store.close());
  t.notOk(pool.enabled);
  const [p] = draw('unanchored');
  await refused(t, pool.admit('k', 0, [id('a')]), 'nonce_pool_unanchored', 'admit refused');
  await refused(t, pool.put('k', binding, [{ entryId: id('a'), nonces: p!.nonces }]), 'nonce_pool_unanchored', 'put refused');
  await refused(t, pool.take('k', [id('a')], binding, [p!.commitment]), 'nonce_pool_unanchored', 'take refused');
});

t.test('a pair is sealed, taken once (on disk before it is handed out), and signs with its peer\'s', async (t) => {
  const dir = tmp(t);
  const { store, pool } = await open(dir);
  t.ok(pool.enabled);
  const [mine] = draw('take once', 1);
  const [peer] = draw('take once peer', 2);
  const secretHex = bytesToHex(mine!.nonces.hiding.expose());
  await pool.admit('k', 0, [id('e1')]);
  await pool.put('k', binding, [{ entryId: id('e1'), nonces: mine!.nonces }]);
  const raw = await store.raw(`frost-nonce/k/0/${id('e1')}`);
  t.ok(raw, 'stored under (key, epoch, entry id)');
  t.notOk(bytesToHex(raw!).includes(secretHex), 'sealed: the nonce is not on disk in the clear');
  t.equal(await pool.count('k', 0), 1);
  await pool.check('k', [id('e1')], binding, [mine!.commitment]);
  t.pass('check accepts the binding and the own commitments');
  await refused(t, pool.check('k', [id('e1')], binding, [peer!.commitment]), 'wrong_commitment', 'commitments that are not its own are refused');
  await refused(t, pool.take('k', [id('e1')], binding, [{ ...mine!.commitment, binding: peer!.commitment.binding }]), 'wrong_commitment', 'an altered binding commitment is refused at take');
  const [taken] = await pool.take('k', [id('e1')], binding, [mine!.commitment]);
  t.equal(bytesToHex(taken!.hiding.expose()), secretHex, 'the stored pair comes back');
  t.equal(await store.raw(`frost-nonce/k/0/${id('e1')}`), undefined, 'its record is gone from disk');
  t.ok(await store.raw(`frost-nonce-used/k/${id('e1')}`), 'a used mark is on disk');
  await refused(t, pool.take('k', [id('e1')], binding, [mine!.commitment]), 'nonce_used', 'a second take is refused');
  await refused(t, pool.admit('k', 0, [id('e1')]), 'nonce_exists', 'the id cannot be made again');
  const digest = bytesToHex(sha256(new TextEncoder().encode('pooled')));
  const commitments = { 1: mine!.commitment, 2: peer!.commitment };
  const common = { sessionId: bytesToHex(sha256(new TextEncoder().encode('s'))), suite: 'taproot' as const, message: digest, signers: [1, 2], path: [], commitments };
  const { results } = simulate(frostSignPrecommitted, new Map([[1, { ...common, me: 1, key: keys.get(1)!, nonces: taken! }], [2, { ...common, me: 2, key: keys.get(2)!, nonces: peer!.nonces }]]));
  t.ok(schnorr.verify(hexToBytes(results.get(1)!.signature), hexToBytes(digest), outputKey(groupKey)), 'the taken pair signs');
  await store.close();
  const again = await open(dir);
  await refused(t, again.pool.take('k', [id('e1')], binding, [mine!.commitment]), 'nonce_used', 'after a restart the pair stays used');
  await again.store.close();
});

t.test('refusals for unknown ids, another epoch, signer set, suite, path, tree or key leave the pair usable', async (t) => {
  const { store, pool } = await open(tmp(t));
  t.teardown(() => store.close());
  const [p] = draw('bindings');
  const c = [p!.commitment];
  await pool.put('k', binding, [{ entryId: id('b1'), nonces: p!.nonces }]);
  await refused(t, pool.take('k', [id('nope')], binding, c), 'nonce_unknown', 'an unknown id');
  await refused(t, pool.take('k', ['zz'], binding, c), 'nonce_unknown', 'a malformed id');
  await refused(t, pool.take('other-key', [id('b1')], binding, c), 'nonce_unknown', 'an id of another key');
  await refused(t, pool.take('k', [id('b1')], { ...binding, epoch: 1 }, c), 'nonce_wrong_epoch', 'another epoch');
  await refused(t, pool.take('k', [id('b1')], { ...binding, signers: [1, 3] }, c), 'nonce_wrong_signers', 'another signer set');
  await refused(t, pool.take('k', [id('b1')], { ...binding, suite: 'bip340' }, c), 'nonce_wrong_path', 'another suite');
  await refused(t, pool.take('k', [id('b1')], { ...binding, path: [0, 1] }, c), 'nonce_wrong_path', 'another path');
  await refused(t, pool.take('k', [id('b1')], { ...binding, merkleRoot: 'ab'.repeat(32) }, c), 'nonce_wrong_path', 'another script tree');
  await refused(t, pool.take('k', [id('b1')], { ...binding, publicKey: '00'.repeat(32) }, c), 'nonce_wrong_path', 'another key');
  await refused(t, pool.take('k', [id('b1'), id('b1')], binding, [...c, ...c]), 'nonce_used', 'the same id twice');
  t.equal((await pool.take('k', [id('b1')], { ...binding, signers: [2, 1] }, c)).length, 1, 'the pair is still there for the right request');
});

t.test('pairs expire, are bounded per key, a new epoch retires the old ones, and the sweep clears', async (t) => {
  let now = 1_000_000;
  const { store, pool } = await open(tmp(t), { now: () => now, maxPerKey: 2 });
  t.teardown(() => store.close());
  const two = draw('bound', 1, 2);
  await pool.put('k', binding, two.map((p, i) => ({ entryId: id(`x${i}`), nonces: p.nonces })));
  await refused(t, pool.admit('k', 0, [id('x9')]), 'nonce_pool_full', 'over the bound');
  now += 24 * 60 * 60 * 1000 + 1;
  await refused(t, pool.take('k', [id('x0')], binding, [two[0]!.commitment]), 'nonce_expired', 'past its lifetime');
  t.equal(await pool.count('k', 0), 0, 'expired pairs are removed');
  const [o] = draw('epoch');
  await pool.put('k', binding, [{ entryId: id('o1'), nonces: o!.nonces }]);
  await refused(t, pool.take('k', [id('o1')], { ...binding, epoch: 1 }, [o!.commitment]), 'nonce_wrong_epoch', 'a request at a new epoch cannot use it');
  t.equal(await pool.sweep(async () => 1), 1, 'the sweep at epoch 1 deletes it');
  await refused(t, pool.take('k', [id('o1')], binding, [o!.commitment]), 'nonce_unknown', 'it is gone');
});

t.test('a data directory put back from before a take is refused at open', async (t) => {
  const dir = tmp(t);
  const { store, pool } = await open(dir);
  const [p] = draw('rollback');
  await pool.put('k', binding, [{ entryId: id('r1'), nonces: p!.nonces }]);
  await store.close();
  const copy = join(tmp(t), 'db-copy');
  cpSync(join(dir, 'db'), copy, { recursive: true });
  const second = await open(dir);
  await second.pool.take('k', [id('r1')], binding, [p!.commitment]);
  await second.store.close();
  rmSync(join(dir, 'db'), { recursive: true, force: true });
  cpSync(copy, join(dir, 'db'), { recursive: true });
  await t.rejects(open(dir), { code: 'rolled_back' }, 'the older copy, which still holds the pair, does not open');
});

t.test('an anchor that holds nothing over a written store: every pair is dropped, so a restored copy hands out none again', async (t) => {
  // An enclave's anchor in memory is gone at each restart, and its parent keeps the store: it can copy
  // the store while a pair is unused and serve the copy after the pair signed. Two shares with one
  // nonce pair give the key share away; the drop at open makes the copy hold no pair at all.
  const dir = tmp(t);
  const [mine] = draw('anchor lost', 1);
  let { store, pool } = await open(dir);
  await pool.admit('k', 0, [id('l1')]);
  await pool.put('k', binding, [{ entryId: id('l1'), nonces: mine!.nonces }]);
  await store.close();
  cpSync(join(dir, 'db'), join(dir, 'copy'), { recursive: true });
  ({ store, pool } = await open(dir));
  await pool.take('k', [id('l1')], binding, [mine!.commitment]);
  await store.close();

  rmSync(join(dir, 'anchor'));
  rmSync(join(dir, 'db'), { recursive: true });
  cpSync(join(dir, 'copy'), join(dir, 'db'), { recursive: true });
  ({ store, pool } = await open(dir));
  t.teardown(() => store.close());
  t.equal(store.droppedUnanchored, 1, 'the copy\'s pair was dropped at open');
  await refused(t, pool.take('k', [id('l1')], binding, [mine!.commitment]), 'nonce_unknown', 'the pair that signed before is not handed out again');
  t.equal(await store.raw(`frost-nonce/k/0/${id('l1')}`), undefined, 'gone from disk');
});
