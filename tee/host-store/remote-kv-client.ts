// The enclave side of the host store (docs/storage.md "A store kept by the enclave's parent"): a store
// backend (node/storage/kv-backend.ts, which this matches by shape) whose bytes are kept by the parent
// instance, reached over one TCP stream (in an enclave, the entrypoint's vsock forwarder).
//
// The host is not trusted: it can drop, replay, reorder or forge answers. This client checks only what
// is about the protocol (frames parse, an answer has the id and the kind of a question in flight, a
// listing is strictly ordered and inside its range, bounded); whether a value is the one written is the
// sealed store's to check, against its authenticated head. Any protocol fault ends the link: every call
// in flight and every later one fails, and the node does not carry on with a host it caught lying.
import { connect, type Socket } from 'node:net';
import { HostStoreError } from './host-store-error.ts';
import {
  decodeError, decodeOk, decodePage, decodeValue, encodeRequest, FrameReader, Op, type Frame, type KvWriteOp, type Request,
} from './frame.ts';

export interface RemoteKvClientOptions {
  host: string;
  port: number;
  /** How long open() keeps trying while the host store is down or busy with the previous client. */
  connectTimeoutMs?: number;
  /** How long an answer may take. */
  requestTimeoutMs?: number;
  /** Entries asked for per page of a listing. */
  pageSize?: number;
}

interface Pending {
  expect: number;
  resolve: (f: Frame) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

const utf8 = new TextEncoder();
const cmp = (a: string, b: string) => Buffer.compare(utf8.encode(a), utf8.encode(b));

export class RemoteKvClient {
  private socket: Socket | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private failure: HostStoreError | undefined;
  private closed = false;
  /** Set once the greeting was answered: only a link that was up can be lost. */
  private ready = false;
  private readonly lostHandlers: ((err: HostStoreError) => void)[] = [];

  constructor(private readonly o: RemoteKvClientOptions) {}

  /** Called once if the link is lost or the host broke the protocol (not on close()). */
  onLost(handler: (err: HostStoreError) => void): void {
    this.lostHandlers.push(handler);
  }

