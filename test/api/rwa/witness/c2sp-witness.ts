// A transparency-log witness written from the C2SP texts alone (tlog-witness, tlog-cosignature,
// tlog-checkpoint, signed-note), sharing no code with the service's log: it verifies checkpoints against
// the log keys it is configured with, keeps the latest cosigned size and root per origin, checks the RFC
// 6962 consistency proof from there, and answers add-checkpoint with an Ed25519 cosignature (type 0x04).
// Check and update of an origin's state run one at a time (the race the spec describes).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sha256 } from '@noble/hashes/sha2.js';
import { ed25519 } from '@noble/curves/ed25519.js';

const enc = new TextEncoder();
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
const unb64 = (s: string): Uint8Array | null => (/^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0 ? new Uint8Array(Buffer.from(s, 'base64')) : null);
const cat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
};
const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);
const keyId = (name: string, type: number, pk: Uint8Array) => sha256(cat(enc.encode(name), Uint8Array.of(0x0a, type), pk)).slice(0, 4);
const node = (l: Uint8Array, r: Uint8Array) => sha256(cat(Uint8Array.of(1), l, r));
const EMPTY = sha256(new Uint8Array(0));

/** RFC 6962 / 9162 consistency verification, for 0 < m < n. */
function consistent(m: number, n: number, oldRoot: Uint8Array, newRoot: Uint8Array, proof: Uint8Array[]): boolean {
  if (m <= 0 || m >= n || proof.length === 0) return false;
  const p = (m & (m - 1)) === 0 ? [oldRoot, ...proof] : proof;
  let fn = m - 1;
  let sn = n - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = p[0]!;
  let sr = p[0]!;
  for (const c of p.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = node(c, fr);
      sr = node(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      sr = node(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && same(fr, oldRoot) && same(sr, newRoot);
}

interface LogKey { name: string; id: Uint8Array; pk: Uint8Array }

/** A vkey of type 0x01 (Ed25519 note signatures). */
function parseLogVkey(vkey: string): LogKey {
  const m = /^([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(vkey);
  const [name, id, key] = m ? [m[1], m[2], m[3]] : [];
  const raw = unb64(key ?? '');
  if (!name || !id || !raw || raw.length !== 33 || raw[0] !== 0x01) throw new Error('not an Ed25519 vkey');
  return { name, id: Uint8Array.from(Buffer.from(id, 'hex')), pk: raw.slice(1) };
}

class Answer extends Error {
  constructor(readonly status: number, readonly body = '', readonly type = 'text/plain') {
    super(`${status}`);
  }
}

export interface WitnessOptions {
  /** The witness's key name. */
  name: string;
  seed: Uint8Array;
  /** Origin → the log's verifier keys (`<name>+<id>+<base64 0x01 || key>`). */
  logs: Map<string, string[]>;
  /** Seconds since the epoch, for the cosignature timestamp. */
  now?: () => number;
}

export class C2spWitness {
  readonly publicKey: Uint8Array;
  /** Per origin: the latest cosigned checkpoint (size, root, the note with the log's and our signatures). */
  readonly state = new Map<string, { size: number; root: Uint8Array; note: string }>();
  /** Every add-checkpoint answered: status and origin (what a witness MAY log as evidence). */
  readonly requests: { status: number; origin: string | null }[] = [];
  private readonly queues = new Map<string, Promise<unknown>>();
  private server: Server | undefined;

  constructor(private readonly o: WitnessOptions) {
    this.publicKey = ed25519.getPublicKey(o.seed);
  }

  /** The cosigner's vkey: signature type 0x04. */
  get vkey(): string {
    return `${this.o.name}+${Buffer.from(keyId(this.o.name, 0x04, this.publicKey)).toString('hex')}+${b64(cat(Uint8Array.of(0x04), this.publicKey))}`;
  }

  /** Listens on loopback; the submission prefix is the returned URL. */
  async listen(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        void this.handle(req.method ?? '', req.url ?? '', Buffer.concat(chunks).toString('utf8')).then((a) => {
          res.writeHead(a.status, { 'content-type': a.type }).end(a.body);
        });
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/witness`;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server!.close(() => r()));
  }

  private async handle(method: string, url: string, body: string): Promise<Answer> {
    try {
      if (method === 'POST' && url === '/witness/add-checkpoint') return await this.addCheckpoint(body);
      const m = /^\/witness\/([0-9a-f]{64})\/checkpoint$/.exec(url);
      if (method === 'GET' && m) {
        for (const [origin, s] of this.state) if (Buffer.from(sha256(enc.encode(origin))).toString('hex') === m[1]) return new Answer(200, s.note);
        return new Answer(404);
      }
      return new Answer(404);
    } catch (err) {
      if (err instanceof Answer) return err;
      return new Answer(500);
    }
  }

  /** POST <prefix>/add-checkpoint, as c2sp-tlog-witness says, step by step. */
  async addCheckpoint(body: string): Promise<Answer> {
    let origin: string | null = null;
    const done = (a: Answer) => {
      this.requests.push({ status: a.status, origin });
      return a;
    };
    try {
      // old size line, proof lines, empty line, checkpoint.
      const cut = body.indexOf('\n\n');
      if (cut < 0) throw new Answer(400);
      const head = body.slice(0, cut).split('\n');
      const oldLine = /^old (0|[1-9][0-9]*)$/.exec(head[0] ?? '');
      if (!oldLine) throw new Answer(400);
      const old = Number(oldLine[1]);
      const proof = head.slice(1).map(unb64);
      if (proof.length > 63 || proof.some((p) => p === null || p.length !== 32)) throw new Answer(400);
      const note = body.slice(cut + 2);
      // The note: text, blank line, signatures; the text is the checkpoint.
      const sep = note.lastIndexOf('\n\n');
      if (sep < 0 || !note.endsWith('\n')) throw new Answer(400);
      const text = note.slice(0, sep + 1);
      const lines = text.split('\n');
      if (lines.length < 4) throw new Answer(400);
      origin = lines[0]!;
      const sizeLine = /^(0|[1-9][0-9]*)$/.exec(lines[1]!);
      const root = unb64(lines[2]!);
      if (!sizeLine || !root || root.length !== 32) throw new Answer(400);
      const size = Number(sizeLine[1]);
      const keys = this.o.logs.get(origin);
      if (!keys) throw new Answer(404);
      // Signatures from keys we trust for the origin: at least one, and every one of them verifies.
      let good = 0;
      for (const line of note.slice(sep + 2).split('\n').filter(Boolean)) {
        const sm = /^\u2014 (\S+) (\S+)$/u.exec(line);
        const raw = sm ? unb64(sm[2]!) : null;
        if (!sm || !raw || raw.length < 4) throw new Answer(400);
        for (const k of keys.map(parseLogVkey)) {
          if (k.name !== sm[1] || !same(raw.slice(0, 4), k.id)) continue;
          let ok = false;
          try {
            ok = raw.length === 68 && ed25519.verify(raw.slice(4), enc.encode(text), k.pk);
          } catch {
            ok = false;
          }
          if (!ok) throw new Answer(403);
          good++;
        }
      }
      if (good === 0) throw new Answer(403);
      if (old > size) throw new Answer(400);
      return done(await this.serial(origin, async () => {
        const known = this.state.get(origin!);
        const knownSize = known?.size ?? 0;
        if (old !== knownSize) return new Answer(409, `${knownSize}\n`, 'text/x.tlog.size');
        if (size === 0 && !same(root, EMPTY)) return new Answer(422);
        if (old === 0) {
          if (proof.length !== 0) return new Answer(422);
        } else if (old === size) {
          if (!same(root, known!.root) || proof.length !== 0) return new Answer(422);
        } else if (!consistent(old, size, known!.root, root, proof as Uint8Array[])) {
          return new Answer(422);
        }
        const line = this.cosign(text);
        this.state.set(origin!, { size, root, note: note + line });
        return new Answer(200, line);
      }));
    } catch (err) {
      if (err instanceof Answer) return done(err);
      throw err;
    }
  }

  /** `— <name> base64(key id || u64 timestamp || Ed25519 signature)` over the cosigned message. */
  cosign(text: string): string {
    const t = BigInt(this.o.now?.() ?? Math.floor(Date.now() / 1000));
    const msg = enc.encode(`cosignature/v1\ntime ${t}\n${text}`);
    const ts = new Uint8Array(8);
    new DataView(ts.buffer).setBigUint64(0, t);
    return `\u2014 ${this.o.name} ${b64(cat(keyId(this.o.name, 0x04, this.publicKey), ts, ed25519.sign(msg, this.o.seed)))}\n`;
  }

  private serial<T>(origin: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(origin) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    this.queues.set(origin, next.catch(() => undefined));
    return next;
  }
}
