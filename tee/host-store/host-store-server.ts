// The parent's side of the host store (docs/storage.md "A store kept by the enclave's parent"): serves
// one LevelDB directory to one enclave over TCP, in the frames of frame.ts. It holds nothing but
// ciphertext, public records and the store's sealed head, and is trusted for nothing: the node checks
// every answer against its head. It refuses a second client while one is connected (one enclave per
// directory: two writers would each see the other's writes as tampering), and closes a connection
// that breaks the protocol or a limit.
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Level } from 'level';
import { HostStoreError } from './host-store-error.ts';
import {
  decodeRequest, encodeError, encodeOk, encodePage, encodeValue, FrameReader, MAX_PAGE_BYTES, type Frame, type KvWriteOp, type Request,
  type ScanPage, type ScanRequest,
} from './frame.ts';

/** What the server asks of the directory it serves. */
export interface HostKv {
  get(key: string): Promise<Uint8Array | undefined>;
  batch(ops: KvWriteOp[], sync: boolean): Promise<void>;
  scan(r: ScanRequest): Promise<ScanPage>;
  close(): Promise<void>;
}

/** A LevelDB directory in the sealed store's own format (node/storage/level-kv-backend.ts). */
export class LevelHostKv implements HostKv {
  private constructor(private readonly db: Level<string, Uint8Array>) {}

  static async open(dir: string): Promise<LevelHostKv> {
    const db = new Level<string, Uint8Array>(dir, { valueEncoding: 'view' });
    await db.open();
    return new LevelHostKv(db);
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    return (await this.db.get(key)) ?? undefined;
  }

  async batch(ops: KvWriteOp[], sync: boolean): Promise<void> {
    await this.db.batch(ops.map((o) => (o.type === 'put' ? { type: 'put' as const, key: o.key, value: o.value } : { type: 'del' as const, key: o.key })), { sync });
  }

  async scan(r: ScanRequest): Promise<ScanPage> {
    const range = { ...(r.startExclusive ? { gt: r.start } : { gte: r.start }), ...(r.end !== undefined ? { lt: r.end } : {}) };
    const entries: ScanPage['entries'] = [];
    let bytes = 0;
    // One entry past the page tells whether there is more.
    for await (const [key, value] of this.db.iterator({ ...range, limit: r.limit + 1 })) {
      const size = key.length * 3 + (r.withValues ? value.length : 0);
      if (entries.length === r.limit || (entries.length > 0 && bytes + size > MAX_PAGE_BYTES)) return { entries, more: true };
      entries.push(r.withValues ? { key, value } : { key });
      bytes += size;
    }
    return { entries, more: false };
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

export interface HostStoreServerOptions {
  store: HostKv;
  host: string;
  port: number;
  /** Where the server says what happens (never a value: it has none worth saying). */
  log?: (line: Record<string, unknown>) => void;
}

export interface RunningHostStore {
  readonly port: number;
  close(): Promise<void>;
}

/** Answers in flight per connection: a client that asks more without reading is cut off. */
const MAX_QUEUED = 64;

export async function startHostStoreServer(o: HostStoreServerOptions): Promise<RunningHostStore> {
  const log = o.log ?? (() => undefined);
  let current: Socket | undefined;
  const sockets = new Set<Socket>();

  const serve = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    if (current) {
      log({ msg: 'a second client refused: this directory is served to one client at a time', peer });
      socket.end(encodeError(0, 'conflict', 'this host store already serves a client'));
      return;
    }
    current = socket;
    log({ msg: 'client connected', peer });
    socket.on('close', () => {
      if (current === socket) current = undefined;
      log({ msg: 'client disconnected', peer });
    });
    const reader = new FrameReader();
    let queue: Promise<void> = Promise.resolve();
    let queued = 0;
    let greeted = false;
    const refuse = (err: HostStoreError, id = 0) => {
      log({ msg: 'connection closed: protocol fault', peer, code: err.code, reason: err.message });
      socket.end(encodeError(id, err.code, err.message));
      socket.destroySoon?.();
    };
    socket.on('data', (chunk: Buffer) => {
      let frames: Frame[];
      try {
        frames = reader.push(chunk);
      } catch (err) {
        socket.pause();
        return refuse(err as HostStoreError);
      }
      for (const f of frames) {
        let req: Request;
        try {
          req = decodeRequest(f);
        } catch (err) {
          socket.pause();
          return refuse(err instanceof HostStoreError ? err : new HostStoreError('bad_message', String(err)), f.id);
        }
        if (!greeted && req.op !== 'hello') {
          socket.pause();
          return refuse(new HostStoreError('bad_message', 'a client greets first'), f.id);
        }
        greeted = true;
        if (++queued > MAX_QUEUED) {
          socket.pause();
          return refuse(new HostStoreError('payload_too_large', `more than ${MAX_QUEUED} requests in flight`));
        }
        // One at a time, in order: a batch is on disk before the next request is read from the store.
        queue = queue.then(async () => {
          let answer: Uint8Array;
          try {
            answer = await answerFor(o.store, f.id, req);
          } catch (err) {
            log({ msg: 'request failed', peer, op: req.op, reason: (err as Error).message });
            answer = encodeError(f.id, 'internal', `${req.op} failed`);
          }
          queued--;
          if (!socket.destroyed && socket.writable) socket.write(answer);
        });
      }
    });
  };

  const server: Server = createServer(serve);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  log({ msg: 'host store listening', host: o.host, port });
  return {
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

async function answerFor(store: HostKv, id: number, r: Request): Promise<Uint8Array> {
  switch (r.op) {
    case 'hello':
      return encodeOk(id);
    case 'get':
      return encodeValue(id, await store.get(r.key));
    case 'batch':
      await store.batch(r.ops, r.sync);
      return encodeOk(id);
    case 'scan':
      return encodePage(id, await store.scan(r), r.withValues);
  }
}
