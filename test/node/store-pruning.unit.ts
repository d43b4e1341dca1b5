// Pruning the node's single-use records (docs/storage.md "Pruning") without weakening single use: an
// intent's record goes once its not_after is long past, and the intent stays refused (for any nonce or
// input set); a session claim goes once its id's deadline is long past, and the id is refused at open
// and at claim by its time; an id dated in the future, or not matching its open's deadline, is refused;
// pool used marks go only past their entry's expiry or with the key; the pruner does every kind in
// bounded synced batches, logs and counts.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { bytesToHex } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { create } from '@bufbuild/protobuf';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import { VaultShareStore } from '../../node/storage/vault-shares.ts';
import { FrostNonceStore, type FrostNonceBinding } from '../../node/storage/frost-nonce-store.ts';
import { PRUNE_CHUNK_OPS, PRUNE_MARGIN_MS } from '../../node/storage/range-pruning.ts';
import { IntentLedger } from '../../node/runtime/authorization/intent-ledger.ts';
import type { SignGrant } from '../../node/runtime/authorization/sign-authorizer.ts';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import { SessionHost, type ToCoordinator } from '../../node/runtime/session-host.ts';
import { StorePruner } from '../../node/runtime/store-pruner.ts';
import { SessionOpenSchema, Protocol } from '../../proto/gen/mpc/v1/session_pb.ts';
import { createLogger } from '../../common/logger.ts';
import { createMetricsRegistry } from '../../common/metrics/metrics-registry.ts';
import { SESSION_ID_MAX_AHEAD_MS, sessionIdAt, sessionIdProblem } from '../../core/session/session-id.ts';
import { frostPrecommit } from '../../node/protocols/frost/frost-precommit.ts';
import { outputKey } from '../../node/protocols/frost/taproot.ts';
import { seededRng } from '../protocols/simulate.ts';
import { dkgKeys } from '../protocols/frost/keys.ts';

const storageKey = new Uint8Array(randomBytes(32));
const log = createLogger('test', 'silent');
const T0 = 1_800_000_000_000;
const hash = (label: string) => bytesToHex(sha256(new TextEncoder().encode(label)));
const hex = (b: Uint8Array) => bytesToHex(b);
const idAt = (ms: number) => sessionIdAt(ms, new Uint8Array(randomBytes(24)));

function tmp(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'prune-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

async function openStore(t: Test, dir = tmp(t), anchored = false): Promise<SealedStore> {
  const store = await SealedStore.open(join(dir, 'db'), storageKey, anchored ? { anchor: new FileRollbackAnchor(join(dir, 'anchor'), storageKey) } : {});
  t.teardown(() => store.close().catch(() => undefined));
  return store;
}

const evm = (label: string, notAfterS: number, nonce = 7): SignGrant => ({
  intentHash: hash(label), notAfter: BigInt(notAfterS), use: { chain: 'evm', chainId: 1n, from: '0x' + '11'.repeat(20), nonce },
});

async function listed(store: SealedStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const k of store.keys(prefix)) out.push(k);
  return out;
}


/** A session host of a fresh identity whose factory counts its calls and never builds; its refusals by code. */
function watchedHost(now: () => number) {
  const me = new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)));
  const failed: string[] = [];
  let built = 0;
  const host = new SessionHost(me, (m: ToCoordinator) => {
    if (m.body?.case === 'failed') failed.push(String(m.body.value.code));
  }, async () => {
    built++;
    throw new Error('never built');
  }, log, now);
  return { host, failed, built: () => built, parties: [{ nodeId: me.nodeId, index: 1, signingKey: me.signingKey, encryptionKey: me.encryptionKey }] };
}

