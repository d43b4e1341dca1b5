// The rollback anchor kept by anchor keepers (docs/storage.md "Anchor keepers"), with the keepers in
// this process and the traffic in the test's hands, as the node's host (an enclave's parent) has it.
// The host and up to the quorum's margin of keepers may be malicious: a replayed answer, a version the
// node never signed, an older statement, or too few answers must never make the node take an older
// store for the newest, nor an unreachable keeper for an empty one.
import t from 'tap';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { toHex, fromHex } from '../../common/bytes.ts';
import { AnchorKeeper } from '../../node/anchor-keeper/keeper-service.ts';
import { encodeHeld, decodeHeld, type HeldStatement, type KeeperRecords } from '../../node/anchor-keeper/keeper-records.ts';
import { readAnswerMessage, statementMessage, type ReadAnswerWire, type ReadRequestWire, type WriteRequestWire } from '../../node/anchor-keeper/keeper-messages.ts';
import {
  KeeperRollbackAnchor, anchorClientPublicKey, majority, quorumProblem, type AnchorKeeperEndpoint, type KeeperTransport,
} from '../../node/storage/keeper-rollback-anchor.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { Ed25519Signer } from '../../common/ed25519.ts';

const enc = new TextEncoder();

class MemoryRecords implements KeeperRecords {
  readonly held = new Map<string, Uint8Array>();
  async get(client: string): Promise<HeldStatement | undefined> {
    const b = this.held.get(client);
    return b && decodeHeld(client, b);
  }
  async raise(client: string, s: HeldStatement): Promise<HeldStatement> {
    const held = await this.get(client);
    if (held && held.version >= s.version) return held;
    this.held.set(client, encodeHeld(s));
    return s;
  }
  async close(): Promise<void> {}
}

/** A keeper in this process: its service, its records, and how the test may bend what it answers. */
interface TestKeeper {
  endpoint: AnchorKeeperEndpoint;
  keeper: AnchorKeeper;
  records: MemoryRecords;
  /** Set: the keeper does not answer (down, or blocked by the host). */
  down?: boolean;
  /** Rewrites a read answer before the node sees it (a lying keeper, or a host replaying one). */
  bendRead?: (req: ReadRequestWire, answer: ReadAnswerWire) => ReadAnswerWire;
  seed: Uint8Array;
}

function keepers(n: number): TestKeeper[] {
  return Array.from({ length: n }, (_, i) => {
    const seed = new Uint8Array(randomBytes(32));
    const records = new MemoryRecords();
    const keeper = new AnchorKeeper(records, seed);
    return { endpoint: { url: `https://keeper-${i + 1}.example`, publicKey: keeper.publicKey }, keeper, records, seed };
  });
}

/** The transport as the host carries it: to the keeper in this process, or nowhere. */
function transportTo(ks: TestKeeper[]): KeeperTransport {
  return async (endpoint, path, body) => {
    const k = ks.find((x) => x.endpoint.url === endpoint.url)!;
    if (k.down) throw new Error('unreachable: connect ECONNREFUSED');
    // Through JSON, as on the wire.
    const req = JSON.parse(JSON.stringify(body)) as ReadRequestWire & WriteRequestWire;
    if (path === '/v1/write') return JSON.parse(JSON.stringify(await k.keeper.write(req)));
    const answer = await k.keeper.read(req);
    return JSON.parse(JSON.stringify(k.bendRead ? k.bendRead(req, answer) : answer));
  };
}

interface Logged { level: 'warn' | 'info'; fields: Record<string, unknown>; msg: string }

function anchorOver(ks: TestKeeper[], storageKey: Uint8Array, more: { readQuorum?: number; writeQuorum?: number } = {}) {
  const logged: Logged[] = [];
  const anchor = new KeeperRollbackAnchor({
    keepers: ks.map((k) => k.endpoint), storageKey, transport: transportTo(ks), ...more,
    log: { warn: (fields, msg) => logged.push({ level: 'warn', fields, msg }), info: (fields, msg) => logged.push({ level: 'info', fields, msg }) },
  });
  return { anchor, logged };
}

const warnedAbout = (logged: Logged[], url: string) => logged.filter((l) => l.level === 'warn' && l.fields.keeper === url).map((l) => String(l.fields.why));

