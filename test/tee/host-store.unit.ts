// The store backend split and the host store (docs/storage.md "Backends", "A store kept by the
// enclave's parent"): one contract run against LevelDB and against the remote backend over loopback
// TCP; a sealed store over a host that lies (another record's value, an old value, a dropped record,
// a listing out of order, a replayed answer) refuses with its integrity errors; frame limits; one
// client per directory.
import t, { type Test } from 'tap';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KvBackend } from '../../node/storage/kv-backend.ts';
import { LevelKvBackend } from '../../node/storage/level-kv-backend.ts';
import { SealedStore, SealedStoreError } from '../../node/storage/sealed-store.ts';
import { RemoteKvClient } from '../../tee/host-store/remote-kv-client.ts';
import { LevelHostKv, startHostStoreServer, type HostKv } from '../../tee/host-store/host-store-server.ts';
import { HostStoreError } from '../../tee/host-store/host-store-error.ts';
import {
  decodeRequest, encodeRequest, FrameReader, MAX_FRAME_BYTES, MAX_KEY_BYTES, MAX_VALUE_BYTES, Op, type KvWriteOp, type ScanPage, type ScanRequest,
} from '../../tee/host-store/frame.ts';

const bytes = (...b: number[]) => Uint8Array.from(b);
const KEY = new Uint8Array(32).fill(9);