t.test('an intent past its not_after (and the margin) loses its record, and stays refused for anything else', async (t) => {
  let now = T0;
  const store = await openStore(t);
  const ledger = new IntentLedger(store, { now: () => now });
  const nowS = T0 / 1000;
  const old = evm('old', nowS + 60);
  const fresh = evm('fresh', nowS + 3600);
  await ledger.claim(old);
  await ledger.claim(fresh);
  t.equal((await listed(store, 'intent/exp/')).length, 2, 'each record has its expiry entry, written in the same batch');
  await t.rejects(ledger.claim({ ...old, use: { ...old.use, nonce: 8 } as SignGrant['use'] }), { code: 'intent_already_used' }, 'before pruning: another nonce is refused by the record');

  now = T0 + 60_000 + PRUNE_MARGIN_MS - 5_000;
  t.equal(await ledger.prune(now), 0, 'past not_after but within the margin: kept');
  t.ok(await ledger.recorded(old.intentHash));

  now = T0 + 60_000 + PRUNE_MARGIN_MS + 5_000;
  t.equal(await ledger.prune(now), 1, 'past not_after and the margin: pruned');
  t.equal(await ledger.recorded(old.intentHash), undefined, 'the record is gone');
  t.equal(await store.raw(`intent/used/${old.intentHash}`), undefined, 'from disk too');
  t.same((await listed(store, 'intent/exp/')).map((k) => k.slice(-64)), [fresh.intentHash], 'its expiry entry went with it; the unexpired one stays');
  t.ok(await ledger.recorded(fresh.intentHash), 'the unexpired intent keeps its record');
  // The record is gone; the intent must not be signable again, for any nonce.
  await t.rejects(ledger.claim({ ...old, use: { ...old.use, nonce: 8 } as SignGrant['use'] }), { code: 'intent_expired' }, 'another nonce: refused by its not_after');
  await t.rejects(ledger.claim(old), { code: 'intent_expired' }, 'the same use: refused too');
  t.equal(await ledger.recorded(old.intentHash), undefined, 'and no record is made again');
});

t.test('a Bitcoin intent is pruned alike and refused for another input set', async (t) => {
  let now = T0;
  const store = await openStore(t);
  const ledger = new IntentLedger(store, { now: () => now });
  const btc: SignGrant = { intentHash: hash('btc'), notAfter: BigInt(T0 / 1000 + 10), use: { chain: 'bitcoin', inputs: [{ txid: 'aa'.repeat(32), vout: 0, amount: 1000n }] } };
  await ledger.claim(btc);
  now = T0 + 10_000 + PRUNE_MARGIN_MS + 1_000;
  t.equal(await ledger.prune(now), 1);
  await t.rejects(ledger.claim({ ...btc, use: { chain: 'bitcoin', inputs: [{ txid: 'bb'.repeat(32), vout: 1, amount: 2000n }] } }), { code: 'intent_expired' });
});

t.test('records written before expiry entries get theirs once, then prune by range', async (t) => {
  let now = T0;
  const store = await openStore(t);
  // As an earlier node wrote them: the sealed record alone.
  const rec = (notAfterS: number) => new TextEncoder().encode(JSON.stringify({ v: 1, notAfter: String(notAfterS), use: { chain: 'evm', chainId: '1', from: '0x' + '11'.repeat(20), nonce: 1 } }));
  await store.putSecret(`intent/used/${hash('legacy-old')}`, rec(T0 / 1000 - 10));
  await store.putSecret(`intent/used/${hash('legacy-new')}`, rec(T0 / 1000 + 7200));
  const ledger = new IntentLedger(store, { now: () => now });
  now = T0 + PRUNE_MARGIN_MS;
  t.equal(await ledger.prune(now), 1, 'the expired one is pruned on the first pass');
  t.same((await listed(store, 'intent/used/')).map((k) => k.slice(-64)), [hash('legacy-new')], 'the other stays');
  t.equal((await listed(store, 'intent/exp/')).length, 1, 'and has its expiry entry now');
  t.ok(await store.get('intent/exp-indexed'), 'marked: later passes unseal nothing');
});