t.test('quorums: a majority by default, and any read quorum meets any write quorum', async (t) => {
  t.same([1, 2, 3, 4, 5, 7].map(majority), [1, 2, 2, 3, 3, 4]);
  for (let m = 1; m <= 7; m++) t.equal(quorumProblem(m, majority(m), majority(m)), undefined, `majorities of ${m} overlap`);
  t.equal(quorumProblem(3, 1, 3), undefined, 'read any one, write all');
  t.equal(quorumProblem(3, 3, 1), undefined, 'read all, write any one');
  t.match(quorumProblem(3, 1, 2), /must exceed the 3 keepers/, 'q + w = m: a read may miss the write');
  t.match(quorumProblem(4, 2, 2), /must exceed/);
  t.match(quorumProblem(3, 4, 2), /read quorum must be from 1 to 3/);
  t.match(quorumProblem(3, 2, 0), /write quorum must be from 1 to 3/);
  t.match(quorumProblem(0, 1, 1), /at least one keeper/);
  t.throws(() => anchorOver(keepers(3), new Uint8Array(32), { readQuorum: 1, writeQuorum: 1 }), { code: 'bad_anchor', message: /must exceed/ }, 'the anchor refuses quorums that do not overlap');
});

t.test('the client key comes from the storage key alone, under its own label', async (t) => {
  const key = new Uint8Array(randomBytes(32));
  const { anchor } = anchorOver(keepers(1), key);
  t.same(anchor.clientKey, anchorClientPublicKey(key), 'the same key for the same storage key');
  t.notSame(anchorClientPublicKey(new Uint8Array(randomBytes(32))), anchor.clientKey, 'another storage key, another client');
  t.notSame(anchor.clientKey, ed25519.getPublicKey(key), 'not the storage key used as a seed');
});

t.test('honest keepers: nothing held reads as undefined, then the highest version written, never lowered', async (t) => {
  const ks = keepers(3);
  const key = new Uint8Array(randomBytes(32));
  const { anchor } = anchorOver(ks, key);
  t.equal(await anchor.read(), undefined, 'a keeper that holds nothing is a valid answer of nothing');
  for (const v of [1n, 2n, 3n, 7n]) await anchor.write(v);
  await anchor.write(5n);
  t.equal(await anchorOver(ks, key).anchor.read(), 7n, 'a new reader (the next start) reads the highest version');
  for (const k of ks) t.equal((await k.records.get(toHex(anchor.clientKey)))?.version, 7n, `${k.endpoint.url} holds 7, not the 5 written after`);
});