function tempDir(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'host-store-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** A host store on loopback serving `store`; its port. */
async function serve(t: Test, store: HostKv): Promise<number> {
  const s = await startHostStoreServer({ store, host: '127.0.0.1', port: 0 });
  t.teardown(() => s.close());
  return s.port;
}

const servers = new Map<string, { kv: LevelHostKv; port: number }>();

/** A client of the host store serving `dir` (one server per directory, as in production). */
async function remote(t: Test, dir: string, wrap: (kv: HostKv) => HostKv = (kv) => kv, pageSize = 2): Promise<{ client: RemoteKvClient; kv: LevelHostKv; port: number }> {
  let s = servers.get(dir);
  if (!s) {
    const kv = await LevelHostKv.open(dir);
    t.teardown(() => kv.close());
    s = { kv, port: await serve(t, wrap(kv)) };
    servers.set(dir, s);
  }
  return { client: new RemoteKvClient({ host: '127.0.0.1', port: s.port, pageSize, connectTimeoutMs: 2000 }), kv: s.kv, port: s.port };
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const backends: [string, (t: Test, dir: string) => Promise<KvBackend>][] = [
  ['LevelDB', async (_t, dir) => new LevelKvBackend(dir)],
  ['remote over loopback TCP', async (t, dir) => (await remote(t, dir)).client],
];

for (const [name, make] of backends) {
  t.test(`backend contract: ${name}`, async (t) => {
    const db = await make(t, tempDir(t));
    await db.open();
    t.equal(await db.get('a'), undefined, 'absent is undefined');
    await db.batch([
      { type: 'put', key: 'b/2', value: bytes(2) }, { type: 'put', key: 'b/1', value: bytes(1) }, { type: 'put', key: 'a', value: bytes(0) },
      { type: 'put', key: 'b/\u00e9', value: bytes(3) }, { type: 'put', key: 'b/\u{1f600}', value: bytes(4) }, { type: 'put', key: 'b/\uffee', value: bytes(5) },
      { type: 'put', key: 'c', value: new Uint8Array(0) },
    ], { sync: true });
    t.same(await db.get('b/1'), bytes(1));
    t.same(await db.get('c'), new Uint8Array(0), 'an empty value is a value');
    // UTF-8 byte order: U+FFEE (EF BF AE) sorts before U+1F600 (F0 9F 98 80), unlike UTF-16.
    t.same((await collect(db.entries())).map(([k]) => k), ['a', 'b/1', 'b/2', 'b/\u00e9', 'b/\uffee', 'b/\u{1f600}', 'c'], 'entries in LevelDB order, over pages');
    t.same(await collect(db.keys({ gte: 'b/', lt: 'b/\xff' })), ['b/1', 'b/2', 'b/\u00e9'], 'keys in a range');
    t.same(await collect(db.keys({ gte: 'x', lt: 'y' })), [], 'an empty range');
    await db.batch([{ type: 'del', key: 'b/1' }, { type: 'put', key: 'a', value: bytes(9) }], { sync: true });
    t.equal(await db.get('b/1'), undefined, 'deleted');
    t.same(await db.get('a'), bytes(9), 'overwritten');
    await db.close();
  });

  t.test(`a sealed store over ${name} keeps its records across a reopen`, async (t) => {
    const dir = tempDir(t);
    const first = await SealedStore.openOn(await make(t, dir), KEY);
    await first.putSecret('identity/v1', bytes(1, 2, 3));
    await first.batch([{ type: 'put', key: 'used/s1', value: bytes(1) }, { type: 'put', key: 'used/s2', value: bytes(2) }, { type: 'put', key: 'used/s3', value: bytes(3) }]);
    await first.close();
    const again = await SealedStore.openOn(await make(t, dir), KEY);
    t.same(await again.getSecret('identity/v1'), bytes(1, 2, 3));
    t.same(await collect(again.keys('used/')), ['used/s1', 'used/s2', 'used/s3']);
    t.equal(again.version, first.version);
    await again.close();
  });
}

t.test('the remote backend keeps the LevelDB format: a directory written remotely opens locally', async (t) => {
  const dir = tempDir(t);
  const { client, kv } = await remote(t, dir);
  const s = await SealedStore.openOn(client, KEY);
  await s.putSecret('identity/v1', bytes(7));
  await s.close();
  await kv.close();
  const local = await SealedStore.open(dir, KEY);
  t.same(await local.getSecret('identity/v1'), bytes(7));
  await local.close();
});

/** A host store that lies: `lie` rewrites what the honest one answers. */
function lying(kv: HostKv, lie: { get?: (key: string, honest: Uint8Array | undefined) => Promise<Uint8Array | undefined>; scan?: (r: ScanRequest, honest: ScanPage) => ScanPage }): HostKv {
  return {
    get: async (key) => (lie.get ? lie.get(key, await kv.get(key)) : kv.get(key)),
    batch: (ops: KvWriteOp[], sync: boolean) => kv.batch(ops, sync),
    scan: async (r) => (lie.scan ? lie.scan(r, await kv.scan(r)) : kv.scan(r)),
    close: () => kv.close(),
  };
}

/** A store with records a, b (public) and s (sealed) written through an honest host; then `lie` is switched on. */
async function storeOverLiar(t: Test, lie: Parameters<typeof lying>[1]) {
  const dir = tempDir(t);
  let on = false;
  const { client, kv, port } = await remote(t, dir, (kv) => {
    const liar = lying(kv, lie);
    return { get: (k) => (on ? liar : kv).get(k), batch: (o, s) => kv.batch(o, s), scan: (r) => (on ? liar : kv).scan(r), close: () => kv.close() };
  });
  const store = await SealedStore.openOn(client, KEY);
  await store.put('rec/a', bytes(1));
  await store.put('rec/b', bytes(2));
  await store.putSecret('rec/s', bytes(3));
  const old = await kv.get('rec/a');
  await store.put('rec/a', bytes(11));
  return { store, kv, client, old: old!, lieOn: () => (on = true), dir, port };
}

t.test('a forged get answer is refused with the store\'s integrity errors', async (t) => {
  t.test('another record\'s value', async (t) => {
    const h = await storeOverLiar(t, { get: async (key, honest) => (key === 'rec/a' ? h.kv.get('rec/b') : honest) });
    h.lieOn();
    await t.rejects(h.store.get('rec/a'), { constructor: SealedStoreError, code: 'tampered' });
    t.same(await h.store.get('rec/b'), bytes(2), 'the honest answers still read');
  });
  t.test('a sealed record moved onto another', async (t) => {
    const h = await storeOverLiar(t, { get: async (key, honest) => (key === 'rec/b' ? h.kv.get('rec/s') : honest) });
    h.lieOn();
    await t.rejects(h.store.getSecret('rec/b'), { constructor: SealedStoreError, code: 'tampered' });
  });
  t.test('an old value of the record', async (t) => {
    const h = await storeOverLiar(t, { get: async (key, honest) => (key === 'rec/a' ? h.old : honest) });
    h.lieOn();
    await t.rejects(h.store.get('rec/a'), { constructor: SealedStoreError, code: 'tampered' });
  });
  t.test('a dropped record', async (t) => {
    const h = await storeOverLiar(t, { get: async (key, honest) => (key === 'rec/s' ? undefined : honest) });
    h.lieOn();
    await t.rejects(h.store.getSecret('rec/s'), { constructor: SealedStoreError, code: 'tampered' });
  });
});

t.test('a forged listing is refused', async (t) => {
  /** The store closed, the host starts lying, the node opens it again. */
  const reopen = async (t: Test, lie: Parameters<typeof lying>[1]) => {
    const h = await storeOverLiar(t, lie);
    await h.store.close();
    h.lieOn();
    return new RemoteKvClient({ host: '127.0.0.1', port: h.port, pageSize: 2, connectTimeoutMs: 2000 });
  };
  t.test('at open, another record\'s value', async (t) => {
    const client = await reopen(t, { scan: (r, p) => ({ ...p, entries: p.entries.map((e) => (e.key === 'rec/a' ? { ...e, value: bytes(2) } : e)) }) });
    await t.rejects(SealedStore.openOn(client, KEY), { constructor: SealedStoreError, code: 'tampered' });
  });
  t.test('at open, an old value', async (t) => {
    const h = await storeOverLiar(t, { scan: (_r, p) => ({ ...p, entries: p.entries.map((e) => (e.key === 'rec/a' ? { ...e, value: h.old } : e)) }) });
    await h.store.close();
    h.lieOn();
    const client = new RemoteKvClient({ host: '127.0.0.1', port: h.port, pageSize: 2, connectTimeoutMs: 2000 });
    await t.rejects(SealedStore.openOn(client, KEY), { constructor: SealedStoreError, code: 'tampered' });
  });
  t.test('at open, a dropped record', async (t) => {
    const client = await reopen(t, { scan: (_r, p) => ({ ...p, entries: p.entries.filter((e) => e.key !== 'rec/s') }) });
    await t.rejects(SealedStore.openOn(client, KEY), { constructor: SealedStoreError, code: 'tampered' });
  });
  t.test('keys() with a record left out', async (t) => {
    const h = await storeOverLiar(t, { scan: (r, p) => (r.withValues ? p : { ...p, entries: p.entries.filter((e) => e.key !== 'rec/b') }) });
    h.lieOn();
    await t.rejects(collect(h.store.keys('rec/')), { constructor: SealedStoreError, code: 'tampered' });
  });
  t.test('keys() with a key the head does not account for', async (t) => {
    const h = await storeOverLiar(t, { scan: (r, p) => (r.withValues || p.more ? p : { ...p, entries: [...p.entries, { key: 'rec/zz' }] }) });
    h.lieOn();
    await t.rejects(collect(h.store.keys('rec/')), { constructor: SealedStoreError, code: 'tampered' });
  });
  t.test('a listing out of order, or outside its range, ends the link', async (t) => {
    const h = await storeOverLiar(t, { scan: (_r, p) => ({ ...p, entries: [...p.entries].reverse() }) });
    h.lieOn();
    await t.rejects(collect(h.client.keys({ gte: 'rec/', lt: 'rec/\xff' })), { constructor: HostStoreError, code: 'tampered' });
    await t.rejects(h.store.get('rec/b'), { constructor: HostStoreError, code: 'tampered' }, 'and nothing more is asked of that host');
  });
  t.test('a key outside the range asked for', async (t) => {
    const h = await storeOverLiar(t, { scan: (r, p) => (r.withValues ? p : { ...p, entries: [{ key: 'other' }] }) });
    h.lieOn();
    await t.rejects(collect(h.store.keys('rec/')), { constructor: HostStoreError, code: 'tampered' });
  });
});

/** A raw TCP server speaking the frames by hand, for answers no honest server gives. */
async function rawServer(t: Test, onFrame: (f: { op: number; id: number }, write: (b: Uint8Array) => void) => void): Promise<number> {
  const { createServer } = await import('node:net');
  const open = new Set<Socket>();
  const server = createServer((s) => {
    open.add(s);
    const r = new FrameReader();
    s.on('error', () => undefined);
    s.on('data', (c) => {
      for (const f of r.push(c)) onFrame(f, (b) => s.write(b));
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  t.teardown(() => new Promise<void>((res) => {
    server.close(() => res());
    for (const s of open) s.destroy();
  }));
  return (server.address() as { port: number }).port;
}

const frame = (op: number, id: number, payload: number[] = []) => {
  const b = new Uint8Array(10 + payload.length);
  const v = new DataView(b.buffer);
  v.setUint32(0, 6 + payload.length);
  b[4] = 1;
  b[5] = op;
  v.setUint32(6, id);
  b.set(payload, 10);
  return b;
};

t.test('a replayed or unasked-for answer ends the link', async (t) => {
  let lastGet = 0;
  const port = await rawServer(t, (f, write) => {
    if (f.op === Op.hello) return write(frame(Op.ok, f.id));
    if (f.op === Op.get) {
      // The first get is answered; the second gets the first one's answer again (a replay).
      write(frame(Op.value, lastGet || f.id, [0]));
      lastGet ||= f.id;
    }
  });
  const client = new RemoteKvClient({ host: '127.0.0.1', port });
  let lost: HostStoreError | undefined;
  client.onLost((e) => (lost = e));
  await client.open();
  t.equal(await client.get('k'), undefined);
  await t.rejects(client.get('k'), { constructor: HostStoreError, code: 'bad_message' });
  t.equal(lost?.code, 'bad_message', 'the node is told the link is lost');
  await t.rejects(client.get('k'), { code: 'bad_message' }, 'every later call fails too');
  await client.close();
});

t.test('an answer of the wrong kind, or that does not parse, ends the link', async (t) => {
  const port = await rawServer(t, (f, write) => {
    if (f.op === Op.hello) return write(frame(Op.ok, f.id));
    if (f.op === Op.get) write(frame(Op.ok, f.id));
    if (f.op === Op.batch) write(frame(Op.ok, f.id, [1]));
  });
  const a = new RemoteKvClient({ host: '127.0.0.1', port });
  await a.open();
  await t.rejects(a.get('k'), { constructor: HostStoreError, code: 'bad_message' });
  await a.close();
  const b = new RemoteKvClient({ host: '127.0.0.1', port });
  await b.open();
  await t.rejects(b.batch([], { sync: true }), { constructor: HostStoreError, code: 'bad_message' });
  await b.close();
});

t.test('an answer that does not come in time ends the link', async (t) => {
  const port = await rawServer(t, (f, write) => {
    if (f.op === Op.hello) write(frame(Op.ok, f.id));
  });
  const client = new RemoteKvClient({ host: '127.0.0.1', port, requestTimeoutMs: 200 });
  await client.open();
  await t.rejects(client.get('k'), { constructor: HostStoreError, code: 'unavailable' });
  await client.close();
});

t.test('frame limits', async (t) => {
  t.test('the client refuses to send over a limit', async (t) => {
    t.throws(() => encodeRequest(1, { op: 'get', key: 'k'.repeat(MAX_KEY_BYTES + 1) }), { code: 'payload_too_large' });
    t.throws(() => encodeRequest(1, { op: 'batch', sync: true, ops: [{ type: 'put', key: 'k', value: new Uint8Array(MAX_VALUE_BYTES + 1) }] }), { code: 'payload_too_large' });
    t.throws(() => encodeRequest(1, { op: 'batch', sync: true, ops: Array.from({ length: 4097 }, () => ({ type: 'del' as const, key: 'k' })) }), { code: 'payload_too_large' });
    t.throws(() => encodeRequest(1, { op: 'batch', sync: true, ops: Array.from({ length: 5 }, () => ({ type: 'put' as const, key: 'k', value: new Uint8Array(MAX_VALUE_BYTES) })) }), { code: 'payload_too_large' }, 'a frame over its limit');
  });
  t.test('a frame length over the limit is refused before its bytes arrive', async (t) => {
    const head = new Uint8Array(4);
    new DataView(head.buffer).setUint32(0, MAX_FRAME_BYTES + 1);
    t.throws(() => new FrameReader().push(head), { code: 'payload_too_large' });
    t.throws(() => new FrameReader().push(Uint8Array.of(0, 0, 0, 2, 1, 1)), { code: 'bad_message' }, 'shorter than a header');
    t.throws(() => new FrameReader().push(frame(Op.get, 1).map((b, i) => (i === 4 ? 2 : b))), { code: 'bad_message' }, 'another version');
  });
  t.test('requests that do not parse', async (t) => {
    t.throws(() => decodeRequest({ op: Op.get, id: 1, payload: Uint8Array.of(0, 5, 0x61) }), { code: 'bad_message' }, 'truncated key');
    t.throws(() => decodeRequest({ op: Op.get, id: 1, payload: Uint8Array.of(0, 1, 0xff) }), { code: 'bad_message' }, 'a key that is not UTF-8');
    t.throws(() => decodeRequest({ op: Op.get, id: 1, payload: Uint8Array.of(0, 1, 0x61, 0) }), { code: 'bad_message' }, 'trailing bytes');
    t.throws(() => decodeRequest({ op: Op.get, id: 1, payload: Uint8Array.of(0x04, 0x01) }), { code: 'payload_too_large' }, 'a key length over the limit');
    t.throws(() => decodeRequest({ op: Op.batch, id: 1, payload: Uint8Array.of(2, 0, 0, 0, 0) }), { code: 'bad_message' }, 'a flag that is not 0 or 1');
    t.throws(() => decodeRequest({ op: Op.batch, id: 1, payload: Uint8Array.of(1, 0xff, 0xff, 0xff, 0xff) }), { code: 'payload_too_large' }, 'too many operations');
    t.throws(() => decodeRequest({ op: 0x42, id: 1, payload: new Uint8Array(0) }), { code: 'bad_message' }, 'an unknown op');
  });
  t.test('the server closes a connection whose frame is over the limit, saying why', async (t) => {
    const kv = await LevelHostKv.open(tempDir(t));
    t.teardown(() => kv.close());
    const port = await serve(t, kv);
    const said = await new Promise<Uint8Array>((resolve) => {
      const s = connect({ host: '127.0.0.1', port }, () => {
        const head = new Uint8Array(4);
        new DataView(head.buffer).setUint32(0, 0xffffffff);
        s.write(head);
      });
      const chunks: Buffer[] = [];
      s.on('data', (c) => chunks.push(c));
      s.on('close', () => resolve(Buffer.concat(chunks)));
    });
    const [f] = new FrameReader().push(said);
    t.equal(f?.op, Op.error);
    t.equal(f?.payload[0], 2, 'payload_too_large');
  });
  t.test('the server wants a greeting first', async (t) => {
    const kv = await LevelHostKv.open(tempDir(t));
    t.teardown(() => kv.close());
    const port = await serve(t, kv);
    const said = await new Promise<Uint8Array>((resolve) => {
      const s = connect({ host: '127.0.0.1', port }, () => s.write(encodeRequest(5, { op: 'get', key: 'k' })));
      const chunks: Buffer[] = [];
      s.on('data', (c) => chunks.push(c));
      s.on('close', () => resolve(Buffer.concat(chunks)));
    });
    const [f] = new FrameReader().push(said);
    t.match(f, { op: Op.error, id: 5 });
  });
});

t.test('a second client is refused while one is connected', async (t) => {
  const dir = tempDir(t);
  const { client: first } = await remote(t, dir);
  await first.open();
  const port = (first as unknown as { o: { port: number } }).o.port;
  const second = new RemoteKvClient({ host: '127.0.0.1', port, connectTimeoutMs: 500 });
  await t.rejects(second.open(), { constructor: HostStoreError, code: 'conflict' });
  await first.batch([{ type: 'put', key: 'k', value: bytes(1) }], { sync: true });
  t.same(await first.get('k'), bytes(1), 'the first client is served on');
  // Once the first one leaves, the next is served (the entrypoint's node-identity, then the node).
  await first.close();
  const third = new RemoteKvClient({ host: '127.0.0.1', port, connectTimeoutMs: 2000 });
  await third.open();
  t.same(await third.get('k'), bytes(1));
  await third.close();
});