t.test('a session claim is pruned once its id is long past, and the id is refused at claim and at open by its time', async (t) => {
  let now = T0;
  const store = await openStore(t);
  const vault = new VaultShareStore(store, { now: () => now });
  const past = idAt(T0 + 20_000);
  const later = idAt(T0 + 600_000);
  await store.batch(await vault.reserveSession(hex(past)));
  await store.batch(await vault.reserveSession(hex(later)));
  await t.rejects(vault.reserveSession(hex(past)), { code: 'session_reused' }, 'claimed: refused as reused');

  now = T0 + 20_000 + PRUNE_MARGIN_MS - 1;
  t.equal(await vault.pruneSessionClaims(now), 0, 'within the margin: kept');
  now = T0 + 20_000 + PRUNE_MARGIN_MS + 1;
  t.equal(await vault.pruneSessionClaims(now), 1, 'past deadline and margin: pruned');
  t.equal(await store.raw(`used/${hex(past)}`), undefined, 'gone from disk');
  t.ok(await store.raw(`used/${hex(later)}`), 'the later claim stays');

  // A fresh process (no in-memory reservations), the claim gone: the id's time still refuses it.
  const restarted = new VaultShareStore(store, { now: () => now });
  await t.rejects(restarted.reserveSession(hex(past)), { code: 'session_expired' }, 'refused at claim by its time');
  const w = watchedHost(() => now);
  w.host.onOpen(create(SessionOpenSchema, { sessionId: past, deadlineMs: BigInt(T0 + 20_000), protocol: Protocol.SIGN_ECDSA, keyId: 'k', parties: w.parties }));
  t.same(w.failed, ['session_expired'], 'refused at open by its time');
  t.equal(w.built(), 0, 'before anything runs');
});

t.test('a clock set back after a pass does not bring back what it pruned', async (t) => {
  // A clock stepped back (NTP, a restored VM) by more than the margin would make a pruned session id
  // or intent look unexpired again; the bound each pass raises on disk first still refuses them.
  let now = T0;
  const store = await openStore(t);
  const vault = new VaultShareStore(store, { now: () => now });
  const ledger = new IntentLedger(store, { now: () => now });
  const id = idAt(T0 + 20_000);
  await store.batch(await vault.reserveSession(hex(id)));
  const grant = evm('stepped back', T0 / 1000 + 20);
  await ledger.claim(grant);
  now = T0 + 30_000 + PRUNE_MARGIN_MS;
  t.equal(await vault.pruneSessionClaims(now), 1);
  t.equal(await ledger.prune(now), 1);
  t.equal(await vault.pruneSessionClaims(T0), 0, 'a pass on the earlier clock lowers nothing and deletes nothing');
  now = T0;
  const fresh = new VaultShareStore(store, { now: () => now });
  await t.rejects(fresh.reserveSession(hex(id)), { code: 'session_expired' }, 'the pruned id, with the clock back before its deadline: refused by the bound');
  await t.rejects(new IntentLedger(store, { now: () => now }).claim({ ...grant, use: { ...grant.use, nonce: 9 } as SignGrant['use'] }), { code: 'intent_expired' }, 'the pruned intent, another nonce: refused by the bound');
  await store.batch(await fresh.reserveSession(hex(idAt(T0 + 3 * PRUNE_MARGIN_MS))));
  t.pass('an id above the bound is claimed as ever');
});

t.test('a session id dated too far ahead, or not its open\'s deadline, or malformed, is refused at open', async (t) => {
  const now = T0;
  const { host, failed, built: builtNow, parties } = watchedHost(() => now);
  const open = (sessionId: Uint8Array, deadlineMs: number) => host.onOpen(create(SessionOpenSchema, { sessionId, deadlineMs: BigInt(deadlineMs), protocol: Protocol.SIGN_SCHNORR, keyId: 'k', parties }));
  const far = T0 + SESSION_ID_MAX_AHEAD_MS + 1;
  open(idAt(far), far);
  const edge = T0 + SESSION_ID_MAX_AHEAD_MS;
  const mismatched = idAt(T0 + 60_000);
  open(mismatched, T0 + 60_001);
  open(new Uint8Array(randomBytes(31)), T0 + 60_000);
  open(idAt(T0 - 1), T0 - 1);
  t.same(failed, ['bad_session', 'bad_session', 'bad_session', 'session_expired'], 'too far ahead, another deadline, 31 bytes, past');
  t.equal(builtNow(), 0, 'none ran');
  t.equal(sessionIdProblem(idAt(edge), BigInt(edge), now), undefined, 'exactly the maximum ahead is taken');
  open(idAt(T0 + 20_000), T0 + 20_000);
  await new Promise((r) => setTimeout(r, 20));
  t.equal(builtNow(), 1, 'a well-formed id within the window runs');
  // A random 32-byte id, as before this form, lands (with overwhelming odds) far ahead or in the past.
  const random = new Uint8Array(randomBytes(32));
  t.not(sessionIdProblem(random, new DataView(random.buffer).getBigUint64(0), now), undefined, 'an old-form random id is refused');
});

