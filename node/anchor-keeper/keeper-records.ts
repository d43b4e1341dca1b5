// What an anchor keeper stores (docs/storage.md "Anchor keepers"): per client key, the highest statement
// that client signed, never lowered. LevelDB, one record per client: `client/<hex key>` holding a format
// byte (1), the version (u64, big-endian) and the client's 64-byte signature. Every raise is one synced
// write, made under a per-client lock, so two writes of one client cannot both read the old record and
// the lower land last.
import { Level } from 'level';
import { KeyedMutex } from '../../common/keyed-mutex.ts';
import { AnchorKeeperError } from './anchor-keeper-error.ts';

export interface HeldStatement {
  version: bigint;
  signature: Uint8Array;
}

/** What the keeper asks of its storage. */
export interface KeeperRecords {
  get(client: string): Promise<HeldStatement | undefined>;
  /** Keeps `s` when it is above what is held (or nothing is); answers what is held afterwards. */
  raise(client: string, s: HeldStatement): Promise<HeldStatement>;
  close(): Promise<void>;
}

const RECORD_FORMAT = 1;
const RECORD_BYTES = 1 + 8 + 64;
const PREFIX = 'client/';

export function encodeHeld(s: HeldStatement): Uint8Array {
  const out = new Uint8Array(RECORD_BYTES);
  out[0] = RECORD_FORMAT;
  new DataView(out.buffer).setBigUint64(1, s.version);
  out.set(s.signature, 9);
  return out;
}

export function decodeHeld(client: string, b: Uint8Array): HeldStatement {
  if (b.length !== RECORD_BYTES || b[0] !== RECORD_FORMAT) throw new AnchorKeeperError('internal', `the record of client ${client} is not one this keeper wrote`);
  return { version: new DataView(b.buffer, b.byteOffset, b.byteLength).getBigUint64(1), signature: b.slice(9) };
}

export class LevelKeeperRecords implements KeeperRecords {
  private readonly locks = new KeyedMutex();

  private constructor(private readonly db: Level<string, Uint8Array>, private clients: number, private readonly maxClients: number) {}

  /** The records in the LevelDB directory `dir` (made if absent); at most `maxClients` clients. */
  static async open(dir: string, maxClients: number): Promise<LevelKeeperRecords> {
    const db = new Level<string, Uint8Array>(dir, { valueEncoding: 'view' });
    await db.open();
    let clients = 0;
    for await (const key of db.keys({ gte: PREFIX, lt: `${PREFIX}\xff` })) if (key) clients++;
    return new LevelKeeperRecords(db, clients, maxClients);
  }

  async get(client: string): Promise<HeldStatement | undefined> {
    const b = await this.db.get(PREFIX + client);
    return b === undefined ? undefined : decodeHeld(client, b);
  }

  raise(client: string, s: HeldStatement): Promise<HeldStatement> {
    return this.locks.run(client, async () => {
      const held = await this.get(client);
      if (held && held.version >= s.version) return held;
      if (!held && this.clients >= this.maxClients) throw new AnchorKeeperError('rate_limited', `this keeper holds ${this.maxClients} clients, its limit: it takes no new one`);
      await this.db.put(PREFIX + client, encodeHeld(s), { sync: true });
      if (!held) this.clients++;
      return s;
    });
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