t.test('a keeper replaying an old answer (a stale challenge) is refused, and a host replaying all of them stops the start', async (t) => {
  const ks = keepers(3);
  const key = new Uint8Array(randomBytes(32));
  const { anchor } = anchorOver(ks, key);
  await anchor.write(3n);
  // The host records every keeper's answer to a read at version 3...
  const recorded = new Map<string, ReadAnswerWire>();
  for (const k of ks) k.bendRead = (_req, a) => (recorded.set(k.endpoint.url, a), a);
  t.equal(await anchorOver(ks, key).anchor.read(), 3n);
  await anchor.write(9n);
  // ...and, the store rolled back to version 3, answers each later read with the recorded one.
  ks[1]!.bendRead = () => recorded.get(ks[1]!.endpoint.url)!;
  const one = anchorOver(ks, key);
  t.equal(await one.anchor.read(), 9n, 'one replayed answer is not used');
  t.match(warnedAbout(one.logged, ks[1]!.endpoint.url), [/not signed by its pinned key over this read's challenge/], 'the replaying keeper is named');
  for (const k of ks) k.bendRead = () => recorded.get(k.endpoint.url)!;
  const all = anchorOver(ks, key);
  await t.rejects(all.anchor.read(), { code: 'anchor_unavailable', message: /0 of 3 rollback anchor keepers gave a valid answer and 2 are needed/ }, 'replays throughout: no valid answer, refused (not version 3)');
  for (const k of ks) t.equal(warnedAbout(all.logged, k.endpoint.url).length, 1, `${k.endpoint.url} named`);
});

t.test('a keeper reporting a version the node never signed is refused', async (t) => {
  const ks = keepers(3);
  const key = new Uint8Array(randomBytes(32));
  const { anchor } = anchorOver(ks, key);
  await anchor.write(4n);
  const liar = ks[0]!;
  const signer = new Ed25519Signer(liar.seed);
  const client = anchor.clientKey;
  // The keeper signs its answer properly, over the right challenge: only the statement inside is false.
  const forge = (statement: { version: bigint; signature: Uint8Array }) => (req: ReadRequestWire): ReadAnswerWire => ({
    statement: { version: statement.version.toString(), signature: toHex(statement.signature) },
    signature: toHex(signer.sign(readAnswerMessage(client, statement, fromHex(req.challenge)))),
  });
  const genuine = (await liar.records.get(toHex(client)))!;
  const other = new Ed25519Signer(new Uint8Array(randomBytes(32)));
  const cases: [string, { version: bigint; signature: Uint8Array }][] = [
    ['a higher version with the signature of the version it holds', { version: 40n, signature: genuine.signature }],
    ['a version signed by another key', { version: 40n, signature: other.sign(statementMessage(client, 40n)) }],
    ['a version signed for another client', { version: 40n, signature: new Ed25519Signer(new Uint8Array(randomBytes(32))).sign(statementMessage(new Uint8Array(32).fill(1), 40n)) }],
  ];
  for (const [what, statement] of cases) {
    liar.bendRead = forge(statement);
    const r = anchorOver(ks, key);
    t.equal(await r.anchor.read(), 4n, `${what}: not used`);
    t.match(warnedAbout(r.logged, liar.endpoint.url), [/version 40, which this node never signed/], `${what}: the keeper is named`);
  }
  // A forged version the others cannot outvote (they are down) is not taken either: too few valid answers.
  liar.bendRead = forge(cases[1]![1]);
  ks[1]!.down = true;
  await t.rejects(anchorOver(ks, key).anchor.read(), { code: 'anchor_unavailable' });
});

t.test('a keeper reporting an older statement (its records rolled back) loses to the highest of the quorum', async (t) => {
  const ks = keepers(3);
  const key = new Uint8Array(randomBytes(32));
  const { anchor } = anchorOver(ks, key);
  await anchor.write(2n);
  const client = toHex(anchor.clientKey);
  const old = ks[2]!.records.held.get(client)!;
  await anchor.write(8n);
  ks[2]!.records.held.set(client, old);
  t.equal((await ks[2]!.records.get(client))?.version, 2n, 'the keeper now holds a genuine older statement');
  t.equal(await anchorOver(ks, key).anchor.read(), 8n, 'all three answer: the highest wins');
  ks[0]!.down = true;
  t.equal(await anchorOver(ks, key).anchor.read(), 8n, 'a quorum of two, one of them older: the highest wins');
});

t.test('too few valid answers refuses the read, naming each keeper and why; never "nothing held"', async (t) => {
  const ks = keepers(3);
  const key = new Uint8Array(randomBytes(32));
  ks[0]!.down = true;
  ks[1]!.down = true;
  const r = anchorOver(ks, key);
  const err = await r.anchor.read().then(() => undefined, (e: unknown) => e as Error & { code: string });
  t.equal(err?.code, 'anchor_unavailable', 'a new node whose keepers do not answer is refused, not taken as new');
  t.match(err?.message, /1 of 3 rollback anchor keepers gave a valid answer and 2 are needed/);
  t.match(err?.message, /https:\/\/keeper-1\.example: unreachable/);
  t.match(err?.message, /https:\/\/keeper-2\.example: unreachable/);
  t.notMatch(err?.message, /keeper-3/, 'the keeper that answered is not blamed');
  // Read all, write one: a single missing keeper refuses the read.
  ks[1]!.down = false;
  await t.rejects(anchorOver(ks, key, { readQuorum: 3, writeQuorum: 1 }).anchor.read(), { code: 'anchor_unavailable' });
  t.equal(await anchorOver(ks, key, { readQuorum: 2, writeQuorum: 2 }).anchor.read(), undefined, 'two of three answering nothing held: undefined');
});

t.test('a write completes at its quorum of acknowledgements, and fails, naming the keepers, when it cannot', async (t) => {
  const ks = keepers(3);
  const key = new Uint8Array(randomBytes(32));
  const { anchor, logged } = anchorOver(ks, key);
  ks[2]!.down = true;
  await anchor.write(1n);
  await anchor.write(2n);
  t.equal(warnedAbout(logged, ks[2]!.endpoint.url).length, 1, 'a keeper that stays down is logged once, not at every write');
  ks[1]!.down = true;
  await t.rejects(anchor.write(3n), { code: 'anchor_unavailable', message: /version 3 cannot reach the 2 of 3 rollback anchor keepers a write needs .*: https:\/\/keeper-2\.example: unreachable.*; https:\/\/keeper-3\.example: unreachable/ });
  ks[1]!.down = false;
  ks[2]!.down = false;
  await anchor.write(4n);
  for (const k of ks) t.equal((await k.records.get(toHex(anchor.clientKey)))?.version, 4n, `${k.endpoint.url} caught up`);
  t.ok(logged.some((l) => l.level === 'info' && l.fields.keeper === ks[2]!.endpoint.url && /answers again/.test(l.msg)), 'a keeper back is logged');
});

t.test('an acknowledgement that is not the keeper\'s, or not for this write, does not count', async (t) => {
  const ks = keepers(3);
  const key = new Uint8Array(randomBytes(32));
  const base = transportTo(ks);
  let replay: unknown;
  const transport: KeeperTransport = async (endpoint, path, body, ms) => {
    const answer = await base(endpoint, path, body, ms);
    if (path !== '/v1/write' || endpoint.url === ks[0]!.endpoint.url) return answer;
    // keeper-2's answers are replaced by its first one, keeper-3's signed by another key.
    if (endpoint.url === ks[1]!.endpoint.url) return (replay ??= answer);
    return { ...(answer as object), signature: toHex(new Ed25519Signer(new Uint8Array(randomBytes(32))).sign(enc.encode('x'))) };
  };
  const anchor = new KeeperRollbackAnchor({ keepers: ks.map((k) => k.endpoint), storageKey: key, transport });
  // keeper-1 down: every write needs both of the others.
  ks[0]!.down = true;
  await t.rejects(anchor.write(1n), { code: 'anchor_unavailable', message: /keeper-3.*not signed by its pinned key over this write/ }, 'the first write: keeper-3\'s ack is forged');
  await t.rejects(anchor.write(2n), { code: 'anchor_unavailable', message: /keeper-2.*not signed by its pinned key over this write/ }, 'keeper-2\'s first ack, replayed for the next write, does not count');
});

t.test('the keeper stores only statements signed by the client key they name, and never lowers one', async (t) => {
  const records = new MemoryRecords();
  const keeper = new AnchorKeeper(records, new Uint8Array(randomBytes(32)));
  const seed = new Uint8Array(randomBytes(32));
  const client = ed25519.getPublicKey(seed);
  const signer = new Ed25519Signer(seed);
  const write = (v: bigint, signature = signer.sign(statementMessage(client, v))) =>
    keeper.write({ client: toHex(client), version: v.toString(), signature: toHex(signature), nonce: toHex(randomBytes(32)) });
  t.equal((await write(5n)).stored, '5');
  t.equal((await write(3n)).stored, '5', 'a lower version is acknowledged as the higher one held');
  await t.rejects(write(9n, signer.sign(statementMessage(client, 8n))), { code: 'unauthorized' }, 'a statement whose signature is for another version');
  await t.rejects(write(9n, new Ed25519Signer(new Uint8Array(randomBytes(32))).sign(statementMessage(client, 9n))), { code: 'unauthorized' }, 'signed by another key');
  await t.rejects(keeper.write({ client: '00'.repeat(32), version: '1', signature: '00'.repeat(64), nonce: '00'.repeat(32) }), { code: 'invalid_request' }, 'a client key that is no key');
  t.equal((await records.get(toHex(client)))?.version, 5n, 'what it holds is still 5');
});

t.test('on a sealed store: a whole directory restored from an older copy is refused against the keepers', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'keeper-anchor-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ks = keepers(3);
  const key = new Uint8Array(randomBytes(32));
  const open = (d: string) => SealedStore.open(d, key, { anchor: anchorOver(ks, key).anchor, requireVouched: true });
  const store = await open(join(dir, 'db'));
  await store.put('a', enc.encode('1'));
  await store.close();
  cpSync(join(dir, 'db'), join(dir, 'old'), { recursive: true });
  const again = await open(join(dir, 'db'));
  await again.put('a', enc.encode('2'));
  await again.put('b', enc.encode('3'));
  await again.close();
  await t.rejects(open(join(dir, 'old')), { code: 'rolled_back' }, 'the older copy is behind the keepers');
  ks[0]!.down = true;
  await t.rejects(open(join(dir, 'old')), { code: 'rolled_back' }, 'with one keeper down too');
  const current = await open(join(dir, 'db'));
  t.equal(current.version, 3n, 'the newest copy opens');
  await current.close();
});
