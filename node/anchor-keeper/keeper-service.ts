// An anchor keeper's two answers (docs/storage.md "Anchor keepers"), apart from HTTP: a write stores the
// client's statement when it is above what is held and acknowledges what is held, bound to the request;
// a read answers the statement held (or nothing) bound to the reader's challenge. The keeper checks the
// client's signature before it stores anything (nobody but the key's holder raises its version), and
// signs every answer, so whoever carries the traffic (an enclave's parent) can neither forge nor replay one.
import { ed25519 } from '@noble/curves/ed25519.js';
import { Ed25519Signer, isValidEd25519PublicKey, verifyEd25519 } from '../../common/ed25519.ts';
import { fromHex, toHex } from '../../common/bytes.ts';
import { AnchorKeeperError } from './anchor-keeper-error.ts';
import type { KeeperRecords } from './keeper-records.ts';
import {
  MAX_VERSION, readAnswerMessage, statementMessage, writeAckMessage, writeRequestHash,
  type ReadAnswerWire, type ReadRequestWire, type WriteAnswerWire, type WriteRequestWire,
} from './keeper-messages.ts';

export class AnchorKeeper {
  readonly publicKey: Uint8Array;
  readonly #signer: Ed25519Signer;

  constructor(private readonly records: KeeperRecords, seed: Uint8Array) {
    this.publicKey = ed25519.getPublicKey(seed);
    this.#signer = new Ed25519Signer(seed);
  }

  private static client(hex: string): Uint8Array {
    const client = fromHex(hex);
    if (!isValidEd25519PublicKey(client)) throw new AnchorKeeperError('invalid_request', 'the client key is not an Ed25519 public key');
    return client;
  }

  async write(req: WriteRequestWire): Promise<WriteAnswerWire> {
    const client = AnchorKeeper.client(req.client);
    const version = BigInt(req.version);
    if (version > MAX_VERSION) throw new AnchorKeeperError('invalid_request', 'the version is above 2^64 - 1');
    const signature = fromHex(req.signature);
    if (!verifyEd25519(signature, statementMessage(client, version), client)) throw new AnchorKeeperError('unauthorized', 'the statement is not signed by the client key it names');
    const held = await this.records.raise(req.client, { version, signature });
    const hash = writeRequestHash(client, version, signature, fromHex(req.nonce));
    return { stored: held.version.toString(), signature: toHex(this.#signer.sign(writeAckMessage(client, held.version, hash))) };
  }

  async read(req: ReadRequestWire): Promise<ReadAnswerWire> {
    const client = AnchorKeeper.client(req.client);
    const held = await this.records.get(req.client);
    const signature = toHex(this.#signer.sign(readAnswerMessage(client, held, fromHex(req.challenge))));
    return { statement: held ? { version: held.version.toString(), signature: toHex(held.signature) } : null, signature };
  }
}
