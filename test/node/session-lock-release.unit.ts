// A session that ends while its node is still in preflight, authorize or start (the coordinator
// cancels, the link drops, the deadline passes) frees every OT pair lock the node took for it: the next
// ECDSA session over those pairs is not refused `ot_busy`. One real node: the session host, the real
// signing-session factory (node-protocols.ts) over a real sealed store, the real intent authorizer and
// ledger. Every await of the factory's dependencies is a point where the session is ended; the test
// walks them one by one for each way a session ends, until the session gets past its first round.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { setImmediate as tick } from 'node:timers/promises';
import { create } from '@bufbuild/protobuf';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { encodeIntent, signIntent, type BtcTransferIntent } from '../../core/intents/intent.ts';
import { buildSpend } from '../../api/chains/bitcoin/build-spend.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { VaultShareStore, type PinnedMember } from '../../node/storage/vault-shares.ts';
import { nodeProtocols } from '../../node/runtime/sessions/node-protocols.ts';
import { SessionHost, SOLE_ORIGIN, type ProtocolFactory, type ToCoordinator } from '../../node/runtime/session-host.ts';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import { OtPairLocks } from '../../node/runtime/ot-pair-locks.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { IntentAuthorizer } from '../../node/runtime/authorization/sign-authorizer.ts';
import { IntentLedger } from '../../node/runtime/authorization/intent-ledger.ts';
import { signParams } from '../../core/session/session-contract.ts';
import { SecretShare } from '../../node/protocols/keys/key-package.ts';
import { exposeScalar, pointHex } from '../../node/protocols/math/curve.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { SessionOpenSchema, Protocol, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import { createLogger } from '../../common/logger.ts';
import { committee } from '../protocols/ecdsa/harness.ts';
import { deadlineOf, newSessionId } from './session-ids.ts';

bitcoin.initEccLib(ecc);
const ORG = 'org_locks';
const apiSecret = sha256(new TextEncoder().encode('lock release api key'));
const c = committee(3, 2, 'lock-release');
const pkg = c.keys.get(1)!.pkg;
const keyId = pkg.keyId;
const derived = pointHex(derive(pkg.groupKey, pkg.chainCode, []).publicKey);
const from = bitcoin.payments.p2wpkh({ pubkey: hexToBytes(derived), network: bitcoin.networks.regtest }).address!;
const dest = bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(9), network: bitcoin.networks.regtest }).address!;
const input = { txid: bytesToHex(new Uint8Array(32).fill(0x5a)), vout: 1, value: 90_000n, status: { confirmed: true } };

const me = new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)));
const members: PinnedMember[] = [1, 2, 3].map((i) =>
  i === 1
    ? { index: 1, nodeId: me.nodeId, signingKey: bytesToHex(me.signingKey), encryptionKey: bytesToHex(me.encryptionKey) }
    : { index: i, nodeId: `node-${i}`, signingKey: bytesToHex(randomBytes(32)), encryptionKey: bytesToHex(randomBytes(32)) },
);
// Signers 1 and 2: node 1 holds the pair {1, 2} for the run.
const parties: Party[] = members.slice(0, 2).map((m) => ({ $typeName: 'mpc.v1.Party', nodeId: m.nodeId, index: m.index, signingKey: hexToBytes(m.signingKey), encryptionKey: hexToBytes(m.encryptionKey) }));

/** A P2WPKH spend (scheme ecdsa: a full DKLs23 run, which holds OT pairs) of the customer's signed intent. */
function signing(): Uint8Array {
  const intent: BtcTransferIntent = {
    kind: 'btc.transfer', organization: ORG, walletId: 'w', network: 'regtest', from, outputs: [{ address: dest, amount: 50_000n }], maxFeeRate: 20n, maxFee: 5_000n,
    inputs: [{ txid: hexToBytes(input.txid), vout: input.vout, amount: input.value }], idempotencyKey: 'lock-release', notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
  };
  const bytes = encodeIntent(intent);
  const spend = buildSpend(intent, [input], 5n);
  return signParams.encode({
    keyId, epoch: pkg.epoch, path: [], scheme: 'ecdsa', digests: spend.digests,
    intent: bytes, intentSignature: signIntent(bytes, apiSecret), apiKeyId: 'key_1', template: spend.template, endUserToken: '',
  });
}