t.test('pool used marks go only past their entry\'s expiry, or with the key', async (t) => {
  let now = T0;
  const store = await openStore(t, tmp(t), true);
  const pool = new FrostNonceStore(store, { now: () => now });
  const keys = dkgKeys(3, 2, 'prune-pool');
  const binding: FrostNonceBinding = { epoch: 0, signers: [1, 2], suite: 'taproot', path: [], merkleRoot: '', publicKey: bytesToHex(outputKey(keys.get(1)!.pkg.groupKey)) };
  const [a, b] = frostPrecommit({ suite: 'taproot', me: 1, key: keys.get(1)!, path: [] }, 2, seededRng('prune-pool'));
  const ida = hash('a').slice(0, 32);
  const idb = hash('b').slice(0, 32);
  await pool.put('k', binding, [{ entryId: ida, nonces: a!.nonces }]);
  await pool.put('other', binding, [{ entryId: idb, nonces: b!.nonces }]);
  await pool.take('k', [ida], binding, [a!.commitment]);
  await pool.take('other', [idb], binding, [b!.commitment]);
  now = T0 + 23 * 3600_000;
  t.equal(await pool.sweep(async () => 0), 0, 'before the entries\' expiry: every mark stays');
  await t.rejects(pool.take('k', [ida], binding, [a!.commitment]), { code: 'nonce_used' });
  t.equal(await pool.sweep(async (k) => (k === 'k' ? 0 : undefined)), 1, 'the key no longer held: its mark goes at once');
  t.equal(await store.raw(`frost-nonce-used/other/${idb}`), undefined);
  t.ok(await store.raw(`frost-nonce-used/k/${ida}`), 'the held key\'s mark stays');
  now = T0 + 24 * 3600_000 + 1;
  t.equal(await pool.sweep(async () => 0), 1, 'past the entry\'s expiry: the mark goes');
  await t.rejects(pool.take('k', [ida], binding, [a!.commitment]), { code: 'nonce_unknown' }, 'the id takes nothing: its entry went at the take');
});

t.test('the pruner runs every kind, in bounded synced batches, and counts them', async (t) => {
  let now = T0;
  const store = await openStore(t);
  const vault = new VaultShareStore(store, { now: () => now });
  const ledger = new IntentLedger(store, { now: () => now });
  const n = PRUNE_CHUNK_OPS + 200;
  const claims = [];
  for (let i = 0; i < n; i++) claims.push(...(await vault.reserveSession(hex(idAt(T0 + 1000 + i)))));
  await store.batch(claims);
  for (let i = 0; i < 3; i++) await ledger.claim(evm(`p${i}`, T0 / 1000 + 5));
  await ledger.claim(evm('keep', T0 / 1000 + 86_000));
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } });
  const registry = createMetricsRegistry({ process: false });
  const pruner = new StorePruner({ vault, ledger, log: createLogger('node', 'info', sink), registry, now: () => now });
  now = T0 + 10_000 + PRUNE_MARGIN_MS;
  const before = store.version;
  const counts = await pruner.run();
  t.same(counts, { intent_record: 3, session_claim: n, retired_share: 0 });
  // Index backfill mark, the intents' bound and the intents, then the claims' bound and the claims in
  // chunks of at most PRUNE_CHUNK_OPS deletions.
  t.equal(store.version - before, 1n + 2n + 1n + BigInt(Math.ceil(n / PRUNE_CHUNK_OPS)), 'one synced write per chunk, after its bound');
  t.equal((await listed(store, 'used/')).length, 0);
  t.ok(await ledger.recorded(hash('keep')));
  const metric = await registry.getSingleMetric('node_store_pruned_records_total')!.get();
  t.same(Object.fromEntries(metric.values.map((v) => [v.labels.kind, v.value])), { intent_record: 3, session_claim: n }, 'counted by kind');
  const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'store pruned');
  t.match(logged, { intent_record: 3, session_claim: n }, 'logged with counts');
  t.same(await pruner.run(), { intent_record: 0, session_claim: 0, retired_share: 0 }, 'a second pass finds nothing');
  // The store reopens: what was pruned left the head consistent.
  await store.close();
});