  /** Connects and greets; a second call on an open link does nothing. */
  async open(): Promise<void> {
    if (this.ready && !this.failure) return;
    const deadline = Date.now() + (this.o.connectTimeoutMs ?? 10_000);
    for (;;) {
      try {
        await this.connectOnce();
        return;
      } catch (err) {
        const retry = err instanceof HostStoreError && (err.code === 'conflict' || err.code === 'unavailable');
        if (!retry || Date.now() >= deadline) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  private async connectOnce(): Promise<void> {
    this.failure = undefined;
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect({ host: this.o.host, port: this.o.port });
      s.once('connect', () => {
        s.off('error', reject);
        resolve(s);
      });
      s.once('error', (err) => reject(new HostStoreError('unavailable', `the host store at ${this.o.host}:${this.o.port} cannot be reached: ${err.message}`, { cause: err })));
    });
    socket.setNoDelay(true);
    this.socket = socket;
    const reader = new FrameReader();
    // Events of a socket given up on (a refused attempt) are no longer this link's.
    const mine = () => this.socket === socket;
    socket.on('data', (chunk: Buffer) => {
      if (!mine()) return;
      let frames: Frame[];
      try {
        frames = reader.push(chunk);
      } catch (err) {
        return this.fail(err as HostStoreError);
      }
      for (const f of frames) this.onFrame(f);
    });
    socket.on('error', (err) => mine() && this.fail(new HostStoreError('unavailable', `the link to the host store failed: ${err.message}`, { cause: err })));
    socket.on('close', () => mine() && this.fail(new HostStoreError('unavailable', 'the host store closed the link')));
    try {
      await this.call({ op: 'hello' }, Op.ok, decodeOk);
    } catch (err) {
      socket.destroy();
      this.socket = undefined;
      throw err;
    }
    this.ready = true;
  }

  private onFrame(f: Frame): void {
    if (f.op === Op.error && f.id === 0) {
      let err: HostStoreError;
      try {
        err = decodeError(f);
      } catch (e) {
        err = e as HostStoreError;
      }
      return this.fail(err);
    }
    const p = this.pending.get(f.id);
    // An answer to nothing asked (a replay, a forged id) or of the wrong kind: the host broke the protocol.
    if (!p) return this.fail(new HostStoreError('bad_message', `the host store answered request ${f.id}, which is not in flight`));
    if (f.op !== p.expect && f.op !== Op.error) return this.fail(new HostStoreError('bad_message', `the host store answered request ${f.id} with op ${f.op}, not ${p.expect}`));
    this.pending.delete(f.id);
    clearTimeout(p.timer);
    if (f.op === Op.error) {
      try {
        p.reject(decodeError(f));
      } catch (err) {
        this.fail(err as HostStoreError);
      }
    } else p.resolve(f);
  }

  private fail(err: HostStoreError): void {
    if (this.failure) return;
    this.failure = err;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
    this.socket?.destroy();
    if (!this.closed && this.ready) for (const h of this.lostHandlers) h(err);
  }

  /** Sends `r` and decodes its answer; an answer that does not decode ends the link. */
  private async call<T>(r: Request, expect: number, decode: (f: Frame) => T): Promise<T> {
    const f = await this.send(r, expect);
    try {
      return decode(f);
    } catch (err) {
      const e = err instanceof HostStoreError ? err : new HostStoreError('bad_message', `an answer of the host store does not decode: ${(err as Error).message}`);
      this.fail(e);
      throw e;
    }
  }

  private send(r: Request, expect: number): Promise<Frame> {
    if (this.closed) return Promise.reject(new HostStoreError('unavailable', 'the host store link is closed'));
    if (this.failure) return Promise.reject(this.failure);
    if (!this.socket) return Promise.reject(new HostStoreError('unavailable', 'the host store link is not open'));
    const id = this.nextId;
    this.nextId = this.nextId === 0xffffffff ? 1 : this.nextId + 1;
    const bytes = encodeRequest(id, r);
    return new Promise<Frame>((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new HostStoreError('unavailable', `the host store did not answer request ${id} in time`)), this.o.requestTimeoutMs ?? 30_000);
      this.pending.set(id, { expect, resolve, reject, timer });
      this.socket!.write(bytes);
    });
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    return this.call({ op: 'get', key }, Op.value, decodeValue);
  }

  async batch(ops: readonly KvWriteOp[], opts: { sync: boolean }): Promise<void> {
    await this.call({ op: 'batch', sync: opts.sync, ops: [...ops] }, Op.ok, decodeOk);
  }

  async *entries(): AsyncGenerator<[string, Uint8Array]> {
    for await (const e of this.scan('', undefined, true)) yield [e.key, e.value!];
  }

  async *keys(range: { gte: string; lt: string }): AsyncGenerator<string> {
    for await (const e of this.scan(range.gte, range.lt, false)) yield e.key;
  }

  /** Page by page; every key strictly after the one before and inside [start, end). */
  private async *scan(start: string, end: string | undefined, withValues: boolean): AsyncGenerator<{ key: string; value?: Uint8Array }> {
    const limit = this.o.pageSize ?? 256;
    let last: string | undefined;
    for (;;) {
      const page = await this.call({ op: 'scan', withValues, start: last ?? start, startExclusive: last !== undefined, end, limit }, Op.page, (f) => decodePage(f, withValues, limit));
      for (const e of page.entries) {
        const outOfRange = cmp(e.key, start) < 0 || (end !== undefined && cmp(e.key, end) >= 0);
        if (outOfRange || (last !== undefined && cmp(e.key, last) <= 0)) {
          const err = new HostStoreError('tampered', `the host store listed key ${JSON.stringify(e.key)} out of order or outside the range asked for`);
          this.fail(err);
          throw err;
        }
        last = e.key;
        yield e;
      }
      if (!page.more) return;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const s = this.socket;
    if (!s || s.destroyed) return;
    await new Promise<void>((resolve) => {
      s.once('close', () => resolve());
      s.end();
      setTimeout(() => s.destroy(), 2000).unref();
    });
  }
}