/** Wraps every method of `target` so each call first passes `point()`: an await the session can end at. */
function pausing<T extends object>(target: T, point: () => Promise<void>): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const v = Reflect.get(obj, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return async (...args: unknown[]) => {
        await point();
        return (v as (...a: unknown[]) => unknown).apply(obj, args);
      };
    },
  });
}

type Ending = 'cancel' | 'link loss' | 'deadline';

t.test('a signing ended at any step of preflight, authorize or start leaves no OT pair held', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'lock-release-'));
  const store = await SealedStore.open(dir, new Uint8Array(randomBytes(32)));
  t.teardown(async () => {
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  const vault = new VaultShareStore(store);
  const k = c.keys.get(1)!;
  await vault.putNew(keyId, { key: { share: new SecretShare(1, exposeScalar(k.share, 'share')), pkg: k.pkg }, owner: ORG, committee: members, tier: 'self' });
  const ot = c.ots.get(1)!;
  await vault.putOt(keyId, ot);
  const trust = new TrustRegistry(store, { operatorKeys: [], fileKeys: { [ORG]: { key_1: bytesToHex(ed25519.getPublicKey(apiSecret)) } } });
  const otLocks = new OtPairLocks();
  const params = signing();

  /** One session, ended by `ending` at the `at`-th await of the factory's dependencies; whether it got there. */
  async function run(ending: Ending, at: number): Promise<boolean> {
    let count = 0;
    let fired = false;
    const sent: ToCoordinator[] = [];
    // A deadline close ahead for the 'deadline' ending: a past one is refused at open (session_expired).
    const sessionId = ending === 'deadline' ? newSessionId(200) : newSessionId();
    const end = async () => {
      if (ending === 'cancel') host.onCancel(sessionId, 'test cancel');
      else if (ending === 'link loss') host.abortFrom(SOLE_ORIGIN, 'link lost');
      // The deadline passes right after open: the host's own timer ends the session; this step waits for it.
      else while (host.running > 0) await new Promise((r) => setTimeout(r, 20));
    };
    const point = async () => {
      if (++count !== at) return;
      fired = true;
      await end();
    };
    const factory = nodeProtocols({
      vault: pausing(vault, point), trust: pausing(trust, point), authorizer: pausing(new IntentAuthorizer(trust), point),
      ledger: pausing(new IntentLedger(store), point), otLocks: pausing(otLocks, point),
    } as Parameters<typeof nodeProtocols>[0]);
    let built: Promise<unknown> = Promise.resolve();
    const tracked: ProtocolFactory = (ctx) => {
      const p = factory(ctx);
      built = p.catch(() => undefined);
      return p;
    };
    const host = new SessionHost(me, (msg) => sent.push(msg), tracked, createLogger('test', 'silent'));
    const deadlineMs = deadlineOf(sessionId);
    host.onOpen(create(SessionOpenSchema, { sessionId, protocol: Protocol.SIGN_ECDSA, keyId, parties, params, deadlineMs }));
    // Until the session ended at its point, or its first round went out (the factory built the run and
    // started it: every await of preflight, authorize and start is behind it).
    while (!fired && !sent.some((m) => m.body?.case === 'send' || m.body?.case === 'failed')) await tick();
    await built;
    // A session that got past its first round ends the ordinary way.
    if (!fired) host.onCancel(sessionId, 'test cancel');
    // An end at an await of start() lands while start still runs (a deadline, up to its timer).
    for (const stop = Date.now() + 3_000; host.running > 0 && Date.now() < stop;) await new Promise((r) => setTimeout(r, 20));
    for (let i = 0; i < 20; i++) await tick();
    t.equal(host.running, 0, `${ending} at await ${at}: the session ended`);
    t.equal(otLocks.held, 0, `${ending} at await ${at}: no OT pair held`);
    return fired;
  }

  for (const ending of ['cancel', 'link loss', 'deadline'] as const) {
    let at = 1;
    while (await run(ending, at)) at++;
    t.ok(at > 5, `${ending}: the session was ended at each of ${at - 1} awaits before its first round`);
  }
  // And the pair serves the next run at once.
  const release = await otLocks.acquire(keyId, [2], 0);
  release();
});
